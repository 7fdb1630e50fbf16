#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Shared helpers for dm-tac VM selftests (kselftest style: TAP 13 output,
# exit 0 pass, 1 fail, 4 skip).  Source it from a test:
#
#   . "$(dirname "$0")/lib.sh"
#   scratch_dev origin 64                 # $origin: a 64 MiB loop device
#   check_eq "status mode" passthrough "$(tac_stat tac0 mode)"
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

# py3 ARGS...: the tests' python (standard library only), without the
# site module (-S): under TCG a process start costs about 70 ms,
# python3's about 620 ms, and site's scan of the package paths 180 ms of
# that.  Exported, for the functions a test runs in a child shell
# (bash -c).
PY3=/usr/bin/python3
[ -x "$PY3" ] || PY3=python3
py3() {
	"$PY3" -S "$@"
}
export PY3
export -f py3

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
	# A loop device keeps a read-only flag set by an earlier test
	# (blockdev --setro) after it is detached and found again.
	blockdev --setrw "$dev"
	declare -g "$var=$dev"
}

# dm_sysfs NAME: the sysfs directory of dm device NAME (from each
# /sys/block/dm-*/dm/name, no process); 1 if there is none
dm_sysfs() {
	local d n
	for d in /sys/block/dm-*; do
		[ -r "$d/dm/name" ] && read -r n <"$d/dm/name" &&
			[ "$n" = "$1" ] || continue
		echo "$d"
		return 0
	done
	return 1
}

