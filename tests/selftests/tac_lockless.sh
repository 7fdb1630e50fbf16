#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Read hits without the cache's lock, racing every change of mapping.  A
# reader finds its block in the policy's hash without the lock, takes it
# with one atomic operation, and trusts it only if no mapping changed in
# between (dm-tac-blocks.c, "A hit without the lock").  Here the blocks
# of a small hot set move all the time: an "invalidate" message unmaps
# every clean block several times a second, and the hot reads fill them
# again into other cache blocks, while a write-through writer rewrites
# part of the set (a writer takes its block only if no reader holds it)
# and cold reads evict.  Every 4 KiB block carries fio's verify header
# (its offset, a crc32c of the whole block): a hit that read another
# block's data, or a block half rewritten, fails the check.
#
# The cache device is null_blk completing from a timer (irqmode=2, 20
# us), so completions come from another context while map() runs, as a
# real SSD's do; the test needs 2 CPUs to race at all.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup fio taskset

scratch_dev origin 32 || ksft_skip "no loop devices"
nullb_dev cache 4 20000 || ksft_skip "no null_blk"
dev=/dev/mapper/taclk
[ "$(nproc)" -ge 2 ] || diag "one CPU: the races below cannot happen"

# Every block of the origin with a verify header.
fio --name=fill --filename="$origin" --direct=1 --ioengine=libaio \
	--rw=write --bs=4k --iodepth=16 --verify=crc32c --do_verify=0 \
	--output=/dev/null
tac_create taclk "$origin" "$cache" 8 mode writethrough fill_threshold 100 \
	admit_margin 0 max_cache_inflight 65536 ||
	ksft_skip "cannot create the device"
dmsetup message taclk 0 reset_stats

stop=$_scratch/stop
invalidate() {
	while [ ! -e "$stop" ]; do
		dmsetup message taclk 0 invalidate
		nap 0.1
	done
}
rm -f "$stop"
invalidate &
inv_pid=$!

# Hot reads of 1 MiB (2 jobs of 4 KiB; and of 8 KiB at odd 4 KiB
# offsets, and of 16 KiB, as a database's pages on ext4: served a block
# per map(), each 4 KiB checked against its own header), a writer of its
# first 256 KiB, cold reads of the rest: 12 s.  (fio verifies reads of
# fixed sizes only: not bssplit's.)
fio --filename="$dev" --direct=1 --ioengine=libaio --bs=4k \
	--verify=crc32c --verify_interval=4k --verify_fatal=1 \
	--time_based --runtime=12 \
	--randrepeat=0 --group_reporting --output="$_scratch/fio.out" \
	--name=hot --rw=randread --size=1M --numjobs=2 --iodepth=16 \
	--name=page --rw=randread --offset=4k --size=1020k --bs=8k \
	--iodepth=16 \
	--name=page16 --rw=randread --size=1M --bs=16k --iodepth=8 \
	--name=write --rw=randwrite --size=256k --numjobs=1 --iodepth=4 \
	--verify_backlog=64 \
	--name=cold --rw=randread --offset=4M --size=28M --numjobs=1 \
	--iodepth=4
rc=$?
touch "$stop"
wait "$inv_pid"

check_eq "every read verified (offset and crc32c of each 4 KiB block)" 0 "$rc"
[ "$rc" = 0 ] || diag "$(grep -iE 'verify|error|bad' "$_scratch/fio.out" | head -n 5)"
check_eq "no cache error (the checksums of every hit matched)" 0 \
	"$(tac_stat taclk cache_errors)"
hits=$(tac_stat taclk read_hits)
lockless=$(tac_stat taclk lockless_hits)
diag "read hits $hits, of which without the lock $lockless; invalidations $(tac_stat taclk invalidations)"
# At least 100 of each: in 20 s, about 13,000 and 11,000 under TCG, 600
# and 1,600 on a KASAN and lockdep kernel (make check-debug).
check_ge "hits were served without the lock" 100 "$lockless"
check_ge "...and some under it (blocks in flux)" 1 $((hits - lockless))
check_ge "blocks were unmapped under the readers" 100 \
	"$(tac_stat taclk invalidations)"

# What the target shows is what the origin holds, after it all.
check_eq "the target reads as the origin does" \
	"$(dev_md5 "$origin" 0 32)" "$(dev_md5 "$dev" 0 32)"
dm_remove taclk

# Remainders that change CPU.  A read of 8 KiB is served a block per
# map(); when the submission of its first block waits for a tag (a cache
# device of queue depth 1), the task may wake on the other CPU and bring
# the remainder there, before its own CPU's log is folded.  The record a
# fold then makes for it is never taken; it must not stay (each one sends
# the remainder of every later read of that page the locked way, and
# costs every hit a look through the table): such records are dropped
# after a second.  Afterwards, every page read alone on one CPU is
# served without the lock, both blocks.
if nullb_dev qcache 4 20000 hw_queue_depth=1 submit_queues=1; then
	tac_create taclq "$origin" "$qcache" 8 mode writethrough \
		max_cache_inflight 65536 || ksft_skip "cannot create the device"
	devq=/dev/mapper/taclq
	# Even blocks first, then odd ones: a page's two blocks are not
	# cached one after the other, so each read is split (a read run
	# would serve it in one piece, with no remainder to move).
	{ seq 0 2 255; seq 1 2 255; } | read_blocks "$devq" 4
	wait_stat taclq promotions 256
	fio --filename="$devq" --direct=1 --ioengine=libaio --bs=8k \
		--rw=randread --size=1M --numjobs=4 --iodepth=8 --time_based \
		--runtime=5 --randrepeat=0 --group_reporting --name=pages \
		--output=/dev/null
	# A fold (the status) makes records of the remainders still to
	# come in the logs, even those served elsewhere; the next, over a
	# second later, drops what is past its time.
	sleep 1.5
	tac_stat taclq read_hits >/dev/null
	sleep 1.5
	tac_stat taclq read_hits >/dev/null
	read -r h0 l0 < <(tac_stat taclq read_hits lockless_hits)
	# On one CPU: no remainder of these moves (one that did would be
	# served the locked way, rightly).
	taskset -c 0 dd if="$devq" of=/dev/null bs=8k count=128 iflag=direct \
		status=none
	read -r h1 l1 < <(tac_stat taclq read_hits lockless_hits)
	diag "pages read alone: $((h1 - h0)) hits, $((l1 - l0)) without the lock"
	check_eq "after a load of many CPUs, 128 pages read alone: every block without the lock" \
		$((l0 + 256)) "$(tac_stat taclq lockless_hits)"
	dm_remove taclq
else
	tap_skip "remainders that change CPU" "null_blk unavailable"
fi

tap_done
