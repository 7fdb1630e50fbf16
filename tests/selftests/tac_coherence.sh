#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Coherence under concurrency.  fio jobs with deep queues do random 4 KiB
# reads and writes, verified with crc32c, inside 16 KiB cache blocks (so
# several I/Os are in flight on the same block) of a working set larger
# than the cache (so fills, evictions and writes race), while another
# process keeps invalidating, switching modes and changing tunables, and
# a third pair of loops promotes and discards the same region.  Then a
# known image is written through the target while the messages continue:
# it must read back through the target, be on the origin after removal,
# and read back again through a re-created (warm) target.
#
# Two passes (TAC_COHERENCE_STACKS, default "loop delay"): over loop
# devices, and over dm-delay (1 ms) on the same loop devices, whose
# completions come later and from another context, as an SSD's do (a
# race between a submission and a completion needs that to show).

. "$(dirname "$0")/lib.sh"
require dmsetup losetup fio blkdiscard

scratch_dev origin_raw 64 || ksft_skip "no loop devices"
scratch_dev cache_raw 6
dev=/dev/mapper/tacco

messages() {
	while [ ! -e "$_scratch/stop" ]; do
		dmsetup message tacco 0 invalidate
		dmsetup message tacco 0 mode writearound
		sleep 0.2
		dmsetup message tacco 0 mode writethrough
		dmsetup message tacco 0 set admit_margin $((RANDOM % 10))
		dmsetup message tacco 0 set fill_threshold $((50 + RANDOM % 51))
		sleep 0.2
		dmsetup message tacco 0 mode passthrough
		sleep 0.1
		dmsetup message tacco 0 mode writethrough
		dmsetup message tacco 0 reset_stats
		sleep 0.2
	done 2>"$_scratch/messages.err"
}

# Promotions racing with discards and writes of the same 4 MiB.
promote_discard() {
	while [ ! -e "$_scratch/stop" ]; do
		dd if="$dev" of=/dev/null bs=64k skip=512 count=64 \
			iflag=direct status=none
	done &
	while [ ! -e "$_scratch/stop" ]; do
		off=$(( (32 << 20) + (RANDOM % 64) * 65536 ))
		blkdiscard -o "$off" -l 65536 "$dev"
		dd if=/dev/urandom of="$dev" bs=16k count=1 \
			seek=$(( (off >> 14) + RANDOM % 4 )) oflag=direct \
			status=none
	done
	wait
}

coherence() {
	local stack=$1 origin cache msg_pid pd_pid rc want

	case $stack in
	loop)
		origin=$origin_raw cache=$cache_raw ;;
	delay)
		delay_dev tacco_o "$origin_raw" 1 1 &&
			delay_dev tacco_c "$cache_raw" 1 1 ||
			{ tap_skip "$stack: coherence" "no dm-delay"; return; }
		origin=/dev/mapper/tacco_o cache=/dev/mapper/tacco_c ;;
	esac
	dd if=/dev/zero of="$cache" bs=4k count=2 oflag=direct status=none
	tac_create tacco "$origin" "$cache" 32 mode writethrough \
		error_threshold 1000000 ||
		{ tap_fail "$stack: create the device" "$(dmesg | grep tac | tail -n 1)"; return; }

	rm -f "$_scratch/stop"
	messages &
	msg_pid=$!
	promote_discard &
	pd_pid=$!

	fio --name=co --filename="$dev" --direct=1 --ioengine=libaio --iodepth=16 \
		--rw=randrw --rwmixread=50 --bs=4k --size=2M --offset_increment=2M \
		--numjobs=4 --loops=3 --randrepeat=0 --verify=crc32c \
		--verify_backlog=256 --verify_fatal=1 --group_reporting \
		--output="$_scratch/fio.out"
	rc=$?
	check_eq "$stack: fio: overlapping reads and writes verify with no error" 0 "$rc"
	[ "$rc" = 0 ] || diag "$(grep -iE 'verify|error' "$_scratch/fio.out" | head -n 5)"

	# A known image over 16 MiB, written while the messages go on.
	dd if=/dev/urandom of="$_scratch/image" bs=1M count=16 status=none
	dd if="$_scratch/image" of="$dev" bs=64k oflag=direct status=none
	touch "$_scratch/stop"
	wait $msg_pid $pd_pid
	want=$(md5sum <"$_scratch/image" | cut -d' ' -f1)

	check_eq "$stack: promoted-and-discarded region reads as the origin does" \
		"$(dev_md5 "$origin" 32 4)" "$(dev_md5 "$dev" 32 4)"
	check_eq "$stack: the image reads back through the target" "$want" \
		"$(dev_md5 "$dev" 0 16)"
	check_eq "$stack: no message was refused" "" "$(cat "$_scratch/messages.err")"
	check_eq "$stack: no cache error on healthy devices (checksums all match)" 0 \
		"$(tac_stat tacco cache_errors)"
	# Read it twice more so part of it is served from the cache.
	dmsetup message tacco 0 mode writethrough
	dd if="$dev" of=/dev/null bs=64k count=256 iflag=direct status=none
	check_eq "$stack: the image reads back through the target (cache warm)" "$want" \
		"$(dev_md5 "$dev" 0 16)"
	dm_remove tacco
	check_eq "$stack: the origin holds the image after removal" "$want" \
		"$(dev_md5 "$origin_raw" 0 16)"

	tac_create tacco "$origin" "$cache" 32 mode writethrough
	check_ge "$stack: the re-created cache starts warm" 1 \
		"$(tac_stat tacco used)"
	check_eq "$stack: the image reads back through the re-created target" "$want" \
		"$(dev_md5 "$dev" 0 16)"
	check_eq "$stack: ...with no cache error (the saved checksums are right)" 0 \
		"$(tac_stat tacco cache_errors)"
	dm_remove tacco
}

for stack in ${TAC_COHERENCE_STACKS:-loop delay}; do
	coherence "$stack"
done
tap_done
