#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Cache device errors never reach the user while the origin works, and a
# cache that loses writes silently never serves wrong data (every hit is
# checked against the data's 32-bit checksums: with 16 bits, one lost
# write in 65,536 went unseen, and this test's 256 failed about one run
# in 200; crc_twin.py makes such a write on purpose).  Too many cache
# errors switch the target to passthrough.  Origin errors do reach the
# user.
#
# The cache and the origin sit on dm-linear devices whose tables are
# swapped for dm-flakey (drop_writes, error_writes) and dm-error.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup python3

scratch_dev origin_lo 32 || ksft_skip "no loop devices"
scratch_dev cache_lo 16
modprobe dm-flakey 2>/dev/null

olen=$(sectors "$origin_lo")
clen=$(sectors "$cache_lo")
dmsetup create tacerr_o --table "0 $olen linear $origin_lo 0" &&
	at_exit "dm_remove tacerr_o"
dmsetup create tacerr_c --table "0 $clen linear $cache_lo 0" &&
	at_exit "dm_remove tacerr_c"
origin=/dev/mapper/tacerr_o
cache=/dev/mapper/tacerr_c
dev=/dev/mapper/tacerr

# swap NAME TABLE: replace a device's table while the cache runs on it.
swap() {
	dmsetup suspend "$1" && dmsetup reload "$1" --table "$2" &&
		dmsetup resume "$1"
}

dd if=/dev/urandom of="$origin" bs=1M count=32 oflag=direct status=none
tac_create tacerr "$origin" "$cache" 8 mode writethrough error_threshold 1000 ||
	ksft_skip "cannot create the device"

# Cache 4 MiB at offset 0: read until it is (fills are throttled by
# max_cache_inflight, so one pass may not fill every block), out of order
# (a sequential read is a stream, which is not cached).
for i in 1 2 3; do
	read_scattered "$dev" 0 64
	sleep 1
done
dmsetup message tacerr 0 reset_stats
read_scattered "$dev" 0 64
check_eq "setup: the region is cached (1024 hits)" 1024 "$(tac_stat tacerr read_hits)"

# 1. The cache silently drops writes: write-through writes to cached
#    blocks leave stale data there.  Reads must still be right.
if swap tacerr_c "0 $clen flakey $cache_lo 0 0 3600 1 drop_writes"; then
	# New data whose 16-bit checksum (what the on-disk map keeps) is
	# the cached data's: only a check of more bits tells them apart.
	dd if="$origin" of="$_scratch/b300" bs=4k skip=300 count=1 iflag=direct \
		status=none
	py3 "$(dirname "$0")/crc_twin.py" "$_scratch/b300" "$_scratch/twin" &&
		dd if="$_scratch/twin" of="$dev" bs=4k seek=300 count=1 \
			oflag=direct status=none
	check_eq "a dropped write of data with the cached data's 16-bit checksum is still caught" \
		"$(md5sum <"$_scratch/twin")" \
		"$(dd if="$dev" bs=4k skip=300 count=1 iflag=direct status=none | md5sum)"
	dd if=/dev/urandom of="$dev" bs=4k count=256 seek=0 oflag=direct status=none
	check_eq "dropped cache writes: reads return the new data" \
		"$(dev_md5 "$origin" 0 1)" "$(dev_md5 "$dev" 0 1)"
	check_ge "dropped cache writes: detected as checksum errors" 1 \
		"$(tac_stat tacerr cache_errors)"
	# Fills dropped too: a fresh region read twice.
	dd if="$dev" of=/dev/null bs=64k skip=128 count=32 iflag=direct status=none
	sleep 1
	check_eq "dropped fills: the region still reads right" \
		"$(dev_md5 "$origin" 8 2)" "$(dev_md5 "$dev" 8 2)"
	swap tacerr_c "0 $clen linear $cache_lo 0"
else
	tap_skip "dropped cache writes" "dm-flakey unavailable"
fi

