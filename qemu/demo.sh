#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The demo, run inside the VM by 'make demo', which builds dm-hddsim.ko
# for the kernel and has qemu/vm load it beside dm-tac:
#
#   qemu/vm --module tests/hddsim/build/<release>/dm-hddsim.ko -- qemu/demo.sh
#
# A database's skewed random reads while a report query scans the disk:
# on the hard disk model alone, under dm-tac (write-through) and under
# dm-cache (smq, write-through; skipped if the kernel has none), with the
# same load, cache size and warm-up.  Then what dm-tac's status says
# about it, its fields named from dm-tac/status-fields.  Every number is
# measured in this VM, in this run.  The sizes and times below can be
# changed from the environment; the defaults make 26 s of load, and the
# README shows a run with its times.
#
# Under TCG every exec costs seconds (fio links 64 libraries), so the
# three contenders are one fio run, one group of jobs each, one after the
# other, and fio takes the status snapshots (exec_postrun).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
FIELDS=$top/dm-tac/status-fields	# the status fields' names

ORIGIN_MB=${ORIGIN_MB:-1024}	# the disk
DB_MB=${DB_MB:-256}		# the database: the random reads, from 0
SCAN_MB=${SCAN_MB:-512}		# the scan, from DB_MB on
CACHE_MB=${CACHE_MB:-16}	# cache data, as dm-cache gets it
META_MB=${META_MB:-2}		# dm-cache's metadata (dm-tac: its own, inside)
WARMUP=${WARMUP:-4}		# seconds of the load before measuring (caches)
MEASURE=${MEASURE:-6}		# seconds measured
TAC_BLOCK=16			# 8 KiB, the database's page
DMCACHE_BLOCK=64		# 32 KiB, dm-cache's smallest

t0=${EPOCHREALTIME/./}
say() { printf '%s\n' "$*"; }
# step WHAT: a progress line with the seconds since the start
step() {
	local t=$(((${EPOCHREALTIME/./} - t0) / 100000))
	printf '[%3d.%ds] %s\n' $((t / 10)) $((t % 10)) "$*"
}

if [ "$WARMUP" -lt 1 ] || [ "$MEASURE" -lt 1 ]; then
	say "WARMUP and MEASURE are whole seconds, at least 1" >&2
	exit 2
fi
if [ ! -d /sys/module/dm_hddsim ]; then
	say "dm-hddsim.ko is not loaded: run 'make demo'" >&2
	exit 1
fi
work=$(mktemp -d)
cleanup() {
	local d
	for d in demo demo-dmcache demo-cmeta demo-cdata demo-tcache hdd; do
		dmsetup remove --noudevrules --noudevsync "$d" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# Devices: the disk model over ram0; a cache of the same size for each
# cache on ram1 and ram2 (RAM disks take memory only where written).
# udev is kept out (no rules, no waiting: each wait costs seconds under
# TCG, and its probes would read the disk model): devices are used by
# their kernel names, /dev/dm-N, and numbers.
step "setting up: the disk model, two RAM caches"
fio --version >/dev/null &	# loads its 64 libraries meanwhile
modprobe brd rd_nr=3 rd_size=$((ORIGIN_MB * 1024)) max_part=0
olen=$((ORIGIN_MB * 2048))
clen=$(((META_MB + CACHE_MB) * 2048))
mlen=$((META_MB * 2048))
# dm NAME TABLE: create a device; $NAME_dev is its major:minor and
# $NAME_node its /dev/dm-N
dm() {
	local f n var=${1//-/_}
	dmsetup create --noudevrules --noudevsync "$1" --table "$2" || return 1
	for f in /sys/block/dm-*; do
		read -r n <"$f/dm/name"
		[ "$n" = "$1" ] || continue
		read -r "${var}_dev" <"$f/dev"
		printf -v "${var}_node" '/dev/%s' "${f##*/}"
		return 0
	done
	return 1
}
dm hdd "0 $olen hddsim /dev/ram0 0"
dm demo-tcache "0 $clen linear /dev/ram1 0"
dm demo "0 $olen tac $hdd_dev $demo_tcache_dev $TAC_BLOCK 2 mode writethrough"
have_dmcache=0
if modprobe dm-cache-smq 2>/dev/null; then
	dm demo-cmeta "0 $mlen linear /dev/ram2 0"
	dm demo-cdata "0 $((CACHE_MB * 2048)) linear /dev/ram2 $mlen"
	dm demo-dmcache "0 $olen cache $demo_cmeta_dev $demo_cdata_dev $hdd_dev \
$DMCACHE_BLOCK 1 writethrough smq 0" && have_dmcache=1
fi

read -r cs </sys/devices/system/clocksource/clocksource0/available_clocksource
case $cs in
*kvm-clock*) virt="QEMU with KVM" ;;
*) virt="QEMU without KVM (TCG: an emulated CPU, several times slower)" ;;
esac
say ""
say "dm-tac demo: a database's random reads while a report query scans the disk"
say ""
read -r release </proc/sys/kernel/osrelease
read -r online </sys/devices/system/cpu/online	# "0-1"
say "Every number below is measured now, in this VM: kernel $release,"
say "$((${online#*-} + 1)) vCPUs, $virt."
say "  disk   dm-hddsim (tests/hddsim), a 7200 rpm hard disk model of $ORIGIN_MB MiB: seek,"
say "         half a turn and transfer per request, one at a time, over a RAM disk"
say "  cache  a RAM disk of $((META_MB + CACHE_MB)) MiB for each cache:"
say "         dm-tac         all of it, $((TAC_BLOCK / 2)) KiB blocks, write-through"
if [ $have_dmcache = 1 ]; then
	say "         dm-cache smq   $META_MB MiB metadata + $CACHE_MB MiB data, $((DMCACHE_BLOCK / 2)) KiB blocks (its smallest), write-through"
