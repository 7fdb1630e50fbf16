#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Sequential streams reach the origin in one piece, whatever is cached.
# A region holds a cached block every fourth block; a stream of 1 MiB
# reads over it must cost the origin as many requests as the same reads
# on the origin alone (not one per uncached run), read nothing from the
# cache, promote nothing, and return the right data; dirty blocks still
# come from the cache.  A stream of 1 MiB write-through writes likewise
# reaches the origin in one piece and drops the cached copies it covers.
# sequential_cutoff_kb 0 turns streams off: the old per-block split.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup fio

scratch_dev origin 64 || ksft_skip "no loop devices"
scratch_dev cache 16
dev=/dev/mapper/tacst

dd if=/dev/urandom of="$origin" bs=1M count=64 oflag=direct status=none
# The number of requests of 16 x 1 MiB writes on the origin alone (its
# own data written back, before dm-tac is over it).
dd if="$origin" of="$_scratch/orig16" bs=1M count=16 iflag=direct status=none
w0=$(writes "$origin")
dd if="$_scratch/orig16" of="$origin" bs=1M count=16 oflag=direct status=none
bare_w=$(( $(writes "$origin") - w0 ))
tac_create tacst "$origin" "$cache" 8 mode writethrough ||
	ksft_skip "cannot create the device"

# Cache every fourth 4 KiB block of the first 16 MiB (1024 blocks).
cache_scattered() {
	seq 0 4 4095 | read_blocks "$dev" 4
}
# (udev's probe of the new device cached some blocks already: the check is
# that the second pass hits every one.)
cache_scattered
udevadm settle 2>/dev/null
sleep 1
dmsetup message tacst 0 reset_stats
cache_scattered
check_eq "1024 scattered blocks cached" 1024 "$(tac_stat tacst read_hits)"

# The same stream on the origin alone, for the number of requests.
r0=$(reads "$origin")
dd if="$origin" of=/dev/null bs=1M count=16 iflag=direct status=none
bare=$(( $(reads "$origin") - r0 ))

dmsetup message tacst 0 reset_stats
r0=$(reads "$origin")
c0=$(reads "$cache")
got=$(dd if="$dev" bs=1M count=16 iflag=direct status=none | md5sum)
through=$(( $(reads "$origin") - r0 ))
diag "16 x 1 MiB reads: $bare origin requests alone, $through through dm-tac"
# The loop device splits a 1 MiB request whose pages are not contiguous
# (128 segments at most): one piece per request is one or two requests,
# alone or through dm-tac, as the buffer happens to lie.  Split at every
# cached block it would be hundreds.
check_le "a stream over scattered cached blocks reaches the origin in one piece per request" \
	$((2 * 16)) "$through"
check_eq "...and reads nothing from the cache" "$c0" "$(reads "$cache")"
check_eq "...and promotes nothing" 0 "$(tac_stat tacst promotions)"
check_eq "...and returns the origin's data" \
	"$(dd if="$origin" bs=1M count=16 iflag=direct status=none | md5sum)" "$got"
check_eq "the cached blocks are still cached (hits on a random read)" 1 \
	"$(dmsetup message tacst 0 reset_stats;
	   dd if="$dev" of=/dev/null bs=4k skip=400 count=1 iflag=direct status=none;
	   tac_stat tacst read_hits)"

# Dirty blocks inside a stream come from the cache (no idle cleaning
# meanwhile).
dmsetup message tacst 0 set clean_idle_ms 0
dmsetup message tacst 0 mode writeback
dd if=/dev/urandom of="$_scratch/dirty" bs=4k count=4 status=none
for i in 0 1 2 3; do
	dd if="$_scratch/dirty" of="$dev" bs=4k skip="$i" seek=$((1000 + i * 40)) \
		count=1 oflag=direct status=none
done
check_eq "four cached blocks made dirty" 4 "$(tac_stat tacst dirty_blocks)"
dd if="$dev" of="$_scratch/read" bs=1M count=16 iflag=direct status=none
check_eq "...still dirty after the stream read" 4 "$(tac_stat tacst dirty_blocks)"
ok=1
for i in 0 1 2 3; do
	cmp -s <(dd if="$_scratch/dirty" bs=4k skip="$i" count=1 status=none) \
	       <(dd if="$_scratch/read" bs=4k skip=$((1000 + i * 40)) count=1 status=none) ||
		ok=0
