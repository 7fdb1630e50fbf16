#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The clean/dirty split of write-back (dirty_adapt, status field 28
# dirty_target; policy/tac-split.c): a set of blocks written over and over
# that is larger than dirty_threshold makes the cleaner write back blocks
# that are then written again, so the split grows its dirty space until
# the cleaner stops writing them back; pinned (dirty_adapt off), the
# cleaner keeps writing them back.  Free space is clean space: while the
# cache has free blocks beyond its reserve, dirty blocks may take half of
# them and the cleaner waits; pinned, or out of write-back, it does
# not.  Over devices that complete
# asynchronously (null_blk, irqmode=2), as real disks do, and the data
# read back is what was written.  The tunable is checked like the others:
# on or off only, shown in the table line when given, changed by 'set'.

. "$(dirname "$0")/lib.sh"
require dmsetup fio

nullb_dev origin 64 50000 || ksft_skip "no null_blk"
nullb_dev cache 16 20000 || ksft_skip "no null_blk"
dev=/dev/mapper/tacsplit
# run() creates it in a subshell: its removal at exit is registered here.
at_exit "dm_remove tacsplit"

# wait_idle: the cleaner has nothing to do (its state, field 20)
wait_idle() {
	local i
	for i in $(seq 300); do
		[ "$(tac_stat tacsplit cleaner)" = idle ] && return 0
		nap 0.1
	done
	return 1
}

# rewrite_pass N: write each of N 4 KiB blocks from block 1024 once, in
# random order (4 KiB requests: no stream)
rewrite_pass() {
	fio --name=rw --filename="$dev" --rw=randwrite --bs=4k --direct=1 \
		--ioengine=psync --offset=4M --size=$(($1 * 4))k \
		--randseed=$RANDOM --output=/dev/null
}

# read_fill FIRST N: read each of N 4 KiB blocks from block FIRST once,
# in random order; each is cached while the cache has a free block
read_fill() {
	fio --name=fill --filename="$dev" --rw=randread --bs=4k --direct=1 \
		--ioengine=psync --offset=$(($1 * 4))k --size=$(($2 * 4))k \
		--randseed=$RANDOM --output=/dev/null
}

# create ADAPT: a new write-back device, dirty_threshold 20
create() {
	dm_remove tacsplit
	tac_create tacsplit "$origin" "$cache" 8 mode writeback format \
		dirty_threshold 20 clean_idle_ms 0 dirty_adapt "$1"
}

# run ADAPT PASSES: a cache filled by reads (no free block, so the target
# alone counts), then up to PASSES passes over 30% of the cache with
# dirty_threshold 20, fewer if one writes nothing back, and one more;
# prints "<target> <target - set size> <writebacks of the last pass>"
# (blocks) on stdout, and nothing else there.  The split's ghosts are of
# one block in 32 in this cache of about 4000 blocks (policy/tac-split.c),
# a vote per 32 rewrites of written-back blocks, a step of 1/64 of the
# cache per 8 votes: the first pass cleans 10% of the cache and the
# next brings about 14 votes, then fewer as the target nears the set's
# size (a model of it converged in 11 to 16 passes).  Adapting, the
# last pass writing nothing back says that one of the 24 did.
run() {
	local total n wb i
	create "$1" >&2 || return 1
	total=$(tac_stat tacsplit total)
	n=$((total * 30 / 100))
	read_fill 1024 "$total"
	for i in $(seq "$2"); do
		wb=$(tac_stat tacsplit writebacks)
		rewrite_pass "$n"
		wait_idle || diag "the cleaner did not go idle (pass $i)" >&2
		if [ "$i" -gt 1 ] && [ "$(tac_stat tacsplit writebacks)" = "$wb" ]; then
			diag "pass $i wrote nothing back" >&2
			break
		fi
	done
	wb=$(tac_stat tacsplit writebacks)
	rewrite_pass "$n"
	wait_idle || diag "the cleaner did not go idle (last pass)" >&2
	echo "$(tac_stat tacsplit dirty_target)" \
		"$(( $(tac_stat tacsplit dirty_target) - n ))" \
		"$(( $(tac_stat tacsplit writebacks) - wb ))"
}

dd if=/dev/urandom of="$origin" bs=1M count=64 oflag=direct status=none

# wait_cleaned [HALF_FREE]: up to 30 s until no more blocks are dirty
# than the target, or with HALF_FREE=1 the target plus half the free
# blocks beyond a sixteenth (the cleaner starts at the next tick, within
# 100 ms); leaves used, target, allow and dirty set
wait_cleaned() {
	local i total
	total=$(tac_stat tacsplit total)
	for i in $(seq 300); do
		read -r used target dirty < <(tac_stat tacsplit used dirty_target dirty_blocks)
		allow=$target
		[ "${1:-0}" = 0 ] || allow=$((target + (total - used - total / 16) / 2))
		[ "$dirty" -gt "$allow" ] || return 0
		nap 0.1
	done
	return 1
}

