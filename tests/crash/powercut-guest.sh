#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# One boot of the power-cut test, inside the VM (started by powercut.sh):
#
#   powercut-guest.sh STACK CYCLE SEED write|verify
#
# Assembles the stack over /dev/vda (cache) and /dev/vdb (origin) with
# stack.sh, verifies the journal the previous boot left (if any) against
# it and leaves the verdict in $VM_RWDIR/result.<CYCLE-1>, then (write)
# runs the writer until the host cuts the power.  Files in $VM_RWDIR:
#   journal.N  ready.N   the writer's journal; created when the init of
#                        cycle N was acknowledged (the host times cuts)
#   result.N             pass | violations K | early | error RC | stack-failed
#   verify.N.log         the verifier's report on cycle N's journal
#   stack.N.err          why stack_up failed, if it did
#   watchdog.N           what a boot that hung waited on (see watchdog())

set -u
here=$(cd "$(dirname "$0")" && pwd)
stack=$1 cycle=$2 seed=$3 mode=$4
rw=${VM_RWDIR:?not in a qemu/vm guest}
prev=$((cycle - 1))
export CRASH_STACK=$stack
. "$here/stack.sh"

result() {
	[ -e "$rw/journal.$prev" ] || return 0
	echo "$1" >"$rw/result.$prev.tmp" && mv "$rw/result.$prev.tmp" "$rw/result.$prev"
	sync
}

# A hang's witness.  A boot is cut seconds after its writer starts; one
# still running after WATCHDOG_S (90) seconds is stuck.  From then on,
# every 30 s, $rw/watchdog.<cycle> gets what each disk has in flight and
# has completed (/sys/block/*/inflight and stat: a virtual disk that
# holds requests and completes none is the VM's doing, not the stack's),
# dm-tac's status, and the kernel stacks of the tasks in D state.  Not on
# the console: a call trace there counts as a kernel report.
watchdog() {
	local d p
	sleep "${WATCHDOG_S:-90}"
	while :; do
		echo "watchdog: at $(cut -d' ' -f1 /proc/uptime)s"
		for d in /sys/block/vd* /sys/block/dm-*; do
			[ -e "$d/inflight" ] || continue
			echo "watchdog: ${d##*/}$(sed 's/^/ /' "$d/dm/name" 2>/dev/null) inflight $(cat "$d/inflight") stat $(cat "$d/stat")"
		done
		dmsetup status crash_tac 2>&1 | sed 's/^/watchdog: /'
		for p in /proc/[0-9]*; do
			grep -q '^State:.D' "$p/status" 2>/dev/null || continue
			echo "watchdog: D: ${p#/proc/} $(cat "$p/comm" 2>/dev/null)"
			sed 's/^/watchdog:    /' "$p/stack" 2>/dev/null
		done
		sync "$rw" 2>/dev/null
		sleep 30
	done >>"$rw/watchdog.$cycle" 2>&1
}
watchdog &

echo "guest: cycle $cycle, stack $stack, up at $(cut -d' ' -f1 /proc/uptime)s"
if ! dev=$(stack_up /dev/vda /dev/vdb 2>"$rw/stack.$cycle.err"); then
	cat "$rw/stack.$cycle.err"
	result "stack-failed"
	echo "stack-failed" >"$rw/status.$cycle"
	exit 2
fi

if [ -e "$rw/journal.$prev" ]; then
	"$here/verify" --dev "$dev" --journal "$rw/journal.$prev" \
		>"$rw/verify.$prev.log" 2>&1
	rc=$?
	case $rc in
	0) result pass ;;
	1) result "violations in $(tail -n 1 "$rw/verify.$prev.log" | grep -o '[0-9]* violations$' | cut -d' ' -f1) blocks" ;;
	3) result early ;;
	*) result "error $rc" ;;
	esac
	tail -n 1 "$rw/verify.$prev.log"
fi

if [ "$mode" = verify ]; then
	stack_down
	exit 0
fi
# Cleaner runs, mode switches and flush messages while the writer runs:
# the cut may land in any of them (stack.sh).
stack_churn /nonexistent/stop &
echo "guest: writer starts at $(cut -d' ' -f1 /proc/uptime)s"
exec "$here/writer" --dev "$dev" --journal "$rw/journal.$cycle" \
	--seed "$seed" --seconds 300 --ready "$rw/ready.$cycle" \
	--qd 8 --flush-max 32 --dsync 5