else
	say "         dm-cache       not in this kernel: skipped"
fi
say "  load   fio, on each device in turn:"
say "         db    8 KiB random reads, 8 in flight, Zipf(1.1) over the first $DB_MB MiB"
say "         scan  256 KiB sequential reads, 1 in flight, of the next $SCAN_MB MiB"
say "         a cache gets ${WARMUP}s of this load as warm-up, then ${MEASURE}s are measured;"
say "         the disk alone is measured ${MEASURE}s"
say ""

# add_jobs NAME DEV RAMP [STATUS_DEV]: the fio jobs of one contender.
# With STATUS_DEV, its status at the end of the warm-up and of the run:
# fio runs exec_postrun with system(), adding "> <job>.postrun.txt 2>&1"
# (in its current directory), when the job ends: the db job's is the end
# of the run (NAME-db.postrun.txt), and a job that does nothing for RAMP
# seconds beside it gives the end of the warm-up (NAME-mark.postrun.txt).
args=()
add_jobs() {
	local name=$1 dev=$2 ramp=$3 first=${#args[@]}
	args+=(--name="$name-db" --filename="$dev" --ramp_time="$ramp"
	       --rw=randread --bs=8k --iodepth=8 --size="${DB_MB}M"
	       --random_distribution=zipf:1.1 --norandommap)
	[ "$first" = 0 ] || args+=(--stonewall)	# after the one before
	if [ -n "${4:-}" ]; then
		args+=(--exec_postrun="dmsetup status $4"
		       --name="$name-mark" --ioengine=null --size=1M
		       --rate_iops=1 --runtime="$ramp"
		       --exec_postrun="dmsetup status $4")
	fi
	args+=(--name="$name-scan" --filename="$dev" --ramp_time="$ramp"
	       --rw=read --bs=256k --iodepth=1 --offset="${DB_MB}M"
	       --size="${SCAN_MB}M")
}
add_jobs hdd "$hdd_node" 0
add_jobs tac "$demo_node" "$WARMUP" demo
[ $have_dmcache = 0 ] ||
	add_jobs dmcache "$demo_dmcache_node" "$WARMUP" demo-dmcache
step "fio: the disk alone, dm-tac$([ $have_dmcache = 0 ] || echo ', dm-cache'), one after the other ($((MEASURE + (1 + have_dmcache) * (WARMUP + MEASURE)))s of load)"
# In $work: exec_postrun leaves its output there.
(cd "$work" && fio --minimal --terse-version=3 --percentile_list=50:99 \
	--thread --direct=1 --ioengine=libaio --time_based --runtime="$MEASURE" \
	"${args[@]}" >"$work/fio.out")
heat=$(dmsetup message demo 0 heat 5)
tactable=$(dmsetup table demo)
step "done"
say ""

# ------------------------------------------------------------------
# Reading the results, in the shell: each fork is slow under TCG.

# fio's terse lines, one per job: 3 job name, 6 KiB read, 7 KiB/s, 8 IOPS,
# 18 and 19 the percentiles asked for (50th, 99th) of the completion
# latency ("50.000000%=<us>"), all over the measured seconds.
declare -A iops p50 p99 mbs kib
contenders=()
while IFS=';' read -ra f; do
	[ "${f[0]}" = 3 ] || continue	# exec_postrun's notes
	c=${f[2]%-*}
	[ "${f[2]}" != "$c-mark" ] || continue
	if [ "${f[2]}" = "$c-scan" ]; then
		mbs[$c]=$((f[6] * 1024 / 100000))	# tenths of MB/s
		kib[$c]=${f[5]}
		continue
	fi
	contenders+=("$c")
	iops[$c]=${f[7]%.*}
	p50[$c]=$((${f[17]#*=} / 100))		# tenths of ms
	p99[$c]=$((${f[18]#*=} / 100))
done <"$work/fio.out"

# dm-tac's status fields by name, from the one list.
declare -A pos tac0 tac1
names=()
while read -r n name; do
	case $n in '' | \#*) continue ;; esac
	pos[$name]=$n
	names+=("$name")
done <"$FIELDS"

# load_status ARRAY FILE: ARRAY[name]=value for every listed field
load_status() {
	local -n arr=$1
	local w name
	read -ra w <"$2"
	for name in "${names[@]}"; do
		arr[$name]=${w[pos[$name] + 2]:-?}	# after "<start> <len> tac"
	done
}
load_status tac0 "$work/tac-mark.postrun.txt"
load_status tac1 "$work/tac-db.postrun.txt"
# delta VAR NAME: VAR = the field's growth over the measured seconds
delta() { printf -v "$1" '%d' $((tac1[$2] - tac0[$2])); }
# pct VAR HITS MISSES: VAR = the hit ratio
pct() {
	if [ $(($2 + $3)) -gt 0 ]; then
		printf -v "$1" '%d%%' $((100 * $2 / ($2 + $3)))
	else
		printf -v "$1" '-'
	fi
}
# num VAR N: VAR = N with thousands separators
num() {
	local n=$2 out=
	while [ ${#n} -gt 3 ]; do
		out=,${n: -3}$out
		n=${n:0:${#n}-3}
	done
	printf -v "$1" '%s' "$n$out"
}
# tenths VAR N: VAR = N/10 with one decimal
tenths() { printf -v "$1" '%d.%d' $(($2 / 10)) $(($2 % 10)); }

delta rh random_read_hits
delta rm random_read_misses
delta ah read_hits
delta am read_misses
delta byp bypassed
delta pro promotions
pct rr "$rh" "$rm"
pct ar "$ah" "$am"

# dm-cache's status counts bios (split at its 32 KiB blocks): <#read hits>
# <#read misses> are its words 8 and 9.
declare -A hit=([hdd]=- [tac]="$rr random, $ar all")
declare -A what=([hdd]="disk alone (hddsim)" [tac]="dm-tac writethrough"
		 [dmcache]="dm-cache smq writethrough")
if [ $have_dmcache = 1 ]; then
	read -ra a <"$work/dmcache-mark.postrun.txt"
	read -ra b <"$work/dmcache-db.postrun.txt"
	pct dr $((b[7] - a[7])) $((b[8] - a[8]))
	hit[dmcache]="$dr all (bios)"
fi

say "Results over the ${MEASURE}s measured (db: the database's reads; scan: the report query's):"
printf '  %-26s %8s %7s %7s %7s %9s  %s\n' "" "db IOPS" "x disk" "p50 ms" \
	"p99 ms" "scan MB/s" "read hits"
base=${iops[hdd]}
for c in "${contenders[@]}"; do
	x=$((iops[$c] * 100 / (base > 0 ? base : 1)))
	tenths a50 "${p50[$c]}"
	tenths a99 "${p99[$c]}"
	tenths ambs "${mbs[$c]}"
	printf '  %-26s %8d %4d.%02dx %7s %7s %9s  %s\n' "${what[$c]}" \
		"${iops[$c]}" $((x / 100)) $((x % 100)) "$a50" "$a99" "$ambs" \
		"${hit[$c]}"
done
say ""
num rh_ "$rh"; num rm_ "$rm"; num ah_ "$ah"; num am_ "$am"
num byp_ "$byp"; num pro_ "$pro"; num scan_ $((kib[tac] / (TAC_BLOCK / 2)))
num cold_ "${tac1[coldest_temp]}"
say "dm-tac over the ${MEASURE}s, from its status (dmsetup status demo, named below):"
say "  reads it classified random: $rh_ hits, $rm_ misses: $rr hit ratio (random_read_hits, random_read_misses)"
say "  all reads: $ah_ hits, $am_ misses: $ar (read_hits, read_misses: every block the scan reads is a miss)"
say "  Why the scan did not push the hot set out: it read $scan_ blocks, yet dm-tac cached only $pro_"
say "  (promotions), about one per random miss, and bypassed $byp_: a scanned block warms its extent by"
say "  its transfer time (about 40 us), a random read by a seek and a turn (12 ms), and a block is"
say "  cached only if its extent is warmer than the extent of the block it would replace (coldest_temp: $cold_ us)."
say ""
say "The hottest extents at the end (dmsetup message demo 0 heat 5): extent"
say "(32 blocks), first sector, where, temperature (disk time a hit there saves, us)"
while read -r e s temp; do
	num t_ "$temp"
	printf '  %8d %10d %8d MiB %12s\n' "$e" "$s" $((s / 2048)) "$t_"
done <<<"$heat"
say "  (the database is the first $DB_MB MiB, the scan the next $SCAN_MB)"
say ""
say "dm-tac's table and status at the end, the fields named from dm-tac/status-fields:"
say "  $tactable"
line=
for name in "${names[@]}"; do
	if [ -z "$line" ]; then
		printf -v line '  %2d %-18s %-13s' "${pos[$name]}" "$name" \
			"${tac1[$name]}"
	else
		printf '%s%2d %-18s %s\n' "$line" "${pos[$name]}" "$name" \
			"${tac1[$name]}"
		line=
	fi
done
[ -z "$line" ] || say "${line%"${line##*[! ]}"}"
step "end"
