// SPDX-License-Identifier: GPL-2.0-only
/*
 * Crash-test verifier: reads every block of a device after a crash and
 * checks it against the writer's journal under the durability contract
 * of a disk with a volatile write cache:
 *
 *   - the floor of a block is the newest write to it that an
 *     acknowledged flush covers ("C" lines before the last "F" in force)
 *     or that was RWF_DSYNC and completed; the block must hold that write
 *     or a newer one (seq >= floor);
 *   - whatever it holds must be a write really issued to that block by
 *     this run: a completed one from the journal, or one of the writes
 *     that could have been in flight after the last journaled completion
 *     (the writer keeps every in-flight write within qd sequence numbers
 *     of the oldest unjournaled one, and the seeded stream says which
 *     block each went to), or the initial record (seq 0) while the floor
 *     is 0;
 *   - never zeros once the init flush (F 0) was acknowledged, never
 *     garbage, never a torn mix (crc32c), never another block's record,
 *     never another run's.
 *
 * usage: verify --dev DEV --journal FILE [--upto-flush K] [--pre-init]
 *               [--max-report N] [--no-direct]
 *   --upto-flush K  only flush acknowledgements 0..K are in force (-1:
 *                   none); the journal is read up to the "F K+1" line.
 *                   For replayed crash states whose last log mark was
 *                   tacf<K>.  Without it every line is in force.
 *   --pre-init      when F 0 is not in force, check that blocks hold
 *                   zeros or the initial record (the device started out
 *                   zeroed); without it that case exits 3.
 *   --dump          print "block floor how newest" for every block and
 *                   exit without reading the device (for self-tests).
 *
 * Exit: 0 contract holds, 1 violations (each printed with block,
 * expected, found), 2 usage or I/O error or inconsistent journal,
 * 3 nothing to verify (the init was never acknowledged).
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
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"

#define CHUNK_BLOCKS 256

struct blk {
	uint64_t floor;		/* newest durable seq (0: the init record) */
	uint64_t last;		/* newest seq journaled or possibly issued */
	uint8_t floor_how;	/* 'F' flushed, 'D' dsync, 0 none */
};

static struct {
	const char *dev, *journal;
	long long upto;		/* -2: no limit */
	int pre_init, max_report, no_direct, dump;
} opt = { .upto = -2, .max_report = 20 };

static struct journal jn;
static struct blk *blks;
static uint64_t *seq_block;	/* block of each seq 1..maxseq */
static uint8_t *seq_done;	/* journaled completed */
static uint64_t maxseq, window_lo, window_hi, flushes_in_force;
static int init_acked;
static unsigned long long violations, n_ok, n_last, n_older, n_flight,
	n_init, n_zero;

static void usage(void)
{
	fprintf(stderr, "usage: verify --dev DEV --journal FILE "
		"[--upto-flush K] [--pre-init] [--max-report N] "
		"[--no-direct] [--dump]\n");
	exit(2);
}

static long long snum(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "verify: not a number: '%s'\n", s);
		exit(2);
	}
	return v;
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", 1, 0, 'd' },	     { "journal", 1, 0, 'j' },
		{ "upto-flush", 1, 0, 'u' }, { "pre-init", 0, 0, 'p' },
		{ "max-report", 1, 0, 'm' }, { "no-direct", 0, 0, 'B' },
		{ "dump", 0, 0, 'D' },	     { 0, 0, 0, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'd': opt.dev = optarg; break;
		case 'j': opt.journal = optarg; break;
		case 'u':
			opt.upto = snum(optarg);
			if (opt.upto < -1)
				usage();
			break;
		case 'p': opt.pre_init = 1; break;
		case 'm': opt.max_report = (int)snum(optarg); break;
		case 'B': opt.no_direct = 1; break;
		case 'D': opt.dump = 1; break;
		default: usage();
		}
	}
	if (!opt.dev || !opt.journal || optind != argc)
		usage();
}

/*
 * Decide, from the journal, each block's floor and which sequence
 * numbers may be on the device.  Returns 0, or 2 if the journal
 * contradicts itself or the seed.
 */
