#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Checks crash states for logreplay --server (started by logwrites.sh):
# one line "<upto-flush> <state> <desc>" per state on stdin, once the
# state is on the replayed device; assemble the stack over the replayed
# regions, verify with flushes 0..<upto-flush> acknowledged, take the
# stack down, answer one line on stdout: 0 pass, 1 violations, 2 could
# not check.  Reports go to stderr.  One long-lived shell: starting a
# process costs up to a second in the VM.
#
# Environment: CRASH_JOURNAL, CRASH_RCACHE, CRASH_RORIGIN, CRASH_STACK,
# CRASH_BIN (where verify is).

set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/stack.sh"
exec 3>&1 1>&2

while read -r upto state desc; do
	# The loop stacks read the regions through their page cache: nothing
	# of the last state may survive there.
	case $CRASH_STACK in
	pagecache | noflush)
		blockdev --flushbufs "$CRASH_RCACHE" "$CRASH_RORIGIN" 2>/dev/null ;;
	esac
	if ! dev=$(stack_up "$CRASH_RCACHE" "$CRASH_RORIGIN"); then
		echo "replay: state $state: stack_up failed"
		echo 2 >&3
		continue
	fi
	report=$("$CRASH_BIN/verify" --dev "$dev" --journal "$CRASH_JOURNAL" \
		--upto-flush "$upto" --pre-init --max-report 5 2>&1)
	rc=$?
	stack_down
	if [ $rc -ne 0 ]; then
		echo "replay: state $state ($desc), flushes 0..$upto acknowledged:"
		sed 's/^/    /' <<<"$report"
	fi
	[ $rc -le 1 ] || rc=2
	echo $rc >&3
done
