#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The whole test run: user-space unit tests, then the VM selftests in one
# boot per kernel.  Ends with one line "N passed, N failed, N skipped"
# (test cases, all parts together) and exits non-zero if anything failed,
# including a part that could not run at all.
#
#   tests/check.sh [unit] [vm:KVER]...     default: unit vm:6.1 vm:6.12
#   TESTS="tac_hits.sh ..."                 only these VM selftests
#   SERIAL=1                                one VM at a time
#
# The VMs of different kernels run side by side (a TCG guest running one
# test at a time keeps about one host core busy); their output is shown
# one after the other.

set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
out=$top/out/check
mkdir -p "$out"

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(unit vm:6.1 vm:6.12)

passed=0
failed=0
skipped=0
broken=()

add() {
	passed=$((passed + $1))
	failed=$((failed + $2))
	skipped=$((skipped + $3))
}

vm_run() {
	local k=$1 rw=$out/vm-$1
	rm -rf "$rw"
	mkdir -p "$rw"
	# shellcheck disable=SC2086
	qemu/vm --kernel "$k" --cpus "$vm_cpus" --rwdir "$rw" \
		--log "$out/console-$k.log" \
		-- tests/selftests/run_all.sh -o "$rw/counts" ${TESTS:-} \
		>"$out/vm-$k.log" 2>&1
	echo $? >"$rw.rc"
}

vm_collect() {
	local k=$1 rw=$out/vm-$1 rc
	echo "== VM selftests on $k"
	cat "$out/vm-$k.log"
	rc=$(cat "$rw.rc" 2>/dev/null || echo 125)
	if [ -r "$rw/counts" ]; then
		add $(cat "$rw/counts")
	fi
	if [ ! -r "$rw/counts" ] || [ "$rc" -ge 124 ]; then
		broken+=("VM selftests on $k: exit $rc (see $out/console-$k.log)")
	fi
}

vms=()
for part in "${parts[@]}"; do
	case $part in
	unit)
		start=$(date +%s)
		echo "== unit tests"
		make -s --no-print-directory -C tests/unit check 2>&1 |
			tee "$out/unit.log"
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/unit.log" |
		       tail -n1)
		if [ -z "$line" ]; then
			broken+=("unit tests did not run to the end")
		else
			add $(echo "$line" | awk '{ print $1, $3, 0 }')
		fi
		echo "== unit tests took $(( $(date +%s) - start ))s"
		;;
	vm:*)
		vms+=("${part#vm:}")
		;;
	*)
		echo "unknown part '$part'" >&2
		exit 2
		;;
	esac
done

if [ ${#vms[@]} -gt 0 ]; then
	start=$(date +%s)
	# Build every kernel's module first: builds share dm-tac/.
	for k in "${vms[@]}"; do
		make -s -C "$top" module KVER="$k" >/dev/null 2>&1 ||
			broken+=("building dm-tac for $k failed")
	done
	# Never more guest CPUs than host cores in all: an overcommitted TCG
	# guest waits for descheduled vCPUs (TLB shootdowns, RCU), and
	# device-mapper table loads got five times slower that way.
	ncpu=$(nproc)
	if [ "${SERIAL:-0}" = 1 ]; then
		vm_cpus=$ncpu
	else
		vm_cpus=$((ncpu / ${#vms[@]}))
	fi
	[ "$vm_cpus" -ge 1 ] || vm_cpus=1
	[ "$vm_cpus" -le 4 ] || vm_cpus=4
	echo "== ${#vms[@]} VM(s), $vm_cpus CPU(s) each, $ncpu host cores"
	if [ "${SERIAL:-0}" = 1 ]; then
		for k in "${vms[@]}"; do
			vm_run "$k"
		done
	else
		for k in "${vms[@]}"; do
			vm_run "$k" &
		done
		wait
	fi
	for k in "${vms[@]}"; do
		vm_collect "$k"
	done
	echo "== VM selftests took $(( $(date +%s) - start ))s"
fi

for b in "${broken[@]}"; do
	echo "BROKEN: $b"
	failed=$((failed + 1))	# a part that did not run is a failure
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ ${#broken[@]} -eq 0 ]