# 0. Free space is clean space.  A third of the cache written: with the
# split adapting, the cleaner leaves it dirty in the free blocks (the
# allowance is the target, 20%, plus half the free blocks beyond a
# sixteenth: 20% + 30%); half the cache written is past it (20% + 22%),
# and the cleaner writes back to under it; once reads have taken the
# free blocks, it writes back down to the target.  Pinned, it writes
# back down to the target at once.  Out of write-back (a table reloaded
# in passthrough), free space counts for nothing either.
if create on; then
	total=$(tac_stat tacsplit total)
	third=$((total / 3))
	rewrite_pass "$third"
	wait_idle || diag "the cleaner did not go idle (free space)"
	check_eq "with free blocks, a third of the cache written stays dirty (dirty_blocks writebacks)" \
		"$third 0" "$(tac_stat tacsplit dirty_blocks writebacks)"
	# Half the cache: past the allowance (all the free blocks would
	# still hold it), so the cleaner writes back to under it.
	half=$((total / 2))
	rewrite_pass "$half"
	wait_cleaned 1 || diag "the cleaner did not write back to the allowance (half written)"
	wb=$(tac_stat tacsplit writebacks)
	diag "half written: used $used, target $target, allowance $allow, dirty $dirty, written back $wb"
	check_le "half the cache written: the cleaner writes back to the target plus half the free blocks beyond a sixteenth" \
		"$allow" "$dirty"
	check_ge "...(writebacks)" 1 "$wb"
	read_fill $((1024 + half)) $((total - half))
	wait_cleaned || diag "the cleaner did not write back to the target (cache full)"
	read -r used target dirty wb < <(tac_stat tacsplit used dirty_target dirty_blocks writebacks)
	diag "filled by reads: used $used of $total, target $target, dirty $dirty, written back $wb"
	check_ge "...reads fill the cache to its reserve" $((total - total / 16)) "$used"
	check_le "...then the cleaner writes back down to the target" "$target" "$dirty"
	check_ge "...(writebacks)" $((half - target)) "$wb"
	create off
	rewrite_pass "$third"
	wait_cleaned || diag "the cleaner did not write back to the target (pinned)"
	read -r target dirty wb < <(tac_stat tacsplit dirty_target dirty_blocks writebacks)
	check_le "pinned, the cleaner keeps to the target with free blocks" "$target" "$dirty"
	check_ge "...(writebacks)" $((third - target)) "$wb"
	want=$(dd if="$dev" bs=4k skip=1024 count="$third" iflag=direct status=none | md5sum)
	check_cmd "flush" dmsetup message tacsplit 0 flush
	check_eq "...and the origin has what was written" "$want" \
		"$(dd if="$origin" bs=4k skip=1024 count="$third" iflag=direct status=none | md5sum)"
	create on
	rewrite_pass "$third"
	wait_idle || diag "the cleaner did not go idle (before the reload)"
	check_eq "a third of the cache dirty again, none written back" \
		"$third 0" "$(tac_stat tacsplit dirty_blocks writebacks)"
	want=$(dd if="$dev" bs=4k skip=1024 count="$third" iflag=direct status=none | md5sum)
	dmsetup reload tacsplit --table "0 $(sectors "$origin") tac $origin $cache 8 6 mode passthrough dirty_threshold 20 clean_idle_ms 0" &&
		dmsetup resume tacsplit
	check_eq "reloaded in passthrough" passthrough "$(tac_stat tacsplit mode)"
	wait_cleaned || diag "the cleaner did not write back to the target (passthrough)"
	read -r target dirty < <(tac_stat tacsplit dirty_target dirty_blocks)
	check_le "...free blocks no longer count: the cleaner writes back down to the target" "$target" "$dirty"
	check_eq "...and the data read is what was written" "$want" \
		"$(dd if="$dev" bs=4k skip=1024 count="$third" iflag=direct status=none | md5sum)"
else
	tap_fail "a device with dirty_adapt on" "not created"
fi

# 1. Adaptive (the default is on; given here to be shown in the table).
read -r target over wb <<<"$(run on 24)"
if [ -z "$target" ]; then
	tap_fail "a device with dirty_adapt on" "not created"
	tap_done
	exit
fi
total=$(tac_stat tacsplit total)
diag "dirty_adapt on: target $target of $total blocks, last pass wrote back $wb"
check_ge "rewrites of written-back blocks grow the dirty space past the set" 0 "$over"
check_eq "...until the cleaner writes none of them back" 0 "$wb"
check_eq "the table line shows dirty_adapt when given" 1 \
	"$(dmsetup table tacsplit | grep -c ' dirty_adapt on')"
# The data is what the last pass wrote: read through the target, and
# after a flush from the origin alone.
want=$(dd if="$dev" bs=4k skip=1024 count=100 iflag=direct status=none | md5sum)
check_cmd "flush" dmsetup message tacsplit 0 flush
check_eq "written back, the origin has the same data" "$want" \
	"$(dd if="$origin" bs=4k skip=1024 count=100 iflag=direct status=none | md5sum)"

# 2. Pinned: the target stays at dirty_threshold and the cleaner goes on
# writing back blocks that are written again.
read -r target over wb <<<"$(run off 2)"
diag "dirty_adapt off: target $target of $total blocks, last pass wrote back $wb"
check_eq "pinned, the target stays at dirty_threshold" $((total * 20 / 100)) "$target"
check_ge "...and the cleaner writes back in every pass" 1 "$wb"

# 3. The tunable: on or off, online; a new value starts from the threshold.
check_cmd "set dirty_adapt on" dmsetup message tacsplit 0 set dirty_adapt on
check_cmd "set dirty_threshold 30" dmsetup message tacsplit 0 set dirty_threshold 30
check_eq "set dirty_threshold restarts the target from it" $((total * 30 / 100)) \
	"$(tac_stat tacsplit dirty_target)"
dmsetup message tacsplit 0 set dirty_adapt maybe 2>/dev/null &&
	tap_fail "set dirty_adapt maybe is refused" "accepted" ||
	tap_ok "set dirty_adapt maybe is refused"
dm_remove tacsplit
dmsetup create tacsplit --table "0 $(sectors "$origin") tac $origin $cache 8 2 dirty_adapt 2" \
	2>/dev/null && { tap_fail "dirty_adapt 2 on the table line is refused" "accepted"; dm_remove tacsplit; } ||
	tap_ok "dirty_adapt 2 on the table line is refused"

tap_done
