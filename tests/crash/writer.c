// SPDX-License-Identifier: GPL-2.0-only
/*
 * Crash-test writer: random 4 KiB record writes to a block device with
 * O_DIRECT, several in flight, flushes at random points, and a journal of
 * what completed and which flushes were acknowledged.
 *
 * usage: writer --dev DEV --journal FILE [options]
 *   --seed N          everything (run id, blocks, flush points) follows it
 *   --qd N            writes in flight (default 8, at most 64)
 *   --blocks N        use blocks 0..N-1 (default: the whole device)
 *   --count N         stop after N writes after the init (default: never)
 *   --seconds S       stop after S seconds of writes (default: never)
 *   --flush-max N     flush after 1..N completed writes (default 32)
 *   --dsync PCT       percent of writes issued RWF_DSYNC (default 5)
 *   --mark-dm NAME    after each acknowledged flush n, send "mark tacf<n>"
 *                     to the dm-log-writes device NAME (for logreplay)
 *   --final-flush     flush once more before stopping on --count/--seconds
 *   --no-direct       buffered I/O (only for files on tmpfs, in self-tests)
 *   --ready FILE      create FILE once the init flush is acknowledged (the
 *                     power-cut driver times its cuts from it)
 *   --fake-log FILE   also write FILE in dm-log-writes format as an ideal
 *                     disk would have logged this run (FUA writes at
 *                     completion, other writes when a flush after them
 *                     completed, marks): tests logreplay without a VM
 *   --fake-log-lose N  ... except that every Nth flushed write is missing
 *                     from it, as if the disk had lost it (must be caught)
 *
 * First every block gets its initial record (sequence 0), then a flush:
 * "F 0" in the journal.  Then writes 1, 2, ... go to the blocks of the
 * seeded stream (record.h).  Why the journal never claims too much:
 *   - a "C" line is appended after io_getevents() returned the write;
 *   - write s is submitted only when every write <= s - qd has its "C"
 *     line written, so the verifier can bound what was in flight;
 *   - "F n" is appended and the journal fsync'ed only after fdatasync()
 *     on the device returned, and it covers exactly the "C" lines before
 *     it (the writes reaped before fdatasync() was called).  Writes still
 *     in flight during the flush are not covered.
 *   - a RWF_DSYNC write is durable when it completes ("C ... D").
 *
 * Asynchronous I/O is the kernel's native AIO through raw syscalls (no
 * libaio needed): one thread submits and reaps, so the journal has one
 * total order and no locks, while the device really has qd writes queued
 * and writes keep running during fdatasync().  The uapi header ships with
 * linux-libc-dev, and AIO with O_DIRECT on a block device is asynchronous
 * on every kernel we test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/aio_abi.h>
#include <linux/dm-ioctl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "record.h"

struct slot {
	struct iocb cb;
	uint8_t *buf;
	uint64_t seq, block;
	int dsync, busy;
};

static struct {
	const char *dev, *journal, *mark_dm, *ready, *fake_log;
	uint64_t fake_lose;
	uint64_t seed, blocks, count;
	double seconds;
	unsigned int qd, flush_max, dsync_pct;
	int final_flush, no_direct;
} opt = { .seed = 1, .qd = 8, .flush_max = 32, .dsync_pct = 5 };

static int devfd, jfd, dmfd = -1;
static aio_context_t ctx;
static struct slot slots[REC_QD_MAX];
static unsigned int inflight;
static uint64_t run_id, flushes, nwrites, ndsync;
static char jbuf[REC_QD_MAX * 48 + 64];
static size_t jlen;

static void __attribute__((format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "writer: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void journal_flush_buf(void)
{
	size_t off = 0;
	ssize_t r;

	while (off < jlen) {
		r = write(jfd, jbuf + off, jlen - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("journal write: %s", strerror(errno));
		off += r;
	}
	jlen = 0;
}

static void journal_add_completion(const struct slot *s)
{
	jlen += snprintf(jbuf + jlen, sizeof(jbuf) - jlen, "C %llu %llu%s\n",
			 (unsigned long long)s->seq,
			 (unsigned long long)s->block, s->dsync ? " D" : "");
}

/*
 * The ideal-disk log (--fake-log), in dm-log-writes' on-disk format with
 * 512-byte sectors: what the kernel target would log for this run on a
 * disk that keeps every promise.
 */
#define FL_FLUSH 1
#define FL_FUA 2
#define FL_MARK 8

static int flfd = -1;
static uint64_t fl_pos = 512, fl_entries, fl_flushed;
static struct { uint64_t block, seq; } *fl_pend;
static size_t fl_npend, fl_cap;

