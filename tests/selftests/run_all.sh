#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run dm-tac VM selftests (kselftest runner style) inside one VM boot.
#
#   run_all.sh [-t TIMEOUT] [-o COUNTS_FILE] [-x TEST]... [TEST...]
#
# Without TEST arguments, runs every executable tac_*.sh here in name
# order, but those named with -x (tests/check.sh runs some of them in a
# VM of their own).  Each test's TAP output is indented under one top-level TAP line.
# Prints "N passed, N failed, N skipped" (counting test cases) and writes
# the same three numbers to COUNTS_FILE, after every test: a VM killed
# by its time limit still reports the tests that ended, and
# COUNTS_FILE.running names the test that was cut short.  Exit 1 if
# anything failed.

set -u
here=$(cd "$(dirname "$0")" && pwd)
timeout=${TAC_TEST_TIMEOUT:-900}
counts=
skip=" "

while getopts "t:o:x:" opt; do
	case $opt in
	t) timeout=$OPTARG ;;
	o) counts=$OPTARG ;;
	x) skip+="$(basename "$OPTARG") " ;;
	*) echo "usage: $0 [-t timeout] [-o counts_file] [-x test]... [test...]"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

if [ $# -gt 0 ]; then
	tests=("$@")
else
	tests=()
	for t in "$here"/tac_*.sh; do
		[[ "$skip" == *" $(basename "$t") "* ]] && continue
		[ -x "$t" ] && tests+=("$t")
	done
fi

passed=0
failed=0
skipped=0
n=0
echo "TAP version 13"
echo "1..${#tests[@]}"
for t in "${tests[@]}"; do
	[ -e "$t" ] || t=$here/$t
	name=$(basename "$t" .sh)
	n=$((n + 1))
	out=$(mktemp)
	[ -z "$counts" ] || echo "$name" >"$counts.running"
	start=$(date +%s)
	timeout -k 10 "$timeout" "$t" >"$out" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	sed 's/^/# /' "$out"
	p=$(grep -cE '^ok [0-9]+' "$out")
	s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$out")
	f=$(grep -cE '^not ok [0-9]+' "$out")
	p=$((p - s))
	case $rc in
	0)
		echo "ok $n selftests: dm-tac: $name (${secs}s)" ;;
	4)
		s=$((s + 1))
		echo "ok $n selftests: dm-tac: $name # SKIP (${secs}s)" ;;
	124|137)
		f=$((f + 1))
		echo "not ok $n selftests: dm-tac: $name # TIMEOUT after ${timeout}s" ;;
	*)
		# A test that dies without reporting a failed case still fails.
		[ "$f" -gt 0 ] || f=1
		echo "not ok $n selftests: dm-tac: $name # exit=$rc (${secs}s)" ;;
	esac
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	rm -f "$out"
	[ -z "$counts" ] || echo "$passed $failed $skipped" >"$counts"
	# Leave nothing behind for the next test.
	dmsetup remove_all >/dev/null 2>&1
done

echo "$passed passed, $failed failed, $skipped skipped"
[ -z "$counts" ] || echo "$passed $failed $skipped" >"$counts"
[ -z "$counts" ] || rm -f "$counts.running"
[ "$failed" -eq 0 ]
