#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The whole test run: user-space unit tests, the VM selftests in one boot
# per kernel, and the crash tests.  Ends with one line
# "N passed, N failed, N skipped" (test cases, all parts together) and
# exits non-zero if anything failed, including a part that could not run
# at all.
#
#   tests/check.sh [PART]...
#     unit          user-space unit tests, the check that the status
#                   field list matches the Documentation and tac_status(),
#                   and tacsim's trace readers and options
#     vmrunner      qemu/vm's KVM probe and stall watchdog, with a
#                   stand-in QEMU (no VM)
#     install       make install, the systemd unit, DKMS's file list (no
#                   VM; tests/install/check.sh host)
#     vm:KVER       VM selftests (tests/selftests) on kernel 6.1 or 6.12
#     vm2:KVER      the VM selftests that need two CPUs to race
#                   (VM2_TESTS, default tac_coherence.sh,
#                   tac_streams.sh, whose reader moves between CPUs
#                   while its split requests wait, and tac_lockless.sh,
#                   hits without the lock racing remaps), in a VM of
#                   their own with 2 CPUs after the other VMs; a vm:KVER
#                   part then leaves them out
#     crash:SPEC    a part of tests/crash/check.sh: selftest,
#                   replay:KVER:STACK, powercut:KVER:STACK, fuzz:KVER;
#                   SPEC+SPEC... runs them one after the other in one lane
#     beside:crash:SPEC  the same, run beside the 2-CPU VM (phase 3) at
#                   the lowest CPU priority (SCHED_IDLE): for a part that
#                   does not depend on timing (fuzz, replay)
#   default: unit vmrunner install vm:6.1 vm:6.12
#   ONE_KERNEL_TESTS="..."    VM selftests run on one kernel only, dealt
#                             out in turn (by name) among the vm:KVER
#                             parts, or in the 2-CPU VM when they are
#                             among its tests.  What they test is the
#                             module's own logic, the same on every
#                             kernel: the table line, messages, status,
#                             the policy's choices, the lockless hits'
#                             counts, metadata reload, the user-space
#                             tools, and write-back's races, whose
#                             interleavings the test forces with gates,
#                             not timing.  Every test of the I/O path
#                             against the block layer (data through
#                             every mode over asynchronous devices,
#                             flushes, FUA, errors, torture) runs on
#                             every kernel.  "" runs every test on every
#                             kernel; a lone vm:KVER runs them all
#   TESTS="tac_hits.sh ..."   only these VM selftests
#   TORTURE_SECONDS=N         passed on to tac_torture.sh in the VMs
#   TORTURE_SHARE=1           with two vm:KVER kernels, tac_torture.sh's
#                             scenarios shared out between them
#                             (TORTURE_PART, see the test), each a
#                             different half of the (mode, block size)
#                             pairs, every mode and every stack on each;
#                             unset, or other kernel counts: every
#                             scenario on every kernel
#   TACMETA_IMAGES=N          randomly damaged images tac_tacmeta.sh
#                             checks (default 10)
#   TAC_TEST_TIMEOUT=S        time limit of each VM selftest (default 600;
#                             the longest, tac_torture and tac_wb_races,
#                             take 160-210 s)
#   VM_TIMEOUT=S              time limit of each VM (default 2400 for the
#                             selftest VMs, qemu/vm's own for the rest):
#                             a 1-CPU VM runs its selftests in 830-930 s on
#                             an idle 2-core host and took over 1200 s on
#                             a loaded one; the limit leaves room for that
#                             and one test cut at TAC_TEST_TIMEOUT, which
#                             then fails alone instead of the whole VM
#   SERIAL=1                  one VM at a time
#   VM_SPLIT=N                each vm:KVER part's selftests shared out
#                             among N VMs side by side (lanes KVER_lane1..N,
#                             logs likewise; make check-debug, where a
#                             KASAN guest runs each test 5 to 25 times
#                             slower)
#
# Parts run in three phases: unit tests, vmrunner and host-only crash
# self-tests; then every vm: part and every crash: part that boots VMs,
# as a queue: as many at once as the host has cores (each VM then gets
# host cores / VMs CPUs), the next as soon as one ends, in the order
# given (longest first packs best); then every vm2: part alone (2 CPUs
# each).  With a vm2: part, the unit tests and the beside:crash: parts
# run in phase 3, beside it at the lowest priority (beside_run), on
# the host CPU it leaves idle.  A TCG guest keeps about one host core busy per guest CPU:
# overcommitted guests wait for descheduled vCPUs (TLB shootdowns, RCU)
# and device-mapper table loads got five times slower that way.