done
check_eq "a stream returns the dirty blocks' data, from the cache" 1 "$ok"
# The same stream, its requests starting 512 bytes into a block: each
# dirty block is read from its own place in the cache, not at the
# request's offset into a block.
check_eq "...and so does a stream whose requests start within a block" 0 \
	"$(py3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
want = open(sys.argv[2], "rb").read()
buf = mmap.mmap(-1, 1 << 20)
bad = 0
for k in range(15):
    off = 512 + (k << 20)
    if os.preadv(fd, [buf], off) != 1 << 20 or buf[:] != want[off:off + (1 << 20)]:
        bad += 1
print(bad)
' "$dev" "$_scratch/read" 2>&1)"
check_cmd "flush" dmsetup message tacst 0 flush
dmsetup message tacst 0 mode writethrough

# A write-through stream over cached blocks: one piece, copies dropped.
bare=$bare_w
cached=$(tac_stat tacst used)
dmsetup message tacst 0 reset_stats
dd if=/dev/urandom of="$_scratch/new" bs=1M count=16 status=none
w0=$(writes "$origin")
dd if="$_scratch/new" of="$dev" bs=1M count=16 oflag=direct status=none
through=$(( $(writes "$origin") - w0 ))
diag "16 x 1 MiB writes: $bare origin requests alone, $through through dm-tac; $cached blocks were cached"
check_le "a write-through stream over cached blocks reaches the origin in one piece per request" \
	$((2 * 16)) "$through"
check_ge "...dropping the cached copies it covers" 1000 "$(tac_stat tacst invalidations)"
check_eq "...and the origin holds it" "$(md5sum <"$_scratch/new")" \
	"$(dd if="$origin" bs=1M count=16 iflag=direct status=none | md5sum)"
# Not a stream (dev_md5): a stale cached copy would be read.
check_eq "...and it reads back through the target, from the cache where cached" \
	"$(md5sum <"$_scratch/new" | cut -d' ' -f1)" "$(dev_md5 "$dev" 0 16)"

# sequential_cutoff_kb 0: no streams, reads split around cached blocks.
dmsetup message tacst 0 set sequential_cutoff_kb 0
cache_scattered
dmsetup message tacst 0 reset_stats
r0=$(reads "$origin")
dd if="$dev" of=/dev/null bs=1M count=16 iflag=direct status=none
split=$(( $(reads "$origin") - r0 ))
diag "with sequential_cutoff_kb 0: $split origin requests, $(tac_stat tacst read_hits) hits"
check_ge "sequential_cutoff_kb 0 serves cached blocks from the cache (hits)" 900 \
	"$(tac_stat tacst read_hits)"

