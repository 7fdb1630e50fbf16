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

# The saved checksums keep 16 bits of each unit's crc32c: until a unit is
# read through our pages (or written, promoted, cleaned), a hit is checked
# on those 16 bits.  Right data passes, other data is caught; once a
# 512-byte read has checked the unit through our pages, all 32 bits are
# known, and data with the same 16 bits (crc_twin.py) is caught too.
check_eq "the warm hits pass their 16-bit checksums" 0 \
	"$(tac_stat tacwarm cache_errors)"
data_start=$(sb_field "$cache" data_start)
map=$("$TACMETA" map --force "$cache")
cblock_of() {
	sed -n "s/^{\"cblock\": \([0-9]*\), \"oblock\": $1,.*/\1/p" <<<"$map"
}
cb_y=$(cblock_of 200)
cb_x=$(cblock_of 100)
if [ -n "$cb_x" ] && [ -n "$cb_y" ]; then
	dd if=/dev/urandom of="$cache" bs=512 seek=$((data_start + cb_y * 8)) \
		count=8 oflag=direct status=none
	check_eq "a garbled unit is caught on 16 bits after a restart" \
		"$(dd if="$origin" bs=4k skip=200 count=1 iflag=direct status=none | md5sum)" \
		"$(dd if="$dev" bs=4k skip=200 count=1 iflag=direct status=none | md5sum)"
	check_eq "...as a cache error" 1 "$(tac_stat tacwarm cache_errors)"
	dd if="$dev" of=/dev/null bs=512 skip=800 count=1 iflag=direct status=none
	dd if="$origin" of="$_scratch/b100" bs=4k skip=100 count=1 iflag=direct \
		status=none
	py3 "$SELFTESTS/crc_twin.py" "$_scratch/b100" "$_scratch/twin100" &&
		dd if="$_scratch/twin100" of="$cache" bs=512 \
			seek=$((data_start + cb_x * 8)) count=8 oflag=direct \
			status=none
	check_eq "after a 512-byte read, data with the unit's 16-bit checksum is caught" \
		"$(md5sum <"$_scratch/b100")" \
		"$(dd if="$dev" bs=4k skip=100 count=1 iflag=direct status=none | md5sum)"
	check_eq "...as a cache error" 2 "$(tac_stat tacwarm cache_errors)"
else
	tap_fail "blocks 100 and 200 are in the saved map" "$(head -c 300 <<<"$map")"
fi
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

# A clean removal saves clean entries, which say "the origin holds this
# block": the origin's copies must be durable (flushed) before that, or a
# power cut after the removal leaves cached blocks the origin does not
# match, served after the next start as if they were.  The origin here is
# a dm-log-writes device, which logs a write only once a flush after it
# completed: the write-through write below, never flushed by anyone
# else, is in its log only if the removal flushed the origin.
dm_remove tacwarm
if modprobe dm-log-writes 2>/dev/null; then
	scratch_dev lorigin 8
	scratch_dev llog 16
	scratch_dev lcache 8
	dmsetup create taclw --table "0 $(sectors "$lorigin") log-writes $lorigin $llog"
	at_exit "dmsetup remove taclw 2>/dev/null"
	tac_create taclwc /dev/mapper/taclw "$lcache" 8 mode writethrough
	dd if=/dev/mapper/taclwc of=/dev/null bs=4k skip=256 count=1 iflag=direct status=none
	for i in $(seq 50); do
		[ "$(tac_stat taclwc promotions)" -ge 1 ] && break
		sleep 0.1
	done
	dd if=/dev/urandom of="$_scratch/w" bs=4k count=1 status=none
	dd if="$_scratch/w" of=/dev/mapper/taclwc bs=4k seek=256 count=1 \
		oflag=direct status=none
	check_eq "the write-through write hit a cached block" 1 \
		"$(tac_stat taclwc write_hits)"
	dm_remove taclwc
	# The log as it is with dm-log-writes still there: its removal
	# logs the unflushed writes too.  Its thread logs within moments.
	sleep 1
	dd if="$llog" of="$_scratch/log.img" bs=1M iflag=direct status=none
	dmsetup remove taclw
	check_eq "a clean removal flushes the origin before it saves clean entries (the write is in dm-log-writes' log)" \
		yes "$(py3 -c 'import sys
log = open(sys.argv[1], "rb").read()
print("yes" if open(sys.argv[2], "rb").read() in log else "no")' "$_scratch/log.img" "$_scratch/w")"
else
	tap_skip "a clean removal flushes the origin before it saves clean entries" "no dm-log-writes"
