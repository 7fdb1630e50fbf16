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
	local b
	for b in $(seq 0 4 4095); do
		echo "$b"
	done | while read -r b; do
		dd if="$dev" of=/dev/null bs=4k skip="$b" count=1 iflag=direct \
			status=none
	done
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

tap_done