set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
out=$top/out/check
mkdir -p "$out"

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(unit vmrunner install vm:6.1 vm:6.12)

passed=0
failed=0
skipped=0
broken=()
t_all=$(date +%s)

add() {
	passed=$((passed + $1))
	failed=$((failed + $2))
	skipped=$((skipped + $3))
}

# lane_cpus N: CPUs for each of N VMs running at once
lane_cpus() {
	local n
	if [ "${SERIAL:-0}" = 1 ]; then
		n=$(nproc)
	else
		n=$(( $(nproc) / $1 ))
	fi
	[ "$n" -ge 1 ] || n=1
	[ "$n" -le 4 ] || n=4
	echo "$n"
}

# lane_slots N: how many of N VMs run at once (one per host core at
# most; one under SERIAL=1)
lane_slots() {
	local n=$1
	[ "${SERIAL:-0}" != 1 ] || n=1
	[ "$n" -le "$(nproc)" ] || n=$(nproc)
	echo "$n"
}

# run_queue SLOTS FUNC ARG...: FUNC ARG for every ARG in order, SLOTS at
# once, the next as soon as one ends
run_queue() {
	local slots=$1 f=$2 a running=0
	shift 2
	for a in "$@"; do
		if [ "$running" -ge "$slots" ]; then
			wait -n
			running=$((running - 1))
		fi
		"$f" "$a" &
		running=$((running + 1))
	done
	wait
}

VM2_TESTS=${VM2_TESTS:-tac_coherence.sh tac_streams.sh tac_lockless.sh}
TAC_TEST_TIMEOUT=${TAC_TEST_TIMEOUT:-600}
SELFTEST_VM_TIMEOUT=${VM_TIMEOUT:-2400}
ONE_KERNEL_TESTS=${ONE_KERNEL_TESTS-tac_activate.sh tac_ctr_bad_input.sh tac_hit_release.sh tac_hits.sh tac_lockless.sh tac_messages.sh tac_scan_resistance.sh tac_split.sh tac_status_table.sh tac_superblock.sh tac_tacmeta.sh tac_warm_restart.sh tac_wb_races.sh}

# vm_kernels: the kernels of the vm: parts, once each, in order
vm_kernels() {
	printf '%s\n' "${vms[@]%_lane*}" | awk '!seen[$0]++'
}

