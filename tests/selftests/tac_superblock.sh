#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The cache device's superblock: an all-zero device is formatted, a dm-tac
# cache is reused (same UUID) when it matches, 'format' overwrites, a torn
# or damaged slot falls back to the other one, the clean/unclean shutdown
# state is recorded (a running cache is unclean in both slots), table
# reloads share the live cache, and an origin has one cache at a time.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup

scratch_dev origin 16 || ksft_skip "no loop devices"
scratch_dev cache 8
scratch_dev foreign 8
scratch_dev cache2 8

tac_create tacsb "$origin" "$cache" 8 mode passthrough ||
	ksft_skip "cannot create the device"
uuid=$(sb_field "$cache" uuid)
check_eq "zeroed cache device gets formatted (valid superblock)" \
	valid "$(sb_field "$cache" state)"
check_eq "superblock records block_size" 8 "$(sb_field "$cache" block_sectors)"
check_eq "superblock records the origin size" "$(sectors "$origin")" \
	"$(sb_field "$cache" origin_sectors)"
check_eq "a running cache is marked unclean on disk" False \
	"$(sb_field "$cache" clean)"
total=$(tac_stat tacsb total)
check_eq "status total blocks match the superblock" \
	"$(sb_field "$cache" nr_cblocks)" "$total"
dm_remove tacsb
check_eq "a removed cache is marked clean on disk" True \
	"$(sb_field "$cache" clean)"

kmsg_mark
tac_create tacsb "$origin" "$cache" 8 mode passthrough
check_eq "re-creating reuses the cache (same UUID)" "$uuid" \
	"$(sb_field "$cache" uuid)"
kmsg_has "reusing" && kmsg_has "last shutdown clean" &&
	tap_ok "reuse is logged with the clean shutdown state" ||
	tap_fail "reuse is logged with the clean shutdown state" "$(dmesg | grep tac)"
# The slot not written at resume held the last save's clean superblock:
# had the newest slot then failed its checksum, the fallback would have
# trusted a map that falls behind while the device runs.
_sb_read "$cache"
flags="$(_sb_num 0 24 4) $(_sb_num 1 24 4)"
check_eq "a running cache is marked unclean in both superblock slots" \
	"0 0" "$((${flags% *} & 1)) $((${flags#* } & 1))"

# Reload with the same table: the live cache is shared, not re-read.
table=$(dmsetup table tacsb)
check_cmd "reload with the same table" dmsetup reload tacsb --table "$table"
check_cmd "suspend and resume to the reloaded table" \
	sh -c "dmsetup suspend tacsb && dmsetup resume tacsb"
check_eq "reload keeps the UUID" "$uuid" "$(sb_field "$cache" uuid)"
# refused DESC ERROR CMD...: CMD fails and the kernel logs ERROR;
# returns 2 if CMD was accepted (the caller undoes it).
refused() {
	local desc=$1 err=$2
	shift 2
	kmsg_mark
	if "$@" 2>/dev/null; then
		tap_fail "$desc" "accepted"
		return 2
	fi
	kmsg_has "tac: $err" && tap_ok "$desc" ||
		tap_fail "$desc" "$(dmesg | grep tac | tail -n1)"
}
refused "a reload cannot change the block size" \
	"A reload cannot change the block size" \
	dmsetup reload tacsb --table "${table/ 8 2 mode/ 16 2 mode}"
[ $? = 2 ] && dmsetup clear tacsb

# Another cache device for the same origin, by reload or by a second
# device: the live cache's dirty blocks are the only copy of their data.
other="0 $(sectors "$origin") tac $origin $cache2 8 2 mode passthrough"
refused "a reload cannot change the cache device" \
	"A reload cannot change the cache device" \
	dmsetup reload tacsb --table "$other"
[ $? = 2 ] && dmsetup clear tacsb
refused "a second device cannot cache the same origin" \
	"Origin device is cached by another dm-tac device" \
	dmsetup create tacsb2 --table "$other"
[ $? = 2 ] && dm_remove tacsb2
check_eq "the refused cache device is left unformatted" none \
	"$(sb_field "$cache2" state)"
dm_remove tacsb

# A superblock that counts more saved temperatures than its area holds
# (checksum intact): they are not read, and the cache is used.
cur=$(sb_slot "$cache")
"$TACMETA" set "$cache" "$cur" temp_records=0x7fffffff
kmsg_mark
if tac_create tacsb "$origin" "$cache" 8 mode passthrough; then
	kmsg_has "more than the area holds" &&
		tap_ok "an impossible count of saved temperatures is ignored" ||
		tap_fail "an impossible count of saved temperatures is ignored" "$(dmesg | tail -n5)"
	dm_remove tacsb
else
	tap_fail "an impossible count of saved temperatures is ignored" \
		"refused: $(dmesg | grep tac | tail -n1)"
fi

# Unclean shutdown: pretend the last run never finished.
cur=$(sb_slot "$cache")
"$TACMETA" set "$cache" "$cur" flags=0
kmsg_mark
tac_create tacsb "$origin" "$cache" 8 mode passthrough
kmsg_has "last shutdown unclean" &&
	tap_ok "an unclean shutdown is detected and logged" ||
	tap_fail "an unclean shutdown is detected and logged" "$(dmesg | grep tac)"
dm_remove tacsb

# One damaged slot: the other (older but valid) slot is used.
cur=$(sb_slot "$cache")
"$TACMETA" flip "$cache" $((cur * 4096 + 300)) 1
kmsg_mark
if tac_create tacsb "$origin" "$cache" 8 mode passthrough; then
	check_eq "a damaged superblock slot falls back to the other slot" \
		"$uuid" "$(sb_field "$cache" uuid)"
	dm_remove tacsb
else
	tap_fail "a damaged superblock slot falls back to the other slot" \
		"refused: $(dmesg | grep tac | tail -n1)"
fi

# 'format' makes a new cache over an old one, and over a foreign device.
tac_create tacsb "$origin" "$cache" 8 mode passthrough format
new=$(sb_field "$cache" uuid)
[ "$new" != "$uuid" ] && [ "$new" != none ] &&
	tap_ok "'format' re-formats a dm-tac cache (new UUID)" ||
	tap_fail "'format' re-formats a dm-tac cache (new UUID)" "old $uuid new $new"
check_eq "TABLE shows 'format'" "3 mode passthrough format" \
	"$(dmsetup table tacsb | cut -d' ' -f7-)"
dm_remove tacsb

printf 'some file system' | dd of="$foreign" bs=512 seek=1 conv=notrunc status=none
tac_create tacsb "$origin" "$foreign" 16 mode passthrough format &&
	check_eq "'format' takes a foreign device" valid "$(sb_field "$foreign" state)" ||
	tap_fail "'format' takes a foreign device" "refused"
dm_remove tacsb

# A length rounded down to block_size is accepted (the tail is uncached).
truncate -s $((16 * 1048576 + 2048)) "$_scratch/origin.img"
losetup -c "$origin"
full=$(sectors "$origin")
dmsetup create tacsb --table "0 $full tac $origin $foreign 16 3 mode passthrough format" &&
	tap_ok "length = origin size with a partial last block is accepted" ||
	tap_fail "length = origin size with a partial last block is accepted" "refused"
dm_remove tacsb
dmsetup create tacsb --table "0 $((full / 16 * 16)) tac $origin $foreign 16 3 mode passthrough format" &&
	tap_ok "length = origin size rounded down to block_size is accepted" ||
	tap_fail "length = origin size rounded down to block_size is accepted" "refused"
dm_remove tacsb

tap_done
