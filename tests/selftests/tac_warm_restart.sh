#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Warm restart: after a clean removal the cache's mappings, data checksums
# and extent temperatures are on the cache device, and the next
# constructor over the same devices serves hits at once.  A damaged saved
# state is detected (checksums) and the cache starts cold with a message;
# an unclean stop drops the cached blocks.  Never wrong data.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup

scratch_dev origin 64 || ksft_skip "no loop devices"
scratch_dev cache 16
dev=/dev/mapper/tacwarm
N=2048

dd if=/dev/urandom of="$origin" bs=1M count=64 oflag=direct status=none
tac_create tacwarm "$origin" "$cache" 8 mode writethrough max_cache_inflight 65536 ||
	ksft_skip "cannot create the device"
dd if="$dev" of=/dev/null bs=4k count=$N iflag=direct status=none
sleep 1
heat_before=$(dmsetup message tacwarm 0 heat 1 | awk '{ print $3 }')
dm_remove tacwarm
check_eq "removal leaves a clean superblock" True "$(sb_field "$cache" clean)"

kmsg_mark
tac_create tacwarm "$origin" "$cache" 8 mode writethrough max_cache_inflight 65536
check_ge "the saved mappings are loaded" $N \
	"$(tac_stat tacwarm used)"
dmsetup message tacwarm 0 reset_stats
dd if="$dev" of=/dev/null bs=4k count=$N iflag=direct status=none
check_eq "after a warm restart every block hits" $N "$(tac_stat tacwarm read_hits)"
check_eq "after a warm restart no block misses" 0 "$(tac_stat tacwarm read_misses)"
check_eq "warm data is the origin's" "$(dev_md5 "$origin" 0 8)" \
	"$(dev_md5 "$dev" 0 8)"
kmsg_has "extent temperatures restored" &&
	tap_ok "temperatures are restored (logged)" ||
	tap_fail "temperatures are restored (logged)" "$(dmesg | grep tac | tail -n 2)"
heat_after=$(dmsetup message tacwarm 0 heat 1 | awk '{ print $3 }')
check_ge "the hottest extent is as warm as before" "$heat_before" "$heat_after"

# Suspend, reload and resume keep everything (the live cache is shared).
dmsetup reload tacwarm --table "$(dmsetup table tacwarm)"
dmsetup suspend tacwarm && dmsetup resume tacwarm
dmsetup message tacwarm 0 reset_stats
dd if="$dev" of=/dev/null bs=4k count=$N iflag=direct status=none
check_eq "after suspend and reload every block hits" $N "$(tac_stat tacwarm read_hits)"
dm_remove tacwarm

# Damage one saved map sector: detected, cold start, right data.
map_start=$(sb_field "$cache" map_start)
"$TACMETA" flip "$cache" $((map_start * 512 + 100)) 2
kmsg_mark
tac_create tacwarm "$origin" "$cache" 8 mode writethrough max_cache_inflight 65536
kmsg_has "is damaged: starting cold" &&
	tap_ok "a damaged map sector is detected and logged" ||
	tap_fail "a damaged map sector is detected and logged" "$(dmesg | grep tac | tail -n 2)"
# (udev's probes may fill a few blocks; the 2048 saved ones are gone.)
check_le "...and the cache starts cold" 1000 "$(tac_stat tacwarm used)"
check_eq "...and the data is the origin's" "$(dev_md5 "$origin" 0 8)" \
	"$(dev_md5 "$dev" 0 8)"
dd if="$dev" of=/dev/null bs=4k count=$N iflag=direct status=none
sleep 1
dm_remove tacwarm

# Damage the saved temperatures only: mappings still load.
temp_start=$(sb_field "$cache" temp_start)
"$TACMETA" flip "$cache" $((temp_start * 512 + 200)) 1
kmsg_mark
tac_create tacwarm "$origin" "$cache" 8 mode writethrough max_cache_inflight 65536
kmsg_has "temperatures start cold" &&
	tap_ok "damaged temperatures are detected and logged" ||
	tap_fail "damaged temperatures are detected and logged" "$(dmesg | grep tac | tail -n 2)"
check_ge "...while the mappings still load" $N \
	"$(tac_stat tacwarm used)"
dm_remove tacwarm

# Unclean stop: the write-through contents are dropped.
cur=$(sb_slot "$cache")
"$TACMETA" set "$cache" "$cur" flags=0
kmsg_mark
tac_create tacwarm "$origin" "$cache" 8 mode writethrough max_cache_inflight 65536
kmsg_has "unclean shutdown: clean blocks dropped" &&
	tap_ok "an unclean stop drops the cached blocks (logged)" ||
	tap_fail "an unclean stop drops the cached blocks (logged)" "$(dmesg | grep tac | tail -n 2)"
check_le "...and the saved blocks are not mapped" 1000 \
	"$(tac_stat tacwarm used)"

tap_done