# 2. Cache writes fail: the user's writes still succeed.
e0=$(tac_stat tacerr cache_errors)
if swap tacerr_c "0 $clen flakey $cache_lo 0 0 3600 1 error_writes"; then
	dd if="$dev" of=/dev/null bs=64k count=16 iflag=direct status=none
	if dd if=/dev/urandom of="$dev" bs=4k count=64 seek=16 oflag=direct status=none; then
		tap_ok "failed cache writes: the user's write succeeds"
	else
		tap_fail "failed cache writes: the user's write succeeds" "dd failed"
	fi
	check_eq "failed cache writes: the data is right" \
		"$(dev_md5 "$origin" 0 1)" "$(dev_md5 "$dev" 0 1)"
	check_ge "failed cache writes are counted" $((e0 + 1)) \
		"$(tac_stat tacerr cache_errors)"
	swap tacerr_c "0 $clen linear $cache_lo 0"
else
	tap_skip "failed cache writes" "dm-flakey unavailable"
fi

# 3. The cache device dies: reads come from the origin, and after
#    error_threshold errors the target switches to passthrough.
dmsetup message tacerr 0 set error_threshold 4
read_scattered "$dev" 0 64
sleep 1
swap tacerr_c "0 $clen error"
check_eq "dead cache: every byte still reads right" \
	"$(dev_md5 "$origin" 0 4)" "$(dev_md5 "$dev" 0 4)"
check_eq "dead cache: switched to passthrough" passthrough \
	"$(tac_stat tacerr mode)"
check_eq "dead cache: status says degraded" degraded "$(tac_stat tacerr state)"
check_eq "dead cache: TABLE keeps the table's mode (a reload returns to it)" \
	"mode writethrough" \
	"$(dmsetup table tacerr | awk '{ print $8, $9 }')"
kmsg_has "switching to passthrough" &&
	tap_ok "dead cache: the switch is logged" ||
	tap_fail "dead cache: the switch is logged" "no DMERR line"
check_cmd "dead cache: writes still succeed" \
	dd if=/dev/zero of="$dev" bs=4k count=16 oflag=direct status=none
swap tacerr_c "0 $clen linear $cache_lo 0"
dmsetup message tacerr 0 mode writethrough
check_eq "mode message re-arms after a degradation" ok \
	"$(tac_stat tacerr state)"

# 4. Origin errors reach the user, on reads and writes.
swap tacerr_o "0 $olen error"
if dd if="$dev" of=/dev/null bs=4k skip=5000 count=1 iflag=direct status=none 2>/dev/null; then
	tap_fail "origin read error reaches the user" "read succeeded"
else
	tap_ok "origin read error reaches the user"
fi
if dd if=/dev/zero of="$dev" bs=4k seek=5000 count=1 oflag=direct status=none 2>/dev/null; then
	tap_fail "origin write error reaches the user" "write succeeded"
else
	tap_ok "origin write error reaches the user"
fi
swap tacerr_o "0 $olen linear $origin_lo 0"

# 5. A stream read over dirty blocks that the cache cannot read fails: it
#    never returns the origin's stale copy of them.  (Last: the target is
#    failed afterwards.)
dmsetup message tacerr 0 set clean_idle_ms 0
dmsetup message tacerr 0 mode writeback
for i in 0 1 2 3; do
	dd if=/dev/urandom of="$dev" bs=4k seek=$((4096 + 256 + i * 40)) count=1 \
		oflag=direct status=none
done
check_eq "four blocks dirty in the stream's range" 4 \
	"$(tac_stat tacerr dirty_blocks)"
swap tacerr_c "0 $clen error"
if dd if="$dev" of="$_scratch/stream" bs=1M skip=16 count=4 iflag=direct \
	status=none 2>/dev/null; then
	tap_fail "a stream over unreadable dirty blocks fails" "it read $(
		cmp -s <(dd if="$_scratch/stream" bs=4k skip=256 count=1 status=none) \
			<(dd if="$origin" bs=4k skip=$((4096 + 256)) count=1 iflag=direct status=none) &&
		echo "the origin's stale data" || echo "something")"
