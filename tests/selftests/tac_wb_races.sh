#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Write-back races and their consequences, one case per cause, each a way
# write-back once lost or damaged data, or hung.
# Each case builds the exact interleaving that loses data, over devices
# that complete asynchronously: the cache and the origin are dm-delay
# devices over RAM disks (1 ms), and a case parks an I/O in flight at one
# of them (a "gate": a delay of ten minutes, released when the case says
# so) while the other I/O of the race runs; dm-delay's status says how
# many bios it holds, which is how a case knows its I/O is parked (no
# sleeps, no timing).  The in-flight buffer cases use null_blk, which
# copies data at submission and completes from a timer, as a DMA engine
# and its interrupt do.
#
# Every case checks data (or a status field) and prints what it expected
# and what it found; the data patterns are named ("old": on the origin
# before the case, "new...": written by the case).

. "$(dirname "$0")/lib.sh"
require dmsetup blkdiscard setpriv

TORTURE_DIR=$TOP/tests/torture
[ -x "$TORTURE_DIR/scribble" ] || make -s -C "$TORTURE_DIR" >/dev/null 2>&1 ||
	ksft_skip "cannot build tests/torture (make -C tests/torture)"

scratch_dev dummy 1 || ksft_skip "no tmpfs"	# sets up $_scratch
udev_quiet "tr_*|tacr|tacx" || diag "cannot keep udev from probing the devices"
ram_devs 64 2 || ksft_skip "no brd"
# The cache: 16 MiB of the second RAM disk, through a linear device that
# can be swapped for an error target (cache read errors).
clen=32768
dmsetup create tr_clin --table "0 $clen linear /dev/ram1 0" ||
	ksft_skip "no dm-linear"
at_exit "dm_remove tr_clin"
delay_dev tr_dly_o /dev/ram0 1 1 || ksft_skip "no dm-delay"
delay_dev tr_dly_c /dev/mapper/tr_clin 1 1
O=/dev/mapper/tr_dly_o
C=/dev/mapper/tr_dly_c
CL=/dev/mapper/tr_clin
T=/dev/mapper/tacr
WB="mode writeback dirty_threshold 90 dirty_adapt off clean_idle_ms 0 commit_interval 3600000 error_threshold 1000"

# ------------------------------------------------------------------
# Helpers

declare -A desc
# mkpat NAME BYTES [DESCRIPTION]: a file of random data named NAME
mkpat() {
	head -c "$2" /dev/urandom >"$_scratch/$1"
	desc[$1]=${3:-$1}
}
mkpat old4k 4096 "old (the origin's data)"

# wr DEV OFFSET PAT [dsync|fsync]: one O_DIRECT write of the whole
# pattern (with O_DSYNC, or followed by an fsync)
wr() {
	local of=direct,seek_bytes conv=notrunc
	case ${4:-} in
	dsync) of+=,dsync ;;
	fsync) conv+=,fsync ;;
	esac
	dd if="$_scratch/$3" of="$1" bs="$(stat -c %s "$_scratch/$3")" count=1 \
		seek="$2" oflag=$of conv=$conv status=none
}

# rd DEV OFFSET LEN FILE: one O_DIRECT read
rd() {
	dd if="$1" of="$4" bs="$3" count=1 skip="$2" iflag=direct,skip_bytes \
		status=none
}

# name_of FILE PAT...: which pattern FILE holds
name_of() {
	local f=$1 p
	shift
	for p in "$@"; do
		cmp -s "$f" "$_scratch/$p" && { echo "${desc[$p]}"; return; }
	done
	if ! tr -d '\0' <"$f" | head -c 1 | grep -q .; then
		echo zeros
	else
		echo "other data (md5 $(md5sum <"$f" | cut -c1-8))"
	fi
}

# check_parts DESC "DEV OFFSET PAT [OTHER_PAT...]"...: every part holds
# its pattern; one test case, the message lists each part that does not
check_parts() {
	local d=$1 part dev off pat bad= got where
	shift
	for part in "$@"; do
		set -- $part
		dev=$1 off=$2 pat=$3
		shift 3
		rd "$dev" "$off" "$(stat -c %s "$_scratch/$pat")" "$_scratch/got" ||
			{ bad+="bytes $off+: read failed; "; continue; }
		cmp -s "$_scratch/got" "$_scratch/$pat" && continue
		got=$(name_of "$_scratch/got" "$pat" "$@")
		case $dev in
		"$T") where="through the target" ;;
		"$O") where="on the origin" ;;
		*) where="through the re-created target" ;;
		esac
		bad+="$where at byte $off: expected ${desc[$pat]}, found $got; "
	done
	if [ -z "$bad" ]; then
		tap_ok "$d"
	else
		tap_fail "$d" "${bad%; }"
	fi
}

