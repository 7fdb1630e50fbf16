#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Host side, after the VM: turn the binary blktrace of each dm-tac pgbench
# run into blkparse text (queue events only, gzip) and, when the tree has
# the trace simulator (tools/tacsim), replay it with the TAC policy at the
# kernel's cache size, so report.py can set the simulator's hit ratio
# beside the kernel's.
#
#   bench/compare/blktrace-replay.sh RAWDIR
#
# Writes RAWDIR/<contender>/pgbench.blkparse.gz and, with tacsim,
# RAWDIR/<contender>/tacsim.json (tacsim --json, one line).

set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
raw=${1:?usage: blktrace-replay.sh RAWDIR}
[ -r "$raw/bench.env" ] && . "$raw/bench.env"

tacsim=${TACSIM:-$TOP/tools/tacsim/tacsim}
if [ ! -x "$tacsim" ] && [ -r "$TOP/tools/tacsim/tacsim.c" ]; then
	make -s -C "$TOP/tools" > /dev/null 2>&1 || true
fi

for bt in "$raw"/*/blktrace; do
	[ -d "$bt" ] || continue
	ct=$(dirname "$bt")
	ls "$bt"/trace.blktrace.* > /dev/null 2>&1 || continue
	command -v blkparse > /dev/null || { echo "no blkparse" >&2; exit 1; }
	blkparse -q -i trace -D "$bt" -a queue 2> /dev/null |
		grep -E '^ *[0-9]+,[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ +Q ' |
		gzip > "$ct/pgbench.blkparse.gz"
	echo "blktrace: $(zcat "$ct/pgbench.blkparse.gz" | wc -l) queue events -> $ct/pgbench.blkparse.gz"
	if [ ! -x "$tacsim" ]; then
		echo "blktrace: no tools/tacsim in this tree: replay skipped" > "$ct/tacsim.txt"
		continue
	fi
	# The kernel's cache size: "<used>/<total>" blocks in dm-tac's status.
	total=$(awk '$3 == "tac" { split($5, a, "/"); t = a[2] } END { print t }' \
		"$ct/pgbench.status")
	# Its block size: the status's first field (sectors).
	bs=$(awk '$3 == "tac" { b = $4 } END { print b }' "$ct/pgbench.status")
	bs=$(( ${bs:-${DB_TAC_BLOCK:-8}} * 512 ))
	if [ -z "$total" ] || [ "$total" = 0 ]; then
		total=$(( ${CACHE_MB:-100} * 1048576 / bs ))
	fi
	# Write-around invalidates on writes; every other mode allocates.
	wm=allocate
	[ "$(basename "$ct")" != tac-writearound ] || wm=around
	"$tacsim" --policy tac --cache-size $((total * bs)) --block-size $bs \
		--write-mode $wm --format blkparse --json "$ct/pgbench.blkparse.gz" \
		> "$ct/tacsim.json" 2> "$ct/tacsim.txt" ||
		echo "blktrace: tacsim failed, see $ct/tacsim.txt" >&2
done
exit 0
