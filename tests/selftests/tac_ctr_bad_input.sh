#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The constructor refuses every bad table line with its specific error
# (asserted in the kernel log), leaves both devices byte-for-byte
# unchanged, leaves no device behind, and does not leak memory when
# refusing over and over (kmemleak's verdict on the debug kernel).  Table-driven, like dmtest's cache_ctr_tests.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup blockdev

scratch_dev origin 4 || ksft_skip "no loop devices"
scratch_dev origin2 3
scratch_dev cache 2
scratch_dev tiny 1
truncate -s 32K "$_scratch/tiny.img" && losetup -c "$tiny"
scratch_dev foreign 2
scratch_dev used 2
scratch_dev corrupt 2
scratch_dev wrap 2
scratch_dev md12 2
scratch_dev badver 2
scratch_dev swapped 2
scratch_dev bcached 2
scratch_dev bigtemp 20
scratch_dev ro_origin 4
scratch_dev ro_cache 2

len=$(sectors "$origin")

# Something that is neither empty nor dm-tac: an ext2-like magic and text.
printf 'not a dm-tac cache: pretend file system' |
	dd of="$foreign" bs=512 seek=2 conv=notrunc status=none
printf '\x53\xef' | dd of="$foreign" bs=1 seek=1080 conv=notrunc status=none

# Data from 4 KiB on, the first 4 KiB zero: where md's 1.2 and bcache's
# superblocks live.
printf 'not a dm-tac cache: pretend md 1.2 member' |
	dd of="$md12" bs=4096 seek=1 conv=notrunc status=none

# Caches with a valid dm-tac superblock, for the mismatch cases.
for dev in "$used" "$corrupt" "$badver" "$wrap" "$swapped" "$bcached" \
	"$bigtemp"; do
	tac_create tacprep "$origin" "$dev" 8 mode passthrough ||
		ksft_skip "cannot create a dm-tac device at all"
	dm_remove tacprep
done
# Damage both superblock slots of one (a bit in the body of each) ...
"$TACMETA" flip "$corrupt" 200 3
"$TACMETA" flip "$corrupt" $((4096 + 200)) 3
# ... and give the other a version from the future, checksum intact.
"$TACMETA" set "$badver" 0 version=99
"$TACMETA" set "$badver" 1 version=99
# ... and one a data area that starts so near 2^64 that its end wraps
# to sector 0, checksum intact.
n=$(sb_field "$wrap" nr_cblocks)
"$TACMETA" set "$wrap" 0 data_start=$(printf %u $((-n * 8)))
"$TACMETA" set "$wrap" 1 data_start=$(printf %u $((-n * 8)))
# Old caches another program has written over since, one slot each,
# the other slot still a valid superblock: mkswap (it zeroes the first
# 1 KiB and writes its header in the first 4 KiB), and a superblock at
# 4 KiB (make-bcache's, md 1.2's).  The data areas may be theirs now.
if command -v mkswap >/dev/null; then
	mkswap "$swapped" >/dev/null 2>&1
else
	dd if=/dev/zero of="$swapped" bs=1024 count=1 conv=notrunc status=none
	printf 'SWAPSPACE2' |
		dd of="$swapped" bs=1 seek=4086 conv=notrunc status=none
fi
printf 'not a dm-tac cache: pretend bcache superblock' |
	dd of="$bcached" bs=4096 seek=1 conv=notrunc status=none
# A temperature area one page longer than any layout gives (2^20 records
# of 253 a page: 4145 pages), the geometry otherwise consistent and the
# checksums intact: it would size a 16 MiB vmalloc at every load and save.
py3 "$(dirname "$0")/tacmeta_helper.py" temp-area "$bigtemp" 4146

# An origin of 2^40 blocks of 4 KiB (4 PiB): dm-zero, which has no size
# limit.  Origin block numbers are kept in 40 bits.
huge=$((1 << 43))
dmsetup create tachuge --table "0 $huge zero" &&
	at_exit "dm_remove tachuge"

