#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build the ext4 image holding the two databases that every contender's
# pgbench and sysbench cells start from.
#
#   bench/compare/dbimage.sh IMAGE SIZE_MB PG_SCALE SHARED_BUFFERS \
#                            MY_TABLES MY_ROWS
#
# MY_TABLES 0: no MariaDB database (a run without sysbench cells, on a
# host without MariaDB).
#
# Loading a database inside the VM would take longer than the benchmark
# under TCG, so it is done natively on the host, into a scratch directory:
#   pgdata/       initdb and "pgbench -i -s PG_SCALE", clean shutdown;
#   mysql/        mariadb-install-db and "sysbench oltp_read_write
#                 prepare" (MY_TABLES tables of MY_ROWS rows), slow
#                 shutdown (innodb_fast_shutdown=0: nothing left to
#                 merge or purge when the guest starts it);
#   mariadb.cnf   the MariaDB settings the guest runs with.
# mkfs.ext4 -d then puts that directory into a sparse SIZE_MB image (no
# loop device or mount).  In the guest, devices.sh loads the image's data
# blocks once; every cell gets a fresh copy-on-write view of them, so
# every contender starts from the same bytes and a cold cache.
#
# Needs root, PostgreSQL, MariaDB and sysbench (Debian's postgresql,
# mariadb-server and sysbench packages: make bench installs them) and
# e2fsprogs.

set -euo pipefail

usage="usage: dbimage.sh IMAGE SIZE_MB PG_SCALE SHARED_BUFFERS MY_TABLES MY_ROWS"
image=${1:?$usage}
size_mb=${2:?$usage}
scale=${3:?$usage}
shared_buffers=${4:?$usage}
my_tables=${5:?$usage}
my_rows=${6:?$usage}
port=5498