else
	tap_ok "a stream over unreadable dirty blocks fails"
fi
swap tacerr_c "0 $clen linear $cache_lo 0"

# 6. verify_reads off: a clean hit is not checked, so a block the cache
#    garbled is read as the cache holds it (what the setting trades away);
#    a dirty block still is, its only copy being on the cache.
dm_remove tacerr
dd if=/dev/zero of="$cache" bs=4k count=2 oflag=direct status=none
tac_create tacerr "$origin" "$cache" 8 mode writethrough verify_reads off \
	error_threshold 1000
case " $(dmsetup table tacerr) " in
*" verify_reads off "*) tap_ok "verify_reads off shows in the table" ;;
*) tap_fail "verify_reads off shows in the table" "$(dmsetup table tacerr)" ;;
esac
for i in 1 2 3; do
	read_scattered "$dev" 0 64
	sleep 1
done
if swap tacerr_c "0 $clen flakey $cache_lo 0 0 3600 1 drop_writes"; then
	old=$(dd if="$dev" bs=4k skip=300 count=1 iflag=direct status=none | md5sum)
	dd if=/dev/urandom of="$_scratch/new" bs=4k count=1 status=none
	dd if="$_scratch/new" of="$dev" bs=4k seek=300 count=1 oflag=direct status=none
	e0=$(tac_stat tacerr cache_errors)
	check_eq "verify_reads off: a clean hit is not checked (a dropped write's old data is read)" \
		"$old" "$(dd if="$dev" bs=4k skip=300 count=1 iflag=direct status=none | md5sum)"
	check_eq "...and counts no error" "$e0" "$(tac_stat tacerr cache_errors)"
	dmsetup message tacerr 0 set verify_reads on
	check_eq "set verify_reads on: the same hit is checked, and the new data read" \
		"$(md5sum <"$_scratch/new")" \
		"$(dd if="$dev" bs=4k skip=300 count=1 iflag=direct status=none | md5sum)"
	dmsetup message tacerr 0 set verify_reads off
	dmsetup message tacerr 0 set clean_idle_ms 0
	dmsetup message tacerr 0 mode writeback
	dd if="$_scratch/new" of="$dev" bs=4k seek=310 count=1 oflag=direct status=none
	check_eq "verify_reads off: a block made dirty (its cache write dropped)" 1 \
		"$(tac_stat tacerr dirty_blocks)"
	if dd if="$dev" of="$_scratch/got" bs=4k skip=310 count=1 iflag=direct \
		status=none 2>/dev/null; then
		tap_fail "verify_reads off: a dirty hit is still checked (the read fails)" \
			"it read $(cmp -s "$_scratch/got" "$_scratch/new" && echo "the new data" || echo "stale data")"
	else
		tap_ok "verify_reads off: a dirty hit is still checked (the read fails)"
	fi
	swap tacerr_c "0 $clen linear $cache_lo 0"
else
	tap_skip "verify_reads off" "dm-flakey unavailable"
fi

