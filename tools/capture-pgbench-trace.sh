#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Capture a real block trace of PostgreSQL's pgbench (TPC-B-like) running on
# ext4 over a virtio disk inside a VM, for tacsim.
#
#   tools/capture-pgbench-trace.sh [OUT.blkparse.gz]
#
# Steps:
#  1. On the host, natively (fast): initdb and 'pgbench -i -s SCALE' into a
#     scratch directory, then stop the server cleanly.
#  2. Build an ext4 image holding that data directory (mkfs.ext4 -d, no loop
#     device or mount needed on the host).
#  3. Boot a VM (virtme-ng) on the image.  In the guest: mount it, confine
#     PostgreSQL to a memory cgroup of MEMLIMIT so that the guest page cache
#     plays the role of the DBMS's DRAM buffer pool (TAC section 1.3: the SSD
#     cache sits below it) and the database is many times larger than it,
#     start blktrace on /dev/vda, run 'pgbench -T DURATION', stop.
#  4. Keep only the queued ('Q') events of blkparse's default text output:
#     those are the bios as the filesystem submitted them, before the I/O
#     scheduler merges them, i.e. what a bio-based device-mapper target such
#     as dm-tac receives.  Compress to OUT.
#
# Environment knobs (defaults in brackets): SCALE [100, about 1.5 GB],
# DURATION seconds [1500], CLIENTS [8], PGBENCH_ARGS
# [-M prepared], MEMLIMIT [160M], SHARED_BUFFERS
# [16MB], DISK_SIZE [6G], WORK scratch dir [mktemp], KERNEL
# [/boot/vmlinuz-6.1.0-*-amd64], VM_MEMORY [1G], KVM [0: TCG; 1: use
# /dev/kvm].  Needs root (for the postgres user and the VM), the
# Debian packages postgresql, blktrace, e2fsprogs and virtme-ng (vng on PATH,
# or in /tmp/vng/bin).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$TOP/tools/traces/pgbench.blkparse.gz}
SCALE=${SCALE:-100}
DURATION=${DURATION:-1500}
CLIENTS=${CLIENTS:-8}
PGBENCH_ARGS=${PGBENCH_ARGS:--M prepared}
MEMLIMIT=${MEMLIMIT:-160M}
SHARED_BUFFERS=${SHARED_BUFFERS:-16MB}
DISK_SIZE=${DISK_SIZE:-6G}
VM_MEMORY=${VM_MEMORY:-1G}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
KERNEL=${KERNEL:-$(ls /boot/vmlinuz-6.1.0-*-amd64 2>/dev/null | sort -V | tail -n1)}
PORT=5499

die() { echo "capture-pgbench-trace: $*" >&2; exit 1; }


[ "$(id -u)" = 0 ] || die "must run as root"
id postgres >/dev/null 2>&1 || die "no postgres user (apt-get install postgresql)"
[ -x "$PGBIN/initdb" ] || die "no PostgreSQL server binaries"
command -v blktrace >/dev/null || die "blktrace not installed"
command -v mkfs.ext4 >/dev/null || die "e2fsprogs not installed"
PATH=$PATH:/tmp/vng/bin
command -v vng >/dev/null || die "no vng (virtme-ng)"

if [ -z "${WORK:-}" ]; then
	WORK=$(mktemp -d /var/tmp/tac-pgbench.XXXXXX)
	trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK/fs" "$WORK/out"
chmod 755 "$WORK" "$WORK/fs"
chmod 777 "$WORK/out"

echo "== host: initdb + pgbench -i -s $SCALE in $WORK/fs/pgdata"
PGDATA=$WORK/fs/pgdata
rm -rf "$PGDATA"
install -d -o postgres -g postgres -m 700 "$PGDATA"
install -d -o postgres -g postgres -m 755 "$WORK/sock"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGDATA" --auth=trust --no-sync >/dev/null
cat >>"$PGDATA/postgresql.conf" <<CONF
listen_addresses = ''
port = $PORT
unix_socket_directories = '/tmp'
shared_buffers = $SHARED_BUFFERS
max_wal_size = 256MB
checkpoint_timeout = 60s
log_checkpoints = on
CONF
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -w -l "$WORK/sock/host-pg.log" \
	-o "-k $WORK/sock" start >/dev/null
