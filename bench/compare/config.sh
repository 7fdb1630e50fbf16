# SPDX-License-Identifier: GPL-2.0-only
#
# Benchmark sizes and phase lengths, sourced by the host driver (bench.sh)
# and by the guest (guest.sh).  Every contender gets the same devices and
# the same phases.  Why these numbers: bench/compare/README.md, "Sizing".
#
# Environment overrides: any variable below set before sourcing wins.

# Devices (MiB).  The origin is the data set of every fio workload and the
# disk the databases' file system lives on; the cache gets 10% of it.  The
# emulated NVMe namespace holds an "NVMe alone" region of ORIGIN_MB (for
# the upper-bound contender) followed by the cache region of
# CACHE_MB + META_MB, which every cache contender gets whole (dm-cache
# splits it: META_MB of metadata, CACHE_MB of data).
: "${ORIGIN_MB:=1000}"
: "${CACHE_MB:=100}"
: "${META_MB:=8}"

# Origin model: hddsim (tests/hddsim, a 7200 rpm disk model) or delay (a
# dm-delay stand-in, fixed DELAY_MS per bio, for trees without hddsim).
# HDDSIM_ARGS are its optional <key> <value> pairs (empty: its defaults).
: "${ORIGIN_MODEL:=auto}"
: "${HDDSIM_ARGS:=}"
: "${DELAY_MS:=8}"

# Cache device: nvme (QEMU's emulated controller, backed by a host file in
# RAM) or brd (a guest RAM disk).  README.md has the measurements behind
# the default.
: "${CACHE_KIND:=nvme}"

# Block sizes (512-byte sectors).  dm-cache cannot go below 64 (32 KiB);
# dm-tac uses the database page size (8 KiB) on the raw device, where
# fio's 8 KiB requests are aligned to it, and ext4's block (4 KiB) under
# the databases (pgbench, sysbench): ext4 places a file's 8 KiB pages on
# any 4 KiB boundary, so
# with 8 KiB blocks half of PostgreSQL's writes cover two half blocks,
# and a write of part of an uncached block goes to the origin (README.md
# has the measurement); dm-writecache its 4 KiB maximum.
: "${TAC_BLOCK:=16}"
: "${DB_TAC_BLOCK:=8}"
: "${DMCACHE_BLOCK:=64}"
: "${WRITECACHE_BLOCK:=4096}"

# pgbench: database scale (about 15 MiB per unit, so 30 is ~4.5x the cache)
# and the memory cgroup limit of the PostgreSQL server (its share of the
# guest page cache), so that the data set is many times what RAM holds.
: "${PG_SCALE:=30}"
: "${PG_MEM:=96M}"
: "${PG_SHARED_BUFFERS:=16MB}"
: "${PG_CLIENTS:=4}"

# sysbench oltp_read_write on MariaDB: MY_TABLES tables of MY_ROWS rows
# (8 x 80,000: about 200 MiB of tables, 2x the cache, and 90 MiB of
# logs and system tablespaces; its InnoDB buffer pool is 16 MiB,
# dbimage.sh), the server's memory cgroup and sysbench's threads.  Both
# databases share one 999 MiB file system, which must keep room to grow.
: "${MY_TABLES:=8}"
: "${MY_ROWS:=80000}"
: "${MY_MEM:=256M}"
: "${MY_CLIENTS:=4}"

# Guest.
# Guest RAM holds the RAM disks (origin copy-on-write store up to
# ORIGIN_MB + 64, pristine database image ~720 MiB) besides the system.
: "${VM_MEMORY:=3G}"
: "${VM_CPUS:=2}"

# Status sampling period during every phase (seconds).  Each sample forks
# a dmsetup, which is not free under TCG.
: "${SAMPLE_SEC:=3}"

# Phase lengths: workload:warmup:measure in seconds.  seq-read is one pass
# of the whole device in each phase (the numbers only cap it).  The full
# run is sized to about 73 minutes on a 2-core host under TCG with 10
# contenders (README.md, "Sizing and time budget"); QUICK=1 runs the two
# workloads at the heart of TAC, shorter, in under 10.
if [ "${QUICK:-0}" = 1 ]; then
	: "${PHASES:=oltp-read:6:8 oltp-write:5:8 scan-pollution:8:10 ods-mix:6:6 seq-read:20:20 seq-over-hot-read:15:20 seq-over-hot-write:15:20 uniform-random:3:5 pgbench:5:10 sysbench:20:40}"
	: "${WORKLOADS:=oltp-read scan-pollution}"
else
	: "${PHASES:=oltp-read:18:15 oltp-write:10:15 scan-pollution:20:20 ods-mix:12:15 seq-read:30:30 seq-over-hot-read:20:30 seq-over-hot-write:20:30 uniform-random:4:10 pgbench:10:20 sysbench:30:60}"
	: "${WORKLOADS:=oltp-read oltp-write scan-pollution ods-mix seq-read seq-over-hot-read seq-over-hot-write uniform-random pgbench sysbench}"
fi

# Contenders.  tac-<mode> runs dm-tac in that mode; a mode the loaded
# module rejects is skipped with a note.  If no dm-tac mode in the list is
# accepted, tac-passthrough runs in their place so the table still has a
# dm-tac row (noted in the results).
: "${CONTENDERS:=hdd nvme tac-writethrough tac-writearound tac-writeback dmcache-wt dmcache-wb bcache-wt bcache-wb writecache}"

# Workloads without writes, where dm-writecache (a write cache) is only the
# origin plus overhead: skipped for it.
WRITECACHE_SKIP="ods-mix seq-read seq-over-hot-read uniform-random"

# phase_time WORKLOAD warmup|measure: seconds from PHASES
phase_time() {
	local p w
	for p in $PHASES; do
		w=${p%%:*}
		[ "$w" = "$1" ] || continue
		case $2 in
		warmup) p=${p#*:}; echo "${p%%:*}" ;;
		measure) echo "${p##*:}" ;;
		esac
		return 0
	done
	echo 0
}