static int analyse(void)
{
	struct blockgen gen;
	size_t end = jn.n, inforce = jn.n, lastf = 0, i;
	int have_lastf = 0;
	uint64_t s;

	/* Cut the journal at "F upto+1"; remember where "F upto" is. */
	if (opt.upto != -2) {
		int found = opt.upto == -1;

		for (i = 0; i < jn.n; i++) {
			if (jn.ents[i].type != 'F')
				continue;
			if ((long long)jn.ents[i].a == opt.upto) {
				found = 1;
				inforce = i + 1;
			}
			if ((long long)jn.ents[i].a == opt.upto + 1) {
				end = i;
				break;
			}
		}
		if (!found) {
			fprintf(stderr, "verify: --upto-flush %lld but the "
				"journal has no \"F %lld\" line\n", opt.upto,
				opt.upto);
			return 2;
		}
		if (opt.upto == -1)
			inforce = 0;
	}
	for (i = 0; i < inforce; i++) {
		if (jn.ents[i].type == 'F') {
			if (jn.ents[i].a != flushes_in_force) {
				fprintf(stderr, "verify: journal: flush %llu "
					"follows flush %llu\n",
					(unsigned long long)jn.ents[i].a,
					(unsigned long long)flushes_in_force);
				return 2;
			}
			flushes_in_force++;
			lastf = i;
			have_lastf = 1;
		}
	}
	init_acked = flushes_in_force > 0;

	for (i = 0; i < end; i++)
		if (jn.ents[i].type == 'C' && jn.ents[i].a > maxseq)
			maxseq = jn.ents[i].a;
	maxseq += jn.qd;	/* room for writes in flight */
	seq_block = calloc(maxseq + 1, sizeof(*seq_block));
	seq_done = calloc(maxseq + 1, 1);
	blks = calloc(jn.nblocks, sizeof(*blks));
	if (!seq_block || !seq_done || !blks) {
		fprintf(stderr, "verify: out of memory\n");
		return 2;
	}
	blockgen_init(&gen, jn.seed, jn.nblocks, jn.qd);
	for (s = 1; s <= maxseq; s++)
		seq_block[s] = blockgen_next(&gen);

	for (i = 0; i < end; i++) {
		const struct jent *e = &jn.ents[i];
		struct blk *b;

		if (e->type != 'C')
			continue;
		if (!e->a || e->b != seq_block[e->a] || seq_done[e->a]) {
			fprintf(stderr, "verify: journal: \"C %llu %llu\" "
				"does not match the seeded stream (expected "
				"block %llu, once)\n",
				(unsigned long long)e->a,
				(unsigned long long)e->b,
				e->a ? (unsigned long long)seq_block[e->a] : 0);
			return 2;
		}
		seq_done[e->a] = 1;
		b = &blks[e->b];
		if (e->a > b->last)
			b->last = e->a;
		if (have_lastf && i < lastf && e->a > b->floor) {
			b->floor = e->a;
			b->floor_how = 'F';
		} else if (e->dsync && i < inforce && e->a > b->floor) {
			b->floor = e->a;
			b->floor_how = 'D';
		}
	}
	/* The oldest write without a "C" line bounds what was in flight. */
	for (window_lo = 1; window_lo < maxseq && seq_done[window_lo];
	     window_lo++)
		;
	window_hi = window_lo + jn.qd - 1;
	for (i = 0; i < end; i++)
		if (jn.ents[i].type == 'E' && window_hi > jn.ents[i].a)
			window_hi = jn.ents[i].a;
	if (!init_acked) {
		window_lo = 1;	/* no write follows the init before F 0 */
		window_hi = 0;
	}
	for (s = window_lo; s <= window_hi && s <= maxseq; s++)
		if (!seq_done[s] && s > blks[seq_block[s]].last)
			blks[seq_block[s]].last = s;
	return 0;
}

static int issued_to(uint64_t seq, uint64_t block)
{
	if (!seq || seq > maxseq || seq_block[seq] != block)
		return 0;
	return seq_done[seq] || (seq >= window_lo && seq <= window_hi);
}

static void expected(char *buf, size_t len, uint64_t b)
{
	const struct blk *k = &blks[b];

	if (!init_acked)
		snprintf(buf, len, "zeros or the initial record (init not "
			 "acknowledged)");
	else if (!k->floor)
		snprintf(buf, len, "run %llx seq >= 0 (the flushed initial "
			 "record or a newer write; newest issued %llu)",
			 (unsigned long long)jn.run,
			 (unsigned long long)k->last);
	else
		snprintf(buf, len, "run %llx seq >= %llu (%s; newest issued "
			 "%llu)", (unsigned long long)jn.run,
			 (unsigned long long)k->floor,
			 k->floor_how == 'F' ? "covered by an acknowledged flush"
					     : "completed RWF_DSYNC",
			 (unsigned long long)k->last);
}

static void violation(uint64_t b, const struct rec_info *ri,
		      const char *why)
{
	char exp[160];

	violations++;
	if ((long long)violations > opt.max_report)
		return;
	expected(exp, sizeof(exp), b);
	if (ri->kind == REC_OK || ri->kind == REC_BAD_PAYLOAD ||
	    ri->kind == REC_BAD_CRC)
		printf("VIOLATION block %llu: expected %s, found run %llx "
		       "block %llu seq %llu: %s\n",
		       (unsigned long long)b, exp, (unsigned long long)ri->run,
		       (unsigned long long)ri->block,
		       (unsigned long long)ri->seq, why);
	else
		printf("VIOLATION block %llu: expected %s, found %s\n",
		       (unsigned long long)b, exp, why);
}

