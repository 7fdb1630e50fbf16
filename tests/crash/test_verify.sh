#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Host-side self-test of the crash-test tools, no VM: the writer fills an
# image file, then each kind of damage the contract forbids is forged
# into a copy and the verifier must name it (block, expected, found) and
# exit 1; what the contract allows (lost unflushed writes, in-flight
# writes that landed, a torn last journal line) must pass.  TAP output,
# last line "N passed, N failed".

set -u
here=$(cd "$(dirname "$0")" && pwd)
W=$here/writer V=$here/verify F=$here/forge
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/crash-selftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() {
	n=$((n + 1)); failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	printf '#   %s\n' "$@"
}

# expect_violation DESC IMAGE JOURNAL BLOCK PHRASE: verify must exit 1
# and report BLOCK with PHRASE, and exactly one violation.
expect_violation() {
	local desc=$1 img=$2 j=$3 b=$4 phrase=$5 out rc
	out=$("$V" --no-direct --dev "$img" --journal "$j" 2>&1)
	rc=$?
	if [ $rc -eq 1 ] && grep "^VIOLATION block $b: expected .*found" <<<"$out" | grep -q -- "$phrase" &&
	   grep -q ' 1 violations$' <<<"$out"; then
		ok "$desc"
	else
		notok "$desc" "expected exit 1 and 'VIOLATION block $b: ... $phrase', one violation" \
			"got exit $rc:" "$out"
	fi
}

