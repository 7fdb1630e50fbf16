#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Every message and the status fields added with caching: mode switches,
# set (accepted, refused, reflected in TABLE), invalidate, reset_stats,
# heat; the request classification counters; optional table arguments.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup

scratch_dev origin 64 || ksft_skip "no loop devices"
scratch_dev cache 16
dev=/dev/mapper/tacmsg

tac_create tacmsg "$origin" "$cache" 8 || ksft_skip "cannot create the device"
check_eq "the default mode is writethrough" writethrough "$(tac_stat tacmsg mode)"
check_eq "status field 19 (state) starts ok" ok "$(tac_stat tacmsg state)"

for m in writearound passthrough writethrough; do
	dmsetup message tacmsg 0 mode "$m"
	check_eq "mode message switches to $m" "$m" "$(tac_stat tacmsg mode)"
	check_eq "TABLE follows the mode ($m)" "mode $m" \
		"$(dmsetup table tacmsg | awk '{ print $8, $9 }')"
done

refused() {
	local desc=$1 expect=$2
	shift 2
	kmsg_mark
	if dmsetup message tacmsg 0 "$@" 2>/dev/null; then
		tap_fail "refused: $desc" "accepted"
	elif kmsg_has "$expect"; then
		tap_ok "refused: $desc"
	else
		tap_fail "refused: $desc" "kernel said: $(dmesg | tail -n 1)"
	fi
}
refused "mode with a bad name" "usage: mode" mode sideways
refused "mode without a name" "usage: mode" mode
refused "set of an unknown tunable" "unknown tunable 'frob'" set frob 1
refused "set of extent_size (not online)" "extent_size can only change" set extent_size 64
refused "set of stats_extents (not online)" "stats_extents can only change" set stats_extents 8192
refused "set admit_margin 1001 (out of range)" "admit_margin must be an integer from 0 to 1000" set admit_margin 1001
refused "set with trailing junk" "fill_threshold must be an integer" set fill_threshold 50x
refused "set seq_threshold >= seq_window" "seq_threshold must be below seq_window" set seq_threshold 20
refused "set verify_reads maybe" "verify_reads must be on or off" set verify_reads maybe
refused "set verify_reads 2" "verify_reads must be on or off" set verify_reads 2
refused "set dirty_adapt maybe" "dirty_adapt must be on or off" set dirty_adapt maybe
refused "heat 0" "usage: heat" heat 0
refused "heat 5000" "usage: heat" heat 5000
refused "invalidate with an argument" "unknown message" invalidate now

# set: every online tunable, reflected in TABLE.
for kv in "seq_window 32" "seq_threshold 3" "aging_period 100000" \
	  "admit_margin 5" "fill_threshold 80" "cost_hdd_random_us 9000" \
	  "cost_hdd_seq_us 40" "cost_cache_us 25" "cost_cache_write_us 60" \
	  "max_cache_inflight 64" \
	  "error_threshold 3" "verify_reads off" "dirty_adapt off" \
	  "dirty_threshold 30"; do
	# shellcheck disable=SC2086
	dmsetup message tacmsg 0 set $kv
	case " $(dmsetup table tacmsg) " in
	*" $kv "*) tap_ok "set $kv shows in TABLE" ;;
	*) tap_fail "set $kv shows in TABLE" "$(dmsetup table tacmsg)" ;;
	esac
done
# What a message set is kept by a suspend and resume (LVM, a snapshot):
# every resume applies the table's arguments.
t0=$(dmsetup table tacmsg)
dmsetup message tacmsg 0 mode writearound
dmsetup suspend tacmsg && dmsetup resume tacmsg
check_eq "set values survive a suspend and resume" \
	"${t0/mode writethrough/mode writearound}" "$(dmsetup table tacmsg)"
check_eq "...and so does the mode a message set" writearound \
	"$(tac_stat tacmsg mode)"
dmsetup message tacmsg 0 mode writethrough
check_cmd "TABLE after set is a valid table (reload)" \
	dmsetup reload tacmsg --table "$(dmsetup table tacmsg)"
dmsetup clear tacmsg
# A loaded, not yet active table shows its own line, not the live one's.
t0=$(dmsetup table tacmsg)
dmsetup reload tacmsg --table \
	"0 $(sectors "$origin") tac $origin $cache 8 2 mode writearound"