# 7. A suspend whose metadata writes fail (a passing cache error) must
#    not forget what it did not write.  A dirty block's entry, changed
#    before the suspend and not yet committed, goes out with the first
#    flush after resume; a crash after that flush keeps the block.  The
#    failed save once cleared every page's "changed" mark: the flush
#    committed nothing and the crash lost the acknowledged write.
dm_remove tacerr
if dmsetup targets | grep -q '^flakey'; then
	scratch_dev sv_origin 8
	scratch_dev sv_cache_lo 8
	svlen=$(sectors "$sv_cache_lo")
	dmsetup create tacsv_c --table "0 $svlen linear $sv_cache_lo 0" &&
		at_exit "dm_remove tacsv_c"
	at_exit "dm_remove tacsv"
	svargs=(mode writeback clean_idle_ms 0 dirty_threshold 90 dirty_adapt off
		commit_interval 3600000)
	tac_create tacsv "$sv_origin" /dev/mapper/tacsv_c 8 "${svargs[@]}"
	dd if=/dev/urandom of="$_scratch/sv" bs=4k count=1 status=none
	dd if="$_scratch/sv" of=/dev/mapper/tacsv bs=4k seek=100 count=1 \
		oflag=direct status=none
	check_eq "a save that fails: one dirty block, not committed" 1 \
		"$(tac_stat tacsv dirty_blocks)"
	swap tacsv_c "0 $svlen flakey $sv_cache_lo 0 0 3600 1 error_writes"
	kmsg_mark
	dmsetup suspend tacsv
	kmsg_has "saving the cache state failed" &&
		tap_ok "...the suspend's save fails, saying so" ||
		tap_fail "...the suspend's save fails, saying so" \
			"$(dmesg | grep tac | tail -n 2)"
	swap tacsv_c "0 $svlen linear $sv_cache_lo 0"
	dmsetup resume tacsv
	py3 -c 'import os, sys; os.fsync(os.open(sys.argv[1], os.O_RDONLY))' \
		/dev/mapper/tacsv
	# The crash: from here on the cache keeps nothing (the removal's
	# save is dropped), so the next start sees what the flush left.
	swap tacsv_c "0 $svlen flakey $sv_cache_lo 0 0 3600 1 drop_writes"
	dm_remove tacsv
	swap tacsv_c "0 $svlen linear $sv_cache_lo 0"
	tac_create tacsv "$sv_origin" /dev/mapper/tacsv_c 8 "${svargs[@]}"
	check_eq "...a write flushed after it survives a crash" \
		"$(md5sum <"$_scratch/sv" | cut -d' ' -f1)" \
		"$(dd if=/dev/mapper/tacsv bs=4k skip=100 count=1 iflag=direct \
			status=none | md5sum | cut -d' ' -f1)"
	dm_remove tacsv
else
	tap_skip "a save that fails keeps its pages for the next commit" "dm-flakey unavailable"
fi

# 8. A superblock write that fails keeps its slot for the next one: the
#    other slot holds the last good superblock, which only a write known
#    to have landed may replace.  A resume's superblock write (marking
#    the cache in use) fails on a cache that errors writes; the resume
#    after the cache is back writes the same slot.  Each write once took
#    the next slot however the one before it ended, so that second
#    write overwrote the last good superblock.
if dmsetup targets | grep -q '^flakey'; then
	tac_create tacsv "$sv_origin" /dev/mapper/tacsv_c 8 mode writethrough
	dmsetup suspend tacsv
	slot0=$(sb_slot /dev/mapper/tacsv_c)
	seq0=$(sb_field /dev/mapper/tacsv_c seq)
	swap tacsv_c "0 $svlen flakey $sv_cache_lo 0 0 3600 1 error_writes"
	if dmsetup resume tacsv 2>/dev/null; then
		tap_fail "a resume whose superblock write fails fails" "it resumed"
	else
		tap_ok "a resume whose superblock write fails fails"
	fi
	swap tacsv_c "0 $svlen linear $sv_cache_lo 0"
	check_cmd "...and the next resume, with the cache back, works" \
		dmsetup resume tacsv
	# A resume writes both slots: the other one first, then the last
	# good superblock's, once the other has landed.
	check_eq "...writing the next sequence numbers (both slots)" \
		$((seq0 + 2)) "$(sb_field /dev/mapper/tacsv_c seq)"
	_sb_read /dev/mapper/tacsv_c
	check_eq "...the first to the other slot than the last good superblock's" \
		$((seq0 + 1)) "$(_sb_num $((1 - slot0)) 16 8)"
	dm_remove tacsv
else
	tap_skip "a superblock write that fails keeps its slot" "dm-flakey unavailable"
fi

