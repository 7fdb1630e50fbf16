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
# lengths, two sysbench runs; seq-read: two passes), sampling the contender's hit counters
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
#   <contender>/sysbench.txt, sysbench.warmup.txt  sysbench's reports of
#                   the measured run and the warm-up run
#   <contender>/sysbench.window  "<start epoch> <end epoch>" of the
#                   measured run
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
# Both databases live in one file system (dbimage.sh).
DB_MNT=/tmp/bench-db
# The server's log, in a directory made afresh for the postgres user (the
# guest's /tmp shows the host's: a file of that name left there by root
# would keep the server from starting).
PG_LOG=/tmp/bench-pgserver/server.log
PG_CG=/sys/fs/cgroup/bench-pg
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
MY_DIR=/tmp/bench-mysql
MY_SOCK=$MY_DIR/mariadb.sock
MY_CG=/sys/fs/cgroup/bench-my
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

# counters_at BASE PHASE: a sample now, and the full status, then the
# guest's CPU time so far (/proc/stat's "cpu" line: user nice system idle
# iowait irq softirq ..., in clock ticks) and the NVMe's I/O so far (its
# /sys/block stat line: reads, merges, sectors, ms, then the same for
# writes, ..., from the 12th field discards, from the 16th flushes; see
# Documentation/block/stat.rst)
counters_at() {
	local l
	echo "$EPOCHREALTIME $2 $(ct_counters)" >> "$1.samples"
	{
		echo "== $2 $EPOCHREALTIME"
		ct_status
		read -r l < /proc/stat && echo "$l"
		[ -r /sys/block/nvme0n1/stat ] &&
			read -r l < /sys/block/nvme0n1/stat && echo "nvme0n1: $l"
	} >> "$1.status" 2>&1
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
	if [ "$CT" = nvme ] && [[ $WL == *bench ]]; then
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

# db_mount CGROUP MEMORY: the database file system on the contender, and
# a memory cgroup for its server
db_mount() {
	mkdir -p $DB_MNT
	mount -o noatime "$DEV" $DB_MNT || return 1
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
		echo +memory > /sys/fs/cgroup/cgroup.subtree_control
	mkdir -p "$1"
	echo "$2" > "$1/memory.max"
}

pg_start() {
	db_mount $PG_CG "$PG_MEM" || return 1
	install -d -o postgres -g postgres $PG_SOCK
	# The server, and so its page cache, lives in the memory cgroup: the
	# database cannot hide in guest RAM.  Nothing of it is cached yet: the
	# device and the mount are new.  (No drop_caches: it would also drop
	# the PostgreSQL binaries, which take tens of seconds to read back
	# over 9p under TCG.)
	rm -rf "${PG_LOG%/*}"
	install -d -o postgres -g postgres "${PG_LOG%/*}"
	(echo $BASHPID > $PG_CG/cgroup.procs
	 exec runuser -u postgres -- "$PGBIN/pg_ctl" -D $DB_MNT/pgdata -w -t 120 \
		-l "$PG_LOG" -o "-k $PG_SOCK -p $PG_PORT" start) > /dev/null
}

pg_stop() {
	if [ -e $DB_MNT/pgdata/postmaster.pid ]; then
		pg "$PGBIN/pg_ctl" -D $DB_MNT/pgdata -w -t 120 -m fast stop \
			> /dev/null 2>&1
	fi
	cp "$PG_LOG" "$OUT/$CT/postgres.log" 2>/dev/null
	mountpoint -q $DB_MNT && umount $DB_MNT
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
# sysbench oltp_read_write against MariaDB on ext4 over the contender.

# The server in its memory cgroup, its settings from the image's
# mariadb.cnf.  InnoDB reads its data files with O_DIRECT, so the cgroup
# only keeps the server's own memory honest.  No password: the image's
# root account, reached by the guest's root over the socket.
my_start() {
	local i
	db_mount $MY_CG "$MY_MEM" || return 1
	rm -rf $MY_DIR
	install -d -o mysql -g mysql $MY_DIR
	(echo $BASHPID > $MY_CG/cgroup.procs
	 exec "$MYSQLD" --defaults-file=$DB_MNT/mariadb.cnf --user=mysql \
		--datadir=$DB_MNT/mysql --socket=$MY_SOCK \
		--pid-file=$MY_DIR/mariadb.pid --log-error=$MY_DIR/server.log \
		> /dev/null 2>&1) &
	MY_PID=$!
	# InnoDB's start (and the binaries read over 9p) takes a while
	# under TCG.
	for ((i = 0; i < 240; i++)); do
		[ -e /proc/$MY_PID ] || return 1
		mariadb-admin --socket=$MY_SOCK -uroot ping > /dev/null 2>&1 &&
			return 0
		sleep 1
	done
	return 1
}

# Alive and not a zombie
my_alive() {
	local st
	[ -r /proc/$MY_PID/stat ] || return 1
	read -r _ _ st _ < /proc/$MY_PID/stat
	[ "$st" != Z ]
}

# stuck_report WHAT PID: what a process that does not finish waits on,
# into notes.txt, OUTDIR/stuck.txt and the console (blocked tasks)
stuck_report() {
	local t
	notes "$1 (see stuck.txt)"
	{
		echo "== $1"
		for t in /proc/$2/task/*; do
			echo "-- task ${t##*/}: $(cat $t/comm 2>/dev/null) $(cut -d' ' -f3 $t/stat 2>/dev/null) wchan $(cat $t/wchan 2>/dev/null)"
			cat $t/stack 2>/dev/null
		done
		echo "-- contender status"
		ct_status
	} >> "$OUT/stuck.txt" 2>&1
	echo w > /proc/sysrq-trigger 2>/dev/null
}

my_stop() {
	local i
	if [ -n "${MY_PID:-}" ] && [ -e /proc/$MY_PID ]; then
		# SIGTERM is a normal shutdown (mariadb-admin shutdown would wait
		# for it up to an hour).
		kill -TERM "$MY_PID" 2>/dev/null
		for ((i = 0; i < 180; i++)); do
			my_alive || break
			sleep 1
		done
		if my_alive; then
			stuck_report "$CT/$WL: MariaDB still running 180 s after shutdown" \
				$MY_PID
			kill -9 "$MY_PID" 2>/dev/null
			# In uninterruptible sleep on a stuck device it survives
			# SIGKILL: give up on it rather than on every later cell.
			for ((i = 0; i < 30; i++)); do
				my_alive || break
				sleep 1
			done
		fi
		my_alive || wait "$MY_PID" 2>/dev/null
	fi
	MY_PID=
	cp $MY_DIR/server.log "$OUT/$CT/mariadb.log" 2>/dev/null
	mountpoint -q $DB_MNT && umount $DB_MNT
	rmdir $MY_CG 2>/dev/null
	return 0
}

# sysbench_run SECONDS SEED OUT: one oltp_read_write run, a report every
# second (report.py counts the transactions of the first SECONDS: the
# total also counts the ones in flight when time runs out, which take
# seconds on the disk alone), latency percentile 99 over the run.  The
# seed is fixed: every contender gets the same sequence.
sysbench_run() {
	local t=$1 seed=$2 out=$3
	timeout $((t + 300)) sysbench oltp_read_write --db-driver=mysql \
		--mysql-socket=$MY_SOCK --mysql-user=root --mysql-db=sbtest \
		--tables="$MY_TABLES" --table-size="$MY_ROWS" \
		--threads="$MY_CLIENTS" --time="$t" --report-interval=1 \
		--rand-seed="$seed" --percentile=99 run > "$out" 2>&1
}

# Warm-up and measured phase are two runs of one server: sysbench's
# report of the second is the cell's result.
sysbench_cell() {
	local base=$OUT/$CT/sysbench w m r=0 t0
	w=$(phase_time sysbench warmup)
	m=$(phase_time sysbench measure)
	: > "$base.status"
	echo setup > $PHASE_FILE
	if ! my_start; then
		notes "$CT/sysbench: MariaDB did not start ($(tail -n 2 $MY_DIR/server.log 2>/dev/null | tr '\n' ' '))"
		my_stop
		return 1
	fi
	counters_at "$base" start
	sampler_start "$base.samples"
	if [ "$w" -gt 0 ]; then
		phase warmup
		sysbench_run "$w" 1 "$base.warmup.txt" ||
			notes "$CT/sysbench: warm-up failed ($(tail -n 1 "$base.warmup.txt"))"
	fi
	phase measure
	t0=$EPOCHREALTIME
	if ! sysbench_run "$m" 2 "$base.txt"; then
		notes "$CT/sysbench: sysbench failed ($(tail -n 1 "$base.txt"))"
		r=1
	fi
	echo "$t0 $EPOCHREALTIME" > "$base.window"
	sampler_stop
	counters_at "$base" end
	event "$CT sysbench run end"
	my_stop
	return $r
}

# ------------------------------------------------------------------

run_cell() {
	local r
	case $WL in
	pgbench | sysbench)
		if [[ " $DB_READY " != *" $WL "* ]]; then
			notes "$CT/$WL: skipped, no database image"
			return 0
		fi
		;;
	esac
	mkdir -p "$OUT/$CT"
	log "$CT / $WL: setup"
	event "$CT $WL setup start"
	prepare_cell
	r=$?
	if [ $r != 0 ]; then
		notes "$CT: skipped ($WL): ${CT_NOTE:-setup failed}"
		return $r
	fi
	case $WL in
	pgbench) pgbench_cell ;;
	sysbench) sysbench_cell ;;
	*) fio_cell ;;
	esac
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
# pristine RAM disk once; every pgbench and sysbench cell then starts from
# a fresh snapshot of it.
DB_READY=
MYSQLD=/usr/sbin/mariadbd

load_backing() {
	local image= wl
	for wl in pgbench sysbench; do
		case " $WORKLOADS " in *" $wl "*) ;; *) continue ;; esac
		if [ -z "${DBIMAGE:-}" ] || [ ! -b "$DBIMAGE" ]; then
			notes "$wl: no database image attached"
		elif [ $wl = pgbench ] && [ -z "$PGBIN" ]; then
			notes "pgbench: PostgreSQL not installed"
		elif [ $wl = sysbench ] && { [ ! -x "$MYSQLD" ] || ! command -v sysbench > /dev/null; }; then
			notes "sysbench: MariaDB or sysbench not installed"
		else
			image=$DBIMAGE
			DB_READY+=" $wl"
		fi
	done
	backing_init $image || { DB_READY=; return 1; }
	[ -z "$image" ] || log "database image loaded ($DB_READY )"
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
		echo "mariadb: $("$MYSQLD" --version 2>/dev/null)"
		echo "sysbench: $(sysbench --version 2>/dev/null)"
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