blockdev --setro "$ro_origin"
blockdev --setro "$ro_cache"
# Before the loop devices are detached: the flag outlives them.
at_exit "blockdev --setrw '$ro_origin' '$ro_cache'"

# Each case: description | table after "<start> <len> tac" | expected
# ti->error (as logged by dm core: "tac: <error>").
cases=(
"no arguments||Not enough arguments"
"three arguments|$origin $cache 8|Not enough arguments"
"block_size not a number|$origin $cache abc 2 mode passthrough|Invalid block_size"
"block_size with trailing junk|$origin $cache 8x 2 mode passthrough|Invalid block_size"
"block_size 0|$origin $cache 0 2 mode passthrough|Invalid block_size"
"block_size 7|$origin $cache 7 2 mode passthrough|Invalid block_size"
"block_size 12 (not a power of two)|$origin $cache 12 2 mode passthrough|Invalid block_size"
"block_size 4096|$origin $cache 4096 2 mode passthrough|Invalid block_size"
"block_size 2^40|$origin $cache 1099511627776 2 mode passthrough|Invalid block_size"
"block_size 2^32+8 (wraps to 8 in 32 bits)|$origin $cache 4294967304 2 mode passthrough|Invalid block_size"
"block_size negative|$origin $cache -8 2 mode passthrough|Invalid block_size"
"#opt_args not a number|$origin $cache 8 two mode passthrough|Invalid number of optional arguments"
"#opt_args with trailing junk|$origin $cache 8 2x mode passthrough|Invalid number of optional arguments"
"#opt_args more than given|$origin $cache 8 3 mode passthrough|Invalid number of optional arguments"
"#opt_args too large|$origin $cache 8 4294967297 mode passthrough|Invalid number of optional arguments"
"words beyond #opt_args|$origin $cache 8 2 mode passthrough extra|Too many arguments"
"unknown option|$origin $cache 8 3 mode passthrough frobnicate|Unknown optional argument"
"mode without value|$origin $cache 8 1 mode|Optional argument 'mode' needs a value"
"unknown mode|$origin $cache 8 2 mode sideways|Invalid mode"
"duplicate mode|$origin $cache 8 4 mode passthrough mode passthrough|Duplicate optional argument 'mode'"
"duplicate format|$origin $cache 8 4 mode passthrough format format|Duplicate optional argument 'format'"
"option without its value|$origin $cache 8 1 admit_margin|Optional argument needs a value"
"option value not a number|$origin $cache 8 2 admit_margin x|Invalid optional argument value"
"option value out of range|$origin $cache 8 2 fill_threshold 101|Invalid optional argument value"
"option value with trailing junk|$origin $cache 8 2 seq_window 20k|Invalid optional argument value"
"option value 2^32+1|$origin $cache 8 2 seq_window 4294967297|Invalid optional argument value"
"verify_reads neither on nor off|$origin $cache 8 2 verify_reads yes|Invalid optional argument value"
"dirty_adapt neither on nor off|$origin $cache 8 2 dirty_adapt 2|Invalid optional argument value"
"cost_cache_write_us out of range|$origin $cache 8 2 cost_cache_write_us 10000001|Invalid optional argument value"
"duplicate tunable|$origin $cache 8 4 admit_margin 1 admit_margin 2|Duplicate optional argument"
"extent_size not a power of two|$origin $cache 8 2 extent_size 48|Invalid policy parameters"
"seq_threshold not below seq_window|$origin $cache 8 4 seq_window 4 seq_threshold 4|Invalid policy parameters"
"stats_extents below 16|$origin $cache 8 2 stats_extents 8|Invalid optional argument value"
"same device as origin and cache|$origin $origin 8 2 mode passthrough|Origin and cache are the same device"
"nonexistent origin|/dev/tac-no-such-dev $cache 8 2 mode passthrough|Origin device lookup failed"
"nonexistent cache|$origin /dev/tac-no-such-dev 8 2 mode passthrough|Cache device lookup failed"
"read-only origin|$ro_origin $cache 8 2 mode passthrough|Origin device is read-only"
"read-only cache|$origin $ro_cache 8 2 mode passthrough|Cache device is read-only"
"cache too small for superblock plus one block|$origin $tiny 8 2 mode passthrough|Cache device too small"
"foreign signature on the cache|$origin $foreign 8 2 mode passthrough|Cache device is not empty and not a dm-tac cache"
"data from 4 KiB on the cache, first 4 KiB zero|$origin $md12 8 2 mode passthrough|Cache device is not empty and not a dm-tac cache"
"superblock whose data area wraps past 2^64|$origin $wrap 8 2 mode passthrough|Cache superblock geometry does not fit the cache device"
"the first 4 KiB made swap space over an old cache|$origin $swapped 8 2 mode passthrough|Cache device is not empty and not a dm-tac cache"
"a bcache superblock at 4 KiB over an old cache|$origin $bcached 8 2 mode passthrough|Cache device is not empty and not a dm-tac cache"
"superblock with a temperature area larger than any layout|$origin $bigtemp 8 2 mode passthrough|Cache superblock geometry does not fit the cache device"
"existing superblock, other block size|$origin $used 16 2 mode passthrough|Cache device was formatted with a different block size"
"existing superblock, other origin size|$origin2 $used 8 2 mode passthrough|Cache device belongs to an origin of a different size"
"corrupted superblock checksum (both slots)|$origin $corrupt 8 2 mode passthrough|Cache superblock checksum mismatch"
"superblock from a future format version|$origin $badver 8 2 mode passthrough|Cache superblock has an unsupported format version"
)
if [ -b /dev/mapper/tachuge ]; then
	cases+=("origin of 2^40 blocks (4 PiB)|/dev/mapper/tachuge $cache 8 2 mode passthrough|Origin too large")