cur_delays=
# delays O_READ O_WRITE C_READ C_WRITE [O_FLUSH C_FLUSH]: set both
# devices' delays in ms (flushes: given, or 1)
delays() {
	local want="$*"
	[ "$want" = "$cur_delays" ] && return 0
	delay_set tr_dly_o /dev/ram0 "$1" "$2" "${5:-1}" &&
		delay_set tr_dly_c "$CL" "$3" "$4" "${6:-1}" || return 1
	cur_delays=$want
}

# fresh BS OPTS...: a new dm-tac (freshly formatted cache) over the
# 1 ms devices (the cache: $CACHE, or $C)
fresh() {
	local bs=$1 cache=${CACHE:-$C}
	shift
	dm_remove tacr
	delays 1 1 1 1
	dd if=/dev/zero of="$cache" bs=4k count=2 oflag=direct status=none
	tac_create tacr "$O" "$cache" "$bs" "$@"
}

f() { tac_field tacr "$1"; }

# dbg MESSAGE: a diagnostic line when TAC_RACES_DEBUG is set
dbg() {
	[ -z "${TAC_RACES_DEBUG:-}" ] || diag "$*"
}

# discard DEV OFFSET LEN: BLKDISCARD (-f: blkdiscard would otherwise
# probe the device for signatures, reading blocks a case has parked)
discard() {
	local out
	out=$(blkdiscard -f -o "$2" -l "$3" "$1" 2>&1) || { echo "$out" >&2; return 1; }
}

# commit: an fsync of the target (a metadata commit in write-back)
commit() {
	dd if=/dev/null of="$T" oflag=direct conv=notrunc,fsync status=none
}

# warm OFFSET LEN: read a range until its block is a cache hit
warm() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		rd "$T" "$1" "$2" /dev/null
		dmsetup message tacr 0 reset_stats
		rd "$T" "$1" "$2" /dev/null
		[ "$(f 4)" -ge 1 ] && return 0
		nap 0.1
	done
	return 1
}

# Gates.  A dm-delay device with a delay of GATE ms holds the bios of
# that class until its delays are set again (which sends them on): an
# I/O is parked in flight for as long as a case needs, with no timing.
# Whatever a case does while something is parked runs in the
# background, so that a module that makes it wait for the parked I/O
# only costs ACT seconds, never a deadlock.
GATE=600000
ACT=${TAC_RACES_ACT:-5}
# A KASAN kernel (make check-debug) runs about ten times slower: the
# 'mode writethrough' of cause10_rewritten took 5.0 s there, 2-3 s on
# the stock kernels.
case $(uname -r) in *kasan*) ACT=${TAC_RACES_ACT:-20} ;; esac

# gate NAME DEV READ WRITE FLUSH: set one delay device
gate() {
	cur_delays=
	delay_set "$@"
}

# spawn CMD...: run in the background; its pid in $spawned
spawn() {
	"$@" &
	spawned=$!
}

# settle PID SECONDS: wait for a background command at most SECONDS;
# its status, or 124 if it is still running
settle() {
	local end=$((SECONDS + $2))
	while kill -0 "$1" 2>/dev/null; do
		[ "$SECONDS" -lt "$end" ] || return 124
		nap 0.05
	done
	wait "$1"
}

# clin_table error|linear: the cache's lowest layer
clin_table() {
	if [ "$1" = error ]; then
		dmsetup load tr_clin --table "0 $clen error"
	else
		dmsetup load tr_clin --table "0 $clen linear /dev/ram1 0"
	fi && dmsetup resume tr_clin
}

# aio_dsync DEV OFFSET PAT: one AIO write with RWF_DSYNC (REQ_FUA only)
aio_dsync() {
	"$TORTURE_DIR/scribble" write --calm --dsync --dev "$1" --offset "$2" \
		--len "$(stat -c %s "$_scratch/$3")" --fill "$_scratch/$3" >/dev/null
}

# copy_dev SRC VAR: a loop device over an O_DIRECT copy of SRC, as a
# power cut at this moment would leave it (nothing may be writing)
copy_dev() {
	local img=$_scratch/$2.img dev
	dd if="$1" of="$img" bs=1M iflag=direct status=none || return 1
	dev=$(losetup --find --show "$img") || return 1
	at_exit "losetup -d '$dev'"
	declare -g "$2=$dev"
}

X=$((8 << 20))		# the block the cases work on: at 8 MiB

