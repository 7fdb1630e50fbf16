#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A read hit takes its block and lets go of it without the cache's lock,
# and readers are no longer holds in the policy: a clean block being
# read may be chosen as a victim.  Such a victim must not take new data
# under its readers: it leaves the cache (an invalidation), is freed when
# they are done, and the block that wanted its place is not admitted.
#
# The cache device sits behind dm-delay, whose reads take 5 s: every
# cached block is read at once and held there, and meanwhile random reads
# of blocks not cached, warmer than the cached ones (read in sequence,
# which warms an extent little), are admitted over them.  Were a victim
# refilled under its readers, the fill's write would reach the cache
# device at once and the held read would come back with the new block's
# data.  Every read, held or not, must return the origin's bytes.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup python3

scratch_dev origin 8 || ksft_skip "no loop devices"
scratch_dev cache_raw 1
dd if=/dev/urandom of="$origin" bs=1M count=8 oflag=direct status=none
delay_dev tachr_c "$cache_raw" 0 0 ||
	ksft_skip "no dm-delay"
dev=/dev/mapper/tachr
tac_create tachr "$origin" /dev/mapper/tachr_c 8 mode writethrough fill_threshold 100 \
	max_cache_inflight 65536 ||
	ksft_skip "cannot create the device"
dmsetup message tachr 0 invalidate
dmsetup message tachr 0 reset_stats
total=$(tac_stat tachr total)
diag "cache blocks: $total"

# Fill the cache with blocks read in sequence (cold extents: sequential
# reads warm them by 11 us a block against 12381 for a random one).
dd if="$dev" of=/dev/null bs=4k count="$total" iflag=direct status=none
wait_stat tachr used "$total"
check_eq "the cache is full of blocks read in sequence" "$total" \
	"$(tac_stat tachr used)"

# reads.py DEV ORIGIN HELD_FIRST HELD_N NEW_FIRST NEW_N: reads blocks
# [HELD_FIRST, +HELD_N) all at once (one thread each), waits until the
# cache device holds them, then reads NEW_N blocks from NEW_FIRST at
# random, one by one; compares everything read with the origin's bytes.
# Prints "ok" or what differed.
cat >"$_scratch/reads.py" <<'PY'
import mmap, os, random, subprocess, sys, threading, time
dev, origin = sys.argv[1], sys.argv[2]
held0, heldn, new0, newn = map(int, sys.argv[3:7])
B = 4096
bad = []

def read(path, blk):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, B)
    try:
        os.preadv(fd, [buf], blk * B)
        return bytes(buf)
    finally:
        os.close(fd)

def check(blk):
    if read(dev, blk) != read(origin, blk):
        bad.append(blk)

threads = [threading.Thread(target=check, args=(b,))
           for b in range(held0, held0 + heldn)]
for t in threads:
    t.start()
# Until dm-delay holds the reads (status: held reads, writes, flushes).
end = time.time() + 20
while time.time() < end:
    st = subprocess.run(["dmsetup", "status", "tachr_c"],
                        capture_output=True, text=True).stdout.split()
    if int(st[3]) >= heldn // 2:
        break
    time.sleep(0.05)
blocks = list(range(new0, new0 + newn))
random.Random(1).shuffle(blocks)
for b in blocks:
    check(b)
for t in threads:
    t.join()
print("ok" if not bad else "differ: %s" % bad[:10])
PY

# The cache's reads from now on are held 5 s.
delay_set tachr_c "$cache_raw" 5000 0
inv0=$(tac_stat tachr invalidations)
lk0=$(tac_stat tachr lockless_hits)
got=$(py3 "$_scratch/reads.py" "$dev" "$origin" 0 "$total" 1536 256)
check_eq "held hits and the reads admitted over them return the origin's bytes" \
	ok "$got"
check_ge "...the held hits taken without the cache's lock" \
	$((lk0 + total / 2)) "$(tac_stat tachr lockless_hits)"
check_ge "...and victims still being read left the cache" $((inv0 + 1)) \
	"$(tac_stat tachr invalidations)"
check_eq "...with no cache error" 0 "$(tac_stat tachr cache_errors)"

# Once their readers are gone, the victims' blocks are free and fill again.
delay_set tachr_c "$cache_raw" 0 0
dd if="$dev" of=/dev/null bs=4k skip=1024 count="$total" iflag=direct \
	status=none
wait_stat tachr used "$total"
check_eq "the blocks of those victims are reused: the cache fills again" \
	"$total" "$(tac_stat tachr used)"
check_eq "everything reads back as the origin's bytes" \
	"$(dev_md5 "$origin" 0 8)" "$(dev_md5 "$dev" 0 8)"
check_eq "...with no cache error" 0 "$(tac_stat tachr cache_errors)"

tap_done