# A remainder held up below keeps its request's verdicts, however late.
# The origin takes one request at a time and completes each 200 ms later
# (null_blk: one tag, a timer): the remainder of a stream request split
# at a dirty block is mapped only once the piece before it has a tag,
# some 200 ms after the split.  Taken for a new request it is too short
# for a stream, so it would be read through the cache and promote what
# it misses.
if nullb_dev slow 8 200000000 hw_queue_depth=1 submit_queues=1 \
	max_sectors=2048; then
	scratch_dev cache2 8
	udev_quiet tacsl
	dd if=/dev/urandom of="$_scratch/slow" bs=1M count=4 status=none
	dd if="$_scratch/slow" of="$slow" bs=1M count=4 oflag=direct status=none
	tac_create tacsl "$slow" "$cache2" 8 mode writeback clean_idle_ms 0
	# A 256 KiB read over one cached block (its 49th) is cut twice in
	# one map: at the cached block, then by the promotion cap (128 KiB).
	# Its pieces are one request (classified once), and each block
	# counts once.
	dd if=/dev/mapper/tacsl of=/dev/null bs=4k skip=$((1536 + 48)) count=1 \
		iflag=direct status=none
	for i in $(seq 50); do
		[ "$(tac_stat tacsl used)" -ge 1 ] && break
		nap 0.1
	done
	dmsetup message tacsl 0 reset_stats
	dd if=/dev/mapper/tacsl of=/dev/null bs=256k skip=24 count=1 \
		iflag=direct status=none
	check_ge "a 256 KiB read miss is promoted, in pieces the cap cuts" 33 \
		"$(tac_stat tacsl promotions)"
	check_eq "...and counts 63 read misses and 1 hit, once each" "63 1" \
		"$(tac_stat tacsl read_misses) $(tac_stat tacsl read_hits)"
	check_eq "...and is classified once, as one sequential request" "1 0" \
		"$(tac_stat tacsl seq_requests) $(tac_stat tacsl random_requests)"
	# A dirty block every 32 KiB: 32 per 1 MiB request.  The first 16 are
	# read from the cache over the origin's data (one overlay record
	# holds 16), and the request is cut at the 17th: its remainder, the
	# other 16, waits 200 ms below for the origin's one tag.
	dd if=/dev/urandom of="$_scratch/d128" bs=4k count=128 status=none
	cp "$_scratch/slow" "$_scratch/want"
	# put_dirty [WANT]: write the 128 blocks through the target (and into
	# WANT, the image it must then read as).
	put_dirty() {
		py3 -c '
import mmap, os, sys
src = open(sys.argv[1], "rb").read()
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_DIRECT)
want = open(sys.argv[3], "r+b") if len(sys.argv) > 3 else None
buf = mmap.mmap(-1, 4096)
for i in range(128):
    buf[:] = src[i * 4096:(i + 1) * 4096]
    os.pwritev(fd, [buf], (i * 8 + 4) * 4096)
    if want:
        want.seek((i * 8 + 4) * 4096)
        want.write(buf[:])
' "$_scratch/d128" /dev/mapper/tacsl "$@"
	}
	put_dirty "$_scratch/want"
	check_eq "128 scattered blocks dirty over a slow origin" 128 \
		"$(tac_stat tacsl dirty_blocks)"
	# The same reads of the origin alone, for the number of requests.
	# The block layer cuts a 1 MiB request whose pages are not contiguous
	# at 128 segments (one or two requests, as the buffer happens to
	# lie): with the cut at the 17th dirty block, three at most.
	r0=$(reads "$slow")
	dd if="$slow" of=/dev/null bs=1M count=4 iflag=direct status=none
	bare=$(( $(reads "$slow") - r0 ))
	dmsetup message tacsl 0 reset_stats
	r0=$(reads "$slow")
	got=$(dd if=/dev/mapper/tacsl bs=1M count=4 iflag=direct status=none |
		md5sum)
	through=$(( $(reads "$slow") - r0 ))
	diag "4 x 1 MiB reads: $bare origin requests alone, $through through dm-tac; $(tac_stat tacsl read_hits) hits, $(tac_stat tacsl read_misses) misses, $(tac_stat tacsl promotions) promoted"
	check_le "a stream over 32 dirty blocks per request reaches the origin in three pieces per request at most" \
		$((3 * 4)) "$through"
	check_eq "...whose remainders, held up 200 ms below, promote nothing" 0 \
		"$(tac_stat tacsl promotions)"
	check_eq "...and read the 128 dirty blocks from the cache, the rest around it" \
		"128 896" "$(tac_stat tacsl read_hits) $(tac_stat tacsl read_misses)"
	check_eq "...and are not classified again (4 requests)" 4 \
		"$(tac_stat tacsl seq_requests)"
	check_eq "...and return the dirty blocks with the origin's data" \
		"$(md5sum <"$_scratch/want")" "$got"
	# A share left behind would park these writes for ever.
	check_cmd "...and let go of every dirty block (each is written again)" \
		timeout 60 bash -c "$(declare -f put_dirty); _scratch=$_scratch; put_dirty"
	# Again, the reader moved from CPU to CPU while it waits below: a
	# remainder mapped on another CPU than its split still finds its
	# request's record.
	dmsetup message tacsl 0 reset_stats
	taskset -c 0 dd if=/dev/mapper/tacsl of="$_scratch/got" bs=1M count=4 \
		iflag=direct status=none &
	pid=$! moves=0
	while kill -0 "$pid" 2>/dev/null; do
		taskset -pc $((moves % 2)) "$pid" >/dev/null 2>&1 &&
			moves=$((moves + 1))
		nap 0.07
	done
	wait "$pid"
	diag "moved $moves times: $(tac_stat tacsl read_hits) hits, $(tac_stat tacsl read_misses) misses, $(tac_stat tacsl promotions) promoted"
	if [ "$(nproc)" -ge 2 ]; then
		check_ge "the reader moved between CPUs" 3 "$moves"
	else
		tap_skip "the reader moved between CPUs" "one CPU"
	fi
	check_eq "a stream's remainders mapped on another CPU promote nothing" 0 \
		"$(tac_stat tacsl promotions)"
	check_eq "...and are not classified again (4 requests)" 4 \
		"$(tac_stat tacsl seq_requests)"
	check_eq "...and return the same data" "$(md5sum <"$_scratch/want")" \
		"$(md5sum <"$_scratch/got")"
	dm_remove tacsl
