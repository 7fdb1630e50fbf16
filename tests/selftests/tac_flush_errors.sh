#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A cache device whose flush fails while its writes succeed (a disk reset
# between them).  A write-back flush is a metadata commit: the cache is
# flushed, the changed map sectors written, then the superblock behind a
# flush of its own.  When that second flush fails, the commit must fail,
# the user's flush must end in an error and the cache must stop
# promising durability; it must never report the map durable.  The cache
# device here is a dm device (tests/hddsim at no cost, with its
# fail_flush message), as dm-linear or dm-crypt under a cache would be:
# over those, a write's REQ_PREFLUSH runs as an empty flush whose error
# dm does not return with the write's (before the fix, fsync said 0).

. "$(dirname "$0")/lib.sh"
require dmsetup losetup python3

modprobe dm-hddsim 2>/dev/null
dmsetup targets | grep -qw hddsim ||
	ksft_skip "no hddsim target (qemu/vm --module tests/hddsim/build/<release>/dm-hddsim.ko)"
scratch_dev origin 16 || ksft_skip "no loop devices"
scratch_dev cachebk 8

dmsetup create tacfc --table "0 $(sectors "$cachebk") hddsim $cachebk 12 seek_track_us 0 seek_avg_us 0 seek_full_us 0 rpm 100000 rate_mb_s 100000 overhead_us 0" ||
	ksft_skip "cannot create the hddsim device"
at_exit "dm_remove tacfc"
cache=/dev/mapper/tacfc
failed_flushes() {
	dmsetup status tacfc | awk '{ print $17 }'
}

# Write-back, no cleaning and no commit but the ones a flush asks for.
# (A flush that fails here is a regression of the constructor's own
# flushes, not a reason to skip.)
if ! tac_create tacfl "$origin" "$cache" 8 mode writeback dirty_adapt off \
	dirty_threshold 100 clean_idle_ms 3600000 commit_interval 3600000; then
	tap_fail "dm-tac over a cache device whose flushes work" "create failed"
	tap_done
fi
dev=/dev/mapper/tacfl

# fsync_dev: "0" or the errno name of fsync() on the device
fsync_dev() {
	python3 - "$dev" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
    os.fsync(fd)
    print(0)
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
PY
}

# write_block N: random data to block N, kept in $_scratch/data.N
write_block() {
	head -c 4096 /dev/urandom > "$_scratch/data.$1"
	dd if="$_scratch/data.$1" of="$dev" bs=4096 count=1 seek="$1" \
		oflag=direct conv=notrunc status=none
}

# read_back N: "same" if block N reads back as written
read_back() {
	dd if="$dev" bs=4096 skip="$1" count=1 iflag=direct status=none |
		cmp -s - "$_scratch/data.$1" && echo same || echo different
}

write_block 1
check_eq "a flush after a write succeeds (the setup works)" 0 "$(fsync_dev)"
check_eq "...and the block is dirty in the cache" 1 "$(tac_stat tacfl dirty_blocks)"

# The next commit: flush 1 (before the map sectors) goes through, flush 2
# (before the superblock) fails.
write_block 2
commits=$(tac_stat tacfl commits)
dmsetup message tacfc 0 fail_flush 2
check_eq "a flush whose commit lost a cache flush fails" EIO "$(fsync_dev)"
check_eq "...and the cache device did fail that flush" 1 "$(failed_flushes)"
check_eq "...and the cache no longer promises durability" fail \
	"$(tac_stat tacfl state)"
check_eq "...and no commit is counted for it" "$commits" \
	"$(tac_stat tacfl commits)"
# The dirty blocks are still there: the next flush commits them again,
# and with its flushes going through, it may say so.
check_eq "a later flush, whose commit goes through, succeeds" 0 \
	"$(fsync_dev)"
check_eq "...while the state stays failed (latched)" fail \
	"$(tac_stat tacfl state)"
check_eq "...and the blocks read back as written" "same same" \
	"$(read_back 1) $(read_back 2)"

tap_done
