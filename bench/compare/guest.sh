#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The guest half of the benchmark: runs inside the VM that bench.sh boots,
# as root, with dm-mod, dm-tac and (when the tree has it) dm-hddsim loaded.
#
#   bench/compare/guest.sh OUTDIR
#
# OUTDIR (shared with the host) holds bench.env, written by bench.sh with
# the run's settings.  For every contender and workload ("cell") this
# script builds fresh devices, runs the warm-up phase and then the
# measured phase (one fio run with ramp_time, one pgbench run of both
# lengths; seq-read: two passes), sampling the contender's hit counters
# every SAMPLE_SEC, and tears everything down.  It leaves raw results
# only; report.py finds the measured window in them and makes tables.
#
# OUTDIR/
#   guest-info.txt  kernel, CPUs, memory, tool versions
#   notes.txt       skipped contenders and cells, failures, with reasons
#   events.tsv      <epoch> <contender> <workload> <phase> <what>
#   <contender>/<workload>.json           fio JSON (stats: measured phase)
#   <contender>/<workload>.warmup.json    seq-read only: the warm-up pass
#   <contender>/<workload>.samples        "<epoch> <phase> <hits> <misses>"
#                                         every SAMPLE_SEC and at the ends
#   <contender>/<workload>.status         contender status at start and end
#   <contender>/pgbench.txt, pgbench.log (per transaction: client, n,
#                   latency us, script, epoch s, us)
#   <contender>/blktrace/  binary blktrace of dm-tac's pgbench run

set -u

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OUT=${1:?usage: guest.sh OUTDIR}
[ -r "$OUT/bench.env" ] && . "$OUT/bench.env"
. "$HERE/config.sh"
. "$HERE/devices.sh"

PG_PORT=5499
PG_SOCK=/tmp/bench-pgsock
PG_MNT=/tmp/bench-pg
# The server's log, in a directory made afresh for the postgres user (the
# guest's /tmp shows the host's: a file of that name left there by root
# would keep the server from starting).
PG_LOG=/tmp/bench-pgserver/server.log
PG_CG=/sys/fs/cgroup/bench-pg
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
PHASE_FILE=/tmp/bench-phase
T0=$EPOCHSECONDS

# No $(date) in anything that runs often: a fork costs a lot under TCG.
log() {
	printf '[%4ds] %s\n' $((EPOCHSECONDS - T0)) "$*"
}

notes() {
	log "NOTE: $*"
	echo "$*" >> "$OUT/notes.txt"
}

event() {
	echo "$EPOCHREALTIME $*" >> "$OUT/events.tsv"
}

# ------------------------------------------------------------------
# Sampling the contender's hit counters in the background.

SAMPLER=

sampler_start() {
	local file=$1 ph
	(
		while :; do
			read -r ph < $PHASE_FILE
			echo "$EPOCHREALTIME $ph $(ct_counters 2>/dev/null)"
			sleep "$SAMPLE_SEC"
		done
	) >> "$file" 2>/dev/null &
	SAMPLER=$!
}

sampler_stop() {
	[ -n "$SAMPLER" ] || return 0
	kill "$SAMPLER" 2>/dev/null
	wait "$SAMPLER" 2>/dev/null
	SAMPLER=
}

phase() {
	echo "$1" > $PHASE_FILE
	event "$CT $WL $1 start"
}

# counters_at BASE PHASE: a sample now, and the full status
counters_at() {
	echo "$EPOCHREALTIME $2 $(ct_counters)" >> "$1.samples"
	{ echo "== $2 $EPOCHREALTIME"; ct_status; } >> "$1.status" 2>&1
}

# ------------------------------------------------------------------
# One cell: fresh devices, contender, phases, teardown.