# expect_pass DESC IMAGE JOURNAL [PHRASE] [VERIFY ARGS...]
expect_pass() {
	local desc=$1 img=$2 j=$3 phrase=${4:-} out rc
	shift 4 2>/dev/null || shift 3
	out=$("$V" --no-direct --dev "$img" --journal "$j" "$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && { [ -z "$phrase" ] || grep -q -- "$phrase" <<<"$out"; }; then
		ok "$desc"
	else
		notok "$desc" "expected exit 0${phrase:+ and '$phrase'}" "got exit $rc:" "$out"
	fi
}

fresh() { cp "$1" "$tmp/damaged"; echo "$tmp/damaged"; }

echo "TAP version 13"

# ---- A run that ends with a flush: every write is durable.
truncate -s 8M "$tmp/a.img"
"$W" --no-direct --dev "$tmp/a.img" --journal "$tmp/a.j" --seed 11 \
	--count 4000 --final-flush 2>/dev/null ||
	{ echo "Bail out! writer failed"; exit 1; }
run=$(sed -n 's/^R run=\([0-9a-f]*\) .*/\1/p' "$tmp/a.j")
"$V" --dump --dev "$tmp/a.img" --journal "$tmp/a.j" >"$tmp/a.dump"

expect_pass "clean image passes" "$tmp/a.img" "$tmp/a.j" " 0 violations$"

# A block with two journaled writes, the newer one flushed: the older one
# is a write that really happened, but stale.
read -r b1 old1 new1 < <(awk '$1 == "C" { if ($3 in s) { print $3, s[$3], $2; exit } s[$3] = $2 }' "$tmp/a.j")
img=$(fresh "$tmp/a.img")
"$F" "$img" "$b1" record "$run" "$b1" "$old1"
expect_violation "stale record (seq $old1 under flushed seq $new1) is caught" \
	"$img" "$tmp/a.j" "$b1" "stale: a durable write was lost"

# Blocks with a flushed write, picked from the dump: floor > 0.
mapfile -t fl < <(awk '$2 > 0 && $3 == "F" { print $1, $2 }' "$tmp/a.dump" | head -n 12)
[ ${#fl[@]} -ge 12 ] || { echo "Bail out! too few flushed blocks"; exit 1; }
set -- ${fl[@]}

img=$(fresh "$tmp/a.img")
"$F" "$img" "$1" record "$run" "$1" 0
expect_violation "lost flushed write (initial record back) is caught" \
	"$img" "$tmp/a.j" "$1" "initial record: a durable write was lost"

img=$(fresh "$tmp/a.img")
"$F" "$img" "$3" copy "$5"
expect_violation "record of another block (misdirected write) is caught" \
	"$img" "$tmp/a.j" "$3" "record of another block"

img=$(fresh "$tmp/a.img")
"$F" "$img" "$5" flip 1000
expect_violation "bad crc (one byte flipped) is caught" \
	"$img" "$tmp/a.j" "$5" "crc32c stored"

img=$(fresh "$tmp/a.img")
"$F" "$img" "$7" torn "$run" "$7" 0
expect_violation "torn write (half initial record, half newest) is caught" \
	"$img" "$tmp/a.j" "$7" "torn or corrupt record"

img=$(fresh "$tmp/a.img")
other=$(printf '%x' $((0x$run ^ 1)))
"$F" "$img" "$9" record "$other" "$9" "${10}"
expect_violation "record of an older run is caught" \
	"$img" "$tmp/a.j" "$9" "record of another run"

img=$(fresh "$tmp/a.img")
"$F" "$img" "${11}" zero
expect_violation "zeroed block after the init flush is caught" \
	"$img" "$tmp/a.j" "${11}" "zeros"

img=$(fresh "$tmp/a.img")
"$F" "$img" "${13}" garbage
expect_violation "garbage is caught" "$img" "$tmp/a.j" "${13}" "garbage"

# A seq that exists but went to another block, newer than the floor.
read -r s_other b_other < <(awk -v b="${15}" -v f="${16}" '$1 == "C" && $3 != b && $2 > f { print $2, $3; exit }' "$tmp/a.j")
img=$(fresh "$tmp/a.img")
"$F" "$img" "${15}" record "$run" "${15}" "$s_other"
expect_violation "a write of another block relabelled as this one's is caught" \
	"$img" "$tmp/a.j" "${15}" "never written to this block (it went elsewhere)"

img=$(fresh "$tmp/a.img")
"$F" "$img" "${17}" record "$run" "${17}" 99999999
expect_violation "a sequence number never issued is caught" \
	"$img" "$tmp/a.j" "${17}" "beyond any write issued"

# All ten at once: ten violations, each named.
img=$(fresh "$tmp/a.img")
"$F" "$img" "$b1" record "$run" "$b1" "$old1"
"$F" "$img" "$1" record "$run" "$1" 0
"$F" "$img" "$3" copy "$5"
"$F" "$img" "$5" flip 1000
"$F" "$img" "$7" torn "$run" "$7" 0
"$F" "$img" "$9" record "$other" "$9" "${10}"
"$F" "$img" "${11}" zero
"$F" "$img" "${13}" garbage
"$F" "$img" "${15}" record "$run" "${15}" "$s_other"
"$F" "$img" "${17}" record "$run" "${17}" 99999999
out=$("$V" --no-direct --dev "$img" --journal "$tmp/a.j" 2>&1)
rc=$?
got=$(grep -c '^VIOLATION' <<<"$out")
if [ $rc -eq 1 ] && [ "$got" = 10 ] && grep -q ' 10 violations$' <<<"$out"; then
	ok "ten damages at once: ten violations"
else
	notok "ten damages at once: ten violations" "expected exit 1 and 10, got exit $rc and $got:" "$out"
fi

# ---- A run cut short: writes after the last flush are not durable.
truncate -s 8M "$tmp/b.img"
"$W" --no-direct --dev "$tmp/b.img" --journal "$tmp/b.j" --seed 12 \
	--count 3000 --flush-max 200 --dsync 10 2>/dev/null ||
	{ echo "Bail out! writer failed"; exit 1; }
"$V" --dump --dev "$tmp/b.img" --journal "$tmp/b.j" >"$tmp/b.dump"
expect_pass "cut run passes as written" "$tmp/b.img" "$tmp/b.j" " 0 violations$"

# The newest write of a block after the last flush, not DSYNC: losing it
# (the block falls back to its durable floor) is allowed.
lastf=$(grep -n '^F' "$tmp/b.j" | tail -n1 | cut -d: -f1)
# (first file: the journal's plain completions after the last flush;
# second: the dump, "block floor how newest").
read -r ub useq < <(awk -v l="$lastf" '
	FNR == NR { if (FNR > l && $1 == "C" && NF == 3) last[$3] = $2; next }
	($1 in last) && last[$1] == $4 && $2 > 0 && $3 != "D" { print $1, $2; exit }' \
	"$tmp/b.j" "$tmp/b.dump")
img=$(fresh "$tmp/b.img")
"$F" "$img" "$ub" record "$(sed -n 's/^R run=\([0-9a-f]*\) .*/\1/p' "$tmp/b.j")" "$ub" "$useq"
expect_pass "an unflushed write lost (block $ub back to durable seq $useq) is allowed" \
	"$img" "$tmp/b.j" " 1 older than that"

# A DSYNC write is durable on completion: losing it is a violation.
read -r db dfloor < <(awk '$3 == "D" { print $1, $2; exit }' "$tmp/b.dump")
if [ -n "${db:-}" ]; then
	img=$(fresh "$tmp/b.img")
	"$F" "$img" "$db" record "$(sed -n 's/^R run=\([0-9a-f]*\) .*/\1/p' "$tmp/b.j")" "$db" 0
	expect_violation "a lost completed RWF_DSYNC write is caught" \
		"$img" "$tmp/b.j" "$db" "completed RWF_DSYNC"
else
	notok "a lost completed RWF_DSYNC write is caught" "no DSYNC floor in the run"
fi

# Cut journal: the last three completions never reached it (in flight at
# the cut) but landed on the device: allowed, and counted as such.
head -n -4 "$tmp/b.j" >"$tmp/b-cut.j"
tail -n 4 "$tmp/b.j" | head -n 3 | grep -q '^C' ||
	{ echo "Bail out! journal tail is not three completions"; exit 1; }
expect_pass "in-flight writes that landed are allowed" "$tmp/b.img" \
	"$tmp/b-cut.j" " 3 in-flight writes landed"

# A last journal line cut mid-write is ignored.
cp "$tmp/b-cut.j" "$tmp/b-torn.j"
printf 'C 1' >>"$tmp/b-torn.j"
expect_pass "a torn last journal line is ignored" "$tmp/b.img" "$tmp/b-torn.j" " 0 violations$"

# ---- Before the init flush: nothing to verify (3), or zeros/initial
# records with --pre-init.
head -n 1 "$tmp/b.j" >"$tmp/noinit.j"
out=$("$V" --no-direct --dev "$tmp/b.img" --journal "$tmp/noinit.j" 2>&1)
rc=$?
if [ $rc -eq 3 ] && grep -q 'never acknowledged' <<<"$out"; then
	ok "no init flush: exit 3, nothing to verify"
else
	notok "no init flush: exit 3, nothing to verify" "got exit $rc:" "$out"
fi
truncate -s 8M "$tmp/zero.img"
expect_pass "--pre-init accepts a zeroed device" "$tmp/zero.img" "$tmp/noinit.j" " 0 violations$" --pre-init
"$F" "$tmp/zero.img" 3 record "$run" 3 0
expect_violation_pre() {
	local out rc
	out=$("$V" --no-direct --pre-init --dev "$tmp/zero.img" --journal "$tmp/noinit.j" 2>&1)
	rc=$?
	if [ $rc -eq 1 ] && grep -q '^VIOLATION block 3: expected zeros or the initial record.*found run' <<<"$out"; then
		ok "--pre-init rejects another run's initial record"
	else
		notok "--pre-init rejects another run's initial record" "got exit $rc:" "$out"
	fi
}
expect_violation_pre

# --upto-flush: flush K in force, lines after "F K+1" ignored.
k=$(grep -c '^F' "$tmp/a.j")
out=$("$V" --no-direct --dev "$tmp/a.img" --journal "$tmp/a.j" --upto-flush $((k + 5)) 2>&1)
rc=$?
if [ $rc -eq 2 ] && grep -q "no \"F $((k + 5))\" line" <<<"$out"; then
	ok "--upto-flush beyond the journal is an error"
else
	notok "--upto-flush beyond the journal is an error" "got exit $rc:" "$out"
fi
expect_pass "--upto-flush at the last flush equals the whole journal" \
	"$tmp/a.img" "$tmp/a.j" " $k flushes in force" --upto-flush $((k - 1))

# ---- logreplay on the log an ideal disk would have written (the writer
# models dm-log-writes): every crash state passes; with every 40th
# flushed write missing from the log (a disk that lost it), states fail.
L=$here/logreplay
truncate -s 4M "$tmp/l.img" "$tmp/r.img"
"$W" --no-direct --dev "$tmp/l.img" --journal "$tmp/l.j" --seed 13 --count 400 \
	--flush-max 10 --dsync 10 --fake-log "$tmp/good.log" 2>/dev/null &&
"$W" --no-direct --dev "$tmp/l.img" --journal "$tmp/l2.j" --seed 13 --count 400 \
	--flush-max 10 --dsync 10 --fake-log "$tmp/lossy.log" --fake-log-lose 40 2>/dev/null ||
	{ echo "Bail out! writer --fake-log failed"; exit 1; }
chk="'$V' --no-direct --dev '$tmp/r.img' --journal '$tmp/l.j' --upto-flush \$CRASH_UPTO_FLUSH --pre-init >/dev/null"
out=$("$L" --log "$tmp/good.log" --dev "$tmp/r.img" --check "$chk" --subsets 2 --max-states 120 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q '120 crash states checked.*120 passed, 0 failed' <<<"$out"; then
	ok "logreplay: 120 crash states of an ideal disk's log all pass"
else
	notok "logreplay: 120 crash states of an ideal disk's log all pass" "expected exit 0, 120 passed; got exit $rc:" "$out"
fi
out=$("$L" --log "$tmp/lossy.log" --dev "$tmp/r.img" --check "$chk" --subsets 2 --stop-after 1 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -q 'FAILED' <<<"$out" && grep -q ', 1 failed' <<<"$out"; then
	ok "logreplay: a log missing flushed writes fails ($(grep -o 'state [0-9]* FAILED' <<<"$out"))"
else
	notok "logreplay: a log missing flushed writes fails" "expected exit 1 and a FAILED state; got exit $rc:" "$out"
fi
out=$(CRASH_STACK=plain CRASH_BIN=$here CRASH_JOURNAL=$tmp/l.j \
	CRASH_RCACHE=/dev/null CRASH_RORIGIN=$tmp/r.img \
	"$L" --log "$tmp/lossy.log" --dev "$tmp/r.img" --server "$here/replay-server.sh" \
	--subsets 2 --max-states 60 --stop-after 100 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -q '60 crash states checked.*[1-9][0-9]* passed, [1-9][0-9]* failed' <<<"$out" &&
   grep -q '^replay: state [0-9]* (.*), flushes 0\.\.[0-9]* acknowledged:' <<<"$out" &&
   grep -q 'VIOLATION block' <<<"$out"; then
	ok "logreplay --server replay-server.sh: passes and failures both reported"
else
	notok "logreplay --server replay-server.sh: passes and failures both reported" "got exit $rc:" "$(tail -n 5 <<<"$out")"
fi
out=$("$L" --log "$tmp/good.log" --dev "$tmp/r.img" --list --subsets 2 2>&1)
exact=$(grep -c 'exact prefix' <<<"$out")
marks=$(grep -c 'mark tacf' <<<"$out")
flushes=$(grep -c '^F' "$tmp/l.j")
if [ "$marks" -eq "$flushes" ] && [ "$exact" -ge "$flushes" ]; then
	ok "logreplay --list: an exact state at each of the $flushes marks"
else
	notok "logreplay --list: an exact state at each of the $flushes marks" "expected $flushes mark states, got $marks ($exact exact)"
fi

echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ $failed -eq 0 ]