# kernel_tests KVER: the selftests KVER's vm: part runs, by name: all
# but those of the 2-CPU VM (when KVER has one) and the one-kernel tests
# dealt to another kernel (or run in a 2-CPU VM).
kernel_tests() {
	local k=$1 t name i=0 ks
	mapfile -t ks < <(vm_kernels)
	for t in tests/selftests/tac_*.sh; do
		name=$(basename "$t")
		[ -x "$t" ] || continue
		if [[ " $VM2_TESTS " == *" $name "* ]] && [ ${#vms2[@]} -gt 0 ]; then
			[[ " ${vms2[*]} " == *" $k "* ]] && continue
			[[ " $ONE_KERNEL_TESTS " == *" $name "* ]] && continue
		fi
		if [[ " $ONE_KERNEL_TESTS " == *" $name "* ]]; then
			[ "${ks[i % ${#ks[@]}]}" = "$k" ] || { i=$((i + 1)); continue; }
			i=$((i + 1))
		fi
		echo "$name"
	done
}

# vm_tests KVER LANE: the selftests lane LANE (1..VM_SPLIT) of KVER's
# VM runs: kernel_tests dealt out in turn.
vm_tests() {
	local n=0 name
	for name in $(kernel_tests "$1"); do
		n=$((n + 1))
		[ $(( (n - 1) % VM_SPLIT + 1 )) -eq "$2" ] && echo "$name"
	done
}

# torture_part KVER: TORTURE_PART=K/2 for KVER's share of tac_torture.sh
# under TORTURE_SHARE=1 with two vm: kernels (K this one's place); with
# one or more than two, every kernel runs every scenario
torture_part() {
	local ks i
	[ "${TORTURE_SHARE:-0}" = 1 ] || return 0
	mapfile -t ks < <(vm_kernels)
	[ ${#ks[@]} -eq 2 ] || return 0
	for i in "${!ks[@]}"; do
		[ "${ks[i]}" = "$1" ] && echo "TORTURE_PART=$((i + 1))/${#ks[@]}"
	done
}

# vm_run KVER or KVER_laneN
vm_run() {
	local k=${1%_lane*} rw=$out/vm-$1 sel=() part
	rm -rf "$rw"
	mkdir -p "$rw"
	if [ -n "${TESTS:-}" ]; then
		# shellcheck disable=SC2206
		sel=(${TESTS})
	elif [[ $1 == *_lane* ]]; then
		mapfile -t sel < <(vm_tests "$k" "${1##*_lane}")
	else
		mapfile -t sel < <(kernel_tests "$k")
	fi
	if [ ${#sel[@]} -eq 0 ]; then
		# A lane with nothing dealt to it (VM_SPLIT above the test
		# count): run_all.sh with no names would run every test.
		echo "0 0 0" >"$rw/counts"
		echo "no selftests for this lane" >"$out/vm-$1.log"
		echo 0 >"$rw.rc"
		return
	fi
	part=$(torture_part "$k")
	# shellcheck disable=SC2086
	qemu/vm --kernel "$k" --rwdir "$rw" --log "$out/console-$1.log" \
		--timeout "$SELFTEST_VM_TIMEOUT" \
		-- env ${TORTURE_SECONDS:+TORTURE_SECONDS=$TORTURE_SECONDS} $part \
		${TACMETA_IMAGES:+TACMETA_IMAGES=$TACMETA_IMAGES} \
		tests/selftests/run_all.sh -o "$rw/counts" \
		${TAC_TEST_TIMEOUT:+-t $TAC_TEST_TIMEOUT} "${sel[@]}" \
		>"$out/vm-$1.log" 2>&1
	echo $? >"$rw.rc"
}

# vm2:KVER: the racing tests in a VM with 2 CPUs (run_phase gives a lone
# VM the host's cores).  The lane is named vm2-KVER, its logs likewise.
vm2_run() {
	local k=$1 rw=$out/vm2-$1
	rm -rf "$rw"
	mkdir -p "$rw"
	# shellcheck disable=SC2086
	qemu/vm --kernel "$k" --rwdir "$rw" --log "$out/console2-$k.log" \
		--timeout "$SELFTEST_VM_TIMEOUT" \
		-- env ${TORTURE_SECONDS:+TORTURE_SECONDS=$TORTURE_SECONDS} \
		tests/selftests/run_all.sh -o "$rw/counts" \
		${TAC_TEST_TIMEOUT:+-t $TAC_TEST_TIMEOUT} $VM2_TESTS \
		>"$out/vm2-$k.log" 2>&1
	echo $? >"$rw.rc"
}

# cut_short RWDIR: ", in TEST" when the VM ended while TEST ran
# (run_all.sh names the running test beside its counts)
cut_short() {
	[ -r "$1/counts.running" ] && echo ", in $(cat "$1/counts.running")"
}

vm2_collect() {
	local k=$1 rw=$out/vm2-$1 rc
	echo "== VM selftests on $k, $VM_CPUS CPUs: $VM2_TESTS"
	cat "$out/vm2-$k.log"
	rc=$(cat "$rw.rc" 2>/dev/null || echo 125)
	if [ -r "$rw/counts" ]; then
		add $(cat "$rw/counts")
	fi
	if [ ! -r "$rw/counts" ] || [ "$rc" -ge 124 ]; then
		broken+=("VM selftests ($VM2_TESTS) on $k: exit $rc$(cut_short "$rw") (see $out/console2-$k.log)")
	fi
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
		broken+=("VM selftests on $k: exit $rc$(cut_short "$rw") (see $out/console-$k.log)")
	fi
}

crash_log() {
	local n=${1//:/-}
	echo "$out/crash-${n//+/_}.log"
}

crash_run() {
	# shellcheck disable=SC2046
	bash tests/crash/check.sh $(tr + ' ' <<<"$1") >"$(crash_log "$1")" 2>&1
}

crash_collect() {
	local log line
	log=$(crash_log "$1")
	echo "== crash test $1"
	grep -v -E '^[0-9]+ passed, [0-9]+ failed$' "$log"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
	if [ -z "$line" ]; then
		broken+=("crash test $1 did not run to the end (see $log)")
	else
		add $(echo "$line" | awk '{ print $1, $3, 0 }')
	fi
}

vms=()
vms2=()
crash_host=()
crash_vm=()
crash_beside=()
unit_beside=0
for part in "${parts[@]}"; do
	case $part in
	unit | vmrunner | install) ;;
	vm:*)
		if [ "${VM_SPLIT:-1}" -gt 1 ]; then
			for ((i = 1; i <= VM_SPLIT; i++)); do
				vms+=("${part#vm:}_lane$i")
			done
		else
			vms+=("${part#vm:}")
		fi
		;;
	vm2:*) vms2+=("${part#vm2:}") ;;
	crash:selftest) crash_host+=(selftest) ;;
	crash:*) crash_vm+=("${part#crash:}") ;;
	beside:crash:*) crash_beside+=("${part#beside:crash:}") ;;
	*)
		echo "unknown part '$part'" >&2
		exit 2
		;;
	esac