# sectors DEV: DEV's size in 512-byte sectors.  From sysfs without
# starting a process when it can (under TCG a process start costs about
# 0.1 s; tests call this hundreds of times): /dev/mapper/NAME by dm's
# name in /sys/block/dm-*/dm/name, /dev/X by /sys/class/block/X.
sectors() {
	local d n
	case $1 in
	/dev/mapper/*)
		if d=$(dm_sysfs "${1#/dev/mapper/}") && read -r n <"$d/size"; then
			echo "$n"
			return 0
		fi
		;;
	/dev/*)
		d=/sys/class/block/${1#/dev/}
		if [ -r "$d/size" ] && read -r n <"$d/size"; then
			echo "$n"
			return 0
		fi
		;;
	esac
	blockdev --getsz "$1"
}

# dm_remove NAME: remove a dm device if it exists (retrying while busy)
dm_remove() {
	local i err
	dmsetup info "$1" >/dev/null 2>&1 || return 0
	# Up to about 15 s: udev's probes of a device take seconds on a
	# KASAN kernel under TCG (make check-debug).
	for ((i = 0; i < 30; i++)); do
		err=$(dmsetup remove "$1" 2>&1) && return 0
		udevadm settle 2>/dev/null
		sleep 0.5
	done
	# Say who holds it before forcing: a test that then fails to create
	# the same name shows why.
	diag "dm_remove $1: still busy after 30 tries ($err): open count" \
		"$(dmsetup info -c --noheadings -o open "$1" 2>&1)," \
		"openers: $(fuser -v "/dev/mapper/$1" 2>&1 | tr '\n' ' ')"
	dmsetup remove --force "$1"
}

# tac_create NAME ORIGIN CACHE BLOCK_SIZE OPT_ARGS...: create a dm-tac
# device over the whole origin; the optional arguments are counted here.
# Returns once udev's probes (blkid reads a few blocks) are done.
tac_create() {
	local name=$1 origin=$2 cache=$3 bs=$4
	shift 4
	local err rc
	err=$(dmsetup create "$name" --table \
		"0 $(sectors "$origin") tac $origin $cache $bs $# $*" 2>&1)
	rc=$?
	# (dmsetup may fail after the device exists: it must go at exit.)
	at_exit "dm_remove '$name'"
	if [ "$rc" -ne 0 ]; then
		diag "dmsetup create $name failed ($rc): $err"
		return 1
	fi
	udevadm settle 2>/dev/null
}

# wait_stat NAME FIELD N: wait up to 10 s until status FIELD of NAME
# (tac_stat) reaches N (fills, for one, end after the read that asked
# for them); 1 if it never did
wait_stat() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(tac_stat "$1" "$2")" -ge "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

# status_word NAME N: the Nth (1-based) word of dm device NAME's status
# after its "<start> <len> <target>" prefix
status_word() {
	local w
	read -r -a w < <(dmsetup status "$1")
	echo "${w[$2 + 2]:-}"
}

# tac_field NAME N: the Nth (1-based) word of the INFO status after the
# "<start> <len> tac" prefix.
tac_field() {
	status_word "$@"
}

# tac_stat NAME FIELD...: the INFO status fields of device NAME called
# FIELD, by the names of dm-tac/status-fields (the one list of them, which
# the Documentation and the kernel are checked against), separated by
# spaces.  One part of a field like used/total is asked for by its part's
# name: "used", "total".  An unknown name prints nothing and fails.  The
# list is read once, here; a call starts one process (dmsetup).
TAC_STATUS_FIELDS=$TOP/dm-tac/status-fields
declare -A _tac_pos=() _tac_part=()
_tac_fields_load() {
	local num name rest k parts
	while read -r num name rest; do
		[[ -n $num && $num != \#* && -n $name && -z $rest ]] || continue
		_tac_pos[$name]=$num
		_tac_part[$name]=0
		IFS=/ read -r -a parts <<<"$name"
		[ ${#parts[@]} -gt 1 ] || continue
		for k in "${!parts[@]}"; do
			_tac_pos[${parts[k]}]=$num
			_tac_part[${parts[k]}]=$((k + 1))
		done
	done <"$TAC_STATUS_FIELDS"
}
_tac_fields_load

tac_stat() {
	local dev=$1 n bad=0 line w q v out i=0
	shift
	[ $# -gt 0 ] || return 1
	for n in "$@"; do
		if [ -z "${_tac_pos[$n]:-}" ]; then
			echo "tac_stat: no status field \"$n\" in $TAC_STATUS_FIELDS" >&2
			bad=1
		fi
	done
	[ "$bad" = 0 ] || return 1
	while read -r line; do
		read -r -a w <<<"$line"
		out=
		i=0
		for n in "$@"; do
			v=${w[_tac_pos[$n] + 2]:-}
			if [ "${_tac_part[$n]}" != 0 ]; then
				IFS=/ read -r -a q <<<"$v"
				v=${q[_tac_part[$n] - 1]:-}
			fi
			[ "$i" = 0 ] || out+=" "
			out+=$v
			i=$((i + 1))
		done
		echo "$out"
	done < <(dmsetup status "$dev")
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

# kmemleak (qemu/kmemleak-tac): the debug kernel of "make check-debug" has
# it, Debian's kernels do not.  kmemleak_on: it is there and enabled.
# kmemleak_forget: leaks found so far (boot's, earlier tests') no longer
# count.  kmemleak_tac: scan, print dm-tac's unreferenced objects (empty:
# no leak).
kmemleak_on() {
	"$TOP/qemu/kmemleak-tac" on
}
kmemleak_forget() {
	"$TOP/qemu/kmemleak-tac" forget
}
kmemleak_tac() {
	"$TOP/qemu/kmemleak-tac" report dm_tac 2>/dev/null
}

# reads DEV, writes DEV: requests a block device has completed, from
# /sys/block/*/stat (fields 1 and 5).
reads() { awk '{ print $1 }' "/sys/block/$(basename "$1")/stat"; }
writes() { awk '{ print $5 }' "/sys/block/$(basename "$1")/stat"; }

# read_scattered DEV FIRST_KIB COUNT [BS_KIB]: read COUNT pieces of BS_KIB
# (default 64) from FIRST_KIB on, in a random order, with O_DIRECT: a
# warm-up that caches a region.  Read in order, past sequential_cutoff_kb
# it would be a stream, which dm-tac does not cache.
read_scattered() {
	local dev=$1 first=$2 count=$3 bs=${4:-64}
	shuf -i "$((first / bs))-$((first / bs + count - 1))" |
		read_blocks "$dev" "$bs"
}

# read_blocks DEV BS_KIB: read one BS_KIB piece at each index given on
# stdin (one per line), in that order, with O_DIRECT: one process for
# thousands of reads (a dd each costs tens of milliseconds in the VM).
read_blocks() {
	py3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
bs = int(sys.argv[2]) << 10
buf = mmap.mmap(-1, bs)
for line in sys.stdin:
    if os.preadv(fd, [buf], int(line) * bs) != bs:
        sys.exit("read_blocks: short read of %s at %s" % (sys.argv[1], line))
' "$1" "$2"
}

# write_blocks DEV BS_KIB FIRST FILE: write FILE's pieces of BS_KIB, in
# order, at pieces FIRST, FIRST + 1, ... of DEV, each its own O_DIRECT
# write (a database page at a time).
write_blocks() {
	py3 -c '
import mmap, os, sys
bs = int(sys.argv[2]) << 10
first = int(sys.argv[3])
src = open(sys.argv[4], "rb").read()
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
buf = mmap.mmap(-1, bs)
for i in range(len(src) // bs):
    buf[:] = src[i * bs:(i + 1) * bs]
    if os.pwritev(fd, [buf], (first + i) * bs) != bs:
        sys.exit("write_blocks: short write of %s" % sys.argv[1])
' "$1" "$2" "$3" "$4"
}

# dev_md5 DEV [SKIP_MIB [COUNT_MIB]]: md5 of a device (or a range of it,
# in MiB), read with O_DIRECT so no page cache can hide what is on disk.
# It reads 256 KiB pieces out of order (every other piece, then the rest),
# so that dm-tac never takes the reads for a sequential stream, which it
# would serve from the origin: a check of what the cache holds reads the
# cache.
dev_md5() {
	py3 -c '
import mmap, os, sys
try:
    from _md5 import md5  # hashlib loads OpenSSL: 0.1 s more under TCG
except ImportError:
    from hashlib import md5
dev, skip, count = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
start = skip << 20
size = os.lseek(fd, 0, os.SEEK_END)
end = min(start + (int(count) << 20), size) if count else size
piece = 256 << 10
buf = mmap.mmap(-1, piece)
offs = list(range(start, end, piece))
data = [b""] * len(offs)
for i in list(range(0, len(offs), 2)) + list(range(1, len(offs), 2)):
    n = min(piece, end - offs[i])
    got = os.preadv(fd, [memoryview(buf)[:n]], offs[i])
    if got != n:
        sys.exit("dev_md5: short read of %s at %d" % (dev, offs[i]))
    data[i] = buf[:n]
print(md5(b"".join(data)).hexdigest())
' "$1" "${2:-0}" "${3:-}"
}

# Superblock fields, read with O_DIRECT (dm-tac writes the cache device
# under the page cache's feet) and without python (slow to start in the
# VM).  Offsets as in Documentation/dm-tac.rst.
_sb_buf=$(mktemp /tmp/tac-sb.XXXXXX)
at_exit "rm -f '$_sb_buf'"
_sb_read() {
	local direct=
	[ -b "$1" ] && direct=iflag=direct
	dd if="$1" of="$_sb_buf" bs=4k count=2 $direct status=none
}

# _sb_num SLOT OFFSET BYTES: an unsigned little-endian number
_sb_num() {
	od -An -t "u$3" -j $(($1 * 4096 + $2)) -N "$3" "$_sb_buf" | tr -d ' '
}

# _sb_pick: the current slot of the superblock read last
_sb_pick() {
	local best=none bestseq=-1 slot seq
	for slot in 0 1; do
		[ "$(_sb_num $slot 0 8)" = 13866221722160452 ] || continue
		seq=$(_sb_num $slot 16 8)
		if [ "$seq" -gt "$bestseq" ]; then
			best=$slot
			bestseq=$seq
		fi
	done
	echo "$best"
}

# sb_slot DEV: the current superblock slot (0 or 1), or "none"
sb_slot() {
	_sb_read "$1"
	_sb_pick
}

# sb_field DEV FIELD: a field of the current superblock slot ("none" if
# there is no dm-tac superblock); "state" is "valid" then, "clean" is
# True or False.
sb_field() {
	local slot hex
	_sb_read "$1"
	slot=$(_sb_pick)
	if [ "$slot" = none ]; then
		echo none
		return
	fi
	case $2 in
	state) echo valid ;;
	seq) _sb_num "$slot" 16 8 ;;
	clean) [ $(( $(_sb_num "$slot" 24 4) & 1 )) = 1 ] && echo True || echo False ;;
	block_sectors) _sb_num "$slot" 28 4 ;;
	origin_sectors) _sb_num "$slot" 32 8 ;;
	nr_cblocks) _sb_num "$slot" 48 8 ;;
	map_start) _sb_num "$slot" 56 8 ;;
	temp_start) _sb_num "$slot" 72 8 ;;
	data_start) _sb_num "$slot" 88 8 ;;
	mode) _sb_num "$slot" 100 4 ;;
	nr_dirty) _sb_num "$slot" 104 8 ;;
	uuid)
		hex=$(od -An -t x1 -j $((slot * 4096 + 112)) -N 16 "$_sb_buf" |
		      tr -d ' \n')
		echo "${hex:0:8}-${hex:8:4}-${hex:12:4}-${hex:16:4}-${hex:20:12}" ;;
	*) echo "sb_field: no field $2" >&2; return 1 ;;
	esac
}