fi

# A suspend whose origin flush fails must leave the superblock unclean,
# and so must every commit after it while suspended: the cached clean
# blocks' origin copies were never made durable.  A 'flush' message on
# the suspended device commits the map pages the fills changed; it once
# wrote a clean superblock whenever the device was suspended, origin
# flushed or not (and a commit queued before a suspend did the same
# before the save flushed the origin).
if modprobe dm-flakey 2>/dev/null; then
	scratch_dev forigin 8
	scratch_dev fcache 8
	fsec=$(sectors "$forigin")
	dmsetup create tacfo --table "0 $fsec linear $forigin 0"
	at_exit "dmsetup remove tacf 2>/dev/null; dmsetup remove tacfo 2>/dev/null"
	# Run first if the test is cut short while the origin is suspended: a
	# removal's save would wait for its flush.
	at_exit "dmsetup resume tacfo 2>/dev/null"
	tac_create tacf /dev/mapper/tacfo "$fcache" 8 mode writethrough
	for i in 1 2 3 4; do
		printf '%s\n' 100 200 300 400 500 600 700 800 |
			read_blocks /dev/mapper/tacf 8
		[ "$(tac_stat tacf used)" -ge 1 ] && break
		sleep 0.3
	done
	check_ge "reads cached blocks over the origin that will fail" 1 \
		"$(tac_stat tacf used)"
	dmsetup suspend tacfo
	# dm-flakey always down fails every bio, empty flushes included (the
	# error target takes no flushes: dm completes them without it).
	dmsetup reload tacfo --table "0 $fsec flakey $forigin 0 0 1"
	dmsetup resume tacfo
	kmsg_mark
	dmsetup suspend tacf
	kmsg_has "flushing the origin device failed" &&
		tap_ok "a suspend whose origin flush fails says so" ||
		tap_fail "a suspend whose origin flush fails says so" \
			"$(dmesg | grep tac | tail -n 2)"
	check_eq "...and leaves the superblock unclean" False \
		"$(sb_field "$fcache" clean)"
	dmsetup message tacf 0 flush 2>/dev/null
	check_eq "...also after a flush message commits while suspended" False \
		"$(sb_field "$fcache" clean)"
	dmsetup suspend tacfo
	dmsetup reload tacfo --table "0 $fsec linear $forigin 0"
	dmsetup resume tacfo
	dmsetup resume tacf
	dm_remove tacf
	check_eq "with the origin back, a removal saves clean" True \
		"$(sb_field "$fcache" clean)"
	dmsetup remove tacfo
else
	tap_skip "a suspend whose origin flush fails leaves the superblock unclean" "no dm-flakey"
fi

# 'invalidate' on a suspended device is committed at once: the suspend
# saved the blocks already, a removal of a suspended device saves
# nothing more, and the next start loaded the "dropped" blocks again,
# serving their old data over an origin changed meanwhile.
scratch_dev iorigin 8
scratch_dev icache 8
dd if=/dev/urandom of="$iorigin" bs=1M count=8 oflag=direct status=none
tac_create taci "$iorigin" "$icache" 8 mode writethrough
for i in 1 2 3 4; do
	printf '%s\n' 100 200 300 400 | read_blocks /dev/mapper/taci 4
	[ "$(tac_stat taci used)" -ge 4 ] && break
	sleep 0.3
done
check_ge "invalidate while suspended: blocks cached first" 4 \
	"$(tac_stat taci used)"
dmsetup suspend taci
check_cmd "...invalidate on the suspended device" \
	dmsetup message taci 0 invalidate
dm_remove taci
dd if=/dev/urandom of="$iorigin" bs=4k seek=100 count=1 oflag=direct \
	status=none
tac_create taci "$iorigin" "$icache" 8 mode writethrough
# ("used" would count udev's probes of the new device, which are cached.)
dmsetup message taci 0 reset_stats
printf '%s\n' 200 300 400 | read_blocks /dev/mapper/taci 4
check_eq "...the next start serves none of them from the cache (hits)" 0 \
	"$(tac_stat taci read_hits)"
check_eq "...and reads what the origin holds now" \
	"$(dd if="$iorigin" bs=4k skip=100 count=1 iflag=direct status=none | md5sum)" \
	"$(dd if=/dev/mapper/taci bs=4k skip=100 count=1 iflag=direct status=none | md5sum)"
dm_remove taci

tap_done
