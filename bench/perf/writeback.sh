#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Write-back benchmark (figures, not a test), run inside the VM by
#   make bench-wb [KVER=6.12]
#
# The TPC-C-like case where lazy cleaning won in the Turbocharging paper:
# 4 KiB random writes, Zipf-skewed so blocks are re-dirtied, over a data
# set larger than the cache.  Contenders on the same devices, in one run:
# the origin alone, dm-tac write-through, dm-tac write-back.  The origin
# is a RAM disk behind an HDD model (tests/hddsim, or dm-delay when the
# model is not built); the cache is a RAM disk.
set -u
RUNTIME=${RUNTIME:-30}
ORIGIN_MB=${ORIGIN_MB:-1024}
CACHE_MB=${CACHE_MB:-256}
DIRTY=${DIRTY:-20}	# dirty_threshold: the default, so the cleaner runs
ADAPT=${ADAPT:-off}	# dirty_adapt: off keeps DIRTY, the cleaner's load
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

modprobe brd rd_nr=2 rd_size=$((ORIGIN_MB * 1024)) || exit 1
ram_o=/dev/ram0
cache=/dev/ram1
olen=$(blockdev --getsz $ram_o)
clen=$((CACHE_MB * 2048))

hdd_table() {
	if dmsetup targets | grep -q '^hddsim'; then
		echo "0 $olen hddsim $ram_o 0"
	else
		modprobe dm-delay
		echo "0 $olen delay $ram_o 0 8"
	fi
}
dmsetup create hdd --table "$(hdd_table)"
origin=/dev/mapper/hdd
model=$(dmsetup table hdd | awk '{ print $3 }')
dmsetup create cachepart --table "0 $clen linear $cache 0"

# Writes that reached the disk model: its dm device's I/O accounting
# (brd keeps none).
hdd_blk=$(dmsetup info -c --noheadings -o blkdevname hdd)
owrites() { awk '{ print $5 }' "/sys/block/$hdd_blk/stat"; }
field() { dmsetup status "$1" | awk -v n="$2" '{ print $(n + 3) }'; }

run_fio() {
	fio --name=wr --filename="$1" --direct=1 --ioengine=libaio --iodepth=8 \
		--rw=randwrite --bs=4k --size=$((ORIGIN_MB / 2))M \
		--random_distribution=zipf:1.2 --runtime="$RUNTIME" --time_based \
		--output-format=json |
		python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]["write"]
p = j["clat_ns"]["percentile"]
print("%d %d %.0f" % (j["iops"], j["total_ios"], p["99.000000"] / 1000))'
}

results=()
# 1. origin alone
w0=$(owrites)
read -r iops ios p99 <<<"$(run_fio $origin)"
results+=("origin alone ($model)|$iops|$p99|$ios|$(( $(owrites) - w0 ))|-|-|-")

for mode in writethrough writeback; do
	dd if=/dev/zero of=/dev/mapper/cachepart bs=1M count=1 status=none
	dmsetup create tacb --table "0 $olen tac $origin /dev/mapper/cachepart 8 8 mode $mode dirty_threshold $DIRTY dirty_adapt $ADAPT clean_idle_ms 0"
	w0=$(owrites)
	read -r iops ios p99 <<<"$(run_fio /dev/mapper/tacb)"
	w1=$(owrites)
	rate=$(field tacb 21)
	wb=$(field tacb 10)
	cw=$(field tacb 24)
	results+=("dm-tac $mode|$iops|$p99|$ios|$((w1 - w0))|$wb|$cw|$rate")
	dmsetup remove tacb
done

echo "== 4 KiB Zipf(1.2) random writes over $((ORIGIN_MB / 2)) MiB, cache $CACHE_MB MiB (dirty_threshold $DIRTY, dirty_adapt $ADAPT), iodepth 8, ${RUNTIME}s, $(uname -r)"
printf '%-32s %8s %9s %9s %12s %10s %9s %9s\n' contender IOPS "p99 us" "user wr" "origin wr" "written" "cleaner" "rate/s"
for r in "${results[@]}"; do
	IFS='|' read -r name iops p99 ios ow wb cw rate <<<"$r"
	printf '%-32s %8s %9s %9s %12s %10s %9s %9s\n' "$name" "$iops" "$p99" "$ios" "$ow" "$wb" "$cw" "$rate"
done
python3 - "${results[@]}" <<'EOF'
import sys
rows = [r.split("|") for r in sys.argv[1:]]
base = float(rows[0][1]) or 1
for name, iops, p99, ios, ow, wb, cw, rate in rows[1:]:
    line = "%s: %.2fx the origin's IOPS" % (name, float(iops) / base)
    if wb != "-" and int(ios):
        line += ", origin writes %.1f%% of user writes" % (100.0 * int(ow) / int(ios))
    if wb != "-" and int(cw):
        line += ", %.1f blocks per cleaner write" % (int(wb) / int(cw))
    print(line)
EOF
dmsetup remove cachepart
dmsetup remove hdd
