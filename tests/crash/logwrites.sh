#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Every crash point, systematically.  Runs in
# the VM (qemu/vm), as root:
#
#   qemu/vm --kernel 6.1 -- tests/crash/logwrites.sh
#
# One zeroed RAM-backed device is wrapped in ONE dm-log-writes device, so
# a single log orders every write and flush; two dm-linear regions of it
# are the cache and the origin.  The stack (stack.sh, CRASH_STACK) is
# assembled over them and the writer runs on it, marking the log with
# "tacf<n>" at each acknowledged flush n.  Then logreplay rebuilds crash
# states from the log onto a fresh device split the same way, and for
# each one replay-server.sh assembles the stack again and runs the
# verifier with the flushes acknowledged at that point of the log
# (replay-server.sh).
#
# Environment (defaults in brackets):
#   CRASH_STACK [plain]   see stack.sh
#   WRITES [2500]         writes after the init
#   FLUSH_MAX [12]        a flush after 1..FLUSH_MAX writes
#   SUBSETS [3]           random subsets of unflushed writes per interval
#   SEED [1]              writer and subsets
#   CACHE_MIB [4] ORIGIN_MIB [8]   region sizes (the writer covers the
#                         whole stacked device: ORIGIN_MIB / 4 KiB blocks)
#   MAX_STATES [0: all]   STOP_AFTER [5] failed states
#   OUT [$VM_RWDIR/logwrites-<stack>]  journal and logs
#
# Ends with "logwrites: N crash states checked, N passed, N failed";
# exit 0 if all passed, 1 if any broke the contract, 2 if the test could
# not run (a stack that does not construct, a state that could not be
# checked).

set -u
here=$(cd "$(dirname "$0")" && pwd)
export CRASH_STACK=${CRASH_STACK:-plain}
WRITES=${WRITES:-2500}
FLUSH_MAX=${FLUSH_MAX:-12}
SUBSETS=${SUBSETS:-3}
SEED=${SEED:-1}
CACHE_MIB=${CACHE_MIB:-4}
ORIGIN_MIB=${ORIGIN_MIB:-8}
MAX_STATES=${MAX_STATES:-0}
STOP_AFTER=${STOP_AFTER:-5}
out=${OUT:-${VM_RWDIR:-/tmp}/logwrites-$CRASH_STACK}
. "$here/stack.sh"

mkdir -p "$out"
rm -f "$out"/*
. "$here/guest-work.sh"
cleanup() {
	stack_down
	for d in crash-rcache crash-rorigin crash-cache crash-origin crash-logw; do
		_stack_dm_remove "$d" >/dev/null 2>&1
	done
	crash_work_down
}
trap cleanup EXIT

die() {
	echo "logwrites: $*"
	echo "logwrites: 0 crash states checked, 0 passed, 1 failed"
	exit 2
}

crash_work_up crash-lw 1G writer verify logreplay dmctl ||
	die "cannot set up the work directory (build the tools first: make -C tests/crash)"
modprobe dm-log-writes || die "no dm-log-writes module"
csz=$((CACHE_MIB * 2048))
osz=$((ORIGIN_MIB * 2048))
truncate -s $(((CACHE_MIB + ORIGIN_MIB) * 1048576)) "$work/data.img"
truncate -s 512M "$work/log.img"
crash_loop data "$work/data.img" || die "losetup data"
crash_loop logdev "$work/log.img" || die "losetup log"

logw=$(_stack_dm_create crash-logw "0 $((csz + osz)) log-writes $data $logdev") ||
	die "cannot create the log-writes device"
cdev=$(_stack_dm_create crash-cache "0 $csz linear $logw 0") ||
	die "cannot create the cache region"
odev=$(_stack_dm_create crash-origin "0 $osz linear $logw $csz") ||
	die "cannot create the origin region"

echo "logwrites: stack $CRASH_STACK, kernel $(uname -r), cache ${CACHE_MIB} MiB + origin ${ORIGIN_MIB} MiB, $WRITES writes, seed $SEED"
dev=$(stack_up "$cdev" "$odev") ||
	die "stack_up '$CRASH_STACK' failed (see above): nothing was tested"
t0=$(date +%s.%N)
rm -f "$work/churn.stop"
stack_churn "$work/churn.stop" &
churn=$!
"$CRASH_BIN/writer" --dev "$dev" --journal "$out/journal" --seed "$SEED" \
	--count "$WRITES" --flush-max "$FLUSH_MAX" --dsync 5 --qd 8 \
	--mark-dm crash-logw || die "the writer failed"
touch "$work/churn.stop"
wait "$churn"
# What the run exercised (dm-tac: fields 3 dirty, 6 write hits, 8
# promotions, 10 writebacks; see Documentation/dm-tac.rst, Status).
case $CRASH_STACK in
tac*) echo "logwrites: dm-tac status: $(dmsetup status crash_tac)" ;;
esac
stack_down
for d in crash-cache crash-origin crash-logw; do
	_stack_dm_remove "$d" || die "cannot remove $d"
done
printf 'logwrites: recorded in %.1fs\n' "$(echo "$(date +%s.%N) - $t0" | bc)"

# The crash states go to a fresh file; the loop device over it reads the
# same page cache, so logreplay writes the file directly.
truncate -s $(((CACHE_MIB + ORIGIN_MIB) * 1048576)) "$work/replay.img"
crash_loop rdev "$work/replay.img" || die "losetup replay"
rcdev=$(_stack_dm_create crash-rcache "0 $csz linear $rdev 0") ||
	die "cannot create the replayed cache region"
rodev=$(_stack_dm_create crash-rorigin "0 $osz linear $rdev $csz") ||
	die "cannot create the replayed origin region"

export CRASH_JOURNAL=$out/journal CRASH_RCACHE=$rcdev CRASH_RORIGIN=$rodev
"$CRASH_BIN/logreplay" --log "$work/log.img" --dev "$work/replay.img" \
	--server "$here/replay-server.sh" --subsets "$SUBSETS" --seed "$SEED" \
	--max-states "$MAX_STATES" --stop-after "$STOP_AFTER" |
	tee "$out/logreplay.log"
rc=${PIPESTATUS[0]}
line=$(grep -E '^logreplay: [0-9]+ crash states checked' "$out/logreplay.log")
read -r n p f e < <(sed -E 's/^logreplay: ([0-9]+) crash states .*: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) could not.*/\1 \2 \3 \4/' <<<"$line")
echo "logwrites: ${n:-0} crash states checked, ${p:-0} passed, $(( ${f:-0} + ${e:-0} )) failed"
# 0: every state passed; 1: some failed the contract; 2: could not check
[ "${n:-0}" -gt 0 ] || exit 2
[ "${e:-0}" -eq 0 ] || exit 2
exit "$rc"