static void fl_write(const void *buf, size_t len)
{
	if (pwrite(flfd, buf, len, (off_t)fl_pos) != (ssize_t)len)
		die("fake log: %s", strerror(errno));
	fl_pos += len;
}

static void fl_entry(uint64_t block, uint64_t seq, uint64_t flags,
		     const char *mark)
{
	uint8_t hdr[512] = { 0 }, rec[REC_SIZE];

	if (flags == 0 && opt.fake_lose && ++fl_flushed % opt.fake_lose == 0)
		return;		/* the "disk" lost it */
	if (!mark && !(flags & FL_FLUSH)) {
		put_le64(hdr, block * (REC_SIZE / 512));
		put_le64(hdr + 8, REC_SIZE / 512);
	}
	put_le64(hdr + 16, flags);
	if (mark) {
		put_le64(hdr + 24, strlen(mark));
		memcpy(hdr + 32, mark, strlen(mark));
	}
	fl_write(hdr, sizeof(hdr));
	if (!mark && !(flags & FL_FLUSH)) {
		rec_fill(rec, run_id, block, seq);
		fl_write(rec, sizeof(rec));
	}
	fl_entries++;
}

static void fl_complete(const struct slot *s)
{
	if (flfd < 0)
		return;
	if (s->dsync) {
		fl_entry(s->block, s->seq, FL_FUA, NULL);
		return;
	}
	if (fl_npend == fl_cap) {
		fl_cap = fl_cap ? 2 * fl_cap : 1024;
		fl_pend = realloc(fl_pend, fl_cap * sizeof(*fl_pend));
		if (!fl_pend)
			die("out of memory");
	}
	fl_pend[fl_npend].block = s->block;
	fl_pend[fl_npend++].seq = s->seq;
}

/* A flush completed (flags FL_FLUSH) or the run ends (0). */
static void fl_flush(uint64_t flags)
{
	size_t i;

	if (flfd < 0)
		return;
	for (i = 0; i < fl_npend; i++)
		fl_entry(fl_pend[i].block, fl_pend[i].seq, 0, NULL);
	fl_npend = 0;
	if (flags)
		fl_entry(0, 0, flags, NULL);
}

static void fl_finish(void)
{
	uint8_t super[512] = { 0 };

	if (flfd < 0)
		return;
	fl_flush(0);
	fl_entry(0, 0, FL_MARK, "dm-log-writes-end");
	put_le64(super, 0x6a736677736872ULL);
	put_le64(super + 8, 1);
	put_le64(super + 16, fl_entries);
	put_le32(super + 24, 512);
	if (pwrite(flfd, super, sizeof(super), 0) != sizeof(super) ||
	    close(flfd))
		die("fake log: %s", strerror(errno));
}

/* DM_TARGET_MSG "mark <label>" to a dm-log-writes device, no fork. */
static void dm_mark(const char *label)
{
	union {
		struct dm_ioctl io;
		char raw[sizeof(struct dm_ioctl) +
			 sizeof(struct dm_target_msg) + 64];
	} u;
	struct dm_target_msg *msg;

	if (flfd >= 0)
		fl_entry(0, 0, FL_MARK, label);
	if (!opt.mark_dm)
		return;
	if (dmfd < 0) {
		dmfd = open("/dev/mapper/control", O_RDWR);
		if (dmfd < 0)
			die("/dev/mapper/control: %s", strerror(errno));
	}
	memset(&u, 0, sizeof(u));
	u.io.version[0] = DM_VERSION_MAJOR;
	u.io.data_size = sizeof(u);
	u.io.data_start = sizeof(struct dm_ioctl);
	snprintf(u.io.name, sizeof(u.io.name), "%s", opt.mark_dm);
	msg = (struct dm_target_msg *)(u.raw + u.io.data_start);
	snprintf(msg->message, 64, "mark %s", label);
	if (ioctl(dmfd, DM_TARGET_MSG, &u.io))
		die("mark on dm device: %s", strerror(errno));
}

static void submit(struct iocb **cbs, long n)
{
	long done = 0, r;

	while (done < n) {
		r = syscall(SYS_io_submit, ctx, n - done, cbs + done);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			die("io_submit: %s", strerror(r < 0 ? errno : EIO));
		done += r;
	}
}

static void prep(struct slot *s, uint64_t block, uint64_t seq, int dsync)
{
	rec_fill(s->buf, run_id, block, seq);
	memset(&s->cb, 0, sizeof(s->cb));
	s->cb.aio_data = (uint64_t)(uintptr_t)s;
	s->cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	s->cb.aio_fildes = devfd;
	s->cb.aio_buf = (uint64_t)(uintptr_t)s->buf;
	s->cb.aio_nbytes = REC_SIZE;
	s->cb.aio_offset = (int64_t)(block * REC_SIZE);
	s->cb.aio_rw_flags = dsync ? RWF_DSYNC : 0;
	s->seq = seq;
	s->block = block;
	s->dsync = dsync;
	s->busy = 1;
	inflight++;
}

