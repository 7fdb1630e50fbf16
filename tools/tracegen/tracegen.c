// SPDX-License-Identifier: GPL-2.0-only
/*
 * tracegen: deterministic generator of database-shaped block traces for
 * tacsim, in the plain CSV format "time,op,offset_bytes,length_bytes".
 *
 *   tracegen --workload oltp|ods|dw|scan [--seed N] [--requests N]
 *            [--out FILE[.gz]] [knobs, see usage()]
 *
 * The traces model what a block cache under a database sees, i.e. the
 * physical I/O below the DBMS's DRAM buffer pool (TAC section 1.3):
 * page-sized random accesses (OLTP rows, index lookups) first pass through
 * a simulated DRAM buffer pool (LRU, --dram), which absorbs the hottest
 * pages and turns dirty evictions into writes; large scans bypass it, as
 * PostgreSQL's ring buffers and DB2's prefetchers do.  Workloads:
 *
 *  oltp  Zipf-skewed (--zipf) random 8 KiB page reads and updates
 *        (--write-pct) over a --table-size table, hot pages scattered
 *        over the table by a fixed permutation (no spatial locality).
 *  ods   TAC section 4.2, first experiment: --streams concurrent queries;
 *        each scans a range of a cold --table-size table (start uniform,
 *        length uniform 1..--scan-max) in --io-size requests and, per scan
 *        request, does --lookups random 8 KiB index lookups, uniform over
 *        a --hot-size index region.
 *  dw    TAC section 4.2, second experiment: a fact table clustered on date
 *        (--days days over --table-size), queries scan a date range whose
 *        start is Zipf (--zipf) in recency (today most likely), length
 *        uniform 1..--range-days; one 8 KiB lookup into a --hot-size
 *        dimension index per --lookup-every scan requests.
 *  scan  --passes full sequential scans of a --table-size table.
 *
 * Same seed, same options, same trace, on any machine: the generator uses
 * its own xoshiro256** and no libc randomness.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define PAGE 8192ULL
#define KiB 1024ULL
#define MiB (1024ULL * KiB)
#define GiB (1024ULL * MiB)

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("tracegen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

/* ------------------------------------------------------------ random */

static uint64_t rs[4];

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rnd(void)
{
	uint64_t r = rotl(rs[1] * 5, 7) * 9, t = rs[1] << 17;

	rs[2] ^= rs[0];
	rs[3] ^= rs[1];
	rs[1] ^= rs[2];
	rs[0] ^= rs[3];
	rs[2] ^= t;
	rs[3] = rotl(rs[3], 45);
	return r;
}

