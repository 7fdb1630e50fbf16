// SPDX-License-Identifier: GPL-2.0-only
/*
 * torture: stress one block device from several threads with a model of
 * what every 512-byte sector must hold, and check every read against it.
 *
 * usage: torture --dev DEV [options]
 *   --seconds S       length of the random phase (default 10)
 *   --seed N          everything random follows it (default 1)
 *   --region OFF:LEN  bytes (K, M, G suffixes) of the device to use
 *                     (default: all of it)
 *   --threads N       threads, each with its own AIO queue (default 4)
 *   --qd N            I/Os in flight per thread (default 16)
 *   --grain G         sectors per ownership run (default 8): sector s of
 *                     the region belongs to thread (s / G) % threads
 *   --bs BYTES        the cache block size to shape I/O around
 *                     (default 4096): sizes go from 512 bytes to two
 *                     blocks, aligned to sectors, 4 KiB units or blocks
 *   --discard N       per mille of operations that are BLKDISCARDs
 *                     (default 10; 0 turns them off)
 *   --sync N          per mille of operations that are fdatasync (5)
 *   --dsync N         per mille of writes issued RWF_DSYNC (30)
 *   --reads N         percent of operations that are reads (40)
 *   --wide N          percent of reads that cover whole units or blocks
 *                     including other threads' sectors (50)
 *   --hot N           percent of operations in the first eighth of the
 *                     region (50), so that some blocks are hit again
 *   --state FILE      save the model at the end; with --verify-only,
 *                     load it
 *   --verify-only     no writes: read the region and check it against
 *                     the model in --state (after the device was
 *                     removed and re-created, or on the origin alone)
 *   --no-init         do not write the initial stamps first (sectors
 *                     never written are then not checked)
 *   --max-report N    mismatches printed in full (default 20)
 *
 * Every sector carries a stamp: magic, sector number, run id, owner
 * thread, write sequence number, a payload derived from them and a
 * crc32c, so a read tells "an older write", "another sector's data",
 * "zeros" and "garbage" apart.  First the whole region gets initial
 * stamps (sequence 0) and a flush.  Then each thread loops: writes of its
 * own sectors (a range of random size and alignment cut into the runs of
 * sectors it owns: several iocbs), reads of its own sectors checked
 * exactly against the last completed write, "wide" reads of whole units
 * or blocks that other threads are writing (a sector of another thread
 * must hold a write at least as new as the last one completed before the
 * read was issued, and no newer than the last one issued before it
 * completed), discards of its own sectors (they become "unknown" until
 * rewritten: zeros or an older stamp of the sector are accepted),
 * fdatasync and RWF_DSYNC writes.  A thread never has two I/Os in flight
 * on one sector; threads share cache blocks but never sectors.  At the
 * end every sector of the region is read and checked once more.
 *
 * Output, last line:
 *   torture: <V> verified blocks, <ops> ops, <L> lost, <S> stale, <E> io errors
 * "lost": the final pass found a sector without its last completed write;
 * "stale": a read during the run did.  Exit 0 if all three are zero, 1 if
 * not, 2 on a usage or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../crash/record.h"

#define SECT		512
#define ST_MAGIC	0x3154524f54434154ULL	/* "TACTORT1" on disk */
#define ST_CRC_OFF	(SECT - 4)
#define MAX_THREADS	64
#define MAX_QD		128
#define VERIFY_CHUNK	(1024 * 1024)

/* What the model says a sector holds. */
enum { KNOWN, DISCARDED, NEVER };

static struct {
	const char *dev, *state;
	double seconds;
	uint64_t seed, region_off, region_len;
	unsigned int threads, qd, grain, bs;
	unsigned int discard_pm, sync_pm, dsync_pm, reads_pct, wide_pct,
		     hot_pct, max_report;
	int verify_only, no_init;
} opt = {
	.seconds = 10, .seed = 1, .threads = 4, .qd = 16, .grain = 8,
	.bs = 4096, .discard_pm = 10, .sync_pm = 5, .dsync_pm = 30,
	.reads_pct = 40, .wide_pct = 50, .hot_pct = 50, .max_report = 20,
};

static int fd;
static uint32_t run_id;
static uint64_t s0, nsect;		/* region: first sector, sectors */
static unsigned int max_io;		/* sectors per iocb at most */
static int discard_ok = 1;
static volatile int stop;

/*
 * The model, one entry per sector of the region.  Only the owner thread
 * writes a sector's entries; others read them (wide reads) with acquire
 * loads.  done: the sequence of the last completed write; issued: of the
 * last write submitted; top: the highest sequence ever written to it;
 * dgen: bumped before and after a discard (odd while one runs); state:
 * KNOWN, DISCARDED (since a discard, until a write completes) or NEVER.
 */