else
	tap_skip "a stream's remainders held up 200 ms below promote nothing" \
		"no null_blk"
fi

# Stream reads over dirty blocks race writes of those blocks and the
# cleaner, over devices that complete later, from a timer (null_blk): the
# origin 1 ms, the cache 100 us.  One block in 12 is written again and
# again (21 or 22 per 1 MiB request: more than an overlay record holds);
# dirty_threshold 1 keeps the cleaner writing them back meanwhile, so
# blocks go from dirty to clean and back while streams read them.  Every
# block read must be at least as new as the last write acknowledged
# before the read was issued (stream_race.py).
if nullb_dev raceo 16 1000000 && nullb_dev racec 8 100000; then
	udev_quiet tacra
	py3 "$(dirname "$0")/stream_race.py" stamp "$raceo" 8
	tac_create tacra "$raceo" "$racec" 8 mode writeback dirty_threshold 1 dirty_adapt off
	out=$(py3 "$(dirname "$0")/stream_race.py" run /dev/mapper/tacra 8 12 10)
	rc=$?
	diag "$(echo "$out" | tail -n 1); $(tac_stat tacra read_hits) hits, $(tac_stat tacra writebacks) written back"
	check_eq "streams over dirty blocks racing their writes and the cleaner read no stale block" \
		0 "$rc"
	[ "$rc" = 0 ] || diag "$(echo "$out" | head -n 5)"
	check_ge "...and read dirty blocks from the cache in streams (hits)" 1 \
		"$(tac_stat tacra read_hits)"
	check_ge "...while the cleaner wrote them back" 1 \
		"$(tac_stat tacra writebacks)"
	check_eq "...with no cache error" 0 "$(tac_stat tacra cache_errors)"
	dm_remove tacra
	# The same in write-through with verify_reads off: streams read
	# around clean cached blocks while their writes go to both devices.
	py3 "$(dirname "$0")/stream_race.py" stamp "$raceo" 8
	dd if=/dev/zero of="$racec" bs=4k count=2 oflag=direct status=none
	tac_create tacra "$raceo" "$racec" 8 mode writethrough verify_reads off
	out=$(py3 "$(dirname "$0")/stream_race.py" run /dev/mapper/tacra 8 12 5)
	rc=$?
	diag "write-through: $(echo "$out" | tail -n 1); $(tac_stat tacra write_hits) write hits"
	check_eq "write-through: streams over cached blocks racing their writes read no stale block" \
		0 "$rc"
	[ "$rc" = 0 ] || diag "$(echo "$out" | head -n 5)"
	dm_remove tacra
else
	tap_skip "streams over dirty blocks racing their writes and the cleaner read no stale block" \
		"no null_blk"
fi