# ------------------------------------------------------------------
# Cause 1: a write-back write that admits a block is dropped when a
# write to any block of the same write-tracking hash bucket starts before
# it completes (the fill's generation check).

cause1() {
	local x y k bs=4096 h0 p1 p2 r2 d="a write-back write admitting a block survives a write to another block of its hash bucket"
	h() { echo $(( (($1 * 0x61C8864680B583EB) >> 50) & 0x3fff )); }
	# hash_64(block, 14) as the kernel computes it: two blocks of one
	# bucket, far apart (different extents)
	for ((x = 2048; x < 4096; x++)); do
		h0=$(h "$x")
		for k in 10946 17711 6765; do
			y=$((x + k))
			[ $((y * bs)) -lt $((64 << 20)) ] || continue
			[ "$(h "$y")" = "$h0" ] && break 2
		done
	done
	[ "$(h "$y")" = "$h0" ] || { tap_fail "$d" "no colliding block found"; return; }
	mkpat new4k 4096 "new (the write-back write)"
	mkpat one512 512 "the other block's write"
	fresh 8 $WB
	wr "$O" $((x * bs)) old4k
	gate tr_dly_c "$CL" 1 $GATE 1
	spawn wr "$T" $((x * bs)) new4k
	p1=$spawned
	setup=
	wait_held tr_dly_c 2 1 30 || setup="the write never reached the cache (not admitted?)"
	diag "cause 1: block $x parked on its way to the cache; 512 bytes to block $y (bucket $h0)"
	spawn wr "$T" $((y * bs)) one512
	p2=$spawned
	settle $p2 $ACT
	r2=$?
	delays 1 1 1 1
	wait $p1 || setup+="the write-back write failed "
	[ "$r2" != 124 ] || wait $p2
	check_parts "$d${setup:+ (setup: $setup)}" "$T $((x * bs)) new4k old4k"
}

# ------------------------------------------------------------------
# Cause 2: a write-back write to a clean cached block makes it dirty
# only at completion; an invalidation of the block meanwhile throws the
# write away.  8 KiB blocks: the write covers the first 4 KiB unit, the
# invalidation comes from the second half.

act_readerror() {
	clin_table error || return 1
	rd "$T" $((X + 4096)) 4096 /dev/null
}

cause2() {
	local what=$1 d="a write-back write to a clean cached block survives $2" p1 p2 r2
	mkpat old8k 8192 "old"
	mkpat newa 4096 "new (the write-back write to the first half)"
	mkpat newb 4096 "new second half"
	mkpat one512 512 "the 512-byte write"
	head -c 4096 "$_scratch/old8k" >"$_scratch/olda"
	desc[olda]="old (the origin's first half: the write was lost)"
	tail -c 4096 "$_scratch/old8k" >"$_scratch/oldb"
	desc[oldb]="old second half"
	fresh 16 $WB
	wr "$O" $X old8k
	warm $X 8192 || { tap_fail "$d" "the block never became a cache hit"; return; }
	commit		# nothing left for a mode switch's commit to write
	gate tr_dly_c "$CL" 1 $GATE 1
	spawn wr "$T" $X newa
	p1=$spawned
	setup=
	wait_held tr_dly_c 2 1 30 || setup="the write never reached the cache"
	case $what in
	unaligned) spawn wr "$T" $((X + 4096)) one512 ;;
	discard) spawn discard "$T" $((X + 4096)) 4096 ;;
	invalidate) spawn dmsetup message tacr 0 invalidate ;;
	readerror) spawn act_readerror ;;
	writearound)
		spawn eval 'dmsetup message tacr 0 mode writearound && wr "$T" $((X + 4096)) newb' ;;
	esac
	p2=$spawned
	settle $p2 $ACT
	r2=$?
	[ "$what" != readerror ] || clin_table linear
	[ "$r2" = 0 ] || [ "$r2" = 124 ] || setup+="the $what step failed ($r2) "
	delays 1 1 1 1
	wait $p1 || setup+="the write-back write failed "
	[ "$r2" != 124 ] || wait $p2
	setup=${setup:+ (setup: $setup)}
	case $what in
	unaligned)
		check_parts "$d$setup" "$T $X newa olda" "$T $((X + 4096)) one512" ;;
	invalidate)
		check_parts "$d$setup" "$T $X newa olda" "$T $((X + 4096)) oldb" ;;
	writearound)
		check_parts "$d$setup" "$T $X newa olda" "$T $((X + 4096)) newb" ;;
	*)
		check_parts "$d$setup" "$T $X newa olda" ;;
	esac
}

# ------------------------------------------------------------------
# Cause 3: a discard of part of a dirty block unmaps all of it.

