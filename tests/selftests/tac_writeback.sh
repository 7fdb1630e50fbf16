#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Write-back: writes land in the cache only and make blocks dirty; dirty
# data is read back from the cache; FLUSH and FUA commit the metadata;
# the cleaner writes back in origin order with coalescing, above the
# dirty threshold, when idle, and under constant load; 'flush' and a mode
# switch empty the cache of dirty data; suspend, removal and an unclean
# stop keep dirty blocks; damaged metadata is refused (discard_dirty
# overrides); a failing cache returns errors, never stale data.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup fio

scratch_dev origin 64 || ksft_skip "no loop devices"
scratch_dev cache 16
dev=/dev/mapper/tacwb

dirty() { tac_stat tacwb dirty_blocks; }
# wait_until DESC SECONDS CONDITION...: poll a shell condition
wait_until() {
	local t=$(( $2 * 10 ))
	shift 2
	while ! eval "$*"; do
		t=$((t - 1))
		[ "$t" -gt 0 ] || return 1
		sleep 0.1
	done
}

dd if=/dev/urandom of="$origin" bs=1M count=64 oflag=direct status=none
# No idle cleaning and a high threshold: dirty blocks stay until asked.
tac_create tacwb "$origin" "$cache" 8 mode writeback dirty_threshold 90 dirty_adapt off \
	clean_idle_ms 0 || ksft_skip "cannot create the device"
check_eq "mode writeback" writeback "$(tac_stat tacwb mode)"

# 1. Whole-block writes go to the cache only.
w0=$(writes "$origin")
dd if=/dev/urandom of="$_scratch/img" bs=1M count=4 status=none
dd if="$_scratch/img" of="$dev" bs=64k seek=16 oflag=direct status=none
check_eq "1024 written blocks are dirty" 1024 "$(dirty)"
check_eq "...and the origin got no writes" "$w0" "$(writes "$origin")"
want=$(md5sum <"$_scratch/img" | cut -d' ' -f1)
check_eq "dirty data reads back from the cache" "$want" "$(dev_md5 "$dev" 1 4)"
check_eq "reads of dirty blocks are hits" 1 \
	"$([ "$(tac_stat tacwb read_hits)" -ge 1024 ] && echo 1)"

# 2. FLUSH and FUA commit the metadata.
c0=$(tac_stat tacwb commits)
dd if=/dev/zero of="$dev" bs=4k count=1 seek=2000 oflag=direct conv=fsync status=none
check_ge "fsync commits the metadata" $((c0 + 1)) "$(tac_stat tacwb commits)"
c0=$(tac_stat tacwb commits)
dd if=/dev/zero of="$dev" bs=4k count=1 seek=2001 oflag=direct,dsync status=none
check_ge "an O_DSYNC (FUA) write commits the metadata" $((c0 + 1)) \
	"$(tac_stat tacwb commits)"
check_eq "the superblock's sequence is shown" \
	"$(sb_field "$cache" seq)" "$(tac_stat tacwb commit_seq)"
# A flush writes the map pages a crash needs, not those of read fills
# alone: clean entries are dropped after a crash, and a clean removal
# saves every page.  (No interval commit in between to write them.)
# A commit with nothing to write is the cache device's flush alone: the
# loop device counts it as one write.
dmsetup message tacwb 0 set commit_interval 3600000
w0=$(writes "$cache")
sync "$dev"
bare=$(($(writes "$cache") - w0))
p0=$(tac_stat tacwb promotions)
read_scattered "$dev" 40960 16 16
wait_stat tacwb promotions $((p0 + 64)) ||
	diag "promotions $p0 -> $(tac_stat tacwb promotions), 64 fills expected"
c0=$(tac_stat tacwb commits) w0=$(writes "$cache")
sync "$dev"
check_ge "a flush after read fills alone commits" $((c0 + 1)) \
	"$(tac_stat tacwb commits)"
check_eq "...writing no map page to the cache (as a flush after nothing)" \
	"$bare" $(($(writes "$cache") - w0))
dd if=/dev/urandom of="$dev" bs=4k count=1 seek=2000 oflag=direct status=none
w0=$(writes "$cache")
sync "$dev"
check_ge "a flush after a write of a dirty block writes its entry's map page" \
	$((bare + 1)) $(($(writes "$cache") - w0))
dmsetup message tacwb 0 set commit_interval 1000

# 3. Suspend keeps dirty blocks; so do removal and re-creation.
d=$(dirty)
dmsetup suspend tacwb && dmsetup resume tacwb
check_eq "suspend and resume keep the dirty blocks" "$d" "$(dirty)"
dm_remove tacwb
check_eq "removal records the dirty blocks in the superblock" "$d" \
	"$(sb_field "$cache" nr_dirty)"