done

# host_part NAME TITLE COMMAND...: a host-only part whose COMMAND ends
# with "N passed, N failed", its output in $out/NAME.log.  As host_mode
# says: now (run, print and count it), forget (remove an earlier run's
# log: the part runs later), quiet (run it only, beside the 2-CPU VM:
# see beside_run), collect (print its log and count it).
host_mode=now
host_part() {
	local name=$1 title=$2 start
	shift 2
	case $host_mode in
	forget)
		rm -f "$out/$name.log" "$out/$name.secs"
		return ;;
	collect)
		host_collect "$name" "$title" print
		return ;;
	esac
	start=$(date +%s)
	if [ "$host_mode" = quiet ]; then
		"$@" >"$out/$name.log" 2>&1
		echo $(( $(date +%s) - start )) >"$out/$name.secs"
		return
	fi
	echo "== $title"
	"$@" 2>&1 | tee "$out/$name.log"
	echo $(( $(date +%s) - start )) >"$out/$name.secs"
	host_collect "$name" "$title"
}

# host_collect NAME TITLE [print]: count a host part's cases (print its
# log first)
host_collect() {
	local name=$1 title=$2 line
	[ "${3:-}" != print ] ||
		{ echo "== $title"; cat "$out/$name.log" 2>/dev/null; }
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/$name.log" \
	       2>/dev/null | tail -n1)
	if [ -z "$line" ]; then
		broken+=("$title did not run to the end")
	else
		add $(echo "$line" | awk '{ print $1, $3, 0 }')
	fi
	echo "== $title took $(cat "$out/$name.secs" 2>/dev/null || echo ?)s"
}

unit_parts() {
	host_part unit "unit tests" \
		make -s --no-print-directory -C tests/unit check
	host_part status-fields "status field list (dm-tac/status-fields)" \
		bash tests/status-fields/run.sh
	host_part tacsim "tacsim's trace readers and options (make -C tools check)" \
		make -s --no-print-directory -C tools check
}

# Phase 1: host only.
for part in "${parts[@]}"; do
	case $part in
	unit)
		# With a 2-CPU VM, beside it (beside_run)
		if [ ${#vms2[@]} -gt 0 ]; then
			unit_beside=1
			host_mode=forget unit_parts
		else
			unit_parts
		fi
		;;
	vmrunner)
		host_part vmrunner "qemu/vm tests (stand-in QEMU, no VM)" \
			bash tests/vmrunner/run.sh
		;;
	install)
		host_part install "install tests, host half (no VM)" \
			bash tests/install/check.sh host
		;;
	esac
done
for c in "${crash_host[@]}"; do
	crash_run "$c"
	crash_collect "$c"
done