# Each piece of a split request counts its hits and misses under its own
# request's class, whatever another task's request was classified since.
# The cache takes one request at a time, 20 ms each, so the pieces of a
# scan of cached blocks (sequential, 64 KiB) wait there while random
# 8 KiB reads are classified beside them; each random read hits its first
# block and misses its second.
if nullb_dev slowc 8 20000000 hw_queue_depth=1 submit_queues=1; then
	scratch_dev origin3 48
	udev_quiet tacrc
	tac_create tacrc "$origin3" "$slowc" 8 mode writethrough
	rdev=/dev/mapper/tacrc
	for i in $(seq 0 31); do echo $((i * 256 + 64)); done | shuf >"$_scratch/a"
	read_blocks "$rdev" 4 <"$_scratch/a"
	dd if="$rdev" of=/dev/null bs=64k skip=640 count=8 iflag=direct status=none
	check_ge "32 random blocks and a 512 KiB scan region cached" 160 \
		"$(tac_stat tacrc used)"
	# start_scan: 64 KiB reads round the 512 KiB scan region in the
	# background (pid in $scan) until $_scratch/a.done exists.
	start_scan() {
		rm -f "$_scratch/a.done"
		py3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 65536)
off = 0
while not os.path.exists(sys.argv[2]):
    os.preadv(fd, [buf], (40 << 20) + off)
    off = (off + 65536) % (512 << 10)
' "$rdev" "$_scratch/a.done" &
		scan=$!
	}
	dmsetup message tacrc 0 reset_stats
	start_scan
	awk '{ print $1 / 2 }' "$_scratch/a" |
		read_blocks "$rdev" 8
	touch "$_scratch/a.done"
	wait "$scan"
	diag "random: $(tac_stat tacrc random_read_hits) hits, $(tac_stat tacrc random_read_misses) misses; all: $(tac_stat tacrc read_hits) hits"
	check_eq "32 random 8 KiB reads beside a scan: 32 random hits, 32 random misses" \
		"32 32" "$(tac_stat tacrc random_read_hits) $(tac_stat tacrc random_read_misses)"
	# Again, the reader moved from CPU to CPU every 10 ms: it sleeps
	# below for the cache's tag after its first block's hit (served
	# without the lock, logged on its CPU), and may map the remainder on
	# the other CPU before the first one's log is folded.  The remainder
	# is still the same request: one class for both blocks.
	# Other blocks than the first 32 reads', whose second blocks these
	# may have cached.
	for i in $(seq 0 31); do echo $((i * 256 + 160)); done | shuf >"$_scratch/b"
	read_blocks "$rdev" 4 <"$_scratch/b"
	check_ge "32 more random blocks cached" 192 "$(tac_stat tacrc used)"
	dmsetup message tacrc 0 reset_stats
	start_scan
	moves=$(awk '{ print $1 / 2 }' "$_scratch/b" | py3 -c '
import mmap, os, sys, threading, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 8192)
cpus = sorted(os.sched_getaffinity(0))[:2]
me, done, moves = threading.get_native_id(), False, 0
def mover():
    global moves
    while not done and len(cpus) > 1:
        os.sched_setaffinity(me, {cpus[moves % 2]})
        moves += 1
        time.sleep(0.01)
t = threading.Thread(target=mover)
t.start()
for line in sys.stdin:
    os.preadv(fd, [buf], int(line) * 8192)
done = True
t.join()
print(moves)
' "$rdev")
	touch "$_scratch/a.done"
	wait "$scan"
	diag "moved $moves times: $(tac_stat tacrc random_read_hits) random hits, $(tac_stat tacrc random_read_misses) random misses; $(tac_stat tacrc random_requests) random requests"
	if [ "$(nproc)" -ge 2 ]; then
		check_ge "the random reader moved between CPUs" 3 "${moves:-0}"
	else
		tap_skip "the random reader moved between CPUs" "one CPU"
	fi
	check_eq "32 random 8 KiB reads moving between CPUs: 32 random hits, 32 random misses" \
		"32 32" "$(tac_stat tacrc random_read_hits) $(tac_stat tacrc random_read_misses)"
	dm_remove tacrc
else
	tap_skip "32 random 8 KiB reads beside a scan: 32 random hits, 32 random misses" \
		"no null_blk"
	tap_skip "32 more random blocks cached" "no null_blk"
	tap_skip "the random reader moved between CPUs" "no null_blk"
	tap_skip "32 random 8 KiB reads moving between CPUs: 32 random hits, 32 random misses" \
		"no null_blk"
fi

tap_done