runuser -u postgres -- "$PGBIN/createdb" -h "$WORK/sock" -p $PORT bench
runuser -u postgres -- pgbench -q -i -s "$SCALE" -h "$WORK/sock" -p $PORT bench
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -w -m fast stop >/dev/null
du -sh "$PGDATA"

echo "== host: ext4 image"
rm -f "$WORK/disk.img"
truncate -s "$DISK_SIZE" "$WORK/disk.img"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 -d "$WORK/fs" \
	"$WORK/disk.img"
rm -rf "$PGDATA"

cat >"$WORK/out/guest.sh" <<GUEST
#!/bin/bash
# Runs inside the VM as root.  Output directory is shared with the host.
set -eu
O=$WORK/out
exec >\$O/guest.log 2>&1
set -x
M=/tmp/pgmnt
mkdir -p \$M
mount -t ext4 -o noatime /dev/vda \$M
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/pg
echo $MEMLIMIT >/sys/fs/cgroup/pg/memory.max
install -d -o postgres -g postgres /tmp/pgsock
sed -i "s|^unix_socket_directories.*|unix_socket_directories = '/tmp/pgsock'|" \$M/pgdata/postgresql.conf
sync
echo 3 >/proc/sys/vm/drop_caches
# Q events only (-a queue): see the header of capture-pgbench-trace.sh.
blktrace -d /dev/vda -a queue -o - | blkparse -q -i - -o \$O/trace.txt &
sleep 2
(echo \$BASHPID >/sys/fs/cgroup/pg/cgroup.procs
 exec runuser -u postgres -- $PGBIN/pg_ctl -D \$M/pgdata -w -l /tmp/pg.log start)
(echo \$BASHPID >/sys/fs/cgroup/pg/cgroup.procs
 exec runuser -u postgres -- pgbench -h /tmp/pgsock -p $PORT -c $CLIENTS -j 2 $PGBENCH_ARGS \
	-T $DURATION -P 60 bench) >\$O/pgbench.log 2>&1
runuser -u postgres -- $PGBIN/pg_ctl -D \$M/pgdata -w -m fast stop
sync
sleep 2
kill -INT \$(pidof blktrace)
wait
cat /sys/fs/cgroup/pg/memory.peak 2>/dev/null || true
cp /tmp/pg.log \$O/pg.log || true
umount \$M
echo done >\$O/guest.done
GUEST
chmod 755 "$WORK/out/guest.sh"

echo "== guest: pgbench -T $DURATION -c $CLIENTS under blktrace"
# KVM=1 uses /dev/kvm; the default is TCG because nested KVM is not
# available everywhere (here QEMU asserts on an MSR at boot).
kvm_arg=--disable-kvm
[ "${KVM:-0}" = 1 ] && kvm_arg=""
vng -r "$KERNEL" $kvm_arg --memory "$VM_MEMORY" --cpus 2 \
	--rwdir "$WORK/out" --disk "$WORK/disk.img" \
	--exec "$WORK/out/guest.sh" </dev/null
[ -f "$WORK/out/guest.done" ] || { cat "$WORK/out/guest.log" >&2; die "guest failed"; }
tail -n 5 "$WORK/out/pgbench.log"

echo "== trace"
mkdir -p "$(dirname "$OUT")"
grep -E '^ *[0-9]+,[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ +Q ' "$WORK/out/trace.txt" |
	gzip -9 >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$(zcat "$OUT" | wc -l) Q events -> $OUT ($(du -h "$OUT" | cut -f1))"