# Build every kernel's module first: builds share dm-tac/.  And the C
# tools the VM selftests run (tests/torture).
if [ ${#vms[@]} -gt 0 ] || [ ${#vms2[@]} -gt 0 ]; then
	make -s -C tests/torture >/dev/null 2>&1 ||
		broken+=("building tests/torture failed")
fi
for k in $(printf '%s\n' "${vms[@]%_lane*}" "${vms2[@]}" "${crash_vm[@]}" \
	   "${crash_beside[@]}" | tr + '\n' |
	   sed -E 's/^[a-z]+:([^:]+).*/\1/' | sort -u); do
	make -s -C "$top" module KVER="$k" >/dev/null 2>&1 ||
		broken+=("building dm-tac for $k failed")
	# The disk model, which tac_flush_errors.sh loads itself.
	make -s -C "$top" hddsim KVER="$k" >/dev/null 2>&1 ||
		broken+=("building dm-hddsim for $k failed")
done

# run_phase TITLE RUN COLLECT ITEM...: RUN every ITEM, as many at once
# as the host has cores, with the host's cores shared among their VMs,
# then COLLECT each in order.
run_phase() {
	local title=$1 run=$2 collect=$3 start i slots
	shift 3
	[ $# -gt 0 ] || return 0
	start=$(date +%s)
	slots=$(lane_slots $#)
	export VM_CPUS
	VM_CPUS=$(lane_cpus "$slots")
	echo "== $title: $# part(s), $slots at once, $VM_CPUS CPU(s) per VM, $(nproc) host cores"
	run_queue "$slots" "$run" "$@"
	for i in "$@"; do
		"$collect" "$i"
	done
	echo "== $title took $(( $(date +%s) - start ))s"
}

# A part of phase 2: a vm: lane (KVER or KVER_laneN) or a crash: part
# (crash:SPEC).
vm_or_crash_run() {
	case $1 in
	crash:*) crash_run "${1#crash:}" ;;
	*) vm_run "$1" ;;
	esac
}

vm_or_crash_collect() {
	case $1 in
	crash:*) crash_collect "${1#crash:}" ;;
	*) vm_collect "$1" ;;
	esac
}

# Phase 2: the VM selftests and the crash tests that boot VMs, as a
# queue.  Phase 3: the racing selftests, one VM at a time with the
# host's cores.
run_phase "VM selftests and crash tests" vm_or_crash_run vm_or_crash_collect \
	"${vms[@]}" "${crash_vm[@]/#/crash:}"

# Phase 3 runs these beside the 2-CPU VM: the unit tests (when there is
# a 2-CPU VM) and the beside:crash: parts, one after the other, at the
# lowest CPU priority (nice 19 and SCHED_IDLE), to take what host CPU
# the VM leaves idle.  Most of its tests keep about one of its two CPUs
# busy; tac_coherence keeps both, and beside these it took 125-146 s
# instead of 82 (nice 19 alone: 138 s), which costs back about 60 of the
# 100 s they save elsewhere.  Nothing in them depends on timing.
beside_run() {
	local c
	renice -n 19 -p "$BASHPID" >/dev/null
	chrt --idle -p 0 "$BASHPID" >/dev/null 2>&1 || true
	[ "$unit_beside" = 0 ] || host_mode=quiet unit_parts
	for c in "${crash_beside[@]}"; do
		crash_run "$c"
	done
}
beside_collect() {
	local c
	[ "$unit_beside" = 0 ] || host_mode=collect unit_parts
	for c in "${crash_beside[@]}"; do
		crash_collect "$c"
	done
}
if [ "$unit_beside" = 1 ] || [ ${#crash_beside[@]} -gt 0 ]; then
	for c in "${crash_beside[@]}"; do
		rm -f "$(crash_log "$c")"	# no earlier run's counts
	done
	beside_start=$(date +%s)
	beside_run &
	beside_pid=$!
fi
for k in "${vms2[@]}"; do
	run_phase "VM selftests on 2 CPUs" vm2_run vm2_collect "$k"
done
if [ -n "${beside_pid:-}" ]; then
	wait "$beside_pid"
	beside_collect
	echo "== beside the 2-CPU VM (SCHED_IDLE) took $(( $(date +%s) - beside_start ))s"
fi

for b in "${broken[@]}"; do
	echo "BROKEN: $b"
	failed=$((failed + 1))	# a part that did not run is a failure
done
echo "== all parts took $(( $(date +%s) - t_all ))s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ ${#broken[@]} -eq 0 ]