prepare_cell() {
	local r
	ct_teardown
	case $CT in
	bcache-*) origin_reset 0 ;;
	*) origin_reset ;;
	esac || return 1
	cache_reset || return 1
	if [ "$WL" = pgbench ] && [ "$CT" = nvme ]; then
		# NVMe alone: its own copy of the database.
		dd if=/dev/mapper/$BENCH_PFX-snap of="$FAST" bs=4M iflag=direct \
			oflag=direct status=none || return 1
	fi
	ct_setup "$CT"
	r=$?
	[ $r = 0 ] || ct_teardown
	return $r
}

# run_fio JOB SEED RAMP RUNTIME OUT
run_fio() {
	local job=$1 seed=$2 ramp=$3 runtime=$4 out=$5
	BENCH_DEV=$DEV BENCH_SEED=$seed BENCH_RAMP=$ramp BENCH_RUNTIME=$runtime \
		timeout $((ramp + runtime + 120)) fio --output-format=json \
		--output="$out" "$job" > /dev/null 2> "$out.err"
	local r=$?
	[ -s "$out.err" ] || rm -f "$out.err"
	return $r
}

fio_cell() {
	local job=$TOP/bench/fio-jobs/$WL.fio base=$OUT/$CT/$WL w m warm_job
	w=$(phase_time "$WL" warmup)
	m=$(phase_time "$WL" measure)
	[ -r "$job" ] || { notes "$CT/$WL: no job file $job"; return 1; }
	# Nothing to warm without a cache (the disk model keeps no state but
	# its head position); caches all get the same warm-up.
	[ "$CT_KIND" != bare ] || w=0
	: > "$base.status"
	echo setup > $PHASE_FILE
	counters_at "$base" start
	sampler_start "$base.samples"
	case $WL in
	seq-read) warm_job=$job ;;
	seq-over-hot-*) warm_job=$TOP/bench/fio-jobs/oltp-read.fio ;;
	*) warm_job= ;;
	esac
	if [ -n "$warm_job" ]; then
		# A pass is a pass: warm-up and measured phase are separate runs
		# (seq-over-hot-*: the OLTP load caches its hot set first).
		if [ "$w" -gt 0 ]; then
			phase warmup
			run_fio "$warm_job" 1 0 "$w" "$base.warmup.json" ||
				notes "$CT/$WL: warm-up fio failed ($(tail -n 1 "$base.warmup.json.err" 2>/dev/null))"
		fi
		phase measure
		run_fio "$job" 2 0 "$m" "$base.json" ||
			notes "$CT/$WL: fio failed ($(tail -n 1 "$base.json.err" 2>/dev/null))"
	else
		# One run: fio's ramp_time is the warm-up, left out of its stats.
		phase run
		run_fio "$job" 1 "$w" "$m" "$base.json" ||
			notes "$CT/$WL: fio failed ($(tail -n 1 "$base.json.err" 2>/dev/null))"
	fi
	sampler_stop
	counters_at "$base" end
	event "$CT $WL run end"
}

# ------------------------------------------------------------------
# pgbench on ext4 over the contender.

pg() {
	runuser -u postgres -- "$@"
}

pg_start() {
	mkdir -p $PG_MNT
	mount -o noatime "$DEV" $PG_MNT || return 1
	install -d -o postgres -g postgres $PG_SOCK
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
		echo +memory > /sys/fs/cgroup/cgroup.subtree_control
	mkdir -p $PG_CG
	echo "$PG_MEM" > $PG_CG/memory.max
	# The server, and so its page cache, lives in the memory cgroup: the
	# database cannot hide in guest RAM.  Nothing of it is cached yet: the
	# device and the mount are new.  (No drop_caches: it would also drop
	# the PostgreSQL binaries, which take tens of seconds to read back
	# over 9p under TCG.)
	rm -rf "${PG_LOG%/*}"
	install -d -o postgres -g postgres "${PG_LOG%/*}"
	(echo $BASHPID > $PG_CG/cgroup.procs
	 exec runuser -u postgres -- "$PGBIN/pg_ctl" -D $PG_MNT/pgdata -w -t 120 \
		-l "$PG_LOG" -o "-k $PG_SOCK -p $PG_PORT" start) > /dev/null
}

