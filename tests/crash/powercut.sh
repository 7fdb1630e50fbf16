#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Power-cut test, host side.  Two raw image
# files are the cache and origin disks of a VM (qemu/vm --disk: flushes
# reach the files, no cache=unsafe).  Each boot assembles the stack
# (stack.sh), verifies the journal of the boot before against it, and
# runs the writer until qemu/vm --kill-after SIGKILLs QEMU: a power cut
# at a random moment while writes and flushes are in flight.  A last boot
# only verifies.
#
#   tests/crash/powercut.sh
#
# Environment:
#   CYCLES=20        cut points wanted (boots: CYCLES + 1, more if a cut
#                    lands before the writer started: those do not count)
#   KVER=6.1         guest kernel (6.1, 6.12)
#   CRASH_STACK=plain  the stack (stack.sh): plain, tac, pagecache,
#                    noflush, lossy
#   SEED=<random>    seeds the writer runs and the cut times
#   CUT_MIN=0.5 CUT_MAX=8  the cut lands this many seconds after the
#                    host saw the writer's ready file (its init was
#                    acknowledged; qemu/vm --kill-when)
#   CACHE_MIB=4 ORIGIN_MIB=8  disk sizes
#   VM_TIMEOUT=600   seconds a boot may take (and wait for the writer)
#   OUT=out/crash/powercut-<kver>-<stack>  images, journals, logs
#
# Prints one line per boot and ends with
#   "N cut points, N verified, N violations"
# (violations: cut points after which the verifier found any).  Exit 0
# only if every cut point verified and there were at least CYCLES.

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/crash
CYCLES=${CYCLES:-20}
KVER=${KVER:-6.1}
CRASH_STACK=${CRASH_STACK:-plain}
SEED=${SEED:-$(( $(date +%s) % 100000 ))}
CUT_MIN=${CUT_MIN:-0.5}
CUT_MAX=${CUT_MAX:-8}
CACHE_MIB=${CACHE_MIB:-4}
ORIGIN_MIB=${ORIGIN_MIB:-8}
out=${OUT:-$top/out/crash/powercut-$KVER-$CRASH_STACK}

make -s -C "$here" writer verify || exit 2
rm -rf "$out"
mkdir -p "$out/rw"
truncate -s "${CACHE_MIB}M" "$out/cache.img"
truncate -s "${ORIGIN_MIB}M" "$out/origin.img"
rw=$out/rw

echo "powercut: kernel $KVER, stack $CRASH_STACK, seed $SEED, $CYCLES cut points wanted, out $out"

cuts=0 verified=0 violations=0 early=0 errors=0 vm_retries=0
total_time=0
cycle=1
max_boots=$((CYCLES * 2 + 2))

# rand_between LO HI SEED: a uniform real in [LO, HI)
rand_between() {
	awk -v lo="$1" -v hi="$2" -v s="$3" 'BEGIN { srand(s); printf "%.2f", lo + rand() * (hi - lo) }'
}

# judge N: read the verdict on cycle N's journal into $verdict, count it
judge() {
	local n=$1 r
	if [ ! -e "$rw/journal.$n" ]; then
		verdict="no journal: boot $n was cut before its writer started"
		return
	fi
	r=$(cat "$rw/result.$n" 2>/dev/null || echo "missing")
	verdict=$r
	case $r in
	pass) verified=$((verified + 1)) ;;
	violations*)
		violations=$((violations + 1))
		echo "powercut: cycle $n: $r; first of them:"
		grep -m 5 '^VIOLATION' "$rw/verify.$n.log" | sed 's/^/    /'
		;;
	early) early=$((early + 1)); cuts=$((cuts - 1)) ;;
	*) errors=$((errors + 1)); echo "powercut: cycle $n: verification $r" ;;
	esac
}

# watchdog_report N: what boot N's guest saw while it hung, if it hung
# (powercut-guest.sh's watchdog): its first and last samples
watchdog_report() {
	local f=$rw/watchdog.$1
	[ -s "$f" ] || return 0
	echo "powercut: boot $1 hung; the guest's watchdog ($f):"
	awk '/^watchdog: at /{n++} n==1' "$f" | sed 's/^/    /' | head -n 60
	echo "    ... last sample:"
	awk '/^watchdog: at /{n++; b=""} {b=b $0 "\n"} END {printf "%s", b}' "$f" |
		sed 's/^/    /' | head -n 60
}

