#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# dm-tac benchmark driver (against dm-cache, bcache and dm-writecache): every contender on every workload, one
# VM session per kernel, then the result table and charts.
#
#   bench/compare/bench.sh          (what "make bench" runs)
#
# Environment (all optional):
#   KVER="6.1 6.12"   kernels, one VM each (default 6.1)
#   QUICK=1           the short subset (see config.sh), about 10 minutes
#   WORKLOADS=...     e.g. "oltp-read scan-pollution pgbench"
#   CONTENDERS=...    e.g. "hdd dmcache-wt tac-writethrough"
#   BENCH_OUT=DIR     results directory (default bench/results/<date>)
#   NO_PLOTS=1        tables only, no matplotlib
# and every size or phase length in config.sh.
#
# Results: BENCH_OUT/results.md (tables), BENCH_OUT/*.png (charts),
# BENCH_OUT/raw/<kernel release>/ (fio JSON, counters, samples, logs).

set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
. "$HERE/config.sh"

KVER=${KVER:-6.1}
stamp=$(date +%Y-%m-%d_%H%M)
OUTDIR=${BENCH_OUT:-$TOP/bench/results/$stamp}
mkdir -p "$OUTDIR/raw"
OUTDIR=$(cd "$OUTDIR" && pwd)
BUILD=$TOP/out/bench

die() {
	echo "bench: $*" >&2
	exit 1
}

log() {
	echo "bench: $*" >&2
}

[ "$(id -u)" = 0 ] || die "must run as root (VM, database users)"
for c in fio qemu-system-x86_64; do
	command -v $c > /dev/null || die "$c missing (make deps)"
done