else
	tap_skip "refuses: origin of 2^40 blocks" "no dm-zero device"
fi

# stamps: the modification time (ns) of every scratch device's backing
# file: loop devices write through to them, so a refusal that wrote to
# any device, even the same bytes, changes a stamp.  One md5 over all of
# them before and after the whole table adds a check of the contents.
stamps() {
	stat -c '%n %y' "$_scratch"/*.img
}
sums() {
	cat "$_scratch"/*.img | md5sum
}

# dm_exists NAME: a dm device of that name exists (sysfs, no process)
dm_exists() {
	dm_sysfs "$1" >/dev/null
}

# try_table TABLE [LEN]: attempt a create, return dmsetup's status.
try_table() {
	dmsetup create --noudevsync tacbad --table "0 ${2:-$len} tac $1" >/dev/null 2>&1
}

sums_before=$(sums)
for c in "${cases[@]}"; do
	IFS='|' read -r desc table expect <<<"$c"
	l=$len
	[ "$desc" != "existing superblock, other origin size" ] ||
		l=$(sectors "$origin2")
	[ "$desc" != "origin of 2^40 blocks (4 PiB)" ] || l=$huge
	before=$(stamps)
	kmsg_mark
	if try_table "$table" "$l"; then
		tap_fail "refuses: $desc" "the table was accepted"
		dm_remove tacbad
		continue
	fi
	if ! kmsg_has "tac: $expect"; then
		tap_fail "refuses: $desc" "expected error '$expect', kernel said: $(dmesg | grep -E 'tac|table' | tail -n 2 | tr '\n' ' ')"
		continue
	fi
	if dm_exists tacbad; then
		tap_fail "refuses: $desc" "device tacbad left behind"
		dm_remove tacbad
		continue
	fi
	after=$(stamps)
	check_eq "refuses: $desc (no device written)" "$before" "$after"
done
check_eq "the refused tables left every device's contents unchanged" \
	"$sums_before" "$(sums)"
for dev in swapped bcached bigtemp; do
	out=$("$TACMETA" check "${!dev}" 2>&1)
	[[ $out =~ prediction:\ the\ kernel\ refuses ]] &&
		tap_ok "tacmeta check predicts the refusal of $dev" ||
		tap_fail "tacmeta check predicts the refusal of $dev" \
			"${out//$'\n'/ | }"
done

# Length must match the origin size (or be rounded down to block_size).
kmsg_mark
if try_table "$origin $cache 8 2 mode passthrough" $((len - 1)); then
	tap_fail "refuses: length one sector short of the origin" "accepted"
	dm_remove tacbad
else
	kmsg_has "tac: Target length must equal the origin size" &&
		tap_ok "refuses: length one sector short of the origin" ||
		tap_fail "refuses: length one sector short of the origin" \
			"$(dmesg | grep tac | tail -n1)"
fi

# A read-only table cannot hold a cache (the superblock is written).
kmsg_mark
if dmsetup create tacbad --readonly \
	--table "0 $len tac $origin $cache 8 2 mode passthrough" \
	>/dev/null 2>&1; then
	tap_fail "refuses: read-only table" "accepted"
	dm_remove tacbad
else
	kmsg_has "tac: A read-only table is not supported" &&
		tap_ok "refuses: read-only table" ||
		tap_fail "refuses: read-only table" "$(dmesg | grep tac | tail -n1)"
fi

# A second dm device may not take a cache device that is in use.
tac_create tacbusy "$origin" "$cache" 8 mode passthrough
kmsg_mark
if dmsetup create tacbad --table "0 $len tac $origin $cache 8 2 mode passthrough" >/dev/null 2>&1; then
	tap_fail "refuses: cache device in use by another dm-tac device" "accepted"
	dm_remove tacbad
else
	kmsg_has "tac: Cache device is in use by another dm-tac device" &&
		tap_ok "refuses: cache device in use by another dm-tac device" ||
		tap_fail "refuses: cache device in use by another dm-tac device" \
			"$(dmesg | grep tac | tail -n1)"
fi
dm_remove tacbusy

# Repeated refusals must not leak.  Many failures of the kinds that get
# furthest into the constructor (devices opened, superblock read).  With
# kmemleak (the debug kernel) a leak is an unreferenced object allocated
# through dm-tac.  Elsewhere unreclaimable slab must not grow, caches
# warmed up first; that cannot work under KASAN, whose quarantine holds
# freed objects (MiBs), and cannot tell a leak of a small object from
# noise.
leak_cases=(
"$origin $corrupt 8 2 mode passthrough"
"$origin $used 16 2 mode passthrough"
"$origin $foreign 8 2 mode passthrough"
"$origin $cache 8 3 mode passthrough frobnicate"
"$origin $tiny 8 2 mode passthrough"
)
if kmemleak_on; then
	kmemleak_forget
	for i in $(seq 10); do
		for t in "${leak_cases[@]}"; do try_table "$t"; done
	done
	if ! leaks=$(kmemleak_tac); then
		tap_fail "50 refused tables leak no object (kmemleak)" "kmemleak could not scan"
	elif [ -z "$leaks" ]; then
		tap_ok "50 refused tables leak no object (kmemleak)"
	else
		tap_fail "50 refused tables leak no object (kmemleak)" \
			"$(grep -c '^unreferenced object' <<<"$leaks") unreferenced object(s) allocated through dm-tac"
		head -n 60 <<<"$leaks" | sed 's/^/# /'
	fi
else
	for i in 1 2; do
		for t in "${leak_cases[@]}"; do try_table "$t"; done
	done
	sync; echo 3 > /proc/sys/vm/drop_caches
	s0=$(slab_kb)
	for i in $(seq 10); do
		for t in "${leak_cases[@]}"; do try_table "$t"; done
	done
	sync; echo 3 > /proc/sys/vm/drop_caches
	s1=$(slab_kb)
	diag "SUnreclaim before $s0 KiB, after 50 refused tables $s1 KiB"
	# The superblock buffer alone is 8 KiB: a leak of it per refusal
	# would add 400 KiB; allow 300 KiB of noise.
	check_le "50 refused tables grow unreclaimable slab by <= 300 KiB" \
		300 $((s1 - s0))
fi

tap_done