static double rnd_unit(void)
{
	return (rnd() >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n), n > 0, without modulo bias worth mentioning. */
static uint64_t rnd_below(uint64_t n)
{
	return (uint64_t)(rnd_unit() * (double)n) % n;
}

/* Zipf over ranks 0..n-1 (rank 0 most popular), by inverse CDF. */
struct zipf {
	uint64_t n;
	double *cdf;
};

static void zipf_init(struct zipf *z, uint64_t n, double s)
{
	double sum = 0;
	uint64_t i;

	z->n = n;
	z->cdf = malloc(n * sizeof(*z->cdf));
	if (!z->cdf)
		die("out of memory for a Zipf table of %" PRIu64, n);
	for (i = 0; i < n; i++) {
		sum += 1.0 / pow((double)(i + 1), s);
		z->cdf[i] = sum;
	}
	for (i = 0; i < n; i++)
		z->cdf[i] /= sum;
}

static uint64_t zipf_draw(const struct zipf *z)
{
	double u = rnd_unit();
	uint64_t lo = 0, hi = z->n - 1;

	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;

		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ------------------------------------------------------------ output */

static gzFile gz_out;
static FILE *f_out;
static uint64_t emitted, t_us;

static void emit(bool write, uint64_t off, uint64_t len)
{
	char line[96];
	int n;

	t_us += 100;
	n = snprintf(line, sizeof(line), "%" PRIu64 ".%06" PRIu64 ",%c,%" PRIu64
		     ",%" PRIu64 "\n", t_us / 1000000, t_us % 1000000,
		     write ? 'W' : 'R', off, len);
	if (gz_out ? gzwrite(gz_out, line, n) != n :
		     fwrite(line, 1, n, f_out) != (size_t)n)
		die("write error");
	emitted++;
}

/* ------------------------------------------------------------ DRAM pool */

/*
 * LRU buffer pool of whole pages: hash (open addressing) + doubly linked
 * list over frame indexes.  A page access that misses is read from the
 * device (emitted); a dirty page evicted is written back (emitted).
 */
struct pool {
	uint64_t frames, used;
	uint64_t *page;
	uint32_t *next, *prev;
	uint8_t *dirty;
	uint32_t *slot;		/* frame + 1 */
	uint64_t mask;
	uint32_t head, tail;	/* head: least recent */
};

#define NIL UINT32_MAX

static struct pool pool;

static uint64_t hash_page(uint64_t p, uint64_t mask)
{
	return ((p * 0x9e3779b97f4a7c15ULL) >> 17) & mask;
}

static void pool_init(uint64_t bytes)
{
	uint64_t n = bytes / PAGE, size = 16;

	pool.frames = n;
	if (!n)
		return;
	while (size < 2 * n)
		size <<= 1;
	pool.mask = size - 1;
	pool.page = calloc(n, sizeof(*pool.page));
	pool.next = calloc(n, sizeof(*pool.next));
	pool.prev = calloc(n, sizeof(*pool.prev));
	pool.dirty = calloc(n, 1);
	pool.slot = calloc(size, sizeof(*pool.slot));
	if (!pool.page || !pool.next || !pool.prev || !pool.dirty || !pool.slot)
		die("out of memory for the DRAM pool");
	pool.head = pool.tail = NIL;
}

static uint64_t pool_find_slot(uint64_t p)
{
	uint64_t i = hash_page(p, pool.mask);

	while (pool.slot[i] && pool.page[pool.slot[i] - 1] != p)
		i = (i + 1) & pool.mask;
	return i;
}

static void pool_unlink(uint32_t f)
{
	if (pool.prev[f] != NIL)
		pool.next[pool.prev[f]] = pool.next[f];
	else
		pool.head = pool.next[f];
	if (pool.next[f] != NIL)
		pool.prev[pool.next[f]] = pool.prev[f];
	else
		pool.tail = pool.prev[f];
}

static void pool_push_mru(uint32_t f)
{
	pool.next[f] = NIL;
	pool.prev[f] = pool.tail;
	if (pool.tail != NIL)
		pool.next[pool.tail] = f;
	else
		pool.head = f;
	pool.tail = f;
}

static void pool_hash_del(uint64_t i)
{
	uint64_t j;

	for (j = (i + 1) & pool.mask; pool.slot[j]; j = (j + 1) & pool.mask) {
		uint64_t home = hash_page(pool.page[pool.slot[j] - 1], pool.mask);

		if (((j - home) & pool.mask) >= ((j - i) & pool.mask)) {
			pool.slot[i] = pool.slot[j];
			i = j;
		}
	}
	pool.slot[i] = 0;
}

/* One page access by the DBMS: 8 KiB page number @p of byte base @base. */
static void page_access(uint64_t base, uint64_t p, bool write)
{
	uint64_t key = base / PAGE + p, i;
	uint32_t f;

	if (!pool.frames) {
		emit(write, base + p * PAGE, PAGE);
		return;
	}
	i = pool_find_slot(key);
	if (pool.slot[i]) {
		f = pool.slot[i] - 1;
		pool_unlink(f);
		pool_push_mru(f);
		pool.dirty[f] |= write;
		return;
	}
	/* Miss: the page is read (an update reads it first, too). */
	emit(false, key * PAGE, PAGE);
	if (pool.used < pool.frames) {
		f = (uint32_t)pool.used++;
	} else {
		f = pool.head;
		pool_unlink(f);
		if (pool.dirty[f])
			emit(true, pool.page[f] * PAGE, PAGE);
		pool_hash_del(pool_find_slot(pool.page[f]));
		i = pool_find_slot(key);
	}
	pool.page[f] = key;
	pool.dirty[f] = write;
	pool.slot[i] = f + 1;
	pool_push_mru(f);
}

/* ------------------------------------------------------------ workloads */

struct opts {
	uint64_t requests;
	uint64_t table, hot, dram, io, scan_max;
	double zipf;
	unsigned int write_pct, streams, lookups, days, range_days;
	unsigned int lookup_every, passes;
};

/* Fixed pseudo-random bijection of 0..n-1, n a power of two. */
static uint64_t scatter(uint64_t i, uint64_t n)
{
	return (i * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL) & (n - 1);
}

static void gen_oltp(const struct opts *o)
{
	uint64_t pages = o->table / PAGE;
	struct zipf z;

	if (pages & (pages - 1))
		die("oltp: --table-size must be a power of two of pages");
	zipf_init(&z, pages, o->zipf);
	while (emitted < o->requests) {
		uint64_t p = scatter(zipf_draw(&z), pages);

		page_access(0, p, rnd_below(100) < o->write_pct);
	}
	free(z.cdf);
}

/* A query stream: a range scan in progress. */
struct stream {
	uint64_t pos, end;	/* bytes, within the scanned table */
	uint64_t base;
	unsigned int since_lookup;
};

static void ods_new_query(const struct opts *o, struct stream *s)
{
	uint64_t len = (1 + rnd_below(o->scan_max / o->io)) * o->io;
	uint64_t start = rnd_below((o->table - len) / o->io + 1) * o->io;

	s->base = o->hot;	/* the index region comes first on disk */
	s->pos = start;
	s->end = start + len;
}

static void gen_ods(const struct opts *o)
{
	struct stream *st = calloc(o->streams, sizeof(*st));
	uint64_t hot_pages = o->hot / PAGE;
	unsigned int i;

	if (!st)
		die("out of memory");
	for (i = 0; i < o->streams; i++)
		ods_new_query(o, &st[i]);
	while (emitted < o->requests) {
		struct stream *s = &st[rnd_below(o->streams)];

		emit(false, s->base + s->pos, o->io);
		s->pos += o->io;
		for (i = 0; i < o->lookups; i++)
			page_access(0, rnd_below(hot_pages), false);
		if (s->pos >= s->end)
			ods_new_query(o, s);
	}
	free(st);
}

static void dw_new_query(const struct opts *o, const struct zipf *z,
			 struct stream *s)
{
	uint64_t day_bytes = o->table / o->days / o->io * o->io;
	uint64_t newest = o->days - 1 - zipf_draw(z);
	uint64_t len = 1 + rnd_below(o->range_days);
	uint64_t first = newest + 1 >= len ? newest + 1 - len : 0;

	s->base = o->hot;
	s->pos = first * day_bytes;
	s->end = (newest + 1) * day_bytes;
}

static void gen_dw(const struct opts *o)
{
	struct stream *st = calloc(o->streams, sizeof(*st));
	uint64_t hot_pages = o->hot / PAGE;
	struct zipf z;
	unsigned int i;

	if (!st)
		die("out of memory");
	if (o->table / o->days < o->io)
		die("dw: fewer than one I/O per day");
	zipf_init(&z, o->days, o->zipf);
	for (i = 0; i < o->streams; i++)
		dw_new_query(o, &z, &st[i]);
	while (emitted < o->requests) {
		struct stream *s = &st[rnd_below(o->streams)];

		emit(false, s->base + s->pos, o->io);
		s->pos += o->io;
		if (o->lookup_every && ++s->since_lookup >= o->lookup_every) {
			s->since_lookup = 0;
			page_access(0, rnd_below(hot_pages), false);
		}
		if (s->pos >= s->end)
			dw_new_query(o, &z, s);
	}
	free(z.cdf);
	free(st);
}

static void gen_scan(const struct opts *o)
{
	unsigned int pass;
	uint64_t pos;

	for (pass = 0; pass < o->passes; pass++)
		for (pos = 0; pos + o->io <= o->table; pos += o->io)
			emit(false, pos, o->io);
}

/* ------------------------------------------------------------ main */

static bool parse_size(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return false;
	switch (*end) {
	case 'k':
	case 'K':
		*v *= KiB;
		end++;
		break;
	case 'm':
	case 'M':
		*v *= MiB;
		end++;
		break;
	case 'g':
	case 'G':
		*v *= GiB;
		end++;
		break;
	}
	return !*end;
}

static void usage(FILE *f)
{
	fputs(
"usage: tracegen --workload oltp|ods|dw|scan [--seed N] [--requests N]\n"
"                [--out FILE[.gz]] [--table-size S] [--hot-size S]\n"
"                [--dram S] [--io-size S] [--zipf X] [--write-pct P]\n"
"                [--streams N] [--lookups N] [--scan-max S] [--days N]\n"
"                [--range-days N] [--lookup-every N] [--passes N]\n"
"Defaults per workload (sizes K/M/G):\n"
"  oltp  table 4G, zipf 0.9, write-pct 30, dram 128M, requests 2000000\n"
"  ods   table 6G, hot 384M, dram 64M, io 128K, streams 4, lookups 4,\n"
"        scan-max 16M, requests 1000000\n"
"  dw    table 6G, hot 256M, dram 64M, io 128K, streams 4, days 2048,\n"
"        zipf 1.0, range-days 16, lookup-every 4, requests 200000\n"
"  scan  table 1G, io 128K, passes 4\n"
"Output: plain CSV time,op,offset_bytes,length_bytes on stdout or --out\n"
"(gzip if the name ends in .gz).\n", f);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "workload", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 's' },
		{ "requests", required_argument, NULL, 'n' },
		{ "out", required_argument, NULL, 'o' },
		{ "table-size", required_argument, NULL, 'T' },
		{ "hot-size", required_argument, NULL, 'H' },
		{ "dram", required_argument, NULL, 'D' },
		{ "io-size", required_argument, NULL, 'I' },
		{ "zipf", required_argument, NULL, 'z' },
		{ "write-pct", required_argument, NULL, 'W' },
		{ "streams", required_argument, NULL, 'S' },
		{ "lookups", required_argument, NULL, 'L' },
		{ "scan-max", required_argument, NULL, 'M' },
		{ "days", required_argument, NULL, 'd' },
		{ "range-days", required_argument, NULL, 'r' },
		{ "lookup-every", required_argument, NULL, 'e' },
		{ "passes", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *workload = NULL, *out = NULL;
	uint64_t seed = 1, v;
	struct opts o = { 0 };
	bool set[128] = { false };
	uint64_t val[128] = { 0 };
	double zipf = -1;
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'w':
			workload = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'z': {
			char *end;

			zipf = strtod(optarg, &end);
			if (*end || zipf < 0 || zipf > 5)
				die("bad --zipf '%s'", optarg);
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case '?':
			usage(stderr);
			return 2;
		default:
			if (!parse_size(optarg, &v))
				die("bad number '%s'", optarg);
			set[c] = true;
			val[c] = v;
			if (c == 's')
				seed = v;
		}
	}
	if (!workload || optind != argc) {
		usage(stderr);
		return 2;
	}
#define OPT(ch, def) (set[ch] ? val[ch] : (def))
	if (!strcmp(workload, "oltp")) {
		o.table = OPT('T', 4 * GiB);
		o.dram = OPT('D', 128 * MiB);
		o.write_pct = OPT('W', 30);
		o.requests = OPT('n', 2000000);
		o.zipf = zipf >= 0 ? zipf : 0.9;
	} else if (!strcmp(workload, "ods")) {
		o.table = OPT('T', 6 * GiB);
		o.hot = OPT('H', 384 * MiB);
		o.dram = OPT('D', 64 * MiB);
		o.io = OPT('I', 128 * KiB);
		o.streams = OPT('S', 4);
		o.lookups = OPT('L', 4);
		o.scan_max = OPT('M', 16 * MiB);
		o.requests = OPT('n', 1000000);
	} else if (!strcmp(workload, "dw")) {
		o.table = OPT('T', 6 * GiB);
		o.hot = OPT('H', 256 * MiB);
		o.dram = OPT('D', 64 * MiB);
		o.io = OPT('I', 128 * KiB);
		o.streams = OPT('S', 4);
		o.days = OPT('d', 2048);
		o.range_days = OPT('r', 16);
		o.lookup_every = OPT('e', 4);
		o.requests = OPT('n', 200000);
		o.zipf = zipf >= 0 ? zipf : 1.0;
	} else if (!strcmp(workload, "scan")) {
		o.table = OPT('T', 1 * GiB);
		o.io = OPT('I', 128 * KiB);
		o.passes = OPT('p', 4);
	} else {
		die("unknown workload '%s'", workload);
	}
#undef OPT
	if (!o.table || (o.io && (o.io % 512 || o.io > o.table)) ||
	    o.table % PAGE || o.hot % PAGE || o.write_pct > 100 ||
	    (o.streams == 0 && strcmp(workload, "oltp") &&
	     strcmp(workload, "scan")) ||
	    (o.scan_max && o.scan_max < o.io) ||
	    (!strcmp(workload, "dw") && (!o.days || !o.range_days)) ||
	    (o.hot == 0 && (o.lookups || o.lookup_every)))
		die("inconsistent options for workload %s", workload);

	splitmix(&seed);
	for (c = 0; c < 4; c++)
		rs[c] = splitmix(&seed);
	pool_init(o.dram);
	if (out && strlen(out) > 3 && !strcmp(out + strlen(out) - 3, ".gz")) {
		gz_out = gzopen(out, "wb6");
		if (!gz_out)
			die("%s: %s", out, strerror(errno));
	} else if (out) {
		f_out = fopen(out, "w");
		if (!f_out)
			die("%s: %s", out, strerror(errno));
	} else {
		f_out = stdout;
	}
	if (gz_out)
		gzputs(gz_out, "time,op,offset_bytes,length_bytes\n");
	else
		fputs("time,op,offset_bytes,length_bytes\n", f_out);

	if (!strcmp(workload, "oltp"))
		gen_oltp(&o);
	else if (!strcmp(workload, "ods"))
		gen_ods(&o);
	else if (!strcmp(workload, "dw"))
		gen_dw(&o);
	else
		gen_scan(&o);

	if (gz_out ? gzclose(gz_out) != Z_OK : fclose(f_out) != 0)
		die("write error");
	return 0;
}