/* Reap at least one completion; journal main-phase ones (seq > 0). */
static void reap(int journal_them)
{
	struct io_event ev[REC_QD_MAX];
	long r, i;

	do {
		r = syscall(SYS_io_getevents, ctx, 1, REC_QD_MAX, ev, NULL);
	} while (r < 0 && errno == EINTR);
	if (r <= 0)
		die("io_getevents: %s", strerror(r < 0 ? errno : EIO));
	for (i = 0; i < r; i++) {
		struct slot *s = (struct slot *)(uintptr_t)ev[i].data;

		if (ev[i].res != REC_SIZE) {
			fprintf(stderr,
				"writer: write seq %llu to block %llu: "
				"expected %d bytes written, got %lld\n",
				(unsigned long long)s->seq,
				(unsigned long long)s->block, REC_SIZE,
				(long long)ev[i].res);
			exit(2);
		}
		s->busy = 0;
		inflight--;
		fl_complete(s);
		if (journal_them)
			journal_add_completion(s);
	}
	journal_flush_buf();
}

static void flush(void)
{
	char label[32];

	if (fdatasync(devfd))
		die("fdatasync on the device: %s", strerror(errno));
	fl_flush(FL_FLUSH);
	jlen = (size_t)snprintf(jbuf, sizeof(jbuf), "F %llu\n",
				(unsigned long long)flushes);
	journal_flush_buf();
	if (fsync(jfd))
		die("journal fsync: %s", strerror(errno));
	snprintf(label, sizeof(label), "tacf%llu",
		 (unsigned long long)flushes);
	dm_mark(label);
	flushes++;
}

static uint64_t dev_blocks(void)
{
	struct stat st;
	uint64_t bytes;

	if (fstat(devfd, &st))
		die("stat: %s", strerror(errno));
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(devfd, BLKGETSIZE64, &bytes))
			die("BLKGETSIZE64: %s", strerror(errno));
	} else {
		bytes = st.st_size;
	}
	return bytes / REC_SIZE;
}

static void init_blocks(void)
{
	struct iocb *cbs[REC_QD_MAX];
	uint64_t b = 0;
	unsigned int i, n;

	while (b < opt.blocks) {
		n = 0;
		for (i = 0; i < opt.qd && b < opt.blocks; i++) {
			if (slots[i].busy)
				continue;
			prep(&slots[i], b++, 0, 0);
			cbs[n++] = &slots[i].cb;
		}
		if (n)
			submit(cbs, n);
		reap(0);
	}
	while (inflight)
		reap(0);
	flush();
}

static void usage(void)
{
	fprintf(stderr, "usage: writer --dev DEV --journal FILE [--seed N] "
		"[--qd N] [--blocks N] [--count N] [--seconds S] "
		"[--flush-max N] [--dsync PCT] [--mark-dm NAME] "
		"[--final-flush] [--no-direct] [--ready FILE] "
		"[--fake-log FILE [--fake-log-lose N]]\n");
	exit(2);
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		die("not a number: '%s'", s);
	return v;
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", 1, 0, 'd' },	    { "journal", 1, 0, 'j' },
		{ "seed", 1, 0, 's' },	    { "qd", 1, 0, 'q' },
		{ "blocks", 1, 0, 'b' },    { "count", 1, 0, 'c' },
		{ "seconds", 1, 0, 't' },   { "flush-max", 1, 0, 'f' },
		{ "dsync", 1, 0, 'y' },	    { "mark-dm", 1, 0, 'm' },
		{ "final-flush", 0, 0, 'F' }, { "no-direct", 0, 0, 'B' },
		{ "ready", 1, 0, 'r' },	    { "fake-log", 1, 0, 'L' },
		{ "fake-log-lose", 1, 0, 'N' }, { 0, 0, 0, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'd': opt.dev = optarg; break;
		case 'j': opt.journal = optarg; break;
		case 's': opt.seed = num(optarg); break;
		case 'q': opt.qd = (unsigned int)num(optarg); break;
		case 'b': opt.blocks = num(optarg); break;
		case 'c': opt.count = num(optarg); break;
		case 't': opt.seconds = atof(optarg); break;
		case 'f': opt.flush_max = (unsigned int)num(optarg); break;
		case 'y': opt.dsync_pct = (unsigned int)num(optarg); break;
		case 'm': opt.mark_dm = optarg; break;
		case 'F': opt.final_flush = 1; break;
		case 'B': opt.no_direct = 1; break;
		case 'r': opt.ready = optarg; break;
		case 'L': opt.fake_log = optarg; break;
		case 'N': opt.fake_lose = num(optarg); break;
		default: usage();
		}
	}
	if (!opt.dev || !opt.journal || optind != argc)
		usage();
	if (!opt.qd || opt.qd > REC_QD_MAX)
		die("--qd must be 1..%d, got %u", REC_QD_MAX, opt.qd);
	if (!opt.flush_max)
		die("--flush-max must be at least 1");
}