# Rough duration, printed so nobody is surprised: phases plus the per-cell
# overhead measured under TCG on a loaded 2-core host (device setup and
# fio start-up about 7 s; a database server's start, connections and
# shutdown about 35 s), plus 50 s for booting and loading the RAM disks.
estimate() {
	local ct wl n=0 s=50 w m
	for ct in $CONTENDERS; do
		for wl in $WORKLOADS; do
			if [ "$ct" = writecache ] &&
			   [[ " $WRITECACHE_SKIP " == *" $wl "* ]]; then
				continue
			fi
			w=$(phase_time "$wl" warmup)
			m=$(phase_time "$wl" measure)
			case $wl in seq-read) w=11; m=9 ;; seq-over-hot-*) m=9 ;; esac
			case $ct/$wl in hdd/*bench | nvme/*bench) ;; hdd/* | nvme/*) w=0 ;; esac
			s=$((s + w + m + 7))
			case $wl in pgbench | sysbench) s=$((s + 28)) ;; esac
			n=$((n + 1))
		done
	done
	echo "$n cells, about $(((s + 59) / 60)) min per kernel"
}

# dm-hddsim.ko for one kernel release, built as the tests build it
# (make hddsim: tests/hddsim/build/<release>/).
build_hddsim() {
	local rel=$1 log
	[ -r "$TOP/tests/hddsim/dm-hddsim.c" ] || return 1
	log=$(make -s -C "$TOP" hddsim KVER="$rel" 2>&1) ||
		{ echo "$log" >&2; return 1; }
	echo "$TOP/tests/hddsim/build/$rel/dm-hddsim.ko"
}

# Both databases in one image, built when a cell needs either.
dbimage=
case " $WORKLOADS " in
*" pgbench "* | *" sysbench "*)
	img_mb=$((ORIGIN_MB - 1))
	# No MariaDB database (nor MariaDB needed) without sysbench cells.
	my_tables=0
	case " $WORKLOADS " in *" sysbench "*) my_tables=$MY_TABLES ;; esac
	key=$(cat "$HERE/dbimage.sh" | md5sum | cut -c1-8)
	dbimage=$BUILD/dbimage-${img_mb}M-pg$PG_SCALE-$PG_SHARED_BUFFERS-my${my_tables}x$MY_ROWS-$key.img
	if [ ! -r "$dbimage" ]; then
		log "building the database image (pgbench scale $PG_SCALE, sysbench $my_tables x $MY_ROWS rows)"
		mkdir -p "$BUILD"
		rm -f "$BUILD"/pgimage-*.img "$BUILD"/dbimage-*.img*
		"$HERE/dbimage.sh" "$dbimage" "$img_mb" "$PG_SCALE" \
			"$PG_SHARED_BUFFERS" "$my_tables" "$MY_ROWS" ||
			die "database image failed"
	fi
	;;
esac

nvme_img=
cleanup() {
	[ -z "$nvme_img" ] || rm -f "$nvme_img"
}
trap cleanup EXIT

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "host: $(uname -n), $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(free -g | awk '/Mem:/ { print $2 }') GiB RAM"
	echo "host load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "commit: $(git -C "$TOP" rev-parse --short HEAD 2>/dev/null)$(git -C "$TOP" diff --quiet 2>/dev/null || echo '+dirty')"
	echo "quick: ${QUICK:-0}"
} > "$OUTDIR/host-info.txt"

status=0
for k in $KVER; do
	rel=$("$TOP/qemu/kernel-release" "$k") || die "no kernel $k (make deps)"
	raw=$OUTDIR/raw/$rel
	mkdir -p "$raw"
	args=(--kernel "$rel" --memory "$VM_MEMORY" --cpus "$VM_CPUS"
	      --rwdir "$raw" --log "$raw/console.log")
	model=$ORIGIN_MODEL
	if [ "$model" = auto ] || [ "$model" = hddsim ]; then
		if ko=$(build_hddsim "$rel"); then
			args+=(--module "$ko")
		elif [ "$model" = hddsim ]; then
			die "dm-hddsim.ko does not build for $rel"
		else
			log "no tests/hddsim in this tree: dm-delay stands in for the HDD"
		fi
	fi

	# The cache device: QEMU's NVMe controller over a file in RAM on the
	# host (cache=writeback: tmpfs has no O_DIRECT), holding the
	# "NVMe alone" region and the cache region.
	nvme_mb=$((ORIGIN_MB + META_MB + CACHE_MB))
	if [ "$CACHE_KIND" = nvme ]; then
		nvme_img=$(mktemp /dev/shm/tac-bench-nvme.XXXXXX)
		truncate -s "${nvme_mb}M" "$nvme_img"
		args+=(--qemu-opts " -drive file=$nvme_img,if=none,id=benchnvm,format=raw,cache=writeback,aio=threads -device nvme,serial=tacbench,drive=benchnvm")
	fi
	[ -z "$dbimage" ] || args+=(--disk "$dbimage")

	{
		for v in ORIGIN_MB CACHE_MB META_MB ORIGIN_MODEL HDDSIM_ARGS DELAY_MS \
			 CACHE_KIND TAC_BLOCK DB_TAC_BLOCK DMCACHE_BLOCK WRITECACHE_BLOCK PG_SCALE \
			 PG_MEM PG_SHARED_BUFFERS PG_CLIENTS MY_TABLES MY_ROWS MY_MEM \
			 MY_CLIENTS SAMPLE_SEC PHASES \
			 WORKLOADS CONTENDERS QUICK BENCH_TRACE; do
			printf '%s=%q\n' "$v" "${!v:-}"
		done
		# The database image is the first (only) virtio disk.
		[ -z "$dbimage" ] || echo "DBIMAGE=/dev/vda"
	} > "$raw/bench.env"

	timeout=$(( $(estimate | sed 's/.*about \([0-9]*\) min.*/\1/') * 60 * 2 + 600 ))
	log "$rel: $(estimate); results in $OUTDIR"
	"$TOP/qemu/vm" "${args[@]}" --timeout "$timeout" -- \
		"$HERE/guest.sh" "$raw" 2>&1 | tee "$raw/guest.log"
	rc=${PIPESTATUS[0]}
	[ "$rc" = 0 ] || { log "$rel: VM exit $rc (see $raw/console.log)"; status=1; }
	cleanup
	nvme_img=

	"$HERE/blktrace-replay.sh" "$raw" || log "$rel: blktrace replay failed"
done

echo "host load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUTDIR/host-info.txt"

py=python3
if [ "${NO_PLOTS:-0}" != 1 ]; then
	p=$TOP/.venv/plot/bin/python
	if [ -x "$p" ] && "$p" -c 'import matplotlib' 2> /dev/null; then
		py=$p
	else
		log "no matplotlib in .venv/plot (make deps WITH_PLOTS=1): tables only"
	fi
fi
"$py" "$HERE/report.py" "$OUTDIR" || status=1
log "results: $OUTDIR/results.md"
exit $status
