#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build the ext4 image holding the pgbench database that every contender's
# pgbench cell starts from.
#
#   bench/compare/pgimage.sh IMAGE SCALE SIZE_MB SHARED_BUFFERS
#
# Loading the database inside the VM would take longer than the benchmark
# under TCG, so it is done natively on the host: initdb and
# "pgbench -i -s SCALE" into a scratch directory, a clean shutdown, then
# mkfs.ext4 -d puts that directory into a sparse SIZE_MB image (no loop
# device or mount).  In the guest, guest.sh copies the image onto each
# fresh origin (its data blocks only) before building the contender, so
# every contender starts from the same bytes and a cold cache.
#
# Needs root, PostgreSQL (Debian's postgresql packages) and e2fsprogs.

set -euo pipefail

image=${1:?usage: pgimage.sh IMAGE SCALE SIZE_MB SHARED_BUFFERS}
scale=${2:?}
size_mb=${3:?}
shared_buffers=${4:?}
port=5498

die() {
	echo "pgimage: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root (PostgreSQL runs as user postgres)"
id postgres > /dev/null 2>&1 || die "no postgres user (install postgresql)"
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$pgbin/initdb" ] || die "no PostgreSQL server binaries"
command -v mkfs.ext4 > /dev/null || die "mkfs.ext4 missing (e2fsprogs)"

work=$(mktemp -d /var/tmp/tac-pgimage.XXXXXX)
cleanup() {
	if [ -e "$work/fs/pgdata/postmaster.pid" ]; then
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/fs/pgdata" -m immediate \
			stop > /dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
mkdir -p "$work/fs"
chmod 755 "$work/fs"
data=$work/fs/pgdata
install -d -o postgres -g postgres -m 700 "$data"
install -d -o postgres -g postgres -m 755 "$work/sock"

runuser -u postgres -- "$pgbin/initdb" -D "$data" --auth=trust --no-sync \
	> /dev/null
# Settings the guest runs with.  shared_buffers is small on purpose (the
# server also lives in a small memory cgroup): reads must reach the disk.
# Checkpoints every 30 s so every measured phase contains one; autovacuum
# off so that no vacuum lands in one contender's run and not another's.
cat >> "$data/postgresql.conf" <<CONF
listen_addresses = ''
shared_buffers = $shared_buffers
min_wal_size = 32MB
max_wal_size = 256MB
checkpoint_timeout = 30s
autovacuum = off
log_checkpoints = on
CONF
runuser -u postgres -- "$pgbin/pg_ctl" -D "$data" -w -l "$work/sock/pg.log" \
	-o "-k $work/sock -p $port" start > /dev/null
runuser -u postgres -- "$pgbin/createdb" -h "$work/sock" -p $port bench
runuser -u postgres -- pgbench -q -i -s "$scale" -h "$work/sock" -p $port bench \
	2>&1 | tail -n 1
# Keep the image small: the load's WAL is not needed once checkpointed.
runuser -u postgres -- psql -q -h "$work/sock" -p $port -d bench \
	-c "ALTER SYSTEM SET max_wal_size = '32MB'" -c "SELECT pg_reload_conf()" \
	-c "CHECKPOINT" > /dev/null
runuser -u postgres -- psql -q -h "$work/sock" -p $port -d bench \
	-c "ALTER SYSTEM RESET max_wal_size" -c "CHECKPOINT" > /dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$data" -w -m fast stop > /dev/null
du -sh "$data"/* | sort -h | tail -n 3
echo "pgimage: database $(du -sh "$data" | cut -f1)"

rm -f "$image.tmp"
truncate -s "${size_mb}M" "$image.tmp"
mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 \
	-d "$work/fs" "$image.tmp"
mv "$image.tmp" "$image"
echo "pgimage: $image ($(du -h "$image" | cut -f1) allocated of ${size_mb} MiB)"