# ------------------------------------------------------------------
# Devices that complete I/O asynchronously, as an NVMe SSD does (a RAM
# disk completes a bio in the submitter's context, so races between a
# submission and a completion never show on it).

# ram_devs MIB N: N brd RAM disks of MIB each, /dev/ram0 .. /dev/ram<N-1>
# (brd's size is one module parameter for all of them; pages are only
# allocated when written).
ram_devs() {
	modprobe -r brd 2>/dev/null
	modprobe brd rd_nr="$2" rd_size=$(($1 * 1024)) max_part=0 || return 1
	at_exit "modprobe -r brd"
}

# delay_table DEV READ_MS WRITE_MS [FLUSH_MS]: a dm-delay table over DEV
# (flushes delayed as writes unless FLUSH_MS is given)
delay_table() {
	echo "0 $(sectors "$1") delay $1 0 $2 $1 0 $3 $1 0 ${4:-$3}"
}

# delay_dev NAME DEV READ_MS WRITE_MS [FLUSH_MS]: create /dev/mapper/NAME
delay_dev() {
	local name=$1
	shift
	modprobe dm-delay 2>/dev/null
	dmsetup create "$name" --table "$(delay_table "$@")" || return 1
	at_exit "dm_remove '$name'"
}

# delay_set NAME DEV READ_MS WRITE_MS [FLUSH_MS]: new delays (the bios it
# holds are sent on first: resume suspends a device with a new table)
delay_set() {
	local name=$1
	shift
	dmsetup load "$name" --table "$(delay_table "$@")" &&
		dmsetup resume "$name"
}