[ "$(dev_md5 "$origin" 1 4)" != "$want" ] &&
	tap_ok "...and the origin still has the old data" ||
	tap_fail "...and the origin still has the old data" "origin already updated"
tac_create tacwb "$origin" "$cache" 8 mode writeback dirty_threshold 90 dirty_adapt off clean_idle_ms 0
check_eq "re-creation restores the dirty blocks" "$d" "$(dirty)"
check_eq "...with their data" "$want" "$(dev_md5 "$dev" 1 4)"

# 4. 'flush' writes everything back, coalescing consecutive blocks.
wb0=$(tac_stat tacwb writebacks)
cw0=$(tac_stat tacwb cleaner_writes)
check_cmd "flush message" dmsetup message tacwb 0 flush
check_eq "after flush nothing is dirty" 0 "$(dirty)"
wb=$(( $(tac_stat tacwb writebacks) - wb0 ))
cw=$(( $(tac_stat tacwb cleaner_writes) - cw0 ))
check_ge "flush wrote back every dirty block" "$d" "$wb"
diag "write-back: $wb blocks in $cw origin writes"
check_le "consecutive dirty blocks are coalesced (>= 8 blocks per write)" \
	$((wb / 8)) "$cw"
check_eq "the origin holds the data after flush" "$want" \
	"$(dev_md5 "$origin" 1 4)"

# 5. The dirty threshold starts the cleaner; idle time finishes the job.
dmsetup message tacwb 0 set dirty_threshold 10
total=$(tac_stat tacwb total)
fio --name=fill --filename="$dev" --direct=1 --rw=randwrite --bs=4k \
	--size=12M --offset=20M --ioengine=psync --output=/dev/null
wait_until "threshold" 30 '[ "$(dirty)" -le $((total / 10)) ]'
check_le "the cleaner brings dirty blocks under dirty_threshold" \
	$((total / 10)) "$(dirty)"
check_ge "...and stops a little under it (not at zero)" 1 "$(dirty)"
dmsetup message tacwb 0 set clean_idle_ms 300
wait_until "idle" 30 '[ "$(dirty)" -eq 0 ]'
check_eq "idle cleaning brings dirty blocks to zero" 0 "$(dirty)"

# 6. Progress under constant foreground load.
dmsetup message tacwb 0 set clean_idle_ms 0
dmsetup message tacwb 0 set dirty_threshold 5
wb0=$(tac_stat tacwb writebacks)
fio --name=load --filename="$dev" --direct=1 --rw=randwrite --bs=4k \
	--size=24M --offset=8M --ioengine=libaio --iodepth=8 --runtime=10 \
	--time_based --output=/dev/null &
fpid=$!
sleep 5
mid=$(tac_stat tacwb writebacks)
state=$(tac_stat tacwb cleaner)
wait $fpid
diag "under load: $((mid - wb0)) blocks written back in the first 5 s, cleaner '$state'"
check_ge "the cleaner makes progress under constant load" $((wb0 + 50)) "$mid"
check_le "dirty blocks stay near the threshold under load" \
	$((total * 5 / 100 + 256)) "$(dirty)"

# 7. Leaving write-back cleans first.
dd if=/dev/urandom of="$dev" bs=64k count=16 seek=100 oflag=direct status=none
check_cmd "mode writethrough from writeback" dmsetup message tacwb 0 mode writethrough
check_eq "...returns with nothing dirty" 0 "$(dirty)"
check_eq "...in writethrough" writethrough "$(tac_stat tacwb mode)"
check_eq "...and the origin has the data" "$(dev_md5 "$dev" 6 1)" \
	"$(dev_md5 "$origin" 6 1)"
dmsetup message tacwb 0 mode writeback

# 8. An unclean stop keeps dirty blocks, drops clean ones.  (No cleaning
# meanwhile: every write here stays dirty, the 4 MiB in 64 KiB requests
# too, each under sequential_cutoff_kb, which write-back takes.)  The
# cache is emptied of its clean blocks first: below fill_threshold every
# block is admitted, so what is cached here does not depend on how warm
# section 6's timed load (as fast as the host) left the extents and the
# coldest cached block.
dmsetup message tacwb 0 set clean_idle_ms 0
dmsetup message tacwb 0 set dirty_threshold 90
dmsetup message tacwb 0 invalidate
check_eq "nothing cached before the unclean stop's writes" 0 \
	"$(tac_stat tacwb used)"