check_eq "an inactive table shows its own mode" "mode writearound" \
	"$(dmsetup table --inactive tacmsg | awk '{ print $8, $9 }')"
case " $(dmsetup table --inactive tacmsg) " in
*" fill_threshold "*) tap_fail "an inactive table shows its own tunables" \
	"$(dmsetup table --inactive tacmsg)" ;;
*) tap_ok "an inactive table shows its own tunables" ;;
esac
check_eq "...and the live table is unchanged" "$t0" "$(dmsetup table tacmsg)"
dmsetup clear tacmsg

# Classification counters: a random read is random, a scan sequential.
# Start empty: udev's probes may have cached some of the blocks read here.
dmsetup message tacmsg 0 invalidate
dmsetup message tacmsg 0 reset_stats
for i in 7 900 300 2000 50 1500 1111 4000; do
	dd if="$dev" of=/dev/null bs=4k skip=$i count=1 iflag=direct status=none
done
check_eq "8 scattered 4 KiB reads are random requests" 8 "$(tac_stat tacmsg random_requests)"
check_eq "...and no sequential ones" 0 "$(tac_stat tacmsg seq_requests)"
check_eq "random read misses count them (field 26)" 8 "$(tac_stat tacmsg random_read_misses)"
dd if="$dev" of=/dev/null bs=128k skip=100 count=10 iflag=direct status=none
check_eq "10 reads of 128 KiB are sequential requests" 10 "$(tac_stat tacmsg seq_requests)"
check_eq "...and not random read misses" 8 "$(tac_stat tacmsg random_read_misses)"
sleep 1
for i in 7 900 300 2000 50 1500 1111 4000; do
	dd if="$dev" of=/dev/null bs=4k skip=$i count=1 iflag=direct status=none
done
check_eq "random reads of promoted blocks are random read hits (field 25)" 8 \
	"$(tac_stat tacmsg random_read_hits)"
check_ge "extents are tracked" 9 "$(tac_stat tacmsg tracked_extents)"

# heat: the hottest extents, hottest first, three fields each.
out=$(dmsetup message tacmsg 0 heat 3)
check_eq "heat 3 returns three lines" 3 "$(echo "$out" | wc -l)"
sorted=$(echo "$out" | awk '{ print $3 }' | sort -rn | tr '\n' ' ')
check_eq "heat lines are hottest first" "$sorted" \
	"$(echo "$out" | awk '{ print $3 }' | tr '\n' ' ')"
check_eq "heat: extent and start sector agree (32 blocks of 8 sectors)" \
	"$(echo "$out" | awk 'NR==1 { print $1 * 256 }')" \
	"$(echo "$out" | awk 'NR==1 { print $2 }')"

# invalidate drops every clean block; reset_stats zeroes the counters.
sleep 1
check_ge "blocks are cached before invalidate" 1 "$(tac_stat tacmsg used)"
dmsetup message tacmsg 0 invalidate
check_eq "invalidate drops every block" 0 "$(tac_stat tacmsg used)"
check_ge "invalidate counts its invalidations" 1 "$(tac_stat tacmsg invalidations)"
dmsetup message tacmsg 0 reset_stats
check_eq "reset_stats zeroes the counters" "0 0 0 0 0 0 0 0 0 0 0 0 0 0" \
	"$(tac_stat tacmsg read_hits read_misses write_hits write_misses \
		promotions demotions writebacks seq_requests random_requests \
		bypassed invalidations cache_errors random_read_hits \
		random_read_misses)"
dm_remove tacmsg

# Every optional argument on the table line comes back in TABLE, in
# canonical order.
opts="mode writearound extent_size 64 seq_window 16 seq_threshold 3 aging_period 5000 admit_margin 2 fill_threshold 90 cost_hdd_random_us 8000 cost_hdd_seq_us 20 cost_cache_us 30 cost_cache_write_us 90 max_cache_inflight 32 stats_extents 4096 error_threshold 5 no_discard_passdown"
dmsetup create tacmsg --table "0 $(sectors "$origin") tac $origin $cache 8 30 $opts format" &&
	at_exit "dm_remove tacmsg"
check_eq "TABLE reproduces every optional argument" "30 $opts format" \
	"$(dmsetup table tacmsg | cut -d' ' -f7-)"
dm_remove tacmsg

tap_done
