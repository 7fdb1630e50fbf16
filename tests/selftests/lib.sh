#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Shared helpers for dm-tac VM selftests (kselftest style: TAP 13 output,
# exit 0 pass, 1 fail, 4 skip).  Source it from a test:
#
#   . "$(dirname "$0")/lib.sh"
#   scratch_dev origin 64                 # $origin: a 64 MiB loop device
#   check_eq "status mode" passthrough "$(tac_field tac0 12)"
#   tap_done
#
# Tests run inside the VM (qemu/vm), as root, with dm-mod and dm-tac loaded.

set -u

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

SELFTESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$SELFTESTS/../.." && pwd)
TACMETA=$TOP/tools/tacmeta

_tap_n=0
_tap_failed=0
_tap_skipped=0
_cleanups=()

echo "TAP version 13"

tap_ok() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n - $1"
}

tap_fail() {
	_tap_n=$((_tap_n + 1))
	_tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n - $1${2:+ # $2}"
}

tap_skip() {
	_tap_n=$((_tap_n + 1))
	_tap_skipped=$((_tap_skipped + 1))
	echo "ok $_tap_n - $1 # SKIP ${2:-}"
}

diag() {
	echo "# $*"
}

# check_eq DESC EXPECTED ACTUAL
check_eq() {
	if [ "$2" = "$3" ]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected '$2', got '$3'"
	fi
}

# check_cmd DESC COMMAND...: passes if the command exits 0
check_cmd() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then
		tap_ok "$desc"
	else
		tap_fail "$desc" "command failed: $* :: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
	fi
}

# check_le DESC LIMIT VALUE: passes if VALUE <= LIMIT (integers)
check_le() {
	if [ "$3" -le "$2" ]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected at most $2, got $3"
	fi
}

# check_ge DESC LIMIT VALUE: passes if VALUE >= LIMIT (integers)
check_ge() {
	if [ "$3" -ge "$2" ]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected at least $2, got $3"
	fi
}

ksft_skip() {
	echo "1..0 # SKIP $*"
	exit $KSFT_SKIP
}

at_exit() {
	_cleanups=("$*" "${_cleanups[@]}")
}

_run_cleanups() {
	local c
	for c in "${_cleanups[@]}"; do
		eval "$c" >/dev/null 2>&1 || true
	done
}
trap _run_cleanups EXIT

tap_done() {
	echo "1..$_tap_n"
	[ "$_tap_failed" -eq 0 ] && exit $KSFT_PASS
	exit $KSFT_FAIL
}

require() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || ksft_skip "$c not installed"
	done
}

# ------------------------------------------------------------------
# Devices

_scratch=

# scratch_dev VAR SIZE_MIB: create a loop device over a tmpfs file (it
# supports flush and discard, and has request-based disk statistics) and
# store its path in the variable VAR.  Not in a $(...) subshell: the
# cleanup it registers must reach this shell.
scratch_dev() {
	local var=$1 mib=$2 dev
	if [ -z "$_scratch" ]; then
		modprobe loop 2>/dev/null
		_scratch=$(mktemp -d /tmp/tac-scratch.XXXXXX)
		mount -t tmpfs -o size=90% tac-scratch "$_scratch" || return 1
		at_exit "umount -l '$_scratch'; rmdir '$_scratch'"
	fi
	truncate -s "${mib}M" "$_scratch/$var.img"
	dev=$(losetup --find --show "$_scratch/$var.img") || return 1
	at_exit "losetup -d '$dev'"
	declare -g "$var=$dev"
}

sectors() {
	blockdev --getsz "$1"
}

# dm_remove NAME: remove a dm device if it exists (retrying while busy)
dm_remove() {
	local i
	dmsetup info "$1" >/dev/null 2>&1 || return 0
	for i in 1 2 3 4 5; do
		dmsetup remove "$1" 2>/dev/null && return 0
		udevadm settle 2>/dev/null
		sleep 0.2
	done
	dmsetup remove --force "$1"
}

# tac_create NAME ORIGIN CACHE BLOCK_SIZE OPT_ARGS...: create a dm-tac
# device over the whole origin; the optional arguments are counted here.
# Returns once udev's probes (blkid reads a few blocks) are done.
tac_create() {
	local name=$1 origin=$2 cache=$3 bs=$4
	shift 4
	dmsetup create "$name" --table \
		"0 $(sectors "$origin") tac $origin $cache $bs $# $*" || return 1
	at_exit "dm_remove '$name'"
	udevadm settle 2>/dev/null
}

# tac_field NAME N: the Nth (1-based) word of the INFO status after the
# "<start> <len> tac" prefix.
tac_field() {
	dmsetup status "$1" | awk -v n="$2" '{ print $(n + 3) }'
}

# ------------------------------------------------------------------
# Kernel log

kmsg_mark() {
	dmesg -C
}

# kmsg_has TEXT: the kernel log since kmsg_mark contains TEXT
kmsg_has() {
	dmesg | grep -qF -- "$1"
}

# slab_kb: unreclaimable slab in KiB
slab_kb() {
	awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

# dev_md5 DEV [SKIP_MIB [COUNT_MIB]]: md5 of a device (or a range of it,
# in MiB), read with O_DIRECT so no page cache can hide what is on disk.
dev_md5() {
	local dev=$1 skip=${2:-0} count=${3:-}
	dd if="$dev" bs=1M skip="$skip" ${count:+count=$count} iflag=direct \
		status=none | md5sum | cut -d' ' -f1
}

# sb_field DEV FIELD: a field of the current superblock slot
sb_field() {
	"$TACMETA" dump "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = d["current"]
print(d["slots"][c][sys.argv[1]] if c is not None else "none")' "$2"
}