dd if="$_scratch/img" of="$dev" bs=64k seek=16 oflag=direct status=none
dd if="$dev" of=/dev/null bs=64k skip=300 count=16 iflag=direct status=none
sync
for b in 4000 4100 4200; do
	dd if=/dev/zero of="$dev" bs=4k count=1 seek=$b oflag=direct conv=fsync status=none
done
d=$(dirty)
check_eq "the writes left 1024 + 3 dirty blocks" 1027 "$d"
dm_remove tacwb
cur=$(sb_slot "$cache")
"$TACMETA" set "$cache" "$cur" flags=0
# While running, the superblock is written only when what it says
# changes: after a crash its count may be of an older write (1 here).
"$TACMETA" set "$cache" "$cur" nr_dirty=1
kmsg_mark
tac_create tacwb "$origin" "$cache" 8 mode writeback clean_idle_ms 0 dirty_threshold 90 dirty_adapt off
kmsg_has "dirty blocks recovered" &&
	tap_ok "an unclean stop recovers the dirty blocks (logged)" ||
	tap_fail "an unclean stop recovers the dirty blocks (logged)" "$(dmesg | grep tac | tail -n1)"
check_eq "...all of them" "$d" "$(dirty)"
check_eq "...and the new superblock counts them, not the old count" "$d" \
	"$(sb_field "$cache" nr_dirty)"
kmsg_has " $d dirty blocks recovered" &&
	tap_ok "...and the log gives their number" ||
	tap_fail "...and the log gives their number" "$(dmesg | grep recovered)"
dmsetup message tacwb 0 reset_stats
dd if="$dev" of=/dev/null bs=64k skip=300 count=16 iflag=direct status=none
check_eq "...while the clean blocks were dropped (no hits on them)" 0 \
	"$(tac_stat tacwb read_hits)"
check_eq "...with their data" "$want" "$(dev_md5 "$dev" 1 4)"
dm_remove tacwb

# 9. Damaged metadata with dirty blocks: refused, tacmeta recovers,
#    discard_dirty starts cold.
map_start=$(sb_field "$cache" map_start)
"$TACMETA" flip "$cache" $((map_start * 512 + 100)) 2
kmsg_mark
if dmsetup create tacwb --table "0 $(sectors "$origin") tac $origin $cache 8 2 mode writeback" 2>/dev/null; then
	tap_fail "damaged metadata with dirty data is refused" "accepted"
	dm_remove tacwb
else
	kmsg_has "Cache metadata is damaged and may hold dirty data" &&
	kmsg_has "fails its checksum" &&
		tap_ok "damaged metadata with dirty data is refused, naming the sector" ||
		tap_fail "damaged metadata with dirty data is refused, naming the sector" "$(dmesg | grep tac | tail -n2)"
fi
cp "$_scratch/origin.img" "$_scratch/origin.bak"
check_cmd "tacmeta writeback copies the dirty blocks it can read" \
	"$TACMETA" writeback "$cache" "$origin"
tac_create tacwb "$origin" "$cache" 8 mode writeback discard_dirty
check_eq "discard_dirty starts without the dirty blocks" 0 "$(dirty)"
check_le "...cold (udev's probes aside)" 1000 "$(tac_stat tacwb used)"
dm_remove tacwb

# 10. A failing cache in write-back: errors, never stale data.
dd if=/dev/zero of="$cache" bs=4k count=2 oflag=direct status=none
clen=$(sectors "$cache")
dmsetup create tacwb_c --table "0 $clen linear $cache 0" && at_exit "dm_remove tacwb_c"
tac_create tacwb "$origin" /dev/mapper/tacwb_c 8 mode writeback clean_idle_ms 0 dirty_threshold 90 dirty_adapt off
dd if=/dev/urandom of="$dev" bs=64k count=4 seek=200 oflag=direct status=none
dmsetup suspend tacwb_c && dmsetup reload tacwb_c --table "0 $clen error" && dmsetup resume tacwb_c
if dd if="$dev" of=/dev/null bs=4k skip=3200 count=1 iflag=direct status=none 2>/dev/null; then
	tap_fail "a dirty block the cache cannot read returns an error" "read succeeded"
else
	tap_ok "a dirty block the cache cannot read returns an error"
fi
check_eq "...and the cache's state is latched 'fail'" fail "$(tac_stat tacwb state)"
if dd if=/dev/zero of="$dev" bs=4k seek=3201 count=1 oflag=direct status=none 2>/dev/null; then
	tap_fail "a write to a dirty block the cache cannot take fails" "succeeded"