pg_stop() {
	if [ -e $PG_MNT/pgdata/postmaster.pid ]; then
		pg "$PGBIN/pg_ctl" -D $PG_MNT/pgdata -w -t 120 -m fast stop \
			> /dev/null 2>&1
	fi
	cp "$PG_LOG" "$OUT/$CT/postgres.log" 2>/dev/null
	mountpoint -q $PG_MNT && umount $PG_MNT
	rmdir $PG_CG 2>/dev/null
	return 0
}

BT_PID=

blktrace_start() {
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	rm -rf /tmp/bench-bt
	mkdir -p /tmp/bench-bt
	# Queue events only: the bios as ext4 submitted them to the target.
	blktrace -d "$DEV" -a queue -D /tmp/bench-bt -o trace \
		> /tmp/bench-bt.log 2>&1 &
	BT_PID=$!
	sleep 1
}

blktrace_stop() {
	[ -n "$BT_PID" ] || return 0
	kill -INT "$BT_PID" 2>/dev/null
	wait "$BT_PID" 2>/dev/null
	BT_PID=
	mkdir -p "$OUT/$CT/blktrace"
	cp /tmp/bench-bt/trace.blktrace.* /tmp/bench-bt.log "$OUT/$CT/blktrace/" 2>/dev/null
}

# One pgbench run of warm-up + measured seconds, every transaction logged
# (-l) so report.py can take the last <measured> seconds; no vacuum (-n):
# every contender starts from the same freshly copied database.
pgbench_run() {
	local t=$1 out=$2
	(cd /tmp/bench-pglog &&
	 timeout $((t + 300)) runuser -u postgres -- pgbench -h $PG_SOCK \
		-p $PG_PORT -c "$PG_CLIENTS" -j 2 -M prepared -n -T "$t" -P 5 \
		-l --log-prefix=pgbench bench) > "$out" 2>&1
}

pgbench_cell() {
	local base=$OUT/$CT/pgbench w m r=0
	w=$(phase_time pgbench warmup)
	m=$(phase_time pgbench measure)
	: > "$base.status"
	echo setup > $PHASE_FILE
	if ! pg_start; then
		notes "$CT/pgbench: PostgreSQL did not start ($(tail -n 2 "$PG_LOG" 2>/dev/null | tr '\n' ' '))"
		pg_stop
		return 1
	fi
	rm -rf /tmp/bench-pglog
	install -d -o postgres -g postgres /tmp/bench-pglog
	[ "$CT_KIND" = tac ] && blktrace_start
	counters_at "$base" start
	sampler_start "$base.samples"
	phase run
	if ! pgbench_run $((w + m)) "$base.txt"; then
		notes "$CT/pgbench: pgbench failed ($(tail -n 1 "$base.txt"))"
		r=1
	fi
	sampler_stop
	counters_at "$base" end
	event "$CT pgbench run end"
	blktrace_stop
	cat /tmp/bench-pglog/pgbench.* > "$base.log" 2>/dev/null
	pg_stop
	return $r
}

# ------------------------------------------------------------------

run_cell() {
	local r
	if [ "$WL" = pgbench ] && [ "$PG_READY" != 1 ]; then
		notes "$CT/pgbench: skipped, no database image"
		return 0
	fi
	mkdir -p "$OUT/$CT"
	log "$CT / $WL: setup"
	event "$CT $WL setup start"
	prepare_cell
	r=$?
	if [ $r != 0 ]; then
		notes "$CT: skipped ($WL): ${CT_NOTE:-setup failed}"
		return $r
	fi
	if [ "$WL" = pgbench ]; then
		pgbench_cell
	else
		fio_cell
	fi
	event "$CT $WL teardown start"
	ct_teardown
	event "$CT $WL done"
	log "$CT / $WL: done"
	return 0
}

