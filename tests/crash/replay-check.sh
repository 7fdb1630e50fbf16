#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Check one crash state that logreplay wrote (called by logreplay, from
# logwrites.sh): assemble the stack over the replayed regions, verify
# with the flushes acknowledged at this point of the log, take the stack
# down.  Exit 0 pass, 1 violations, 2 could not check.

set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/stack.sh"

# Nothing cached above the regions may survive from the previous state.
blockdev --flushbufs "$CRASH_RCACHE" "$CRASH_RORIGIN" 2>/dev/null
if ! dev=$(stack_up "$CRASH_RCACHE" "$CRASH_RORIGIN"); then
	echo "replay-check: state $CRASH_STATE: stack_up failed"
	exit 2
fi
report=$("$here/verify" --dev "$dev" --journal "$CRASH_JOURNAL" \
	--upto-flush "$CRASH_UPTO_FLUSH" --pre-init --max-report 5 2>&1)
rc=$?
stack_down
if [ $rc -ne 0 ]; then
	echo "replay-check: state $CRASH_STATE ($CRASH_STATE_DESC), flushes 0..$CRASH_UPTO_FLUSH acknowledged:"
	sed 's/^/    /' <<<"$report"
fi
[ $rc -le 1 ] || exit 2
exit $rc