else
	tap_ok "a write to a dirty block the cache cannot take fails"
fi
dmsetup suspend tacwb_c && dmsetup reload tacwb_c --table "0 $clen linear $cache 0" && dmsetup resume tacwb_c

# 11. A flush of a suspended device (its cleaner stopped) says so and
#     returns -EBUSY at once; the block is written back after resume.  (A
#     flush already waiting when a suspend comes holds the suspend back:
#     dm waits for messages in progress before it stops the target.)
dm_remove tacwb
scratch_dev cache2 16
tac_create tacwb "$origin" "$cache2" 8 mode writeback clean_idle_ms 0 \
	dirty_threshold 90 dirty_adapt off
dd if=/dev/urandom of="$dev" bs=4k seek=300 count=1 oflag=direct status=none
check_eq "one dirty block" 1 "$(dirty)"
dmsetup suspend tacwb
kmsg_mark
if dmsetup message tacwb 0 flush 2>/dev/null; then
	tap_fail "flush of a suspended device fails" "it succeeded"
else
	kmsg_has "flush: suspended with 1 dirty blocks" &&
		tap_ok "flush of a suspended device fails, saying why" ||
		tap_fail "flush of a suspended device fails, saying why" \
			"kernel said: $(dmesg | tail -n 1)"
fi
dmsetup resume tacwb
check_cmd "...and a flush after resume writes the block back" \
	dmsetup message tacwb 0 flush
check_eq "...leaving nothing dirty" 0 "$(dirty)"
dm_remove tacwb

# 12. A flush sent while a suspend waits for I/O to drain: dm waits for
#     the messages in progress again before it stops the target, so the
#     cleaner, still running, writes the block back and the flush returns
#     0 before the suspend ends.  The I/O is a write of the one dirty
#     block, held 3 s by a cache behind dm-delay (the cleaner finds the
#     block busy and retries).  (A flush that slips in after dm's last
#     wait, before the target stops, is woken by tac_wb_stop() to return
#     -EBUSY; that window is too short to hit from a test.)
scratch_dev cache3 16
delay_dev tacwb_d "$cache3" 0 0 || ksft_skip "no dm-delay"
tac_create tacwb "$origin" /dev/mapper/tacwb_d 8 mode writeback \
	clean_idle_ms 0 dirty_threshold 90 dirty_adapt off
dd if=/dev/urandom of="$dev" bs=4k seek=300 count=1 oflag=direct status=none
delay_set tacwb_d "$cache3" 0 3000
dd if=/dev/urandom of="$dev" bs=4k seek=300 count=1 oflag=direct status=none &
wpid=$!
wait_held tacwb_d 2 1 10 || diag "the write never reached the cache"
dmsetup suspend tacwb &
spid=$!
nap 0.5
dmsetup message tacwb 0 flush 2>/dev/null &
mpid=$!
wait "$spid" "$wpid"
if kill -0 "$mpid" 2>/dev/null; then
	tap_fail "a flush sent during a suspend ends before the suspend" \
		"still running after it"
	dmsetup resume tacwb
	wait "$mpid"
else
	wait "$mpid" && tap_ok "a flush sent during a suspend ends before the suspend" ||
		tap_fail "a flush sent during a suspend ends before the suspend" \
			"it failed: $(dmesg | grep 'tac: flush' | tail -n 1)"
	check_eq "...with the block written back" 0 "$(dirty)"
	dmsetup resume tacwb
fi
delay_set tacwb_d "$cache3" 0 0
dm_remove tacwb

# 13. Write runs: a write over cached blocks that follow each other on
#     the cache goes there in one bio (Write runs in dm-tac-io.c), where
#     they do not, one bio per block; data, checksums and errors are
#     those of the blocks written one by one.  The cache is a dm-linear
#     device, whose statistics count the bios it gets (and which can be
#     made to fail).
scratch_dev cache4 16
clen=$(sectors "$cache4")
dmsetup create tacwb_r --table "0 $clen linear $cache4 0" &&
	at_exit "dm_remove tacwb_r"
