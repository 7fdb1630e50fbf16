#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The device stack under crash test: the one file to change to point the
# power-cut and log-replay tests at another target.  Source it, then
#
#   dev=$(stack_up CACHE_DEV ORIGIN_DEV) || exit   # the device to test on
#   ...
#   stack_down                                      # idempotent
#
# stack_up must work both on fresh (zeroed) devices and on devices that a
# previous stack_up left behind after a power cut: that second call is
# the recovery under test.  On failure it prints why on stderr (the
# kernel's last words included) and returns non-zero; it never waits.
# stack_down removes whatever stack_up built; it finds it by name, so it
# works from another shell than the one that called stack_up.
#
# CRASH_STACK selects the stack:
#   plain      the origin device itself: a virtio disk or a loop device
#              that honours flushes.  Develops the tools; must pass.
#   tac        dm-tac write-back over origin and cache; CRASH_TAC_ARGS
#              replaces the optional arguments (counted: "2 mode writeback").
#              Variants: tac-8k, tac-64k (block size; default 4 KiB) and
#              -delay (tac-delay, tac-64k-delay: both devices behind
#              dm-delay, CRASH_DELAY_MS (1) on every read, write and flush,
#              so that every I/O completes later, in another context, as
#              real disks do; a RAM or loop device completes at once or in
#              its own thread and hides races).
#   pagecache  a buffered loop device over the origin: a real volatile
#              cache in guest RAM that honours flushes (loop's flush is an
#              fsync of the backing device).  Must pass: a volatile
#              cache is allowed, losing unflushed writes is allowed.
#   noflush    the same loop device with its queue set to "write through",
#              so the block layer completes every flush at once without
#              sending it down: acknowledged writes sit in guest RAM and
#              die with the VM.  BROKEN on purpose: the tests must fail.
#   lossy      dm-flakey over the origin with drop_writes: writes are
#              acknowledged and dropped for CRASH_LOSSY_DOWN seconds (1)
#              every CRASH_LOSSY_UP + CRASH_LOSSY_DOWN (1 + 1).  BROKEN on
#              purpose: the tests must fail.

CRASH_STACK=${CRASH_STACK:-plain}
_stack_loopfile=/run/crash-stack.loop

# In the VM, dmsetup costs about a second a call (it starts over 9p
# under TCG): replay uses the static dmctl from CRASH_BIN when it is there.
_stack_dmctl() {
	[ -n "${CRASH_BIN:-}" ] && [ -x "$CRASH_BIN/dmctl" ]
}

_stack_dm_remove() {
	local i
	if _stack_dmctl; then
		"$CRASH_BIN/dmctl" remove "$1"
		return
	fi
	dmsetup info "$1" >/dev/null 2>&1 || return 0
	for i in 1 2 3 4 5 6 7 8 9 10; do
		dmsetup remove --noudevrules "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	dmsetup remove --noudevrules --force "$1"
}

# _stack_sectors DEV: size in sectors, from sysfs when DEV is a kernel
# name (no process start; see _stack_dmctl)
_stack_sectors() {
	local f=/sys/class/block/${1##*/}/size n
	if [ -r "$f" ] && read -r n <"$f"; then
		echo "$n"
	else
		blockdev --getsz "$1"
	fi
}

# _stack_dm_create NAME TABLE: create a dm device, or say why not (with
# the kernel's explanation, which dmsetup does not show).
_stack_dm_create() {
	local name=$1 table=$2 out rc
	if _stack_dmctl; then
		out=$("$CRASH_BIN/dmctl" create "$name" "$table" 2>&1)
		rc=$?
		[ $rc -ne 0 ] || { echo "$out"; return 0; }
	else
		out=$(dmsetup create --noudevrules "$name" --table "$table" 2>&1)
		rc=$?
	fi
	if [ $rc -ne 0 ]; then
		echo "stack_up: '$CRASH_STACK': creating dm device $name failed:" >&2
		echo "  table: $table" >&2
		echo "  error: $out" >&2
		dmesg 2>/dev/null | grep -E 'device-mapper|tac' | tail -n 5 |
			sed 's/^/  kernel: /' >&2
		return 1
	fi
	# With --noudevrules nobody makes the node unless asked to.
	[ -b "/dev/mapper/$name" ] || dmsetup mknodes "$name" >/dev/null 2>&1
	[ -b "/dev/mapper/$name" ] || {
		echo "stack_up: no /dev/mapper/$name after creating it" >&2
		return 1
	}
	echo "/dev/mapper/$name"
}

_stack_loop_up() {
	local origin=$1 wc=$2 dev
	modprobe loop 2>/dev/null
	dev=$(losetup --find --show --direct-io=off "$origin") || {
		echo "stack_up: '$CRASH_STACK': losetup over $origin failed" >&2
		return 1
	}
	echo "$dev" >"$_stack_loopfile"
	if [ "$wc" = "write through" ]; then
		echo "write through" >"/sys/block/${dev#/dev/}/queue/write_cache" || {
			echo "stack_up: cannot set $dev write_cache" >&2
			return 1
		}
	fi
	echo "$dev"
}

# _stack_tac_opts: block size in sectors and delay in ms of a tac* stack
_stack_tac_opts() {
	local w bs=8 delay=0
	for w in ${CRASH_STACK//-/ }; do
		case $w in
		tac) ;;
		8k) bs=16 ;;
		64k) bs=128 ;;
		delay) delay=${CRASH_DELAY_MS:-1} ;;
		*) return 1 ;;
		esac
	done
	echo "$bs $delay"
}