boot() {
	local cycle=$1 mode=$2 kill=$3 t0 t1 rc args=()
	[ -z "$kill" ] || args=(--kill-when "$rw/ready.$cycle" --kill-after "$kill")
	t0=$(date +%s.%N)
	"$top/qemu/vm" --kernel "$KVER" --disk "$out/cache.img" \
		--disk "$out/origin.img" --rwdir "$rw" --timeout "${VM_TIMEOUT:-600}" \
		--log "$out/console.$cycle.log" "${args[@]}" -- \
		"$here/powercut-guest.sh" "$CRASH_STACK" "$cycle" \
		$((SEED * 1000 + cycle)) "$mode" >"$out/vm.$cycle.log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	boot_time=$(echo "$t1 - $t0" | bc)
	ready_at=
	if [ -e "$rw/ready.$cycle" ]; then
		ready_at=$(echo "$(date -r "$rw/ready.$cycle" +%s.%N) - $t0" | bc)
	fi
	return $rc
}

while [ "$cuts" -lt "$CYCLES" ] && [ "$cycle" -le "$max_boots" ]; do
	kill=$(rand_between "$CUT_MIN" "$CUT_MAX" $((SEED + cycle)))
	boot "$cycle" write "$kill"
	rc=$?
	total_time=$(echo "$total_time + $boot_time" | bc)
	# QEMU itself sometimes dies during boot under TCG (an assertion in
	# its MSI-X emulation): the guest never ran, nothing was touched,
	# boot again.
	if [ "$rc" -eq 125 ] && [ ! -e "$rw/stack.$cycle.err" ] &&
	   [ "$vm_retries" -lt 3 ]; then
		vm_retries=$((vm_retries + 1))
		echo "powercut: boot $cycle: the VM died before the guest ran ($(grep -a -m1 -o 'qemu-system[^ ]*: .*' "$out/vm.$cycle.log" | cut -c1-120)); booting again"
		continue
	fi
	verdict=-
	[ "$cycle" -eq 1 ] || judge $((cycle - 1))
	# The host cuts a boot whose writer never got ready only at the
	# timeout: that boot hung.
	hung=0
	[ -n "$ready_at" ] ||
		[ "$(echo "$boot_time >= ${VM_TIMEOUT:-600}" | bc)" = 0 ] || hung=1
	if [ -e "$out/rw/status.$cycle" ] || [ "$rc" -ne 0 ] || [ "$hung" = 1 ]; then
		[ "$hung" = 0 ] || echo "powercut: boot $cycle hung: no writer ready after ${boot_time}s"
		echo "powercut: boot $cycle failed (exit $rc, $(cat "$rw/status.$cycle" 2>/dev/null)); guest output:"
		sed 's/^/    /' "$out/vm.$cycle.log" | tail -n 15
		watchdog_report "$cycle"
		errors=$((errors + 1))
		break
	fi
	if [ -n "$ready_at" ]; then
		cuts=$((cuts + 1))
		writes=$(grep -c '^C' "$rw/journal.$cycle")
		flushes=$(grep -c '^F' "$rw/journal.$cycle")
		printf 'powercut: boot %d: %.1fs, writer ready at %.1fs, cut %.1fs later (%d writes, %d flushes journaled); previous: %s\n' \
			"$cycle" "$boot_time" "$ready_at" "$kill" \
			"$writes" "$flushes" "$verdict"
	else
		printf 'powercut: boot %d: %.1fs, ended before the writer was ready (not a cut point); previous: %s\n' \
			"$cycle" "$boot_time" "$verdict"
	fi
	cycle=$((cycle + 1))
done

if [ "$errors" -eq 0 ]; then
	for try in 1 2 3; do
		boot "$cycle" verify ""
		rc=$?
		[ "$rc" -eq 125 ] && [ ! -e "$rw/stack.$cycle.err" ] || break
		vm_retries=$((vm_retries + 1))
		echo "powercut: boot $cycle: the VM died before the guest ran; booting again"
	done
	total_time=$(echo "$total_time + $boot_time" | bc)
	judge $((cycle - 1))
	printf 'powercut: boot %d: %.1fs, verify only; previous: %s\n' "$cycle" "$boot_time" "$verdict"
	if [ "$rc" -ne 0 ]; then
		echo "powercut: final boot failed (exit $rc)"
		sed 's/^/    /' "$out/vm.$cycle.log" | tail -n 15
		watchdog_report "$cycle"
		errors=$((errors + 1))
	fi
fi

boots=$((cycle + vm_retries))
printf 'powercut: %d boots in %.0fs (%.1fs per boot), %d early cuts not counted, %d VM start failures retried, %d errors\n' \
	"$boots" "$total_time" "$(echo "$total_time / $boots" | bc -l)" "$early" "$vm_retries" "$errors"
echo "$cuts cut points, $verified verified, $violations violations"
[ "$errors" -eq 0 ] && [ "$violations" -eq 0 ] && [ "$cuts" -ge "$CYCLES" ] &&
	[ "$verified" -eq "$cuts" ]
