#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The status-field list check (check.py) on this tree, and on copies with
# a deliberate drift each, which it must catch.  Host only, well under a
# second.  Ends with "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

# copies: fresh copies of the three files in $tmp
copies() {
	cp "$top/dm-tac/status-fields" "$tmp/list"
	cp "$top/Documentation/dm-tac.rst" "$tmp/doc"
	cp "$top/dm-tac/dm-tac-target.c" "$tmp/src"
}
check_copies() {
	python3 "$here/check.py" --list "$tmp/list" --doc "$tmp/doc" \
		--source "$tmp/src" >"$tmp/out" 2>&1
}

if out=$(python3 "$here/check.py" 2>&1); then
	ok "this tree: the list, the Documentation and tac_status() agree"
	echo "$out" | sed -e '/passed, .* failed$/d' -e 's/^/     /'
else
	fail "this tree: the list, the Documentation and tac_status() disagree"
	echo "$out" | sed -e '/passed, .* failed$/d' -e 's/^/     /'
	# The drifts below are made on copies of the tree: not meaningful
	# until it agrees with itself.
	echo "     (the checks of deliberate drifts need a tree that agrees: not run)"
	echo "$passed passed, $failed failed"
	exit 1
fi

# must_catch WHAT: check.py must fail on the copies, naming the drift
# (a line matching $1 in its output)
must_catch() {
	local what=$1 pattern=$2
	if check_copies; then
		fail "$what: not caught"
	elif grep -q -- "$pattern" "$tmp/out"; then
		ok "$what: caught"
	else
		fail "$what: failed, but without '$pattern':"
		sed 's/^/     /' "$tmp/out"
	fi
}

# drift FILE SED: change a copy; fails if the sed changed nothing (the
# drift itself has gone stale).
drift() {
	local file=$1 expr=$2
	cp "$tmp/$file" "$tmp/$file.orig"
	sed -i -e "$expr" "$tmp/$file"
	! cmp -s "$tmp/$file" "$tmp/$file.orig"
}

# The drifts are made generic enough to survive new fields: the last field
# of the list, whatever it is, and a DMEMIT added before the INFO case's
# break.
last=$(awk '!/^#/ && NF == 2 { n = $1; name = $2 } END { print n, name }' \
	"$top/dm-tac/status-fields")
read -r n name <<<"$last"

copies
if drift src '/case STATUSTYPE_INFO:/,/break;/s/^\(\t*\)break;/\1DMEMIT(" %llu", n.read_hits);\n\1break;/'; then
	must_catch "a field added to tac_status() without the list" "word $((n + 1)) '%llu' is not in the list"
else
	fail "a field added to tac_status(): the drift no longer applies"
fi

copies
printf '%d\tnew_counter\n' $((n + 1)) >>"$tmp/list"
must_catch "a field added to the list without the kernel" "field $((n + 1)) new_counter is not printed"

copies
if drift src '/case STATUSTYPE_INFO:/,/break;/s|%u/%u|%u|'; then
	must_catch "used/total printed as one number" "field 2 used/total: '%u' has 1 conversion"
else
	fail "used/total as one number: the drift no longer applies"
fi

copies
if drift doc "s/^\( *$n \+$name\)\b/\1x/"; then
	must_catch "a field renamed in the Documentation only" "row $n: list '$n $name', documentation '$n ${name}x'"
else
	fail "a renamed Documentation row: the drift no longer applies"
fi

copies
if drift doc "/^ *$n \+$name\b/,/^===/{/^ *$n /d;/^  /d}"; then
	must_catch "the Documentation's last row missing" "row $n: list '$n $name', documentation '(nothing)'"
else
	fail "a missing Documentation row: the drift no longer applies"
fi

copies
sed -i 's/^4	read_hits$/4	read_misses/' "$tmp/list"
must_catch "a name listed twice" "'read_misses' twice"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