cause3() {
	local i n=8 bs=65536 lost=0 found= b
	mkpat new512k $((n * bs)) "new"
	mkpat old512k $((n * bs)) "old"
	fresh 128 $WB
	wr "$O" $X old512k
	wr "$T" $X new512k
	diag "cause 3: $(f 3) dirty 64 KiB blocks; discarding 4 KiB at 8 KiB into each"
	for ((i = 0; i < n; i++)); do
		discard "$T" $((X + i * bs + 8192)) 4096
	done
	for ((i = 0; i < n; i++)); do
		b=$_scratch/blk
		rd "$T" $((X + i * bs)) $bs "$b"
		# expected: the new block, but for the discarded 4 KiB
		{ dd if="$_scratch/new512k" bs=4k skip=$((i * 16)) count=2 status=none
		  dd if="$b" bs=4k skip=2 count=1 status=none
		  dd if="$_scratch/new512k" bs=4k skip=$((i * 16 + 3)) count=13 status=none
		} >"$_scratch/want"
		if ! cmp -s "$b" "$_scratch/want"; then
			lost=$((lost + 1))
			dd if="$b" of="$_scratch/got" bs=4k count=1 status=none
			dd if="$_scratch/old512k" of="$_scratch/old4" bs=4k \
				skip=$((i * 16)) count=1 status=none
			desc[old4]="old (the origin's data)"
			found=$(name_of "$_scratch/got" old4)
		fi
	done
	if [ "$lost" = 0 ]; then
		tap_ok "a partial discard keeps the rest of a dirty 64 KiB block"
	else
		tap_fail "a partial discard keeps the rest of a dirty 64 KiB block" \
			"in $lost of $n blocks the other 60 KiB reverted: expected the new data, found $found"
	fi
}

# ------------------------------------------------------------------
# Cause 4: the cleaner copies a dirty block to the origin without
# excluding user I/O.  Its read of the block is parked; meanwhile the
# block is discarded and half of it written anew (to the origin, where
# that write is parked too); then the cleaner goes on, and its copy of
# the discarded data reaches the origin after the newer write.
# no_discard_passdown keeps the discard itself off the origin.

act_discard_write() {
	discard "$T" $X 8192 && wr "$T" $X newu
}

cause4() {
	local d="the cleaner does not write a block's old data over a newer write made after a discard"
	local pf p2 end
	mkpat old8k 8192 "old"
	mkpat dirty8k 8192 "the discarded write-back data"
	head -c 4096 "$_scratch/dirty8k" >"$_scratch/dirtya"
	desc[dirtya]="the discarded write-back data (written back by the cleaner)"
	mkpat newu 4096 "the newer write"
	fresh 16 $WB no_discard_passdown
	wr "$O" $X old8k
	wr "$T" $X dirty8k
	commit
	gate tr_dly_c "$CL" $GATE 1 1		# cache reads parked
	gate tr_dly_o /dev/ram0 1 $GATE 1	# origin writes parked
	spawn dmsetup message tacr 0 flush
	pf=$spawned
	setup=
	wait_held tr_dly_c 1 1 30 || setup="the cleaner never read the block "
	dbg "cause 4: cleaner's read parked: $(dmsetup status tr_dly_c | cut -d' ' -f4-) ; tac $(dmsetup status tacr | cut -d' ' -f6,13,23-27)"
	spawn act_discard_write
	p2=$spawned
	# The newer write is parked at the origin (or done, or held back).
	end=$((SECONDS + ACT))
	while [ "$SECONDS" -lt "$end" ]; do
		[ "$(delay_held tr_dly_o 2)" -ge 1 ] && break
		kill -0 $p2 2>/dev/null || break
		nap 0.05
	done
	dbg "cause 4: origin holds $(dmsetup status tr_dly_o | cut -d' ' -f4-); tac $(dmsetup status tacr | cut -d' ' -f6,13,23-27)"
	gate tr_dly_c "$CL" 1 1 1		# the cleaner reads and copies
	end=$((SECONDS + ACT))
	while [ "$SECONDS" -lt "$end" ]; do
		[ "$(delay_held tr_dly_o 2)" -ge 2 ] && break
		kill -0 $pf 2>/dev/null || break
		nap 0.05
	done
	dbg "cause 4: origin holds $(dmsetup status tr_dly_o | cut -d' ' -f4-); tac $(dmsetup status tacr | cut -d' ' -f6,13,23-27)"
	delays 1 1 1 1				# both writes land, in order
	wait $pf || setup+="the flush message failed "
	wait $p2 || setup+="the discard or the write failed "
	check_parts "$d${setup:+ (setup: $setup)}" "$T $X newu dirtya" "$O $X newu dirtya"
}

