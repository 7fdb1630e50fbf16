#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Shared by the crash tests that run inside the VM (logwrites.sh,
# fuzz.sh).  Source it, then
#
#   crash_work_up NAME SIZE TOOL... || die ...   # $work, $CRASH_BIN
#   crash_loop VAR FILE || die ...                # $VAR = a loop device
#   crash_work_down                               # in the EXIT trap
#
# The tools run from RAM: exec over the VM's 9p root costs up to a second.

crash_loops=()
work=

# crash_work_up NAME SIZE TOOL...: a tmpfs of SIZE at $work, the named
# tools of tests/crash copied to $work/bin (exported as CRASH_BIN).
crash_work_up() {
	local name=$1 size=$2 t
	shift 2
	work=$(mktemp -d "/tmp/$name.XXXXXX") || return 1
	mount -t tmpfs -o size="$size" "$name" "$work" || return 1
	mkdir "$work/bin" || return 1
	for t in "$@"; do
		cp "$here/$t" "$work/bin/" || return 1
	done
	export CRASH_BIN=$work/bin
	modprobe loop 2>/dev/null
	return 0
}

# crash_loop VAR FILE: a loop device over FILE in the variable VAR (not
# from a $(...) subshell: crash_work_down must learn of it).
crash_loop() {
	local dev
	dev=$(losetup --find --show "$2") || return 1
	crash_loops+=("$dev")
	declare -g "$1=$dev"
}

crash_work_down() {
	local l
	for l in "${crash_loops[@]}"; do
		losetup -d "$l" 2>/dev/null
	done
	[ -n "$work" ] || return 0
	umount -l "$work" 2>/dev/null
	rmdir "$work"
}