int main(int argc, char **argv)
{
	struct iocb *cbs[REC_QD_MAX];
	struct blockgen gen;
	uint64_t rng, next = 1, done_upto = 0, since_flush = 0, target;
	unsigned int i, n;
	double start, t_init;

	parse(argc, argv);
	devfd = open(opt.dev, O_WRONLY | (opt.no_direct ? 0 : O_DIRECT));
	if (devfd < 0)
		die("%s: %s", opt.dev, strerror(errno));
	if (!opt.blocks)
		opt.blocks = dev_blocks();
	if (opt.blocks <= opt.qd || opt.blocks > dev_blocks()) {
		fprintf(stderr, "writer: need more than qd=%u blocks and at "
			"most the device's %llu, got %llu\n", opt.qd,
			(unsigned long long)dev_blocks(),
			(unsigned long long)opt.blocks);
		return 2;
	}
	jfd = open(opt.journal, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (jfd < 0)
		die("%s: %s", opt.journal, strerror(errno));
	if (opt.fake_log) {
		flfd = open(opt.fake_log, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (flfd < 0)
			die("%s: %s", opt.fake_log, strerror(errno));
	}
	for (i = 0; i < opt.qd; i++)
		if (posix_memalign((void **)&slots[i].buf, 4096, REC_SIZE))
			die("out of memory");
	if (syscall(SYS_io_setup, opt.qd, &ctx))
		die("io_setup: %s", strerror(errno));

	run_id = run_id_from_seed(opt.seed);
	jlen = (size_t)snprintf(jbuf, sizeof(jbuf),
				"R run=%llx seed=%llu blocks=%llu qd=%u\n",
				(unsigned long long)run_id,
				(unsigned long long)opt.seed,
				(unsigned long long)opt.blocks, opt.qd);
	journal_flush_buf();
	start = now();
	init_blocks();
	t_init = now() - start;
	fprintf(stderr, "writer: run %llx: %llu blocks initialised in %.1fs\n",
		(unsigned long long)run_id, (unsigned long long)opt.blocks,
		t_init);

	if (opt.ready) {
		int fd = open(opt.ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || fsync(fd) || close(fd))
			die("%s: %s", opt.ready, strerror(errno));
	}
	blockgen_init(&gen, opt.seed, opt.blocks, opt.qd);
	rng = opt.seed ^ 0x3c6ef372fe94f82bULL;
	target = 1 + rand_below(&rng, opt.flush_max);
	start = now();
	for (;;) {
		int stopping = (opt.count && next > opt.count) ||
			       (opt.seconds > 0 && now() - start >= opt.seconds);

		n = 0;
		while (!stopping && next <= done_upto + opt.qd &&
		       (!opt.count || next <= opt.count)) {
			struct slot *s = &slots[next % opt.qd];
			int dsync = rand_below(&rng, 100) < opt.dsync_pct;

			prep(s, blockgen_next(&gen), next, dsync);
			cbs[n++] = &s->cb;
			nwrites++;
			ndsync += dsync;
			next++;
		}
		if (n)
			submit(cbs, n);
		if (!inflight)
			break;
		reap(1);
		while (done_upto + 1 < next &&
		       slots[(done_upto + 1) % opt.qd].seq == done_upto + 1 &&
		       !slots[(done_upto + 1) % opt.qd].busy) {
			done_upto++;
			since_flush++;
		}
		if (since_flush >= target && !stopping) {
			flush();
			since_flush = 0;
			target = 1 + rand_below(&rng, opt.flush_max);
		}
	}
	if (opt.final_flush)
		flush();
	fl_finish();
	jlen = (size_t)snprintf(jbuf, sizeof(jbuf), "E stopped after %llu "
				"writes\n", (unsigned long long)nwrites);
	journal_flush_buf();
	fsync(jfd);
	fprintf(stderr, "writer: %llu writes (%llu RWF_DSYNC), %llu flushes "
		"acknowledged (init included) in %.1fs\n",
		(unsigned long long)nwrites, (unsigned long long)ndsync,
		(unsigned long long)flushes, now() - start);
	return 0;
}