# ------------------------------------------------------------------
# Cause 5: commits for flushes and FUA writes wait behind the cleaner.
# An ordering fact: the cleaner's write-back of the one dirty block is
# parked at the origin, so the cleaner is busy ('flush', 1 dirty) for as
# long as the case wants; an fsync (or a RWF_DSYNC write) must complete
# meanwhile.  It is given 20 s (a commit takes milliseconds), then the
# write-back is let go.  The commit is queued on the cleaner's per-CPU
# workqueue, so it waits only when both are on one CPU: the message
# (whose CPU the cleaner runs on) and the writer are pinned to CPU 0,
# timers stay where they are armed, and the cache is a null_blk device
# that completes in the submitter's context, with a volatile write cache
# (and so FUA).

sync_write() {
	if [ "$1" = fsync ]; then
		taskset -c 0 dd if="$_scratch/w4k" of="$T" bs=4096 count=1 \
			seek=$((X + (1 << 20))) oflag=direct,seek_bytes \
			conv=notrunc,fsync status=none
	else
		taskset -c 0 "$TORTURE_DIR/scribble" write --calm --dsync \
			--dev "$T" --offset $((X + (1 << 20))) --len 4096 \
			--fill "$_scratch/w4k" >/dev/null
	fi
}

cause5() {
	local how=$1 d="an $2 completes while the cleaner is busy writing back"
	local pf pw r rw st dirty
	mkpat d4k 4096 "dirty data"
	mkpat w4k 4096 "the synchronous write"
	if [ -z "${nb5:-}" ]; then
		nullb_dev nb5 16 0 queue_mode=0 irqmode=0 cache_size=16 || {
			tap_skip "$d" "no null_blk"
			return
		}
	fi
	if [ -w /proc/sys/kernel/timer_migration ]; then
		at_exit "echo $(cat /proc/sys/kernel/timer_migration) >/proc/sys/kernel/timer_migration"
		echo 0 >/proc/sys/kernel/timer_migration
	fi
	CACHE=$nb5 fresh 8 $WB
	wr "$T" $X d4k
	commit
	gate tr_dly_o /dev/ram0 1 $GATE 1
	spawn taskset -c 0 dmsetup message tacr 0 flush
	pf=$spawned
	setup=
	wait_held tr_dly_o 2 1 30 || setup="the cleaner never wrote the block back"
	spawn sync_write "$how"
	pw=$spawned
	settle $pw 20
	r=$?
	read -r dirty st < <(dmsetup status tacr | awk '{ print $6, $23 }')
	delays 1 1 1 1
	wait $pf || setup+=" the flush message failed"
	if [ "$r" = 124 ]; then
		wait $pw
		rw=$?
	fi
	if [ "$r" = 0 ] && [ "$st" = flush ] && [ "$dirty" -gt 0 ]; then
		tap_ok "$d"
	elif [ "$r" = 124 ]; then
		tap_fail "$d${setup:+ (setup: $setup)}" \
			"expected it to complete while the write-back was held (cleaner '$st', $dirty dirty); not done after 20 s, it completed (status $rw) only once the write-back was let go"
	else
		tap_fail "$d${setup:+ (setup: $setup)}" \
			"expected it to complete with status 0 while the cleaner was busy, got status $r, cleaner '$st', $dirty dirty"
	fi
	dm_remove tacr
}

# ------------------------------------------------------------------
# Cause 6: a FUA write that goes to the origin is not committed: a
# discarded dirty block's entry on disk still says dirty, and a crash
# then brings its old data back over the FUA write.

cause6() {
	local d="a FUA write to the origin over a discarded dirty block survives a crash"
	mkpat old8k 8192 "old"
	mkpat dirty8k 8192 "the discarded write-back data"
	head -c 4096 "$_scratch/dirty8k" >"$_scratch/dirtya"
	desc[dirtya]="the discarded write-back data (recovered as dirty)"
	mkpat fua4k 4096 "the FUA write"
	fresh 16 $WB
	wr "$O" $X old8k
	wr "$T" $X dirty8k fsync	# dirty and committed
	if [ -n "${TAC_RACES_DEBUG:-}" ]; then
		dd if="$CL" of="$_scratch/dbg.img" bs=1M iflag=direct status=none
		diag "after fsync: $("$TACMETA" map "$_scratch/dbg.img" | grep -c '"dirty": true') dirty entries; dirty $(f 3)"
	fi
	discard "$T" $X 8192
	# Half a block (to the origin), RWF_DSYNC with AIO: a FUA write and
	# no flush after it (dd's O_DSYNC write(2) is followed by an fsync).
	aio_dsync "$T" $X fua4k
	# The power cut: the devices as they are now.
	copy_dev /dev/ram0 cp6_o && copy_dev "$CL" cp6_c || {
		tap_fail "$d" "cannot copy the devices"
		return
	}
	tac_create tacx "$cp6_o" "$cp6_c" 16 $WB || {
		tap_fail "$d" "dm-tac refused the copied devices: $(dmesg | grep tac | tail -n 1)"
		return
	}
	check_parts "$d" "/dev/mapper/tacx $X fua4k dirtya"
	dm_remove tacx
}