# _stack_delay NAME DEV MS: DEV behind dm-delay (reads, writes, flushes)
_stack_delay() {
	local n
	n=$(_stack_sectors "$2") || return 1
	_stack_dm_create "$1" "0 $n delay $2 0 $3 $2 0 $3 $2 0 $3"
}

stack_up() {
	local cache=$1 origin=$2 sz opts bs delay
	case $CRASH_STACK in
	tac* | lossy) sz=$(_stack_sectors "$origin") || return 1 ;;
	esac
	case $CRASH_STACK in
	plain)
		echo "$origin"
		;;
	tac*)
		opts=$(_stack_tac_opts) || {
			echo "stack_up: unknown tac variant '$CRASH_STACK' (tac[-8k|-64k][-delay])" >&2
			return 1
		}
		read -r bs delay <<<"$opts"
		if [ "$delay" != 0 ]; then
			cache=$(_stack_delay crash_dcache "$cache" "$delay") &&
			origin=$(_stack_delay crash_dorigin "$origin" "$delay") ||
				return 1
		fi
		# Write-back with everything that can be in flight at a cut
		# made frequent: a low dirty threshold keeps the cleaner
		# running, idle cleaning starts after 100 ms, the timer
		# commits every 50 ms, and small batches mean many cleaner
		# writes.  The same line after a cut is the recovery under
		# test (never "format"); the constructor returns only once
		# the device serves correct data.
		_stack_dm_create crash_tac "0 $sz tac $origin $cache $bs ${CRASH_TAC_ARGS:-12 mode writeback dirty_threshold 10 dirty_adapt off clean_idle_ms 100 commit_interval 50 clean_batch 8}"
		;;
	pagecache)
		_stack_loop_up "$origin" "write back"
		;;
	noflush)
		_stack_loop_up "$origin" "write through"
		;;
	lossy)
		_stack_dm_create crash_lossy "0 $sz flakey $origin 0 \
${CRASH_LOSSY_UP:-1} ${CRASH_LOSSY_DOWN:-1} 1 drop_writes"
		;;
	*)
		echo "stack_up: unknown CRASH_STACK '$CRASH_STACK' (plain, tac, pagecache, noflush, lossy)" >&2
		return 1
		;;
	esac
}

stack_down() {
	local loop
	case $CRASH_STACK in
	tac*)
		_stack_dm_remove crash_tac
		_stack_dm_remove crash_dcache
		_stack_dm_remove crash_dorigin
		;;
	lossy) _stack_dm_remove crash_lossy ;;
	pagecache | noflush)
		if [ -r "$_stack_loopfile" ]; then
			loop=$(cat "$_stack_loopfile")
			# write back what the page cache holds before detaching
			blockdev --flushbufs "$loop" 2>/dev/null
			losetup -d "$loop" 2>/dev/null
			rm -f "$_stack_loopfile"
		fi
		;;
	esac
	return 0
}

# stack_churn STOPFILE: run in the background while the writer writes,
# until STOPFILE exists (then wait for it: a message may still be running): for dm-tac, everything a crash can interrupt besides
# user writes: "flush" messages (write back
# everything), switches to write-through and back (clean, then switch),
# and thresholds that start and stop the cleaner.  The messages may fail
# (EINTR, busy): that is not what is tested.
stack_churn() {
	local n
	case $CRASH_STACK in
	tac*)
		# Reads promote blocks: with blocks larger than the writer's
		# 4 KiB records, only cached blocks take write-back writes.
		n=$(( $(_stack_sectors /dev/mapper/crash_tac) / 128 ))
		while [ ! -e "$1" ]; do
			dd if=/dev/mapper/crash_tac of=/dev/null bs=64k count=4 \
				skip=$((RANDOM % (n > 4 ? n - 4 : 1))) iflag=direct
			sleep 0.1
		done >/dev/null 2>&1 &
		while [ ! -e "$1" ]; do
			sleep 0.2
			dmsetup message crash_tac 0 flush
			sleep 0.2
			dmsetup message crash_tac 0 mode writethrough
			sleep 0.2
			dmsetup message crash_tac 0 mode writeback
			sleep 0.2
			dmsetup message crash_tac 0 set dirty_threshold 1
			sleep 0.2
			dmsetup message crash_tac 0 set dirty_threshold 10
		done >/dev/null 2>&1
		wait
		;;
	esac
}