# probe_tac_modes: keep the tac-<mode> contenders the module accepts
probe_tac_modes() {
	local c out=() tac_asked=0 tac_ok=0 at=-1
	if ! origin_reset || ! cache_reset; then
		notes "cannot build the origin"
		return 1
	fi
	for c in $CONTENDERS; do
		case $c in
		tac-*)
			tac_asked=1
			[ $at -ge 0 ] || at=${#out[@]}
			if ct_tac_setup "${c#tac-}"; then
				tac_ok=1
				out+=("$c")
			else
				notes "$c: skipped, ${CT_NOTE:-setup failed}"
			fi
			ct_teardown
			;;
		*) out+=("$c") ;;
		esac
	done
	if [ $tac_asked = 1 ] && [ $tac_ok = 0 ]; then
		if ct_tac_setup passthrough; then
			notes "no listed dm-tac mode is available: tac-passthrough runs in their place"
			out=("${out[@]:0:$at}" tac-passthrough "${out[@]:$at}")
		fi
		ct_teardown
	fi
	CONTENDERS="${out[*]}"
}

# The database image (the virtio disk bench.sh attaches) goes onto the
# pristine RAM disk once; every pgbench cell then starts from a fresh
# snapshot of it.
PG_READY=0

load_backing() {
	local image=
	case " $WORKLOADS " in
	*" pgbench "*)
		if [ -z "${PGIMAGE:-}" ] || [ ! -b "$PGIMAGE" ]; then
			notes "pgbench: no database image attached"
		elif [ -z "$PGBIN" ]; then
			notes "pgbench: PostgreSQL not installed"
		else
			image=$PGIMAGE
		fi
		;;
	esac
	backing_init $image || return 1
	[ -z "$image" ] || PG_READY=1
	[ -z "$image" ] || log "pgbench image loaded"
}

main() {
	local c
	if [ "${BENCH_TRACE:-0}" = 1 ]; then
		# Where the seconds go: every command with a timestamp.
		exec 9> "$OUT/trace.log"
		BASH_XTRACEFD=9
		PS4='+ $EPOCHREALTIME '
		set -x
	fi
	mkdir -p "$OUT"
	: > "$OUT/notes.txt"
	: > "$OUT/events.tsv"
	origin_model
	{
		echo "kernel: $(uname -r)"
		echo "cpus: $(nproc)"
		echo "memory: $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo)"
		echo "origin model: $MODEL ${HDDSIM_ARGS:-}"
		echo "cache kind: $CACHE_KIND"
		echo "fio: $(fio --version)"
		echo "postgres: $("$PGBIN/postgres" --version 2>/dev/null)"
		echo "modules: $(lsmod | awk 'NR > 1 && /^(dm_|bcache|brd)/ { printf "%s ", $1 }')"
	} > "$OUT/guest-info.txt"
	log "origin model $MODEL, cache on $CACHE_KIND"
	# udev would probe every device this script creates (and bcache-tools'
	# rule would register bcache superblocks behind its back), costing
	# seconds per cell under TCG: libdevmapper makes the /dev/mapper nodes
	# itself and devtmpfs the rest.
	export DM_DISABLE_UDEV=1
	if udevadm control --exit 2>/dev/null; then
		# libdevmapper takes the control socket for a live udev.
		rm -f /run/udev/control
	fi
	load_backing || { notes "cannot set up the RAM disks"; return 1; }
	probe_tac_modes || return 1
	echo "$CONTENDERS" > "$OUT/contenders.txt"
	echo "$WORKLOADS" > "$OUT/workloads.txt"
	log "contenders: $CONTENDERS"
	log "workloads: $WORKLOADS"
	for CT in $CONTENDERS; do
		for WL in $WORKLOADS; do
			if [ "$CT" = writecache ] &&
			   [[ " $WRITECACHE_SKIP " == *" $WL "* ]]; then
				notes "writecache/$WL: skipped, dm-writecache caches writes only and $WL has none"
				continue
			fi
			run_cell
		done
	done
	ct_teardown
	backing_exit
	log "all done"
	event "- - all done"
}

main