# delay_held NAME CLASS: bios a dm-delay device holds now; CLASS 1 reads,
# 2 writes, 3 flushes
delay_held() {
	status_word "$1" "$2"
}

# wait_held NAME CLASS N SECONDS: wait until NAME holds at least N bios of
# CLASS (an I/O known to be parked there); 1 if it never did
wait_held() {
	local end=$((SECONDS + $4))
	while [ "$(delay_held "$1" "$2")" -lt "$3" ]; do
		[ "$SECONDS" -lt "$end" ] || return 1
		nap 0.05
	done
}

# nap SECONDS: sleep without starting a process (under TCG a process
# start costs more than the nap): a read with a timeout on a FIFO
# nobody writes to
_nap_fd=
nap() {
	local f
	if [ -z "$_nap_fd" ]; then
		f=$(mktemp -u /tmp/tac-nap.XXXXXX)
		mkfifo "$f" && exec {_nap_fd}<>"$f"
		rm -f "$f"
	fi
	read -r -t "$1" -u "$_nap_fd" _ 2>/dev/null
	return 0
}

# nullb_dev VAR MIB COMPLETION_NS [ATTR=VALUE...]: a memory-backed
# null_blk device that copies data at submission and completes from a
# timer COMPLETION_NS later (irqmode=2), with discard; its path in VAR.
# ATTRs are further configfs settings (e.g. queue_mode=0 irqmode=0: a
# bio-based device completing in the submitter's context; cache_size=N:
# a volatile write cache of N MiB, with flush and FUA).
nullb_dev() {
	local var=$1 d kv
	modprobe configfs 2>/dev/null
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config || return 1
	modprobe null_blk nr_devices=0 2>/dev/null
	[ -d /sys/kernel/config/nullb ] || return 1
	d=/sys/kernel/config/nullb/tac_$var
	mkdir "$d" || return 1
	at_exit "echo 0 > '$d/power'; rmdir '$d'"
	echo "$2" >"$d/size" && echo 1 >"$d/memory_backed" &&
		echo 2 >"$d/irqmode" && echo "$3" >"$d/completion_nsec" &&
		echo 1 >"$d/discard" || return 1
	for kv in "${@:4}"; do
		echo "${kv#*=}" >"$d/${kv%%=*}" || return 1
	done
	echo 1 >"$d/power" || return 1
	udevadm settle 2>/dev/null
	[ -b "/dev/tac_$var" ] || return 1
	declare -g "$var=/dev/tac_$var"
}

# udev_quiet PATTERN: udev neither probes (blkid) nor watches the dm
# devices whose names match the glob PATTERN (e.g. "tr_*|tacr"), so no
# read of udev's lands in the middle of a race or is counted as the
# test's own I/O.  Undone at exit.
udev_quiet() {
	local f=/run/udev/rules.d/56-tac-test-$$.rules
	mkdir -p /run/udev/rules.d 2>/dev/null || return 1
	echo "SUBSYSTEM==\"block\", KERNEL==\"dm-*\", ENV{DM_NAME}==\"$1\", ENV{DM_UDEV_DISABLE_DISK_RULES_FLAG}=\"1\", ENV{DM_UDEV_DISABLE_OTHER_RULES_FLAG}=\"1\", OPTIONS+=\"nowatch\"" >"$f" || return 1
	at_exit "rm -f '$f'; udevadm control --reload"
	udevadm control --reload
}
