#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Pass-through mode moves every byte to and from the origin unchanged:
# fio --verify=crc32c with random, sequential and sub-block I/O through
# the target; the origin holds exactly the written bytes after removal;
# the cache's data area is never touched; FLUSH, FUA-less syncs and
# DISCARD reach the origin (its request-based disk statistics count them).

. "$(dirname "$0")/lib.sh"
require dmsetup fio losetup blkdiscard python3

scratch_dev origin 64 || ksft_skip "no loop devices"
scratch_dev cache 16
dev=/dev/mapper/tacdata

# Random bytes in the cache's data area, so that any write there shows.
dd if=/dev/urandom of="$cache" bs=1M count=16 oflag=direct status=none
dd if=/dev/zero of="$cache" bs=4k count=2 oflag=direct conv=notrunc status=none

tac_create tacdata "$origin" "$cache" 8 mode passthrough ||
	ksft_skip "cannot create the device"
data_mib=$(( ($(sb_field "$cache" data_start) + 2047) / 2048 ))
cache_data_md5=$(dev_md5 "$cache" "$data_mib")

fio_verify() {
	local name=$1
	shift
	fio --name="$name" --filename="$dev" --direct=1 --ioengine=libaio \
		--iodepth=8 --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--output-format=terse --minimal "$@" >/tmp/fio-$name.out 2>&1
}

check_cmd "fio random 4 KiB writes, crc32c verify" \
	fio_verify rand4k --rw=randwrite --bs=4k --size=24M
check_cmd "fio sequential 128 KiB writes, crc32c verify" \
	fio_verify seq128k --rw=write --bs=128k --size=32M
check_cmd "fio random 512 B - 64 KiB unaligned writes, crc32c verify" \
	fio_verify mixed --rw=randwrite --bsrange=512-64k --blockalign=512 \
		--size=16M --offset=8M
check_cmd "fio random reads and writes 70/30, crc32c verify" \
	fio_verify rw --rw=randrw --rwmixread=70 --bs=8k --size=16M \
		--verify_backlog=64

# What the target shows is what the origin holds, and nothing reached the
# cache's data area.
through=$(dev_md5 "$dev")
dm_remove tacdata
check_eq "origin holds exactly the bytes written through the target" \
	"$through" "$(dev_md5 "$origin")"
check_eq "cache data area untouched in passthrough" \
	"$cache_data_md5" "$(dev_md5 "$cache" "$data_mib")"

# FLUSH and DISCARD reach the origin.  /sys/block/<dev>/stat fields:
# 12 = discard requests completed, 16 = flush requests completed.
stat_field() {
	awk -v f="$2" '{ print $f }' "/sys/block/$(basename "$1")/stat"
}

tac_create tacdata "$origin" "$cache" 8 mode passthrough
f0=$(stat_field "$origin" 16)
dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct conv=fsync status=none
f1=$(stat_field "$origin" 16)
check_ge "fsync on the target sends a flush to the origin" $((f0 + 1)) "$f1"

d0=$(stat_field "$origin" 12)
dd if=/dev/urandom of="$dev" bs=1M count=4 seek=16 oflag=direct status=none
blkdiscard -o $((16 << 20)) -l $((4 << 20)) "$dev"
d1=$(stat_field "$origin" 12)
check_ge "blkdiscard on the target sends discards to the origin" \
	$((d0 + 1)) "$d1"
zero=$(dd if=/dev/zero bs=1M count=4 status=none | md5sum | cut -d' ' -f1)
check_eq "discarded range reads back as zeroes from the origin" \
	"$zero" "$(dev_md5 "$origin" 16 4)"

tap_done
