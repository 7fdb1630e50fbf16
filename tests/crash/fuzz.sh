#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Bad metadata.  Runs in the VM (qemu/vm):
#
#   qemu/vm --kernel 6.1 -- tests/crash/fuzz.sh
#
# Two pristine write-back caches are made over loop devices, both holding
# dirty data (cleaning is off): "live", copied while the device runs
# after its last acknowledged flush (an unclean stop), and "clean", copied
# after the device was removed.  Then, IMAGES times: random bits of the
# metadata area (superblock slots, map, temperatures: everything before
# data_start) of one of them are inverted and dm-tac is constructed over
# it and the unchanged origin.  Each construct must either load, and then
# every block must read back as the writer's journal says (verify, every
# flush acknowledged), or be refused with a "tac:" message in the kernel
# log.  Never wrong data, never an oops (qemu/vm fails the run on one).
#
# Environment: IMAGES [200], BITS_MAX [8] bits per image (1..BITS_MAX),
# SEED [1], CACHE_MIB [2], ORIGIN_MIB [4], WRITES [600].
# Ends with "fuzz: N images: L loaded and verified, R refused with a
# message, W wrong"; exit 0 if W is 0, 1 if not, 2 if it could not run.

set -u
here=$(cd "$(dirname "$0")" && pwd)
IMAGES=${IMAGES:-200}
BITS_MAX=${BITS_MAX:-8}
SEED=${SEED:-1}
CACHE_MIB=${CACHE_MIB:-2}
ORIGIN_MIB=${ORIGIN_MIB:-4}
WRITES=${WRITES:-600}
out=${OUT:-${VM_RWDIR:-/tmp}/fuzz}
TABLE_ARGS="8 mode writeback dirty_threshold 100 clean_idle_ms 0 dirty_adapt off"

. "$here/guest-work.sh"
cleanup() {
	"$CRASH_BIN/dmctl" remove crash_fz >/dev/null 2>&1
	crash_work_down
}
trap cleanup EXIT

die() {
	echo "fuzz: $*"
	echo "fuzz: 0 images: 0 loaded and verified, 0 refused with a message, 1 wrong"
	exit 2
}

mkdir -p "$out"
rm -f "$out"/*
crash_work_up crash-fuzz 256M writer verify dmctl flipbits ||
	die "cannot set up the work directory (build the tools first: make -C tests/crash)"
bin=$CRASH_BIN

truncate -s "${CACHE_MIB}M" "$work/cache.img"
truncate -s "${ORIGIN_MIB}M" "$work/origin.img"
crash_loop cdev "$work/cache.img" || die "losetup cache"
crash_loop odev "$work/origin.img" || die "losetup origin"
table="0 $((ORIGIN_MIB * 2048)) tac $odev $cdev 8 $TABLE_ARGS"

# The pristine pair.
dev=$("$bin/dmctl" create crash_fz "$table") || die "cannot create dm-tac: $(dmesg | tail -n 2)"
"$bin/writer" --dev "$dev" --journal "$out/journal" --seed "$SEED" \
	--count "$WRITES" --final-flush --qd 8 >"$out/writer.log" 2>&1 ||
	die "the writer failed: $(tail -n 2 "$out/writer.log")"
dirty=$(dmsetup status crash_fz | awk '{ print $6 }')
# Loop devices in buffered mode read and write their backing files' page
# cache: the files are the devices' contents, coherently.
cp "$work/cache.img" "$work/live.img" ||
	die "cannot copy the live cache"
"$bin/dmctl" remove crash_fz || die "cannot remove dm-tac"
cp "$work/cache.img" "$work/clean.img"
cp "$work/origin.img" "$work/origin.pristine"
[ "${dirty:-0}" -gt 0 ] || die "no dirty blocks in the pristine cache (status field 3: '$dirty')"

# The metadata area ends where the data starts (superblock, sectors).
data_start=$(od -An -t u8 -j 88 -N 8 "$work/clean.img" | tr -d ' ')
[ "${data_start:-0}" -gt 0 ] || die "no data_start in the superblock"
limit=$((data_start * 512))
echo "fuzz: kernel $(uname -r), cache ${CACHE_MIB} MiB with $dirty dirty blocks, metadata $limit bytes, $IMAGES images, 1..$BITS_MAX bits each, seed $SEED"

# Both pristine images must load and verify, or the fuzzing means nothing.
for base in live clean; do
	"$bin/flipbits" "$work/$base.img" "$work/cache.img" 0 0 0 >/dev/null
	dev=$("$bin/dmctl" create crash_fz "$table") ||
		die "the pristine $base image does not load: $(dmesg | grep tac | tail -n 1)"
	"$bin/verify" --dev "$dev" --journal "$out/journal" --max-report 3 \
		>"$out/verify-$base.log" 2>&1 ||
		die "the pristine $base image does not verify: $(tail -n 3 "$out/verify-$base.log")"
	"$bin/dmctl" remove crash_fz
	"$bin/flipbits" "$work/origin.pristine" "$work/origin.img" 0 0 0 >/dev/null
done

loaded=0 refused=0 wrong=0
for i in $(seq "$IMAGES"); do
	base=live
	[ $((i % 2)) = 0 ] || base=clean
	nbits=$(( (i * 7 + SEED) % BITS_MAX + 1 ))
	flips=$("$bin/flipbits" "$work/$base.img" "$work/cache.img" "$limit" "$nbits" $((SEED * 100000 + i)))
	"$bin/flipbits" "$work/origin.pristine" "$work/origin.img" 0 0 0 >/dev/null
	dmesg -C
	if dev=$("$bin/dmctl" create crash_fz "$table" 2>/dev/null); then
		if "$bin/verify" --dev "$dev" --journal "$out/journal" \
			--max-report 3 >"$out/verify.log" 2>&1; then
			loaded=$((loaded + 1))
		else
			wrong=$((wrong + 1))
			echo "fuzz: image $i ($base, $flips): loaded but the data is wrong:"
			sed 's/^/    /' "$out/verify.log" | tail -n 4
			cp "$work/cache.img" "$out/wrong-$i.img" 2>/dev/null
		fi
		"$bin/dmctl" remove crash_fz ||
			{ wrong=$((wrong + 1)); echo "fuzz: image $i: cannot remove the device"; }
	else
		msg=$(dmesg | grep -E 'device-mapper: table: .*: tac: ' | tail -n 1)
		if [ -n "$msg" ]; then
			refused=$((refused + 1))
			echo "$i $base $flips :: ${msg#*tac: }" >>"$out/refusals"
		else
			wrong=$((wrong + 1))
			echo "fuzz: image $i ($base, $flips): refused without a message; kernel: $(dmesg | tail -n 2 | tr '\n' ' ')"
		fi
	fi
done

# What the refusals said, most frequent first.
if [ -s "$out/refusals" ]; then
	echo "fuzz: refusal messages:"
	sed 's/.* :: //; s/[0-9][0-9]*/N/g' "$out/refusals" | sort | uniq -c |
		sort -rn | head -n 8 | sed 's/^/    /'
fi
echo "fuzz: $IMAGES images: $loaded loaded and verified, $refused refused with a message, $wrong wrong"
[ "$wrong" -eq 0 ] || exit 1
exit 0