rstat=$(dm_sysfs tacwb_r)/stat
cache_bios() { awk '{ print $5 }' "$rstat"; }
# No commit but those asked for (the count of bios is the data's), and
# errors do not switch the cache off; no udev probe reads the cache
# (through a failing cache, each would drop the blocks it read).
udev_quiet tacwb
opts13="mode writeback clean_idle_ms 0 dirty_threshold 90 dirty_adapt off commit_interval 3600000 error_threshold 1000"
tac_create tacwb "$origin" /dev/mapper/tacwb_r 8 $opts13
c13=$(tac_stat tacwb commits)
dd if="$origin" of="$_scratch/want13" bs=1M iflag=direct status=none
want13() {
	dd if="$_scratch/want13" bs=1M skip=16 count=1 status=none | md5sum |
		cut -d' ' -f1
}
# Blocks 4096..4159 written in order (cached on blocks in order), then
# 4224..4287 in two passes, even blocks then odd ones (the cache blocks
# of neighbours do not follow each other).
put13() {
	py3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
want = open(sys.argv[2], "r+b")
bs = int(sys.argv[3])
buf = mmap.mmap(-1, bs)
for line in sys.stdin:
    off = int(line)
    buf[:] = os.urandom(bs)
    if os.pwritev(fd, [buf], off) != bs:
        sys.exit("short write at %d" % off)
    want.seek(off)
    want.write(buf[:])
' "$dev" "$_scratch/want13" "$1"
}
seq 4096 4159 | awk '{ print $1 * 4096 }' | put13 4096
{ seq 4224 2 4287; seq 4225 2 4287; } | awk '{ print $1 * 4096 }' | put13 4096
check_eq "128 blocks written one by one are dirty" 128 "$(dirty)"
check_eq "...and no commit yet: commit_interval counts from the start" \
	"$c13" "$(tac_stat tacwb commits)"
h0=$(tac_stat tacwb write_hits) b0=$(cache_bios)
seq 0 15 | shuf | awk '{ print 4096 * 4096 + $1 * 16384 }' | put13 16384
b1=$(cache_bios)
diag "16 writes of 16 KiB over blocks cached in order: $((b1 - b0)) bios to the cache"
check_le "16 writes of 16 KiB over blocks cached in order: 16 bios to the cache" \
	16 $((b1 - b0))
check_eq "...counting 64 write hits" $((h0 + 64)) "$(tac_stat tacwb write_hits)"
seq 0 7 | shuf | awk '{ print 4224 * 4096 + $1 * 32768 + 16384 }' | put13 16384
b2=$(cache_bios)
diag "8 writes of 16 KiB over blocks not cached in order: $((b2 - b1)) bios to the cache"
check_ge "8 writes of 16 KiB over blocks not cached in order: a bio per block" \
	32 $((b2 - b1))
# 16 KiB at 2 KiB into a block: five blocks, the first and last in part.
seq 0 11 | shuf | awk '{ print 4096 * 4096 + $1 * 20480 + 2048 }' | put13 16384
check_eq "write runs over whole and partial blocks read back" \
	"$(want13)" "$(dev_md5 "$dev" 16 1)"
check_eq "...as 128 dirty blocks" 128 "$(dirty)"
dm_remove tacwb
# Reloaded: each block's checksums (checked on every read of a dirty
# block) are those of its data.
tac_create tacwb "$origin" /dev/mapper/tacwb_r 8 $opts13
check_eq "...and again after a reload, with their checksums" \
	"$(want13)" "$(dev_md5 "$dev" 16 1)"
check_eq "...with no checksum mismatch" 0 "$(tac_stat tacwb cache_errors)"
# A run of clean blocks whose write fails: each block is dropped (the
# origin has it as it was), none is taken for dirty data lost.
dmsetup message tacwb 0 flush
check_eq "written back: nothing dirty" 0 "$(dirty)"
u0=$(tac_stat tacwb used)
dmsetup suspend tacwb_r && dmsetup reload tacwb_r --table "0 $clen error" &&
	dmsetup resume tacwb_r
if dd if=/dev/zero of="$dev" bs=16k seek=1024 count=1 oflag=direct \
	status=none 2>/dev/null; then
	tap_fail "a write run of clean blocks the cache cannot take fails" "succeeded"
else
	tap_ok "a write run of clean blocks the cache cannot take fails"
fi
check_eq "...and drops its 4 blocks" $((u0 - 4)) "$(tac_stat tacwb used)"
check_eq "...leaving the cache usable (not 'fail')" ok "$(tac_stat tacwb state)"
dmsetup suspend tacwb_r && dmsetup reload tacwb_r --table "0 $clen linear $cache4 0" &&
	dmsetup resume tacwb_r
check_eq "...and the origin's data is read in their place" \
	"$(dd if="$origin" bs=16k skip=1024 count=1 iflag=direct status=none | md5sum)" \
	"$(dd if="$dev" bs=16k skip=1024 count=1 iflag=direct status=none | md5sum)"
dm_remove tacwb

tap_done
