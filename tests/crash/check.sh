#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The crash tests, host side: each part is one test case.
#
#   tests/crash/check.sh PART...
#
# Parts:
#   selftest                  host-only: the verifier catches forged
#                             damage, logreplay on an ideal disk's log
#   replay:KVER[:STACK]       logwrites.sh in one VM boot (STACK: plain)
#   powercut:KVER[:STACK]     powercut.sh (CYCLES cut points)
#   fuzz:KVER                 fuzz.sh: dm-tac over IMAGES caches with
#                             random bits of their metadata inverted
#
# A part on a stack that is broken on purpose (noflush, lossy) passes
# when the crash test FAILS it: that is the test of the tests.  Other
# stacks (plain, pagecache, tac) must pass.  Environment is passed on
# (WRITES, SUBSETS, MAX_STATES, CYCLES, SEED, ...).  Ends with
# "N passed, N failed" and exits non-zero if anything failed.

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/crash
out=$top/out/crash
mkdir -p "$out"
[ $# -gt 0 ] || set -- selftest replay:6.1 powercut:6.1

passed=0 failed=0

verdict() {	# verdict DESC RC EXPECT(pass|fail) SUMMARY
	local desc=$1 rc=$2 expect=$3 summary=$4 good=0
	if [ "$expect" = pass ] && [ "$rc" -eq 0 ]; then good=1; fi
	if [ "$expect" = fail ] && [ "$rc" -eq 1 ]; then good=1; fi
	if [ $good = 1 ]; then
		passed=$((passed + 1))
		echo "ok - $desc: $summary"
	else
		failed=$((failed + 1))
		echo "not ok - $desc: expected the crash test to $expect (exit $([ "$expect" = pass ] && echo 0 || echo 1)), got exit $rc: $summary"
	fi
}

expect_for() {
	case $1 in
	noflush | lossy) echo fail ;;
	*) echo pass ;;
	esac
}

# The guest does not inherit this environment: pass the knobs on.
guest_env() {
	local v
	for v in WRITES FLUSH_MAX SUBSETS SEED MAX_STATES STOP_AFTER CACHE_MIB \
		 ORIGIN_MIB IMAGES BITS_MAX CRASH_TAC_ARGS; do
		[ -z "${!v:-}" ] || printf '%s=%s\n' "$v" "${!v}"
	done
}

# kernel_reports LOG...: the kernel reports (KASAN, lockdep, UBSAN, WARN,
# kmemleak, ...) qemu/vm printed in these logs of a part's VMs
kernel_reports() {
	grep -ahE '^vm: (\| |the kernel reported problems|kmemleak found|lockdep turned itself off)' "$@" 2>/dev/null |
		head -n 300 | sed 's/^/#   /'
}

make -s -C "$here" || { echo "0 passed, 1 failed"; exit 1; }
for part in "$@"; do
	IFS=: read -r what kver stack <<<"$part"
	stack=${stack:-plain}
	start=$(date +%s)
	case $what in
	selftest)
		log=$out/selftest.log
		"$here/test_verify.sh" >"$log" 2>&1
		rc=$?
		verdict "self-test (no VM)" "$((rc != 0))" pass "$(tail -n 1 "$log")"
		;;
	replay)
		log=$out/replay-$kver-$stack.log
		rw=$out/replay-$kver-$stack
		rm -rf "$rw"
		mkdir -p "$rw"
		"$top/qemu/vm" --kernel "$kver" --rwdir "$rw" \
			--log "$out/replay-$kver-$stack.console.log" -- \
			env $(guest_env) CRASH_STACK="$stack" "$here/logwrites.sh" >"$log" 2>&1
		rc=$?
		line=$(grep -a -E '^logwrites: [0-9]+ crash states checked' "$log" | tail -n 1)
		sum=$(grep -a -E '^logreplay: [0-9]+ crash states checked' "$log" | tail -n 1)
		[ -n "$line" ] || [ "$rc" -ne 0 ] || rc=2
		verdict "replay on $kver, stack $stack" "$rc" "$(expect_for "$stack")" "${sum:-no summary, see $log}"
		grep -a -m 3 -A 3 '^replay: state' "$log" | sed 's/^/#   /'
		kernel_reports "$log"
		;;
	powercut)
		log=$out/powercut-$kver-$stack.log
		KVER=$kver CRASH_STACK=$stack "$here/powercut.sh" >"$log" 2>&1
		rc=$?
		line=$(grep -E '^[0-9]+ cut points' "$log" | tail -n 1)
		# powercut.sh exits 1 on violations and on errors: tell them apart
		if [ "$rc" -ne 0 ] && grep -q ' [1-9][0-9]* violations$' <<<"$line" &&
		   grep -q ', 0 errors$' "$log"; then
			rc=1
		elif [ "$rc" -ne 0 ]; then
			rc=2
		fi
		verdict "power cut on $kver, stack $stack" "$rc" "$(expect_for "$stack")" \
			"${line:-no summary}; $(grep -E '^powercut: [0-9]+ boots' "$log")"
		grep -m 3 -A 2 '^powercut: cycle [0-9]*: violations' "$log" | sed 's/^/#   /'
		# a boot that failed: why, and what a hung guest waited on
		grep -E -A 140 '^powercut: (boot [0-9]+|final boot) failed' "$log" |
			head -n 150 | sed 's/^/#   /'
		kernel_reports "$out/powercut-$kver-$stack"/vm.*.log
		;;
	fuzz)
		log=$out/fuzz-$kver.log
		rw=$out/fuzz-$kver
		rm -rf "$rw"
		mkdir -p "$rw"
		"$top/qemu/vm" --kernel "$kver" --rwdir "$rw" \
			--log "$out/fuzz-$kver.console.log" -- \
			env $(guest_env) "$here/fuzz.sh" >"$log" 2>&1
		rc=$?
		line=$(grep -a -E '^fuzz: [0-9]+ images' "$log" | tail -n 1)
		[ -n "$line" ] || [ "$rc" -ne 0 ] || rc=2
		verdict "bad metadata on $kver" "$rc" pass "${line:-no summary, see $log}"
		grep -a -m 3 -A 3 '^fuzz: image' "$log" | sed 's/^/#   /'
		kernel_reports "$log"
		;;
	*)
		echo "unknown part '$part' (selftest, replay:KVER[:STACK], powercut:KVER[:STACK], fuzz:KVER)"
		exit 2
		;;
	esac
	echo "# $part took $(($(date +%s) - start))s"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
