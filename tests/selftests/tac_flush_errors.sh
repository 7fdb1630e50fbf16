#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A cache device whose flush, or FUA write, fails while its other writes
# succeed (a disk reset between them).  A write-back flush is a metadata
# commit: the superblock if it has news (behind a flush of its own), then
# a flush and the changed map sectors, each written with FUA.  When any of
# those fails, the commit must fail, the user's flush must end in an
# error and the cache must stop promising durability; it must never
# report the map durable.  The cache device here is a dm device
# (tests/hddsim at no cost, with its fail_flush and fail_fua messages),
# as dm-linear or dm-crypt under a cache would be: over those, a write's
# REQ_PREFLUSH runs as an empty flush whose error dm does not return with
# the write's (before that fix, fsync said 0).
#
# And what a commit costs: one that only changes map entries (a rewrite
# of dirty blocks) is one flush and the map writes, with no superblock.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup python3

# The disk model, as tests/check.sh builds it (make hddsim); only this
# test loads it.  Built but refused is a failure, not a skip.
hddsim_ko=$TOP/tests/hddsim/build/$(uname -r)/dm-hddsim.ko
if ! dmsetup targets | grep -qw hddsim; then
	[ -r "$hddsim_ko" ] ||
		ksft_skip "no $hddsim_ko (make hddsim KVER=$(uname -r))"
	if ! err=$(insmod "$hddsim_ko" 2>&1); then
		tap_fail "the disk model loads" "insmod $hddsim_ko: $err"
		tap_done
	fi
fi
scratch_dev origin 16 || ksft_skip "no loop devices"
scratch_dev cachebk 8

dmsetup create tacfc --table "0 $(sectors "$cachebk") hddsim $cachebk 12 seek_track_us 0 seek_avg_us 0 seek_full_us 0 rpm 100000 rate_mb_s 100000 overhead_us 0" ||
	ksft_skip "cannot create the hddsim device"
at_exit "dm_remove tacfc"
cache=/dev/mapper/tacfc
# hddsim's status fields (tests/hddsim/README.md), after "0 <len> hddsim"
hddsim_field() {
	dmsetup status tacfc | awk -v n="$1" '{ print $(n + 3) }'
}
passthrough() { hddsim_field 7; }	# flushes and discards
failed_flushes() { hddsim_field 14; }
failed_fua() { hddsim_field 15; }

# fresh: dm-tac in write-back over a newly formatted cache, with no
# cleaning and no commit but the ones a flush asks for.  (A create that
# fails is a regression of the constructor's own flushes, not a reason
# to skip.)
fresh() {
	dm_remove tacfl
	if ! tac_create tacfl "$origin" "$cache" 8 mode writeback \
		dirty_adapt off dirty_threshold 100 clean_idle_ms 3600000 \
		commit_interval 3600000 format; then
		tap_fail "dm-tac over a cache device whose flushes work" \
			"create failed"
		tap_done
	fi
}
dev=/dev/mapper/tacfl