die() {
	echo "dbimage: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root (the servers run as users postgres and mysql)"
id postgres > /dev/null 2>&1 || die "no postgres user (install postgresql)"
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$pgbin/initdb" ] || die "no PostgreSQL server binaries"
command -v mkfs.ext4 > /dev/null || die "mkfs.ext4 missing (e2fsprogs)"
if [ "$my_tables" != 0 ]; then
	id mysql > /dev/null 2>&1 || die "no mysql user (install mariadb-server)"
	for c in mariadbd mariadb-install-db mariadb-admin mariadb sysbench; do
		command -v $c > /dev/null || [ -x /usr/sbin/$c ] ||
			die "$c missing (make bench installs mariadb-server and sysbench)"
	done
fi

work=$(mktemp -d /var/tmp/tac-dbimage.XXXXXX)
mypid=
cleanup() {
	if [ -e "$work/fs/pgdata/postmaster.pid" ]; then
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/fs/pgdata" -m immediate \
			stop > /dev/null 2>&1 || true
	fi
	if [ -n "$mypid" ]; then
		kill -9 "$mypid" 2>/dev/null || true
		wait "$mypid" 2>/dev/null || true
	fi
	rm -rf "$work" "$image.tmp"
}
trap cleanup EXIT
chmod 755 "$work"
mkdir -p "$work/fs"
chmod 755 "$work/fs"
install -d -o postgres -g postgres -m 755 "$work/sock"

# ---- PostgreSQL: pgdata/
data=$work/fs/pgdata
install -d -o postgres -g postgres -m 700 "$data"
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
# The load runs with max_wal_size 32MB (on the command line, not in the
# image's settings): a checkpoint recycles old WAL segments into future
# ones up to max_wal_size, and only a small cap keeps them out of the image.
runuser -u postgres -- "$pgbin/pg_ctl" -D "$data" -w -l "$work/sock/pg.log" \
	-o "-k $work/sock -p $port -c max_wal_size=32MB" start > /dev/null
runuser -u postgres -- "$pgbin/createdb" -h "$work/sock" -p $port bench
runuser -u postgres -- pgbench -q -i -s "$scale" -h "$work/sock" -p $port bench \
	2>&1 | tail -n 1
# Keep the image small: after a switch to a new segment, a checkpoint
# removes the load's WAL.
runuser -u postgres -- psql -q -h "$work/sock" -p $port -d bench \
	-c "SELECT pg_switch_wal()" -c "CHECKPOINT" -c "CHECKPOINT" > /dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$data" -w -m fast stop > /dev/null
echo "dbimage: PostgreSQL $(du -sh "$data" | cut -f1) (WAL $(du -sh "$data/pg_wal" | cut -f1))"

# ---- MariaDB: mysql/ and mariadb.cnf (with MY_TABLES > 0)
# The buffer pool is small for the same reason as shared_buffers, and
# InnoDB reads and writes its data files with O_DIRECT (MariaDB's default
# on Linux, said here so that it stays so): no page cache hides the disk.
# Durability as shipped: the redo log is flushed at every commit and
# pages go through the doublewrite buffer.  Undo logs in their own
# tablespaces, truncated when purged: in the system tablespace, the
# load's undo would stay as 60 MiB of dead space in the image.  No buffer
# pool dump: every cell starts cold, as its cache does.
mariadb_load() {
	my=$work/fs/mysql
	cat > "$work/fs/mariadb.cnf" <<-CONF
	[mariadbd]
	datadir = /nonexistent
	skip-networking
	innodb_buffer_pool_size = 16M
	innodb_log_file_size = 48M
	innodb_flush_method = O_DIRECT
	innodb_flush_log_at_trx_commit = 1
	innodb_doublewrite = ON
	innodb_undo_tablespaces = 3
	innodb_undo_log_truncate = ON
	performance_schema = OFF
	innodb_buffer_pool_dump_at_shutdown = OFF
	innodb_buffer_pool_load_at_startup = OFF
	skip-log-bin
	max_connections = 32
	CONF
	install -d -o mysql -g mysql -m 755 "$my"
	mylog=$work/mysock
	install -d -o mysql -g mysql -m 755 "$mylog"
	mariadb-install-db --defaults-file="$work/fs/mariadb.cnf" --user=mysql \
		--datadir="$my" --auth-root-authentication-method=normal \
		--skip-test-db > "$mylog/install.log" 2>&1 ||
		{ tail -n 5 "$mylog/install.log" >&2; die "mariadb-install-db failed"; }
	mysock=$mylog/mariadb.sock
	/usr/sbin/mariadbd --defaults-file="$work/fs/mariadb.cnf" --user=mysql \
		--datadir="$my" --socket="$mysock" --pid-file="$mylog/mariadb.pid" \
		--log-error="$mylog/mariadb.err" \
		--innodb-buffer-pool-size=256M > /dev/null 2>&1 &
	mypid=$!
	for _ in $(seq 120); do
		[ -e /proc/$mypid ] || break
		mariadb-admin --socket="$mysock" -uroot ping > /dev/null 2>&1 && break
		sleep 1
	done
	mariadb-admin --socket="$mysock" -uroot ping > /dev/null 2>&1 ||
		{ tail -n 5 "$mylog/mariadb.err" >&2; die "MariaDB did not start"; }
	mariadb --socket="$mysock" -uroot -e "CREATE DATABASE sbtest"
	sysbench oltp_read_write --db-driver=mysql --mysql-socket="$mysock" \
		--mysql-user=root --mysql-db=sbtest --tables="$my_tables" \
		--table-size="$my_rows" --threads=2 prepare > "$mylog/prepare.log" 2>&1 ||
		{ tail -n 5 "$mylog/prepare.log" >&2; die "sysbench prepare failed"; }
	mariadb --socket="$mysock" -uroot -e "SET GLOBAL innodb_fast_shutdown = 0"
	kill -TERM $mypid	# a normal shutdown
	for _ in $(seq 300); do
		[ -e /proc/$mypid ] || break
		sleep 1
	done
	[ ! -e /proc/$mypid ] || die "MariaDB did not shut down in 300 s"
	wait $mypid || die "MariaDB's shutdown failed ($(tail -n 1 "$mylog/mariadb.err"))"
	mypid=
	echo "dbimage: MariaDB $(du -sh "$my" | cut -f1)"
}
[ "$my_tables" = 0 ] || mariadb_load

# The databases grow while they run (WAL up to max_wal_size, InnoDB's
# undo and temporary tablespaces), and mkfs.ext4 -d leaves their zero
# pages as holes that a write must allocate again: a full file system
# made MariaDB retry ENOSPC writes forever.  Leave 15% of the image free
# of what the files occupy on the host (with ext4's own 4%, 100-150 MiB
# for either server to grow into while the other's holes stay holes), and
# no reserved blocks (the servers do not run as root).
used_mb=$(du -sm "$work/fs" | cut -f1)
[ $((used_mb * 100)) -le $((size_mb * 85)) ] ||
	die "the databases take $used_mb MiB of a $size_mb MiB image: lower the scale or the rows"
rm -f "$image.tmp"
truncate -s "${size_mb}M" "$image.tmp"
mkfs.ext4 -q -F -b 4096 -m 0 -E lazy_itable_init=0,lazy_journal_init=0 \
	-d "$work/fs" "$image.tmp"
mv "$image.tmp" "$image"
echo "dbimage: $image ($(du -h "$image" | cut -f1) allocated of ${size_mb} MiB)"