# ------------------------------------------------------------------
# Cause 7: discard_dirty sticks to the table after a reload without it,
# and starting cold with it leaves the dirty entries on disk.

cause7() {
	local line n
	fresh 16 $WB discard_dirty
	dmsetup load tacr --table "0 $(sectors "$O") tac $O $C 16 2 mode writeback" &&
		dmsetup suspend tacr && dmsetup resume tacr
	line=$(dmsetup table tacr)
	if grep -qw discard_dirty <<<"$line"; then
		tap_fail "a reload without discard_dirty drops it from the table line" \
			"expected no discard_dirty, table: $line"
	else
		tap_ok "a reload without discard_dirty drops it from the table line"
	fi

	mkpat old8k 8192 "old"
	mkpat dirty32k 32768 "the old dirty data"
	head -c 8192 "$_scratch/dirty32k" >"$_scratch/dirty8k"
	desc[dirty8k]="the old dirty data (dropped by discard_dirty, recovered again)"
	mkpat new8k 8192 "the data written after the cold start"
	fresh 16 $WB
	wr "$O" $X old8k
	wr "$T" $X dirty32k fsync	# 4 dirty blocks
	dm_remove tacr
	# Cold, in passthrough: no fill changes a map page, whose next
	# commit would rewrite (and so hide) the entries left behind.
	tac_create tacr "$O" "$C" 16 mode passthrough discard_dirty \
		commit_interval 3600000
	dd if="$CL" of="$_scratch/c7.img" bs=1M iflag=direct status=none
	n=$("$TACMETA" map "$_scratch/c7.img" | grep -c '"dirty": true')
	check_eq "starting cold with discard_dirty leaves no dirty entry on the cache device (tacmeta map)" 0 "$n"

	# New data over the block, flushed: after any crash it must be there.
	wr "$T" $X new8k fsync
	copy_dev /dev/ram0 cp7_o && copy_dev "$CL" cp7_c || {
		tap_fail "...so an unclean restart after it does not bring the old dirty data back" \
			"cannot copy the devices"
		return
	}
	if tac_create tacx "$cp7_o" "$cp7_c" 16 $WB; then
		check_parts "...so an unclean restart after it does not bring the old dirty data back" \
			"/dev/mapper/tacx $X new8k dirty8k old8k"
		dm_remove tacx
	else
		tap_fail "...so an unclean restart after it does not bring the old dirty data back" \
			"dm-tac refused the copied devices: $(dmesg | grep tac | tail -n 1)"
	fi
}

# ------------------------------------------------------------------
# Cause 8: a user changing an O_DIRECT buffer while the I/O is in flight
# (no privilege needed beyond opening the device).  The cache and the
# origin are null_blk devices: data is copied at submission, the
# completion comes 1 ms later, so the buffer changes between the two on
# any number of CPUs.