static void check_block(uint64_t b, const uint8_t *buf)
{
	const struct blk *k = &blks[b];
	struct rec_info ri;
	char why[200];

	rec_parse(buf, &ri);
	switch (ri.kind) {
	case REC_ZERO:
		if (!init_acked) {
			n_zero++;
			n_ok++;
			return;
		}
		violation(b, &ri, "zeros (the flushed initial record was "
			  "lost)");
		return;
	case REC_NO_MAGIC:
		snprintf(why, sizeof(why), "garbage (no record magic; first "
			 "bytes %016llx)", (unsigned long long)get_le64(buf));
		violation(b, &ri, why);
		return;
	case REC_BAD_CRC:
		snprintf(why, sizeof(why), "torn or corrupt record (crc32c "
			 "stored %08x, computed %08x)", ri.crc_stored,
			 ri.crc_computed);
		violation(b, &ri, why);
		return;
	case REC_BAD_PAYLOAD:
		violation(b, &ri, "payload does not match the header");
		return;
	case REC_OK:
		break;
	}
	if (ri.run != jn.run) {
		violation(b, &ri, "record of another run");
		return;
	}
	if (ri.block != b) {
		violation(b, &ri, "record of another block (misdirected "
			  "write)");
		return;
	}
	if (!ri.seq) {
		if (k->floor) {
			violation(b, &ri, "initial record: a durable write "
				  "was lost");
			return;
		}
		n_init++;
		n_ok++;
		return;
	}
	if (!issued_to(ri.seq, b)) {
		snprintf(why, sizeof(why), "seq %llu was never written to "
			 "this block (%s)", (unsigned long long)ri.seq,
			 ri.seq <= maxseq ? "it went elsewhere"
					  : "beyond any write issued");
		violation(b, &ri, why);
		return;
	}
	if (ri.seq < k->floor) {
		violation(b, &ri, "stale: a durable write was lost");
		return;
	}
	n_ok++;
	if (ri.seq == k->last)
		n_last++;
	else if (seq_done[ri.seq])
		n_older++;
	if (!seq_done[ri.seq])
		n_flight++;
}

static int scan(void)
{
	uint8_t *buf;
	uint64_t b, n, i;
	ssize_t r;
	int fd;

	fd = open(opt.dev, O_RDONLY | (opt.no_direct ? 0 : O_DIRECT));
	if (fd < 0) {
		fprintf(stderr, "verify: %s: %s\n", opt.dev, strerror(errno));
		return 2;
	}
	if (posix_memalign((void **)&buf, 4096, CHUNK_BLOCKS * REC_SIZE)) {
		fprintf(stderr, "verify: out of memory\n");
		return 2;
	}
	for (b = 0; b < jn.nblocks; b += n) {
		n = jn.nblocks - b < CHUNK_BLOCKS ? jn.nblocks - b
						  : CHUNK_BLOCKS;
		r = pread(fd, buf, n * REC_SIZE, (off_t)(b * REC_SIZE));
		if (r != (ssize_t)(n * REC_SIZE)) {
			fprintf(stderr, "verify: %s: read of blocks %llu..%llu:"
				" expected %llu bytes, got %lld (%s)\n",
				opt.dev, (unsigned long long)b,
				(unsigned long long)(b + n - 1),
				(unsigned long long)(n * REC_SIZE),
				(long long)r, r < 0 ? strerror(errno) : "short");
			return 2;
		}
		for (i = 0; i < n; i++)
			check_block(b + i, buf + i * REC_SIZE);
	}
	free(buf);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	parse(argc, argv);
	if (journal_load(opt.journal, &jn))
		return 2;
	r = analyse();
	if (r)
		return r;
	if (opt.dump) {
		uint64_t b;

		for (b = 0; b < jn.nblocks; b++)
			printf("%llu %llu %c %llu\n", (unsigned long long)b,
			       (unsigned long long)blks[b].floor,
			       blks[b].floor_how ? blks[b].floor_how : '-',
			       (unsigned long long)blks[b].last);
		return 0;
	}
	if (!init_acked && !opt.pre_init) {
		printf("verify: run %llx: the init flush (F 0) was never "
		       "acknowledged: nothing to verify\n",
		       (unsigned long long)jn.run);
		return 3;
	}
	r = scan();
	if (r)
		return r;
	if ((long long)violations > opt.max_report)
		printf("... and %llu more violations\n",
		       violations - (unsigned long long)opt.max_report);
	printf("verify: run %llx, %llu blocks, %llu flushes in force, writes "
	       "1..%llu possible: %llu ok (%llu newest issued, %llu older "
	       "than that: unflushed or in-flight writes did not land, "
	       "%llu in-flight writes landed, "
	       "%llu initial, %llu zero), %llu violations\n",
	       (unsigned long long)jn.run, (unsigned long long)jn.nblocks,
	       (unsigned long long)flushes_in_force,
	       (unsigned long long)(init_acked ? window_hi : 0), n_ok, n_last,
	       n_older, n_flight, n_init, n_zero, violations);
	return violations ? 1 : 0;
}