# page_reads WHAT PAGE FILE: 16 reads of 16 KiB, in random order, from
# page PAGE of tacerr on: each page is one cache read (a read run of its
# four blocks, cached one after the other), and reads FILE's data.
page_reads() {
	local r0 r1
	dmsetup message tacerr 0 reset_stats
	r0=$(awk '{ print $1 }' "$cstat")
	seq 0 15 | shuf | awk -v p="$2" '{ print p + $1 }' | read_blocks "$dev" 16
	r1=$(awk '{ print $1 }' "$cstat")
	diag "16 reads of 16 KiB over $1 blocks cached in order: $((r1 - r0)) cache reads"
	check_le "16 reads of 16 KiB over $1 blocks cached in order: 16 cache reads" \
		16 $((r1 - r0))
	check_eq "...counting 64 read hits" 64 "$(tac_stat tacerr read_hits)"
	check_eq "...of the data written" "$(md5sum <"$3")" \
		"$(dd if="$dev" bs=16k skip="$2" count=16 iflag=direct status=none | md5sum)"
}

# 9. Read runs: a read of clean blocks cached one after the other on the
#    cache is one cache read (Read runs in dm-tac-io.c); a block of such
#    a run whose cache copy is stale (its write-through write dropped)
#    fails its checksum alone: it is dropped, the others stay, and the
#    whole read comes from the origin.
if dmsetup targets | grep -q '^flakey'; then
	dd if=/dev/zero of="$cache" bs=4k count=2 oflag=direct status=none
	udev_quiet tacerr
	tac_create tacerr "$origin" "$cache" 8 mode writethrough error_threshold 1000
	cstat=$(dm_sysfs tacerr_c)/stat
	# Blocks 2048..2111 (8 MiB on) cached in order, by their writes.
	dd if=/dev/urandom of="$_scratch/r9" bs=4k count=64 status=none
	write_blocks "$dev" 4 2048 "$_scratch/r9"
	check_eq "64 blocks written in order are cached" 64 "$(tac_stat tacerr used)"
	page_reads clean 512 "$_scratch/r9"
	swap tacerr_c "0 $clen flakey $cache_lo 0 0 3600 1 drop_writes"
	dd if=/dev/urandom of="$_scratch/r9b" bs=4k count=1 status=none
	dd if="$_scratch/r9b" of="$dev" bs=4k seek=2053 count=1 oflag=direct status=none
	swap tacerr_c "0 $clen linear $cache_lo 0"
	e0=$(tac_stat tacerr cache_errors) u0=$(tac_stat tacerr used)
	check_eq "a read run over a block whose cache write was dropped reads the new data" \
		"$(dd if="$origin" bs=16k skip=513 count=1 iflag=direct status=none | md5sum)" \
		"$(dd if="$dev" bs=16k skip=513 count=1 iflag=direct status=none | md5sum)"
	check_eq "...from the origin, which has it" "$(md5sum <"$_scratch/r9b")" \
		"$(dd if="$origin" bs=4k skip=2053 count=1 iflag=direct status=none | md5sum)"
	check_eq "...counting one cache error" $((e0 + 1)) "$(tac_stat tacerr cache_errors)"
	check_eq "...and dropping that block alone" $((u0 - 1)) "$(tac_stat tacerr used)"
	dm_remove tacerr
else
	tap_skip "read runs" "dm-flakey unavailable"
fi