# fsync_dev: "0" or the errno name of fsync() on the device
fsync_dev() {
	py3 - "$dev" <<'PY'
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

# failed_commit WHAT: the fsync after an injected failure fails, and the
# cache says it can no longer promise durability.
failed_commit() {
	check_eq "a flush whose commit lost $1 fails" EIO "$(fsync_dev)"
	check_eq "...and the cache no longer promises durability" fail \
		"$(tac_stat tacfl state)"
	check_eq "...and no commit is counted for it" "$commits" \
		"$(tac_stat tacfl commits)"
}

# 1. What a commit writes.
fresh
write_block 1
check_eq "a flush after a write succeeds (the setup works)" 0 "$(fsync_dev)"
check_eq "...and the block is dirty in the cache" 1 "$(tac_stat tacfl dirty_blocks)"
check_eq "...and the superblock says there are dirty blocks" 1 \
	"$(sb_field "$cache" nr_dirty)"
# A commit whose superblock would say nothing new (same mode, still
# dirty blocks) writes only the map sectors: one flush, no superblock.
# (Before: every commit wrote it, behind a second flush.)
write_block 2
seq=$(sb_field "$cache" seq)
commits=$(tac_stat tacfl commits)
flushes=$(passthrough)
check_eq "a flush after a second write succeeds" 0 "$(fsync_dev)"
check_eq "...its commit is counted" $((commits + 1)) "$(tac_stat tacfl commits)"
check_eq "...and writes no superblock (its sequence stays)" "$seq" \
	"$(sb_field "$cache" seq)"
check_eq "...and flushes the cache device once" $((flushes + 1)) \
	"$(passthrough)"

# 2. The commit's flush before the map sectors, which makes the data they
# describe durable, fails.
write_block 3
commits=$(tac_stat tacfl commits)
dmsetup message tacfc 0 fail_flush 1
failed_commit "the flush before its map sectors"
check_eq "...and the cache device did fail that flush" 1 "$(failed_flushes)"
# The dirty blocks are still there: the next flush commits them again,
# and with its flushes going through, it may say so.
check_eq "a later flush, whose commit goes through, succeeds" 0 \
	"$(fsync_dev)"
check_eq "...while the state stays failed (latched)" fail \
	"$(tac_stat tacfl state)"
check_eq "...and the blocks read back as written" "same same same" \
	"$(read_back 1) $(read_back 2) $(read_back 3)"

# 3. A map sector's FUA write fails (the writes of a commit go out
# together and end on their own: the failure must still be seen).
fresh
write_block 4
check_eq "a first flush succeeds" 0 "$(fsync_dev)"
write_block 5
commits=$(tac_stat tacfl commits)
dmsetup message tacfc 0 fail_fua 1
failed_commit "a map sector's write"
check_eq "...and the cache device did fail that write" 1 "$(failed_fua)"
check_eq "a later flush, whose commit goes through, succeeds" 0 \
	"$(fsync_dev)"
check_eq "...and the blocks read back as written" "same same" \
	"$(read_back 4) $(read_back 5)"

# 4. The superblock's own flush fails: on a new cache, the first commit
# with a dirty block has news for the superblock (there are dirty blocks
# now), and writes it first.
fresh
write_block 6
seq=$(sb_field "$cache" seq)
commits=$(tac_stat tacfl commits)
failed=$(failed_flushes)
dmsetup message tacfc 0 fail_flush 1
failed_commit "the superblock's flush"
check_eq "...and the cache device did fail that flush" $((failed + 1)) \
	"$(failed_flushes)"
check_eq "...and the superblock was not written" "$seq" \
	"$(sb_field "$cache" seq)"
check_eq "a later flush, whose commit goes through, succeeds" 0 \
	"$(fsync_dev)"
check_eq "...and the block reads back as written" same "$(read_back 6)"

# 5. The superblock says dirty blocks may exist before any map sector
# calls a block dirty: here its write lands and the flush before the map
# sectors fails.  (A damaged map under a superblock that says there are
# none would start cold, dropping the dirty data.)
fresh
write_block 7
seq=$(sb_field "$cache" seq)
commits=$(tac_stat tacfl commits)
dmsetup message tacfc 0 fail_flush 2
failed_commit "the flush before its map sectors, after its superblock"
check_eq "...whose superblock landed first" $((seq + 1)) \
	"$(sb_field "$cache" seq)"
check_eq "...saying there are dirty blocks" 1 "$(sb_field "$cache" nr_dirty)"

# 6. The origin's flush after the cleaner's writes fails, and goes on
# failing: the 'flush' message returns an error, as it does when those
# writes fail, and the block stays dirty.  (Before: the cleaner retried
# every 100 ms and the message waited for ever, and so would a suspend
# behind it.)
dm_remove tacfl
dmsetup create tacfo --table "0 $(sectors "$origin") hddsim $origin 12 seek_track_us 0 seek_avg_us 0 seek_full_us 0 rpm 100000 rate_mb_s 100000 overhead_us 0" ||
	tap_fail "an hddsim origin" "create failed"
at_exit "dm_remove tacfo"
if tac_create tacfl /dev/mapper/tacfo "$cache" 8 mode writeback \
	dirty_adapt off dirty_threshold 100 clean_idle_ms 3600000 \
	commit_interval 3600000 format; then
	write_block 5
	dmsetup message tacfo 0 fail_flushes on
	timeout 60 dmsetup message tacfl 0 flush 2>/dev/null
	check_eq "a flush message whose origin flushes fail returns an error (1), not after the 60 s timeout (124)" \
		1 "$?"
	check_eq "...the block stays dirty" 1 "$(tac_stat tacfl dirty_blocks)"
	check_eq "...and reads back as written" same "$(read_back 5)"
	dmsetup message tacfo 0 fail_flushes off
	timeout 60 dmsetup message tacfl 0 flush 2>/dev/null
	check_eq "once the origin's flushes work again, a flush message succeeds" \
		0 "$?"
	check_eq "...and nothing is dirty" 0 "$(tac_stat tacfl dirty_blocks)"
else
	tap_fail "dm-tac over an hddsim origin" "create failed"
fi

# 7. A resume marks both superblock slots unclean, each write behind a
# flush of its own.  The second's flush fails: the first has landed (the
# newest slot says unclean), so the resume goes on and the next
# superblock write retries the slot.  (Before: the resume failed and the
# device stayed suspended, its I/O queued.)
fresh
write_block 8
dmsetup suspend tacfl
failed=$(failed_flushes)
dmsetup message tacfc 0 fail_flush 2
if timeout 60 dmsetup resume tacfl 2>/dev/null; then
	tap_ok "a resume whose second superblock write fails resumes"
else
	tap_fail "a resume whose second superblock write fails resumes" \
		"$(dmesg | grep tac | tail -n 2)"
	dmsetup message tacfc 0 fail_flush 0
	dmsetup resume tacfl
fi
check_eq "...the cache device did fail that flush" $((failed + 1)) \
	"$(failed_flushes)"
check_eq "...the newest superblock says unclean" False \
	"$(sb_field "$cache" clean)"
# With no I/O at all, the next interval commit retries the failed slot.
dmsetup message tacfl 0 set commit_interval 100
both_unclean() {
	_sb_read "$cache"
	[ $(($(_sb_num 0 24 4) & 1)) = 0 ] && [ $(($(_sb_num 1 24 4) & 1)) = 0 ]
}
for ((i = 0; i < 50; i++)); do
	both_unclean && break
	sleep 0.1
done
check_eq "...and the next interval commit, with nothing else to do, marks the other slot unclean too" \
	"0 0" "$(($(_sb_num 0 24 4) & 1)) $(($(_sb_num 1 24 4) & 1))"
write_block 9
check_eq "...a later flush succeeds" 0 "$(fsync_dev)"
check_eq "...and the blocks read back as written" "same same" \
	"$(read_back 8) $(read_back 9)"
dm_remove tacfl

tap_done