static uint32_t *m_done, *m_issued, *m_top, *m_dgen;
static uint8_t *m_state, *m_busy;

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int reported;

static void __attribute__((format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "torture: ");
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

static unsigned int owner(uint64_t s)
{
	return (unsigned int)(((s - s0) / opt.grain) % opt.threads);
}

#define LOAD(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)

/* ------------------------------------------------------------------ */
/* Stamps */

static void stamp(uint8_t *p, uint64_t sector, unsigned int thread,
		  uint32_t seq)
{
	uint64_t st = ((uint64_t)run_id << 32 | seq) ^ 0x243f6a8885a308d3ULL;
	size_t off;

	put_le64(p, ST_MAGIC);
	put_le64(p + 8, sector);
	put_le32(p + 16, run_id);
	put_le32(p + 20, thread);
	put_le32(p + 24, seq);
	put_le32(p + 28, 0);
	st = splitmix64(&st) ^ sector;
	for (off = 32; off < ST_CRC_OFF; off += 4)
		put_le32(p + off, (uint32_t)splitmix64(&st));
	put_le32(p + ST_CRC_OFF, crc32c(0, p, ST_CRC_OFF));
}

struct found {
	enum { SK_OK, SK_ZERO, SK_GARBAGE, SK_TORN, SK_OTHER_RUN, SK_MISPLACED,
	       SK_OTHER_THREAD, SK_BAD_PAYLOAD } kind;
	uint64_t sector;
	uint32_t run, thread, seq;
};

static void parse(const uint8_t *p, uint64_t sector, struct found *f)
{
	static const uint8_t zero[SECT];
	uint8_t want[SECT];

	memset(f, 0, sizeof(*f));
	if (!memcmp(p, zero, SECT)) {
		f->kind = SK_ZERO;
		return;
	}
	if (get_le64(p) != ST_MAGIC) {
		f->kind = SK_GARBAGE;
		return;
	}
	f->sector = get_le64(p + 8);
	f->run = get_le32(p + 16);
	f->thread = get_le32(p + 20);
	f->seq = get_le32(p + 24);
	if (get_le32(p + ST_CRC_OFF) != crc32c(0, p, ST_CRC_OFF)) {
		f->kind = SK_TORN;
		return;
	}
	if (f->run != run_id) {
		f->kind = SK_OTHER_RUN;
		return;
	}
	if (f->sector != sector) {
		f->kind = SK_MISPLACED;
		return;
	}
	if (f->thread != owner(sector)) {
		f->kind = SK_OTHER_THREAD;
		return;
	}
	stamp(want, f->sector, f->thread, f->seq);
	f->kind = memcmp(want, p, SECT) ? SK_BAD_PAYLOAD : SK_OK;
}

static void describe(const struct found *f, char *out, size_t len)
{
	switch (f->kind) {
	case SK_OK:
		snprintf(out, len, "seq %u%s", f->seq,
			 f->seq ? "" : " (the initial stamp)");
		break;
	case SK_ZERO:
		snprintf(out, len, "zeros");
		break;
	case SK_GARBAGE:
		snprintf(out, len, "garbage (no stamp)");
		break;
	case SK_TORN:
		snprintf(out, len, "a torn or corrupted stamp (bad crc; "
			 "header says sector %llu seq %u)",
			 (unsigned long long)f->sector, f->seq);
		break;
	case SK_OTHER_RUN:
		snprintf(out, len, "data of another run (%08x)", f->run);
		break;
	case SK_MISPLACED:
		snprintf(out, len, "data of sector %llu (seq %u)",
			 (unsigned long long)f->sector, f->seq);
		break;
	case SK_OTHER_THREAD:
		snprintf(out, len, "data of thread %u (seq %u)", f->thread,
			 f->seq);
		break;
	case SK_BAD_PAYLOAD:
		snprintf(out, len, "a stamp with a wrong payload (seq %u)",
			 f->seq);
		break;
	}
}

static void __attribute__((format(printf, 1, 2))) report(const char *fmt,
							 ...)
{
	va_list ap;

	pthread_mutex_lock(&report_lock);
	if (reported++ < opt.max_report) {
		va_start(ap, fmt);
		printf("torture: ");
		vprintf(fmt, ap);
		printf("\n");
		va_end(ap);
		fflush(stdout);
	} else if (reported == opt.max_report + 1) {
		printf("torture: (further mismatches not shown)\n");
	}
	pthread_mutex_unlock(&report_lock);
}

/*
 * Check one sector read back.  @lo..@hi: the sequences it may hold
 * (a write of @lo completed before the read was issued, @hi was the last
 * one issued when it completed); @state at the read's issue.  Returns 1 if
 * it is wrong, 0 if right or not checkable (-1: a write raced the read
 * and the sector is torn, which a device may do).
 */
static int check_sector(const uint8_t *p, uint64_t s, int state,
			uint32_t lo, uint32_t hi, uint32_t top,
			const char *what)
{
	struct found f;
	char buf[160];

	if (state == NEVER)
		return 0;
	parse(p, s, &f);
	if (state == DISCARDED) {
		/* Zeros, or this sector's data from before. */
		if (f.kind == SK_ZERO ||
		    (f.kind == SK_OK && f.seq <= (top > hi ? top : hi)))
			return 0;
		if (hi > lo && f.kind == SK_TORN)
			return -1;
		describe(&f, buf, sizeof(buf));
		report("%s sector %llu (thread %u, discarded, last write "
		       "seq %u): found %s", what, (unsigned long long)s,
		       owner(s), top, buf);
		return 1;
	}
	if (f.kind == SK_OK && f.seq >= lo && f.seq <= hi)
		return 0;
	if (hi > lo && f.kind == SK_TORN)
		return -1;
	describe(&f, buf, sizeof(buf));
	if (f.kind == SK_OK && f.seq < lo) {
		size_t n = strlen(buf);

		snprintf(buf + n, sizeof(buf) - n, ": an older write");
	}
	if (lo == hi)
		report("%s sector %llu (block %llu, thread %u): expected "
		       "seq %u, found %s", what, (unsigned long long)s,
		       (unsigned long long)(s * SECT / opt.bs), owner(s), lo,
		       buf);
	else
		report("%s sector %llu (block %llu, thread %u): expected "
		       "seq %u..%u, found %s", what, (unsigned long long)s,
		       (unsigned long long)(s * SECT / opt.bs), owner(s), lo,
		       hi, buf);
	return 1;
}

/* ------------------------------------------------------------------ */
/* The threads */

enum { OP_WRITE, OP_READ };

struct slot {
	struct iocb cb;
	uint8_t *buf;
	uint64_t sector;
	uint32_t n;		/* sectors */
	int op, dsync, busy;
	uint32_t seq;		/* write */
	/* read: per sector, at issue */
	uint32_t *lo, *dgen, *top;
	uint8_t *state;
};

struct thread {
	pthread_t tid;
	unsigned int id;
	aio_context_t ctx;
	uint64_t rng;
	uint32_t seq;
	struct slot slots[MAX_QD];
	unsigned int inflight;
	/* counts */
	uint64_t ops, writes, reads, wide, discards, syncs, dsyncs, stale,
		 errors, racing, sectors_checked;
};

static struct thread threads[MAX_THREADS];

static struct slot *free_slot(struct thread *t)
{
	unsigned int i;

	for (i = 0; i < opt.qd; i++)
		if (!t->slots[i].busy)
			return &t->slots[i];
	return NULL;
}

static uint64_t rnd(struct thread *t, uint64_t n)
{
	return n ? rand_below(&t->rng, n) : 0;
}

/* A random range [*start, *start + *len) in the region, in sectors. */
static void pick_range(struct thread *t, int wide, uint64_t *start,
		       uint64_t *len)
{
	uint64_t bsect = opt.bs / SECT, span = nsect, s, n, a;

	if (opt.hot_pct && rnd(t, 100) < opt.hot_pct && nsect >= 64)
		span = nsect / 8;
	s = rnd(t, span);
	if (wide) {
		/* Whole 4 KiB units, or one or two whole blocks. */
		a = rnd(t, 2) ? bsect : 8;
		n = a == 8 ? 8 * (1 + rnd(t, bsect >= 16 ? bsect / 8 : 2))
			   : bsect * (1 + rnd(t, 2));
	} else {
		switch (rnd(t, 4)) {
		case 0: a = 1; break;
		case 1: a = 8; break;
		case 2: a = bsect; break;
		default: a = opt.grain; break;
		}
		switch (rnd(t, 6)) {
		case 0: n = 1; break;
		case 1: n = 1 + rnd(t, 8); break;
		case 2: n = 8 * (1 + rnd(t, bsect / 8 ? bsect / 8 : 1)); break;
		case 3: n = bsect; break;
		case 4: n = 2 * bsect; break;
		default: n = 1 + rnd(t, 2 * bsect); break;
		}
	}
	s -= (s0 + s) % a;		/* aligned on the device, not region */
	if (s >= nsect)
		s = 0;
	if (n > max_io)
		n = max_io;
	if (s + n > nsect)
		n = nsect - s;
	*start = s0 + s;
	*len = n;
}

static int any_busy(uint64_t s, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (m_busy[s - s0 + i])
			return 1;
	return 0;
}

static void set_busy(uint64_t s, uint64_t n, uint8_t v)
{
	memset(m_busy + (s - s0), v, n);
}

static void submit(struct thread *t, struct iocb **cbs, long n)
{
	long done = 0, r;

	while (done < n) {
		r = syscall(SYS_io_submit, t->ctx, n - done, cbs + done);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			die("io_submit: %s", strerror(r < 0 ? errno : EIO));
		done += r;
	}
}

static void prep(struct thread *t, struct slot *sl, int op, uint64_t s,
		 uint32_t n)
{
	memset(&sl->cb, 0, sizeof(sl->cb));
	sl->cb.aio_data = (uint64_t)(uintptr_t)sl;
	sl->cb.aio_lio_opcode = op == OP_WRITE ? IOCB_CMD_PWRITE
					       : IOCB_CMD_PREAD;
	sl->cb.aio_fildes = fd;
	sl->cb.aio_buf = (uint64_t)(uintptr_t)sl->buf;
	sl->cb.aio_nbytes = (uint64_t)n * SECT;
	sl->cb.aio_offset = (int64_t)(s * SECT);
	sl->op = op;
	sl->sector = s;
	sl->n = n;
	sl->busy = 1;
	t->inflight++;
}

/* Writes of the thread's own sectors within a random range. */
static void do_write(struct thread *t)
{
	struct iocb *cbs[MAX_QD];
	uint64_t s, len, end, c, cs, ce;
	long k = 0;
	int dsync = rnd(t, 1000) < opt.dsync_pm;

	pick_range(t, 0, &s, &len);
	end = s + len;
	/* The ownership runs (chunks of grain sectors) the range meets. */
	for (c = (s - s0) / opt.grain; s0 + c * opt.grain < end; c++) {
		struct slot *sl;
		uint64_t i;

		if (c % opt.threads != t->id)
			continue;
		cs = s0 + c * opt.grain;
		ce = cs + opt.grain;
		if (cs < s)
			cs = s;
		if (ce > end)
			ce = end;
		if (ce > s0 + nsect)
			ce = s0 + nsect;
		if (cs >= ce || any_busy(cs, ce - cs))
			continue;
		sl = free_slot(t);
		if (!sl)
			break;
		prep(t, sl, OP_WRITE, cs, (uint32_t)(ce - cs));
		sl->seq = ++t->seq;
		sl->dsync = dsync;
		if (dsync)
			sl->cb.aio_rw_flags = RWF_DSYNC;
		for (i = 0; i < sl->n; i++) {
			stamp(sl->buf + i * SECT, cs + i, t->id, sl->seq);
			STORE(&m_issued[cs - s0 + i], sl->seq);
		}
		set_busy(cs, sl->n, 1);
		cbs[k++] = &sl->cb;
	}
	if (k)
		submit(t, cbs, k);
}

/* A read of own sectors (narrow) or of whole units/blocks (wide). */
static void do_read(struct thread *t)
{
	int wide = rnd(t, 100) < opt.wide_pct;
	struct iocb *cb;
	struct slot *sl;
	uint64_t s, len, i, c;

	pick_range(t, wide, &s, &len);
	if (!wide) {
		/* Narrow: the part of the range in one run of own sectors. */
		uint64_t cs, ce;

		c = (s - s0) / opt.grain;
		while (c % opt.threads != t->id)
			c++;
		cs = s0 + c * opt.grain;
		ce = cs + opt.grain;
		if (cs < s)
			cs = s;
		if (ce > s + len)
			ce = s + len;
		if (ce > s0 + nsect)
			ce = s0 + nsect;
		if (cs >= ce) {
			/* The range ends before it: the run's start. */
			cs = s0 + c * opt.grain;
			ce = cs + (len < opt.grain ? len : opt.grain);
			if (ce > s0 + nsect)
				ce = s0 + nsect;
			if (cs >= ce)
				return;
		}
		s = cs;
		len = ce - cs;
	}
	/* Never a read of own sectors that have a write in flight. */
	for (i = 0; i < len; i++)
		if (owner(s + i) == t->id && m_busy[s + i - s0])
			return;
	sl = free_slot(t);
	if (!sl)
		return;
	prep(t, sl, OP_READ, s, (uint32_t)len);
	for (i = 0; i < len; i++) {
		uint64_t x = s + i - s0;

		if (owner(s + i) == t->id)
			m_busy[x] = 1;
		sl->dgen[i] = LOAD(&m_dgen[x]);
		sl->state[i] = LOAD(&m_state[x]);
		sl->lo[i] = LOAD(&m_done[x]);
		sl->top[i] = LOAD(&m_top[x]);
	}
	t->wide += wide;
	cb = &sl->cb;
	submit(t, &cb, 1);
}

static void do_discard(struct thread *t)
{
	uint64_t c, cs, n, range[2], i, x;

	if (!discard_ok)
		return;
	/* One of own runs, whole or a part of it. */
	c = rnd(t, (nsect + opt.grain - 1) / opt.grain);
	if (opt.hot_pct && rnd(t, 100) < opt.hot_pct)
		c /= 8;
	c -= c % opt.threads;
	c += t->id;
	cs = s0 + c * opt.grain;
	if (cs >= s0 + nsect)
		return;
	n = opt.grain;
	if (rnd(t, 2) && n > 1) {
		uint64_t a = rnd(t, n);

		cs += a;
		n = 1 + rnd(t, n - a);
	}
	if (cs + n > s0 + nsect)
		n = s0 + nsect - cs;
	if (any_busy(cs, n))
		return;
	for (i = 0; i < n; i++) {
		x = cs + i - s0;
		STORE(&m_dgen[x], m_dgen[x] + 1);
		STORE(&m_state[x], DISCARDED);
	}
	range[0] = cs * SECT;
	range[1] = n * SECT;
	if (ioctl(fd, BLKDISCARD, range)) {
		if (errno == EOPNOTSUPP || errno == ENOTTY) {
			discard_ok = 0;
		} else {
			report("BLKDISCARD of sectors %llu+%llu: %s",
			       (unsigned long long)cs,
			       (unsigned long long)n, strerror(errno));
			t->errors++;
		}
	}
	for (i = 0; i < n; i++) {
		x = cs + i - s0;
		STORE(&m_dgen[x], m_dgen[x] + 1);
	}
	t->discards++;
	t->ops++;
}

static void complete(struct thread *t, struct slot *sl, long long res)
{
	uint64_t i, x;

	sl->busy = 0;
	t->inflight--;
	t->ops++;
	if (res != (long long)sl->n * SECT) {
		report("%s of sectors %llu+%u: expected %u bytes, got %lld%s%s",
		       sl->op == OP_WRITE ? "write" : "read",
		       (unsigned long long)sl->sector, sl->n, sl->n * SECT,
		       res, res < 0 ? ": " : "",
		       res < 0 ? strerror((int)-res) : "");
		t->errors++;
		for (i = 0; i < sl->n; i++) {
			x = sl->sector + i - s0;
			if (owner(sl->sector + i) != t->id)
				continue;
			m_busy[x] = 0;
			if (sl->op == OP_WRITE)	/* contents unknown now */
				STORE(&m_state[x], DISCARDED);
		}
		return;
	}
	if (sl->op == OP_WRITE) {
		t->writes++;
		t->dsyncs += sl->dsync;
		for (i = 0; i < sl->n; i++) {
			x = sl->sector + i - s0;
			if (m_top[x] < sl->seq)
				STORE(&m_top[x], sl->seq);
			STORE(&m_done[x], sl->seq);
			STORE(&m_state[x], KNOWN);
			m_busy[x] = 0;
		}
		return;
	}
	t->reads++;
	for (i = 0; i < sl->n; i++) {
		uint64_t s = sl->sector + i;
		uint32_t hi, g;
		int r;

		x = s - s0;
		if (owner(s) == t->id) {
			m_busy[x] = 0;
			hi = sl->lo[i];
		} else {
			hi = LOAD(&m_issued[x]);
			g = LOAD(&m_dgen[x]);
			/* A discard ran meanwhile: anything goes. */
			if (g != sl->dgen[i] || (g & 1)) {
				t->racing++;
				continue;
			}
		}
		r = check_sector(sl->buf + i * SECT, s, sl->state[i], sl->lo[i],
				 hi, sl->top[i], "stale read:");
		if (r > 0)
			t->stale++;
		else if (r < 0)
			t->racing++;
		else
			t->sectors_checked++;
	}
}

static void reap(struct thread *t)
{
	struct io_event ev[MAX_QD];
	struct timespec ts = { 1, 0 };
	long r, i;

	r = syscall(SYS_io_getevents, t->ctx, 1, MAX_QD, ev, &ts);
	if (r < 0 && errno == EINTR)
		return;
	if (r < 0)
		die("io_getevents: %s", strerror(errno));
	for (i = 0; i < r; i++)
		complete(t, (struct slot *)(uintptr_t)ev[i].data,
			 (long long)ev[i].res);
}

static void *thread_main(void *arg)
{
	struct thread *t = arg;

	while (!stop) {
		unsigned int tries = 0;

		while (t->inflight < opt.qd && tries++ < 4 && !stop) {
			uint64_t r = rnd(t, 1000);

			if (r < opt.discard_pm) {
				do_discard(t);
			} else if (r < opt.discard_pm + opt.sync_pm) {
				if (fdatasync(fd)) {
					report("fdatasync: %s",
					       strerror(errno));
					t->errors++;
				}
				t->syncs++;
				t->ops++;
			} else if (rnd(t, 100) < opt.reads_pct) {
				do_read(t);
			} else {
				do_write(t);
			}
		}
		if (t->inflight)
			reap(t);
	}
	while (t->inflight)
		reap(t);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Initial stamps, the final check, the saved model */

static uint8_t *chunk_buf(void)
{
	void *p;

	if (posix_memalign(&p, 4096, VERIFY_CHUNK))
		die("out of memory");
	return p;
}

static void init_region(void)
{
	uint8_t *buf = chunk_buf();
	uint64_t s, i, n;

	for (s = 0; s < nsect; s += n) {
		n = VERIFY_CHUNK / SECT;
		if (n > nsect - s)
			n = nsect - s;
		for (i = 0; i < n; i++)
			stamp(buf + i * SECT, s0 + s + i, owner(s0 + s + i), 0);
		if (pwrite(fd, buf, n * SECT, (off_t)((s0 + s) * SECT)) !=
		    (ssize_t)(n * SECT))
			die("writing the initial stamps at sector %llu: %s",
			    (unsigned long long)(s0 + s), strerror(errno));
	}
	if (fdatasync(fd))
		die("fdatasync after the initial stamps: %s", strerror(errno));
	free(buf);
}

/* Read the whole region; returns sectors wrong; counts verified blocks. */
static uint64_t verify_region(const char *what, uint64_t *blocks,
			      uint64_t *errors)
{
	uint8_t *buf = chunk_buf();
	uint64_t s, i, n, bad = 0, bsect = opt.bs / SECT, blk = UINT64_MAX;
	int blk_bad = 0;

	*blocks = 0;
	for (s = 0; s < nsect; s += n) {
		ssize_t r;

		n = VERIFY_CHUNK / SECT;
		if (n > nsect - s)
			n = nsect - s;
		r = pread(fd, buf, n * SECT, (off_t)((s0 + s) * SECT));
		if (r != (ssize_t)(n * SECT)) {
			report("%s: reading sectors %llu+%llu: %s", what,
			       (unsigned long long)(s0 + s),
			       (unsigned long long)n,
			       r < 0 ? strerror(errno) : "short read");
			(*errors)++;
			blk_bad = 1;
			continue;
		}
		for (i = 0; i < n; i++) {
			uint64_t x = s + i, sec = s0 + x;

			if (sec / bsect != blk) {
				if (blk != UINT64_MAX && !blk_bad)
					(*blocks)++;
				blk = sec / bsect;
				blk_bad = 0;
			}
			if (check_sector(buf + i * SECT, sec, m_state[x],
					 m_done[x], m_done[x], m_top[x],
					 what) > 0) {
				bad++;
				blk_bad = 1;
			}
		}
	}
	if (blk != UINT64_MAX && !blk_bad)
		(*blocks)++;
	free(buf);
	return bad;
}

struct state_hdr {
	char magic[8];
	uint32_t run_id, threads, grain, bs;
	uint64_t s0, nsect;
};

static void save_state(void)
{
	struct state_hdr h;
	FILE *f = fopen(opt.state, "w");

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, "TORTST1", 8);
	if (!f)
		die("%s: %s", opt.state, strerror(errno));
	h.run_id = run_id;
	h.threads = opt.threads;
	h.grain = opt.grain;
	h.bs = opt.bs;
	h.s0 = s0;
	h.nsect = nsect;
	if (fwrite(&h, sizeof(h), 1, f) != 1 ||
	    fwrite(m_done, 4, nsect, f) != nsect ||
	    fwrite(m_top, 4, nsect, f) != nsect ||
	    fwrite(m_state, 1, nsect, f) != nsect || fclose(f))
		die("writing %s: %s", opt.state, strerror(errno));
}

static void alloc_model(void)
{
	m_done = calloc(nsect, 4);
	m_issued = calloc(nsect, 4);
	m_top = calloc(nsect, 4);
	m_dgen = calloc(nsect, 4);
	m_state = calloc(nsect, 1);
	m_busy = calloc(nsect, 1);
	if (!m_done || !m_issued || !m_top || !m_dgen || !m_state || !m_busy)
		die("out of memory for %llu sectors",
		    (unsigned long long)nsect);
}

static void load_state(void)
{
	struct state_hdr h;
	FILE *f = fopen(opt.state, "r");

	if (!f)
		die("%s: %s", opt.state, strerror(errno));
	if (fread(&h, sizeof(h), 1, f) != 1 || memcmp(h.magic, "TORTST1", 8))
		die("%s: not a torture state file", opt.state);
	run_id = h.run_id;
	opt.threads = h.threads;
	opt.grain = h.grain;
	opt.bs = h.bs;
	s0 = h.s0;
	nsect = h.nsect;
	alloc_model();
	if (fread(m_done, 4, nsect, f) != nsect ||
	    fread(m_top, 4, nsect, f) != nsect ||
	    fread(m_state, 1, nsect, f) != nsect)
		die("%s: truncated", opt.state);
	fclose(f);
}

/* ------------------------------------------------------------------ */

static uint64_t size_arg(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		die("not a size: '%s'", s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end && *end != ':')
		die("not a size: '%s'", s);
	return v;
}

static unsigned int uint_arg(const char *s)
{
	uint64_t v = size_arg(s);

	if (v > 1000000000)
		die("too large: '%s'", s);
	return (unsigned int)v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: torture --dev DEV [--seconds S] [--seed N] "
		"[--region OFF:LEN] [--threads N] [--qd N] [--grain G] "
		"[--bs BYTES] [--discard PM] [--sync PM] [--dsync PM] "
		"[--reads PCT] [--wide PCT] [--hot PCT] [--state FILE] "
		"[--verify-only] [--no-init] [--max-report N]\n");
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", 1, 0, 'd' }, { "seconds", 1, 0, 't' },
		{ "seed", 1, 0, 's' }, { "region", 1, 0, 'r' },
		{ "threads", 1, 0, 'n' }, { "qd", 1, 0, 'q' },
		{ "grain", 1, 0, 'g' }, { "bs", 1, 0, 'b' },
		{ "discard", 1, 0, 'D' }, { "sync", 1, 0, 'S' },
		{ "dsync", 1, 0, 'Y' }, { "reads", 1, 0, 'R' },
		{ "wide", 1, 0, 'W' }, { "hot", 1, 0, 'H' },
		{ "state", 1, 0, 'f' }, { "verify-only", 0, 0, 'V' },
		{ "no-init", 0, 0, 'I' }, { "max-report", 1, 0, 'm' },
		{ 0, 0, 0, 0 },
	};
	const char *colon;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'd': opt.dev = optarg; break;
		case 't': opt.seconds = atof(optarg); break;
		case 's': opt.seed = size_arg(optarg); break;
		case 'r':
			colon = strchr(optarg, ':');
			if (!colon)
				die("--region OFF:LEN");
			opt.region_off = size_arg(optarg);
			opt.region_len = size_arg(colon + 1);
			break;
		case 'n': opt.threads = uint_arg(optarg); break;
		case 'q': opt.qd = uint_arg(optarg); break;
		case 'g': opt.grain = uint_arg(optarg); break;
		case 'b': opt.bs = uint_arg(optarg); break;
		case 'D': opt.discard_pm = uint_arg(optarg); break;
		case 'S': opt.sync_pm = uint_arg(optarg); break;
		case 'Y': opt.dsync_pm = uint_arg(optarg); break;
		case 'R': opt.reads_pct = uint_arg(optarg); break;
		case 'W': opt.wide_pct = uint_arg(optarg); break;
		case 'H': opt.hot_pct = uint_arg(optarg); break;
		case 'f': opt.state = optarg; break;
		case 'V': opt.verify_only = 1; break;
		case 'I': opt.no_init = 1; break;
		case 'm': opt.max_report = uint_arg(optarg); break;
		default: usage();
		}
	}
	if (!opt.dev || optind != argc)
		usage();
	if (opt.verify_only && !opt.state)
		die("--verify-only needs --state FILE");
	if (!opt.threads || opt.threads > MAX_THREADS)
		die("--threads must be 1..%d", MAX_THREADS);
	if (!opt.qd || opt.qd > MAX_QD)
		die("--qd must be 1..%d", MAX_QD);
	if (!opt.grain || opt.grain > 4096)
		die("--grain must be 1..4096 sectors");
	if (opt.bs < 4096 || (opt.bs & (opt.bs - 1)) || opt.bs > (4u << 20))
		die("--bs must be a power of two from 4096 to 4M");
	if ((opt.region_off | opt.region_len) % SECT)
		die("--region must be in whole sectors");
	if (opt.discard_pm + opt.sync_pm > 1000 || opt.reads_pct > 100 ||
	    opt.wide_pct > 100 || opt.hot_pct > 100 || opt.dsync_pm > 1000)
		die("a percentage over 100 or per mille over 1000");
}

