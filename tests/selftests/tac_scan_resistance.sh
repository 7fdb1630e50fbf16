#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Scan resistance, the point of TAC: a hot random working set that fits in
# the cache is established; then a sequential scan over a region four
# times the cache's size runs.  TAC classifies the scan as sequential,
# its extents stay cold, and once past sequential_cutoff_kb it is a
# stream that promotes nothing, so it cannot displace the hot set nor take
# the free space.  We require at least
# 95% of the hot set to still hit afterwards.  An LRU cache of the same
# size would keep none of it: the scan alone is four times the cache.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup fio

scratch_dev origin 96 || ksft_skip "no loop devices"
scratch_dev cache 16
dev=/dev/mapper/tacscan

# The promotion throttle (max_cache_inflight) would skip a varying share
# of the scan depending on how fast the VM runs: lift it, so that what is
# tested is the policy's decisions, the same in every run.
tac_create tacscan "$origin" "$cache" 8 mode writethrough max_cache_inflight 65536 ||
	ksft_skip "cannot create the device"
total=$(tac_stat tacscan total)
hot_blocks=$((total * 2 / 5))
diag "cache holds $total blocks; hot set $hot_blocks blocks; scan $((total * 4)) blocks"

# The hot set: random 4 KiB reads over a region of hot_blocks blocks,
# every block read four times (fio's random map covers each once a loop).
fio --name=hot --filename="$dev" --direct=1 --rw=randread --bs=4k \
	--offset=0 --size=$((hot_blocks * 4))k --loops=4 --ioengine=psync \
	--output=/dev/null
wait_fills() {
	local i p
	for i in $(seq 100); do
		p=$(tac_stat tacscan promotions)
		[ "$p" -ge "$1" ] && return 0
		sleep 0.1
	done
}
wait_fills "$hot_blocks"

dmsetup message tacscan 0 reset_stats
fio --name=hotcheck --filename="$dev" --direct=1 --rw=randread --bs=4k \
	--offset=0 --size=$((hot_blocks * 4))k --ioengine=psync \
	--output=/dev/null
check_eq "the hot set is cached before the scan" "$hot_blocks" \
	"$(tac_stat tacscan read_hits)"

# The scan: four times the cache, sequentially, in 128 KiB reads, over a
# region that holds none of the hot set.  (udev's probe of the new device
# cached a few blocks too: what the scan adds is counted from here.)
used0=$(tac_stat tacscan used)
dd if="$dev" of=/dev/null bs=128k skip=$(( (hot_blocks * 4 + 1023) / 128 + 8 )) \
	count=$((total * 4 * 4 / 128)) iflag=direct status=none
seq=$(tac_stat tacscan seq_requests)
bypassed=$(tac_stat tacscan bypassed)
check_ge "the scan was classified sequential" 100 "$seq"
check_ge "scan blocks were bypassed rather than admitted" $((total * 2)) \
	"$bypassed"
used=$(tac_stat tacscan used)
diag "after the scan: used $used, promotions $(tac_stat tacscan promotions), evictions $(tac_stat tacscan demotions), bypassed $bypassed"
# Past sequential_cutoff_kb (1 MiB: 256 blocks) the scan is a stream and
# promotes nothing: it leaves the free space to the random hot set.
check_le "the scan leaves the cache's free space alone (at most its first 1 MiB promoted)" \
	$((256 + 32)) "$((used - used0))"

dmsetup message tacscan 0 reset_stats
fio --name=hotagain --filename="$dev" --direct=1 --rw=randread --bs=4k \
	--offset=0 --size=$((hot_blocks * 4))k --ioengine=psync \
	--output=/dev/null
hits=$(tac_stat tacscan read_hits)
diag "hot set hits after the scan: $hits of $hot_blocks (LRU would keep 0)"
check_ge "at least 95% of the hot set survives a scan 4x the cache" \
	$((hot_blocks * 95 / 100)) "$hits"

tap_done