# 10. Read runs over dirty blocks: a read of blocks cached one after the
#     other is one cache read whether they are all clean or all dirty (a
#     page written since it was cached is dirty whole).  A read over
#     dirty blocks then clean ones, one of which fails its checksum: the
#     dirty blocks' data and the origin's.  A dirty block of a run that
#     fails its checksum fails the read, never the origin's stale copy.
#     (Last: the target is failed afterwards.)
if dmsetup targets | grep -q '^flakey'; then
	dd if=/dev/zero of="$cache" bs=4k count=2 oflag=direct status=none
	udev_quiet tacerr
	tac_create tacerr "$origin" "$cache" 8 mode writeback clean_idle_ms 0 \
		commit_interval 3600000 error_threshold 1000
	cstat=$(dm_sysfs tacerr_c)/stat
	# 16 pages of 16 KiB at 12 MiB (blocks 3072..3135), written in order:
	# admitted by their writes into cache blocks in a row, dirty.
	dd if=/dev/urandom of="$_scratch/r10" bs=16k count=16 status=none
	write_blocks "$dev" 16 768 "$_scratch/r10"
	check_eq "16 pages of 16 KiB written: 64 dirty blocks" 64 \
		"$(tac_stat tacerr dirty_blocks)"
	page_reads dirty 768 "$_scratch/r10"

	# Blocks 3200..3203 (page 800) cached by one read, in write-through,
	# in one cache write (fills of blocks in a row are one bio; commits
	# are kept out by commit_interval); block 3202's cache write dropped
	# (its cache copy stale, its checksum new); then, in write-back,
	# blocks 3200 and 3201 written: dirty, dirty, clean and failing,
	# clean.  (Leaving write-back wrote the 64 dirty blocks back.)
	dmsetup message tacerr 0 mode writethrough
	w0=$(awk '{ print $5 }' "$cstat") p0=$(tac_stat tacerr promotions)
	dd if="$dev" of=/dev/null bs=16k skip=800 count=1 iflag=direct status=none
	wait_stat tacerr promotions $((p0 + 4))
	w1=$(awk '{ print $5 }' "$cstat")
	check_eq "a read miss of 16 KiB fills 4 blocks" $((p0 + 4)) \
		"$(tac_stat tacerr promotions)"
	check_eq "...in one cache write" 1 $((w1 - w0))
	swap tacerr_c "0 $clen flakey $cache_lo 0 0 3600 1 drop_writes"
	dd if=/dev/urandom of="$_scratch/p10" bs=4k count=4 status=none
	dd if="$_scratch/p10" of="$dev" bs=4k skip=2 seek=3202 count=1 \
		oflag=direct status=none
	swap tacerr_c "0 $clen linear $cache_lo 0"
	dmsetup message tacerr 0 mode writeback
	dd if="$_scratch/p10" of="$dev" bs=4k seek=3200 count=2 \
		oflag=direct status=none
	check_eq "a page of two dirty blocks and two clean" 2 \
		"$(tac_stat tacerr dirty_blocks)"
	e0=$(tac_stat tacerr cache_errors) u0=$(tac_stat tacerr used)
	check_eq "a read of a dirty run and a clean run whose block fails its checksum: the dirty blocks' data and the origin's" \
		"$( (dd if="$_scratch/p10" bs=4k count=3 status=none
		     dd if="$origin" bs=4k skip=3203 count=1 iflag=direct status=none) | md5sum)" \
		"$(dd if="$dev" bs=16k skip=800 count=1 iflag=direct status=none | md5sum)"
	check_eq "...counting one cache error" $((e0 + 1)) "$(tac_stat tacerr cache_errors)"
	check_eq "...dropping that block alone" $((u0 - 1)) "$(tac_stat tacerr used)"
	check_eq "...the cache still ok" ok "$(tac_stat tacerr state)"

	# Block 3201's write dropped: a dirty block of the run fails.
	swap tacerr_c "0 $clen flakey $cache_lo 0 0 3600 1 drop_writes"
	dd if=/dev/urandom of="$dev" bs=4k seek=3201 count=1 oflag=direct \
		status=none
	swap tacerr_c "0 $clen linear $cache_lo 0"
	if dd if="$dev" of="$_scratch/got10" bs=16k skip=800 count=1 \
		iflag=direct status=none 2>/dev/null; then
		tap_fail "a run whose dirty block fails its checksum fails" \
			"it read $(cmp -s <(dd if="$_scratch/got10" bs=4k skip=1 count=1 status=none) \
				<(dd if="$origin" bs=4k skip=3201 count=1 iflag=direct status=none) &&
				echo "the origin's stale data" || echo "something")"
	else
		tap_ok "a run whose dirty block fails its checksum fails"
	fi
	dm_remove tacerr
else
	tap_skip "read runs over dirty blocks" "dm-flakey unavailable"
fi

tap_done