static uint64_t dev_bytes(void)
{
	struct stat st;
	uint64_t bytes;

	if (fstat(fd, &st))
		die("stat: %s", strerror(errno));
	if (!S_ISBLK(st.st_mode))
		return st.st_size;
	if (ioctl(fd, BLKGETSIZE64, &bytes))
		die("BLKGETSIZE64: %s", strerror(errno));
	return bytes;
}

int main(int argc, char **argv)
{
	uint64_t blocks = 0, lost, ops = 0, stale = 0, errors = 0;
	uint64_t writes = 0, reads = 0, wide = 0, discards = 0, syncs = 0,
		 dsyncs = 0, racing = 0, checked = 0, size;
	unsigned int i, q;
	double start;

	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	crc32c(0, "", 0);	/* pick the implementation before threads */
	fd = open(opt.dev, (opt.verify_only ? O_RDONLY : O_RDWR) | O_DIRECT);
	if (fd < 0)
		die("%s: %s", opt.dev, strerror(errno));
	size = dev_bytes();

	if (opt.verify_only) {
		load_state();
		if ((s0 + nsect) * SECT > size)
			die("the saved region ends past the device");
		lost = verify_region("lost:", &blocks, &errors);
		printf("torture: %llu verified blocks, 0 ops, %llu lost, "
		       "0 stale, %llu io errors\n",
		       (unsigned long long)blocks, (unsigned long long)lost,
		       (unsigned long long)errors);
		return lost || errors;
	}

	if (!opt.region_len)
		opt.region_len = size - opt.region_off;
	if (opt.region_off + opt.region_len > size || !opt.region_len)
		die("region %llu+%llu does not fit the device (%llu bytes)",
		    (unsigned long long)opt.region_off,
		    (unsigned long long)opt.region_len,
		    (unsigned long long)size);
	s0 = opt.region_off / SECT;
	nsect = opt.region_len / SECT;
	max_io = 2 * opt.bs / SECT;
	if (max_io < opt.grain)
		max_io = opt.grain;
	if (max_io > 4096)
		max_io = 4096;
	{
		uint64_t st = opt.seed;

		run_id = (uint32_t)splitmix64(&st);
	}
	alloc_model();
	if (opt.no_init)
		memset(m_state, NEVER, nsect);
	fprintf(stderr, "torture: run %08x seed %llu on %s, region %llu+%llu "
		"bytes, %u threads x qd %u, grain %u sectors, bs %u\n",
		run_id, (unsigned long long)opt.seed, opt.dev,
		(unsigned long long)opt.region_off,
		(unsigned long long)opt.region_len, opt.threads, opt.qd,
		opt.grain, opt.bs);
	if (!opt.no_init)
		init_region();

	for (i = 0; i < opt.threads; i++) {
		struct thread *t = &threads[i];
		uint64_t st = opt.seed * 1000003 + i;

		t->id = i;
		t->rng = splitmix64(&st);
		if (syscall(SYS_io_setup, opt.qd, &t->ctx))
			die("io_setup: %s", strerror(errno));
		for (q = 0; q < opt.qd; q++) {
			struct slot *sl = &t->slots[q];

			if (posix_memalign((void **)&sl->buf, 4096,
					   (size_t)max_io * SECT))
				die("out of memory");
			sl->lo = calloc(max_io, 4);
			sl->dgen = calloc(max_io, 4);
			sl->top = calloc(max_io, 4);
			sl->state = calloc(max_io, 1);
			if (!sl->lo || !sl->dgen || !sl->top || !sl->state)
				die("out of memory");
		}
	}
	start = now();
	for (i = 0; i < opt.threads; i++)
		if (pthread_create(&threads[i].tid, NULL, thread_main,
				   &threads[i]))
			die("pthread_create failed");
	while (now() - start < opt.seconds) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	stop = 1;
	for (i = 0; i < opt.threads; i++) {
		struct thread *t = &threads[i];

		pthread_join(t->tid, NULL);
		ops += t->ops;
		writes += t->writes;
		reads += t->reads;
		wide += t->wide;
		discards += t->discards;
		syncs += t->syncs;
		dsyncs += t->dsyncs;
		stale += t->stale;
		errors += t->errors;
		racing += t->racing;
		checked += t->sectors_checked;
	}
	fprintf(stderr, "torture: %.1fs: %llu writes (%llu RWF_DSYNC), "
		"%llu reads (%llu wide, %llu sectors checked, %llu raced a "
		"write or discard), %llu discards%s, %llu fdatasync\n",
		now() - start, (unsigned long long)writes,
		(unsigned long long)dsyncs, (unsigned long long)reads,
		(unsigned long long)wide, (unsigned long long)checked,
		(unsigned long long)racing, (unsigned long long)discards,
		discard_ok ? "" : " (not supported)",
		(unsigned long long)syncs);

	lost = verify_region("lost:", &blocks, &errors);
	if (opt.state)
		save_state();
	printf("torture: %llu verified blocks, %llu ops, %llu lost, %llu "
	       "stale, %llu io errors\n", (unsigned long long)blocks,
	       (unsigned long long)ops, (unsigned long long)lost,
	       (unsigned long long)stale, (unsigned long long)errors);
	return lost || stale || errors;
}