cause8() {
	local mode=$1 d=$2 n=16 bs=8192 dev bin=$_scratch/bin out ok bad i end
	if [ -z "${nb_o:-}" ]; then
		nullb_dev nb_o 64 1000000 && nullb_dev nb_c 16 1000000 || {
			tap_skip "$d" "no null_blk"
			return
		}
	fi
	mkdir -p "$bin" && cp "$TORTURE_DIR/scribble" "$bin/" && chmod 755 "$bin" "$bin/scribble"
	mkpat known $((n * bs)) "the origin's data"
	dm_remove tacr
	dd if=/dev/zero of="$nb_c" bs=4k count=2 oflag=direct status=none
	wr "$nb_o" $X known
	tac_create tacr "$nb_o" "$nb_c" 16 mode "$mode" dirty_threshold 90 dirty_adapt off \
		clean_idle_ms 0 error_threshold 1000
	dev=$(readlink -f "$T")
	chmod 666 "$dev"
	case $3 in
	write)
		out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$bin/scribble" write --dev "$dev" --offset $X --len $bs \
			--count $n 2>&1)
		diag "cause 8 ($mode): $out"
		bad=
		rd "$T" $X $((n * bs)) /dev/null 2>/dev/null ||
			bad="reading the blocks back failed; "
		[ "$(f 19)" = ok ] || bad+="state '$(f 19)'; "
		[ "$(f 16)" = 0 ] || bad+="$(f 16) cache errors; "
		if [ -z "$bad" ]; then
			tap_ok "$d"
		else
			tap_fail "$d" "expected the blocks readable, state ok, no cache error: ${bad%; }"
		fi
		;;
	read)
		out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$bin/scribble" read --dev "$dev" --offset $X --len $bs \
			--count $n 2>&1)
		diag "cause 8 ($mode): $out"
		end=$((SECONDS + 10))
		while [ "$(f 8)" -lt "$n" ] && [ "$SECONDS" -lt "$end" ]; do
			nap 0.1
		done
		dmsetup message tacr 0 reset_stats
		rd "$T" $X $((n * bs)) "$_scratch/got"
		ok=$(f 4)
		if cmp -s "$_scratch/got" "$_scratch/known"; then
			tap_ok "$d"
		else
			bad=0
			for ((i = 0; i < n; i++)); do
				cmp -s <(dd if="$_scratch/got" bs=$bs skip=$i count=1 status=none) \
				       <(dd if="$_scratch/known" bs=$bs skip=$i count=1 status=none) ||
					bad=$((bad + 1))
			done
			tap_fail "$d" "expected the origin's data, found other data in $bad of $n blocks ($ok of them cache hits)"
		fi
		;;
	esac
	dm_remove tacr
}

# ------------------------------------------------------------------
# Cause 10: smaller ones.

cause10_fail_resume() {
	local d="suspend and resume keep write-back off after 'fail'" m h
	mkpat d4k 4096 "dirty"
	fresh 8 $WB
	wr "$T" $X d4k
	clin_table error
	rd "$T" $X 4096 /dev/null 2>/dev/null	# a dirty block unreadable: fail
	clin_table linear
	h=$(f 19)
	dmsetup suspend tacr && dmsetup resume tacr
	m=$(f 11)
	if [ "$h" != fail ]; then
		tap_fail "$d" "could not make the cache fail (state '$h')"
	elif [ "$m" = writeback ]; then
		tap_fail "$d" "expected write-back off (state '$(f 19)'), found mode '$m' after resume"
	else
		tap_ok "$d"
	fi
}

cause10_leave() {
	local msg=$1 d="'$1' returns only when no write-back write is in flight (nothing dirty after)" p1 p2 r
	mkpat o4k 4096 "old"
	mkpat n4k 4096 "new"
	fresh 8 $WB
	wr "$O" $X o4k
	warm $X 4096 || { tap_fail "$d" "the block never became a cache hit"; return; }
	commit
	gate tr_dly_c "$CL" 1 $GATE 1
	spawn wr "$T" $X n4k
	p1=$spawned
	setup=
	wait_held tr_dly_c 2 1 30 || setup="the write never reached the cache"
	spawn dmsetup message tacr 0 $msg
	p2=$spawned
	settle $p2 $ACT
	r=$?
	delays 1 1 1 1
	wait $p1 || setup+=" the write-back write failed"
	if [ "$r" = 124 ]; then
		wait $p2
		r=$?
	fi
	if [ "$r" = 0 ] && [ "$(f 3)" = 0 ]; then
		tap_ok "$d"
	else
		tap_fail "$d${setup:+ (setup: $setup)}" "expected 0 dirty blocks, found $(f 3) (message exit $r)"
	fi
}

