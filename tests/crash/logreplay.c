// SPDX-License-Identifier: GPL-2.0-only
/*
 * Replay a dm-log-writes log as crash states, and check each one.
 *
 * usage: logreplay --log LOG --dev DEV --check CMD|--server CMD [options]
 *   --subsets R      random subsets of the unflushed writes per flush
 *                    interval (default 4; all of them when 2^k - 1 <= R)
 *   --seed S         seeds the subsets (default 1)
 *   --max-states N   stop after N states (default: no limit)
 *   --stop-after N   stop after N failed states (default 5)
 *   --list           print the states, write and check nothing
 *   --server CMD     instead of --check: start CMD once, send it one line
 *                    "<upto-flush> <state> <desc>" per state on its stdin
 *                    and read one line "<exit code>" back from its stdout
 *                    (no process start per state: exec is slow in the VM)
 *
 * The log (Documentation/admin-guide/device-mapper/log-writes.rst) holds
 * every write to the logged device in the order it reached stable
 * storage as far as flushes can tell: a write is logged only when a
 * flush that followed its completion completed, or at once if FUA.  The
 * format, all little-endian: a super block (magic, version, nr_entries,
 * sectorsize) in the first sector, then per entry one sectorsize header
 * (sector, nr_sectors, flags, data_len; a mark's name follows the header
 * in the same sector) and nr_sectors * sectorsize bytes of data, except
 * for discards.  Sectors count in sectorsize units.
 *
 * The device started zeroed.  A crash state is a log prefix as a disk
 * with a volatile cache may have it after a power cut: every entry up to
 * the last flush of the prefix, every FUA write after it, and any subset
 * of the other writes after it (applied in log order).  Checked states:
 *   - "exact" states: the prefix ending at each flush, each FUA write and
 *     each mark, everything in it applied (a new state only if something
 *     changed since the last exact one);
 *   - "subset" states: at the end of each flush interval (just before the
 *     next flush entry), R random subsets of its plain writes dropped.
 * For each, DEV is rewritten whole with the state (so whatever the stack
 * wrote during the previous check is gone) and CMD runs under /bin/sh
 * with CRASH_UPTO_FLUSH (the N of the last "tacf<N>" mark in the prefix,
 * -1 before the first: the writer's acknowledged flushes), CRASH_STATE
 * (a number) and CRASH_STATE_DESC in its environment.  CMD exits 0 if
 * the state is correct, 1 if not, anything else for "could not check".
 *
 * Exit: 0 every state passed, 1 some failed, 2 error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record.h"

#define LW_MAGIC	0x6a736677736872ULL
#define LW_VERSION	1
#define LW_FLUSH	(1 << 0)
#define LW_FUA		(1 << 1)
#define LW_DISCARD	(1 << 2)
#define LW_MARK		(1 << 3)

struct entry {
	uint64_t off;		/* byte offset on the device */
	uint64_t len;		/* bytes */
	uint64_t flags;
	const uint8_t *data;	/* in the mapped log; NULL for discards */
	char mark[64];
};

static struct {
	const char *log, *dev, *check, *server;
	unsigned int subsets, stop_after;
	uint64_t seed, max_states;
	int list;
} opt = { .subsets = 4, .seed = 1, .stop_after = 5 };

static struct entry *ents;
static uint64_t nents, devsize;
static uint8_t *base, *work;
static int devfd = -1;
static long long acked = -1;
static uint64_t nstates, npass, nfail, nerr, rng;
static uint64_t n_writes, n_flush, n_fua, n_mark, n_discard;
static double t_write, t_check;
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void __attribute__((noreturn)) fatal(const char *what)
{
	fprintf(stderr, "logreplay: %s: %s\n", what, strerror(errno));
	exit(2);
}

static FILE *srv_in, *srv_out;
static pid_t srv_pid;