# A dirty block written again and again, by two writers that take turns
# (each write held 300 ms at the cache, the other one parked behind it),
# is never free when the cleaner looks: leaving write-back waited for
# as long as the writes went on.  Nothing is lost either way; the
# message must end while the writes go on, and the block end up clean.
cause10_rewritten() {
	local msg=$1 d="'$1' ends while one dirty block is rewritten without pause" w1 w2 p r n t0 setup=
	mkpat n4k 4096 "new"
	fresh 8 $WB
	wr "$T" $X n4k
	[ "$(f 3)" -ge 1 ] || setup=" the write did not make the block dirty"
	delays 1 1 1 300
	( while :; do wr "$T" $X n4k; done ) 2>/dev/null &
	w1=$!
	( while :; do wr "$T" $X n4k; done ) 2>/dev/null &
	w2=$!
	wait_held tr_dly_c 2 1 30 || setup+=" the writes never reached the cache"
	t0=$(date +%s%N)
	spawn dmsetup message tacr 0 $msg
	p=$spawned
	settle $p $ACT
	r=$?
	n=$(f 3)
	diag "cause10_rewritten: '$msg' returned $r after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
	kill $w1 $w2 2>/dev/null
	wait $w1 $w2 2>/dev/null
	if [ "$r" = 124 ]; then
		kill -INT $p 2>/dev/null	# the wait is interruptible
		wait $p
	fi
	delays 1 1 1 1
	if [ -n "$setup" ]; then
		tap_fail "$d" "setup:$setup"
	elif [ "$r" = 0 ] && [ "$n" = 0 ]; then
		check_parts "$d" "$T $X n4k old4k" "$O $X n4k old4k"
	elif [ "$r" = 124 ]; then
		tap_fail "$d${setup:+ (setup: $setup)}" "the message was still waiting after ${ACT}s, $n dirty blocks"
	else
		tap_fail "$d${setup:+ (setup: $setup)}" "expected 0 dirty blocks, found $n (message exit $r)"
	fi
}

cause10_big_blocks() {
	local i
	mkpat n4k 4096 "new"
	fresh 2048 $WB
	warm $X $((1 << 20)) || {
		tap_fail "a 4 KiB read of a clean cached 1 MiB block is a cache hit" \
			"the 1 MiB block never became a cache hit"
		return
	}
	dmsetup message tacr 0 reset_stats
	for i in 1 2 3 4; do
		rd "$T" $((X + i * 65536)) 4096 /dev/null
	done
	check_eq "a 4 KiB read of a clean cached 1 MiB block is a cache hit (read_hits of 4 reads)" 4 "$(f 4)"
	dmsetup message tacr 0 reset_stats
	wr "$T" $((X + 131072)) n4k
	check_eq "a 4 KiB write-back write to a clean cached 1 MiB block keeps it cached (invalidations)" 0 "$(f 15)"
}

cause10_slot1() {
	local d="an empty superblock slot 0 with a valid newest slot 1 keeps the cache (no format)" s
	mkpat old16k 16384 "old"
	mkpat dirty16k 16384 "the dirty data"
	fresh 8 $WB
	wr "$O" $X old16k
	wr "$T" $X dirty16k fsync
	dm_remove tacr
	# A create and a remove with no I/O between write three superblocks
	# (resume marks both slots unclean, the save writes one): the newest
	# slot changes.
	if [ "$(sb_slot "$CL")" != 1 ]; then
		tac_create tacr "$O" "$C" 8 $WB
		dm_remove tacr
	fi
	s=$(sb_slot "$CL")
	if [ "$s" != 1 ]; then
		tap_fail "$d" "could not make slot 1 the newest (current: $s)"
		return
	fi
	dd if=/dev/zero of="$CL" bs=4k count=1 oflag=direct status=none
	kmsg_mark
	tac_create tacr "$O" "$C" 8 $WB || {
		tap_fail "$d" "dm-tac refused the cache: $(dmesg | grep tac | tail -n 1)"
		return
	}
	if kmsg_has "formatted"; then
		tap_fail "$d" "the cache was formatted ($(f 3) dirty blocks left); expected the dirty data from slot 1"
	else
		check_parts "$d" "$T $X dirty16k old16k"
	fi
}

# ------------------------------------------------------------------

run() {
	local t0=$SECONDS
	case " ${TAC_RACES:-$1} " in
	*" $1 "*) ;;
	*) return ;;
	esac
	"$@"
	diag "$1 ${2:-}: $((SECONDS - t0))s"
}

# TAC_RACES="cause4 cause6" runs only those cases (by function name).
run cause1
run cause2 unaligned "a partial-unit write to the block's other half"
run cause2 discard "a discard of the block's other half"
run cause2 invalidate "an 'invalidate' message"
run cause2 readerror "a cache read error on the block's other half"
run cause2 writearound "a switch to writearound and a write to the block's other half"
run cause3
run cause4
run cause5 fsync "fsync"
run cause5 dsync "RWF_DSYNC (FUA) write-back write"
run cause6
run cause7
run cause8 writeback "an unprivileged user changing an in-flight O_DIRECT write buffer does not fail the cache" write
run cause8 writethrough "...nor count cache errors in write-through" write
run cause8 writethrough "an unprivileged user changing an in-flight O_DIRECT read buffer does not poison the cache" read
run cause10_fail_resume
run cause10_leave "mode writethrough"
run cause10_leave flush
run cause10_rewritten "mode writethrough"
run cause10_rewritten "mode writearound"
run cause10_big_blocks
run cause10_slot1

tap_done