static void server_start(void)
{
	int in[2], out[2];

	if (pipe(in) || pipe(out))
		fatal("pipe");
	fflush(NULL);
	srv_pid = fork();
	if (srv_pid < 0)
		fatal("fork");
	if (!srv_pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execl("/bin/sh", "sh", "-c", opt.server, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	srv_in = fdopen(in[1], "w");
	srv_out = fdopen(out[0], "r");
	if (!srv_in || !srv_out)
		fatal("fdopen");
}

/* One state through the server: its exit code, or -1 if it died. */
static int server_check(const char *num, const char *up, const char *desc)
{
	char line[64];
	int rc;

	if (fprintf(srv_in, "%s %s %s\n", up, num, desc) < 0 ||
	    fflush(srv_in))
		return -1;
	if (!fgets(line, sizeof(line), srv_out) ||
	    sscanf(line, "%d", &rc) != 1)
		return -1;
	return rc;
}

static void server_stop(void)
{
	int st;

	if (!srv_pid)
		return;
	fclose(srv_in);
	fclose(srv_out);
	waitpid(srv_pid, &st, 0);
}

static void parse_log(void)
{
	const uint8_t *map;
	uint64_t size, pos, i, ssz;
	struct stat st;
	int fd;

	fd = open(opt.log, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		fatal(opt.log);
	size = S_ISBLK(st.st_mode) ? 0 : (uint64_t)st.st_size;
	if (S_ISBLK(st.st_mode) && ioctl(fd, BLKGETSIZE64, &size))
		fatal(opt.log);
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		fatal(opt.log);
	if (size < 512 || get_le64(map) != LW_MAGIC ||
	    get_le64(map + 8) != LW_VERSION) {
		fprintf(stderr, "logreplay: %s: not a dm-log-writes log "
			"(expected magic %llx version %d, found %llx version "
			"%llu)\n", opt.log, LW_MAGIC, LW_VERSION,
			(unsigned long long)get_le64(map),
			(unsigned long long)get_le64(map + 8));
		exit(2);
	}
	nents = get_le64(map + 16);
	ssz = get_le32(map + 24);
	if (ssz < 512 || ssz > 65536 || (ssz & (ssz - 1))) {
		fprintf(stderr, "logreplay: bad sectorsize %llu\n",
			(unsigned long long)ssz);
		exit(2);
	}
	ents = calloc(nents ? nents : 1, sizeof(*ents));
	if (!ents)
		fatal("calloc");
	pos = ssz;
	for (i = 0; i < nents; i++) {
		struct entry *e = &ents[i];
		uint64_t nsec, dlen;

		if (pos + ssz > size)
			goto truncated;
		e->off = get_le64(map + pos) * ssz;
		nsec = get_le64(map + pos + 8);
		e->flags = get_le64(map + pos + 16);
		dlen = get_le64(map + pos + 24);
		e->len = nsec * ssz;
		if (e->flags & LW_MARK) {
			if (dlen >= sizeof(e->mark) || 32 + dlen > ssz) {
				fprintf(stderr, "logreplay: entry %llu: mark "
					"of %llu bytes\n",
					(unsigned long long)i,
					(unsigned long long)dlen);
				exit(2);
			}
			memcpy(e->mark, map + pos + 32, dlen);
			n_mark++;
		}
		pos += ssz;
		if (e->flags & LW_DISCARD) {
			n_discard++;
		} else if (e->len) {
			if (pos + e->len > size)
				goto truncated;
			e->data = map + pos;
			pos += e->len;
		}
		if (e->len && e->off + e->len > devsize) {
			fprintf(stderr, "logreplay: entry %llu writes bytes "
				"%llu..%llu, beyond the %llu-byte device\n",
				(unsigned long long)i,
				(unsigned long long)e->off,
				(unsigned long long)(e->off + e->len),
				(unsigned long long)devsize);
			exit(2);
		}
		n_flush += !!(e->flags & LW_FLUSH);
		n_fua += !!(e->flags & LW_FUA);
		n_writes += e->len && !(e->flags & LW_DISCARD);
	}
	close(fd);
	return;
truncated:
	fprintf(stderr, "logreplay: %s: entry %llu of %llu runs past the end "
		"of the log (%llu bytes)\n", opt.log, (unsigned long long)i,
		(unsigned long long)nents, (unsigned long long)size);
	exit(2);
}

static void apply(uint8_t *img, const struct entry *e)
{
	if (!e->len)
		return;
	if (e->flags & LW_DISCARD)
		memset(img + e->off, 0, e->len);
	else
		memcpy(img + e->off, e->data, e->len);
}

static void write_state(const uint8_t *img)
{
	uint64_t off = 0;
	ssize_t r;
	double t = now();

	while (off < devsize) {
		size_t n = devsize - off > (1 << 22) ? 1 << 22 : devsize - off;

		r = pwrite(devfd, img + off, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			fatal(opt.dev);
		off += r;
	}
	if (fdatasync(devfd))
		fatal(opt.dev);
	t_write += now() - t;
}

/* Check one state (img); desc says which.  Returns 0 to go on. */
static int check(const uint8_t *img, const char *desc)
{
	char num[32], up[32];
	double t;
	pid_t pid;
	int st;

	if (opt.max_states && nstates >= opt.max_states)
		return 1;
	nstates++;
	if (opt.list) {
		printf("state %llu: %s (upto-flush %lld)\n",
		       (unsigned long long)nstates, desc, acked);
		return 0;
	}
	write_state(img);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)nstates);
	snprintf(up, sizeof(up), "%lld", acked);
	t = now();
	if (opt.server) {
		int rc = server_check(num, up, desc);

		t_check += now() - t;
		st = rc < 0 ? 255 << 8 : (rc & 0xff) << 8;	/* as exited */
		goto judge;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fatal("fork");
	if (!pid) {
		setenv("CRASH_UPTO_FLUSH", up, 1);
		setenv("CRASH_STATE", num, 1);
		setenv("CRASH_STATE_DESC", desc, 1);
		execl("/bin/sh", "sh", "-c", opt.check, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			fatal("waitpid");
	t_check += now() - t;
judge:
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		npass++;
		return 0;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 1) {
		nfail++;
		printf("logreplay: state %llu FAILED: %s (upto-flush %lld)\n",
		       (unsigned long long)nstates, desc, acked);
	} else {
		nerr++;
		printf("logreplay: state %llu: the check could not run (%s "
		       "%d): %s\n", (unsigned long long)nstates,
		       WIFEXITED(st) ? "exit" : "signal",
		       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), desc);
	}
	return nfail + nerr >= opt.stop_after;
}

/*
 * States at the end of a flush interval: base plus a subset of the
 * pending entries (FUA ones always kept).  Returns non-zero to stop.
 */
static int subset_states(const uint64_t *pend, uint64_t npend, uint64_t at)
{
	uint64_t plain = 0, i, r, nsub, bit, kept;
	char desc[160];
	int all;

	for (i = 0; i < npend; i++)
		plain += !(ents[pend[i]].flags & LW_FUA);
	if (!plain || !opt.subsets)
		return 0;
	/* Every proper subset when there are few, else random ones. */
	all = plain < 16 && (1ULL << plain) - 1 <= opt.subsets;
	nsub = all ? (1ULL << plain) - 1 : opt.subsets;
	for (r = 0; r < nsub; r++) {
		memcpy(work, base, devsize);
		for (i = 0, bit = 0, kept = 0; i < npend; i++) {
			const struct entry *e = &ents[pend[i]];
			int keep;

			if (e->flags & LW_FUA)
				keep = 1;
			else if (all)
				keep = (r >> bit++) & 1;
			else
				keep = splitmix64(&rng) & 1;
			if (keep) {
				apply(work, e);
				kept++;
			}
		}
		snprintf(desc, sizeof(desc), "subset %llu/%llu before entry "
			 "%llu: %llu of %llu unflushed writes kept",
			 (unsigned long long)r + 1, (unsigned long long)nsub,
			 (unsigned long long)at, (unsigned long long)kept,
			 (unsigned long long)npend);
		if (check(work, desc))
			return 1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: logreplay --log LOG --dev DEV --check CMD "
		"[--subsets R] [--seed S] [--max-states N] [--stop-after N] "
		"[--list] [--server CMD]\n");
	exit(2);
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "log", 1, 0, 'l' },	     { "dev", 1, 0, 'd' },
		{ "check", 1, 0, 'c' },	     { "subsets", 1, 0, 'r' },
		{ "seed", 1, 0, 's' },	     { "max-states", 1, 0, 'm' },
		{ "stop-after", 1, 0, 'x' }, { "list", 0, 0, 'L' },
		{ "server", 1, 0, 'S' },     { 0, 0, 0, 0 },
	};
	uint64_t *pend, npend = 0, i, last_exact_applied = UINT64_MAX;
	long long last_exact_acked = -2;
	uint64_t applied = 0;	/* entries in the last exact state */
	struct stat st;
	char desc[160];
	double t0 = now();
	int c, stop = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'l': opt.log = optarg; break;
		case 'd': opt.dev = optarg; break;
		case 'c': opt.check = optarg; break;
		case 'r': opt.subsets = (unsigned int)num(optarg); break;
		case 's': opt.seed = num(optarg); break;
		case 'm': opt.max_states = num(optarg); break;
		case 'x': opt.stop_after = (unsigned int)num(optarg); break;
		case 'L': opt.list = 1; break;
		case 'S': opt.server = optarg; break;
		default: usage();
		}
	}
	if (!opt.log || !opt.dev || optind != argc ||
	    (!opt.list && !opt.check == !opt.server))
		usage();
	rng = opt.seed ^ 0x510e527fade682d1ULL;

	devfd = open(opt.dev, opt.list ? O_RDONLY : O_RDWR);
	if (devfd < 0 || fstat(devfd, &st))
		fatal(opt.dev);
	devsize = (uint64_t)st.st_size;
	if (S_ISBLK(st.st_mode) && ioctl(devfd, BLKGETSIZE64, &devsize))
		fatal(opt.dev);
	parse_log();
	base = calloc(1, devsize);
	work = malloc(devsize);
	pend = malloc((nents ? nents : 1) * sizeof(*pend));
	if (!base || !work || !pend)
		fatal("out of memory");
	if (opt.server && !opt.list)
		server_start();
	printf("logreplay: %llu entries: %llu writes, %llu flushes, %llu FUA, "
	       "%llu marks, %llu discards; device %llu MiB\n",
	       (unsigned long long)nents, (unsigned long long)n_writes,
	       (unsigned long long)n_flush, (unsigned long long)n_fua,
	       (unsigned long long)n_mark, (unsigned long long)n_discard,
	       (unsigned long long)(devsize >> 20));

	for (i = 0; i <= nents && !stop; i++) {
		const struct entry *e = i < nents ? &ents[i] : NULL;
		int exact = 0;

		if (!e || (e->flags & LW_FLUSH)) {
			/* The interval ends: subsets first, then it's durable. */
			stop = subset_states(pend, npend, i);
			if (stop)
				break;
			for (uint64_t k = 0; k < npend; k++)
				apply(base, &ents[pend[k]]);
			applied += npend;
			npend = 0;
			if (e && e->len) {
				/* PREFLUSH with data: the data itself is not
				 * covered by that flush. */
				pend[npend++] = i;
			}
			exact = 1;
		} else {
			if (e->flags & LW_MARK) {
				unsigned long long n;
				char extra;

				if (sscanf(e->mark, "tacf%llu%c", &n, &extra) == 1)
					acked = (long long)n;
				exact = 1;
			}
			if (e->len || (e->flags & LW_DISCARD))
				pend[npend++] = i;
			if (e->flags & LW_FUA)
				exact = 1;
		}
		if (!exact)
			continue;
		if (applied + npend == last_exact_applied &&
		    acked == last_exact_acked)
			continue;
		last_exact_applied = applied + npend;
		last_exact_acked = acked;
		memcpy(work, base, devsize);
		for (uint64_t k = 0; k < npend; k++)
			apply(work, &ents[pend[k]]);
		if (!e)
			snprintf(desc, sizeof(desc), "the whole log");
		else
			snprintf(desc, sizeof(desc), "exact prefix through "
				 "entry %llu (%s%s)", (unsigned long long)i,
				 e->flags & LW_FLUSH ? "flush" :
				 e->flags & LW_FUA ? "FUA write" : "mark ",
				 e->flags & LW_MARK ? e->mark : "");
		stop = check(work, desc);
	}

	server_stop();
	printf("logreplay: %llu crash states checked in %.0fs (%.0f states/min;"
	       " writing states %.0fs, checks %.0fs): %llu passed, %llu "
	       "failed, %llu could not be checked%s\n",
	       (unsigned long long)(opt.list ? 0 : nstates), now() - t0,
	       nstates * 60 / (now() - t0 + 1e-9), t_write, t_check,
	       (unsigned long long)npass, (unsigned long long)nfail,
	       (unsigned long long)nerr,
	       nfail + nerr >= opt.stop_after && opt.stop_after ?
		       " (stopped early)" : "");
	if (opt.list)
		printf("logreplay: %llu states listed\n",
		       (unsigned long long)nstates);
	return nerr ? 2 : nfail ? 1 : 0;
}
