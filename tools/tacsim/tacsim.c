// SPDX-License-Identifier: GPL-2.0-only
/*
 * tacsim: trace-driven simulator of the dm-tac cache policy and of the
 * classic policies it is compared with (TAC paper section 4).
 *
 * It replays block traces through any struct tac_policy_ops implementation:
 * the TAC core from dm-tac/ (the very files the kernel module links,
 * compiled through tools/include/) and the baselines in this directory.  A
 * request touching bytes [o, o + len) references blocks floor(o / bs) ..
 * floor((o + len - 1) / bs) in order, each one access: lookup(TAC_USE_READ or _WRITE),
 * and on a miss admit().  Costs follow the TAC cost model with the core's
 * default device costs: a hit costs an SSD read, a miss an HDD random or
 * sequential read as the TAC classifier labels the request, an admission
 * an SSD write.  Writes are references like reads, as in the TAC paper's
 * simulator.  See tools/README.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <zlib.h>

#include "sim-policy.h"
#include "trace.h"

/*
 * The TAC core is linked in when dm-tac/policy/ exists; until then these
 * are NULL and "--policy tac" says it is not built.
 */
#pragma weak tac_policy_create
#pragma weak tac_params_default
#pragma weak tac_params_check

#define DEVS_FULL (~0U)
/* A device's blocks in a request's block number: 64 devices of 2^34. */
#define DEV_BLOCK_BITS 34

struct req {
	u64 first;		/* origin block, device index in bits 34..39 */
	u32 nr;			/* blocks */
	u8 write;
	u8 cls;			/* enum tac_class from the classifier pass */
};

struct trace {
	struct req *r;
	u64 nr, cap;
	u64 accesses;
	u64 malformed, skipped, lines;
	u32 devs[64];
	u32 nr_devs;
	char name[256];
	const char *format;	/* as detected or given */
};

struct result {
	const char *policy;
	u64 accesses, reads, writes, hits, misses;
	u64 admissions, evictions, bypasses, invalidations;
	u64 io_time_us;
	u64 cache_ios;		/* cache device I/Os: see cache_io() */
	u64 seq_requests, random_requests, seq_accesses, random_accesses;
	u64 ram_bytes;
	double seconds;		/* CPU time of the replay */
	double wall_seconds;
};

static struct tac_params params;
static u64 cost_ssd_write_us;
static bool cost_ssd_write_set;
static const char *prog = "tacsim";
static unsigned int max_reports = 20;
static bool quiet;
/*
 * allocate: a write is a reference like a read (the replay mode).
 * around: a write is not a reference; it goes to the disk (miss cost) and
 * invalidates a cached copy (unmap + release: physical invalidation), as in
 * dm-tac's write-around mode.
 */
static bool write_around;
/* Reads of at most this many blocks are too small to be part of a stream. */
static u64 fast_max_blocks;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: tacsim --policy tac|lru|fifo|clock|arc|lru2|opt|all[,...]\n"
"              --cache-size SIZE[,SIZE...] [--block-size 4096]\n"
"              [--extent-size SIZE] [--format auto|blkparse|msr|spc|csv]\n"
"              [--json] [--blkparse-event Q|C] [--param NAME=VALUE]...\n"
"              [--cost-ssd-write US] [--write-mode allocate|around]\n"
"              [--max-errors N] [--quiet] TRACE...\n"
"SIZE takes K, M, G or T (powers of 1024).  TRACE files may be gzipped;\n"
"several are replayed one after another as one stream.  --param sets a\n"
"TAC tunable (struct tac_params field name), e.g. --param aging_period=\n"
"100000; costs and the classifier settings apply to every policy.\n");
}

static bool parse_size(const char *s, u64 *v)
{
	char *end;
	u64 mult = 1;

	if (!*s || *s == '-')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || end == s)
		return false;
	switch (*end) {
	case 'k':
	case 'K':
		mult = 1ULL << 10;
		break;
	case 'm':
	case 'M':
		mult = 1ULL << 20;
		break;
	case 'g':
	case 'G':
		mult = 1ULL << 30;
		break;
	case 't':
	case 'T':
		mult = 1ULL << 40;
		break;
	}
	if (mult > 1)
		end++;
	if (mult > 1 && *end == 'i')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || (*v && mult > UINT64_MAX / *v))
		return false;
	*v *= mult;
	return true;
}

/* ------------------------------------------------------------ params */

#define PARAM(f) { #f, offsetof(struct tac_params, f) }
static const struct {
	const char *name;
	size_t off;
} param_fields[] = {
	PARAM(extent_blocks),	   PARAM(seq_window),
	PARAM(seq_threshold),	   PARAM(aging_period),
	PARAM(admit_margin),	   PARAM(fill_threshold),
	PARAM(cost_hdd_random_us), PARAM(cost_hdd_seq_us),
	PARAM(cost_cache_us),	   PARAM(cost_cache_write_us),
	PARAM(stats_extents),
};

static u32 *param_ref(const char *name)
{
	unsigned int i;

	for (i = 0; i < sizeof(param_fields) / sizeof(param_fields[0]); i++)
		if (!strcmp(name, param_fields[i].name))
			return (u32 *)((char *)&params + param_fields[i].off);
	return NULL;
}

/*
 * Until the TAC core is linked, tacsim needs the defaults from somewhere
 * for costs and for its stand-in classifier.  These mirror the kernel's
 * defaults; they are replaced by tac_params_default() as soon as the core
 * is built in.
 */
static void fallback_params(struct tac_params *p)
{
	*p = (struct tac_params){
		.extent_blocks = 32,
		.seq_window = 20,
		.seq_threshold = 2,
		.aging_period = 1 << 20,
		.admit_margin = 1,
		.fill_threshold = 95,
		.cost_hdd_random_us = 8000,
		.cost_hdd_seq_us = 100,
		.cost_cache_us = 100,
		.cost_cache_write_us = 100,
		.stats_extents = 1 << 20,
	};
}

static bool tac_built(void)
{
	return tac_policy_create && tac_params_default && tac_params_check;
}

/* ------------------------------------------------------------ loading */

static void trace_push(struct trace *t, u64 first, u64 nr, bool write)
{
	if (t->nr == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1 << 16;
		t->r = realloc(t->r, t->cap * sizeof(*t->r));
		if (!t->r)
			die("out of memory for %" PRIu64 " requests", t->cap);
	}
	t->r[t->nr++] = (struct req){ .first = first, .nr = (u32)nr,
				      .write = write };
	t->accesses += nr;
}

static u32 dev_index(struct trace *t, u32 dev)
{
	u32 i;

	for (i = 0; i < t->nr_devs; i++)
		if (t->devs[i] == dev)
			return i;
	if (t->nr_devs == sizeof(t->devs) / sizeof(t->devs[0]))
		return DEVS_FULL;
	t->devs[t->nr_devs] = dev;
	return t->nr_devs++;
}

static void load_file(struct trace *t, const char *path,
		      enum trace_format fmt, char blk_event, u64 bs)
{
	struct parse_state st = { .header_allowed = true,
				  .blk_event = blk_event };
	char buf[8192];
	u64 lineno = 0;
	gzFile gz;

	if (fmt == FMT_AUTO) {
		fmt = trace_sniff(path, blk_event);
		if (fmt == FMT_AUTO)
			die("%s: cannot tell the trace format; use --format",
			    path);
		if (!quiet)
			fprintf(stderr, "%s: %s: format %s\n", prog, path,
				trace_format_name(fmt));
	}
	if (!t->format)
		t->format = trace_format_name(fmt);
	else if (strcmp(t->format, trace_format_name(fmt)))
		t->format = "mixed";
	gz = gzopen(path, "rb");
	if (!gz)
		die("%s: %s", path, strerror(errno));
	gzbuffer(gz, 1 << 18);
	while (gzgets(gz, buf, sizeof(buf))) {
		struct trace_rec rec;
		const char *why = "?";
		size_t len = strlen(buf);
		enum parse_result r;

		lineno++;
		if (len == sizeof(buf) - 1 && buf[len - 1] != '\n') {
			int c;

			/* Overlong line: drop the rest of it. */
			while ((c = gzgetc(gz)) != -1 && c != '\n')
				;
			why = "line too long";
			r = P_BAD;
		} else if (memchr(buf, '\0', len + 1) != buf + len) {
			why = "NUL byte in line";
			r = P_BAD;
		} else {
			r = trace_parse_line(fmt, buf, &st, &rec, &why);
		}
		if (r == P_BAD) {
			if (t->malformed++ < max_reports)
				fprintf(stderr,
					"%s: %s:%" PRIu64 ": malformed, skipped: %s\n",
					prog, path, lineno, why);
			continue;
		}
		if (r == P_SKIP) {
			t->skipped++;
			continue;
		}
		{
			u32 d = dev_index(t, rec.dev);
			u64 first = rec.offset / bs;
			u64 last = (rec.offset + rec.length - 1) / bs;

			if (d == DEVS_FULL) {
				if (t->malformed++ < max_reports)
					fprintf(stderr,
						"%s: %s:%" PRIu64 ": malformed, skipped: more than 64 devices\n",
						prog, path, lineno);
				continue;
			}
			/*
			 * Origin blocks are below 2^40 (TAC_MAX_ORIGIN_BLOCKS):
			 * 64 devices of 2^34 blocks each.
			 */
			if (last >> DEV_BLOCK_BITS) {
				if (t->malformed++ < max_reports)
					fprintf(stderr,
						"%s: %s:%" PRIu64 ": malformed, skipped: beyond block 2^34 of its device\n",
						prog, path, lineno);
				continue;
			}
			trace_push(t, (u64)d << DEV_BLOCK_BITS | first,
				   last - first + 1, rec.write);
		}
	}
	{
		int err;
		const char *msg = gzerror(gz, &err);

		/* A truncated gzip stream is Z_BUF_ERROR at the end. */
		if (err != Z_OK && err != Z_STREAM_END) {
			fprintf(stderr,
				"%s: %s:%" PRIu64 ": read error, rest ignored: %s\n",
				prog, path, lineno, msg);
			t->malformed++;
		}
	}
	t->lines += lineno;
	gzclose(gz);
}

/* ------------------------------------------------------------ classify */

/*
 * Stand-in for the TAC classifier (section 3.1) while the core is not
 * linked: a request is sequential if the extent of its first block
 * appears more than seq_threshold times among the last seq_window
 * requests, itself included.
 */
static void classify_fallback(struct trace *t)
{
	u64 win[TAC_MAX_SEQ_WINDOW];
	u32 w = params.seq_window ? params.seq_window : 1, pos = 0, fill = 0;
	u64 i;

	if (w > TAC_MAX_SEQ_WINDOW)
		w = TAC_MAX_SEQ_WINDOW;
	for (i = 0; i < t->nr; i++) {
		u64 e = t->r[i].first / params.extent_blocks;
		u32 j, seen = 0;

		win[pos] = e;
		pos = (pos + 1) % w;
		if (fill < w)
			fill++;
		for (j = 0; j < fill; j++)
			seen += win[j] == e;
		t->r[i].cls = seen > params.seq_threshold ? TAC_SEQUENTIAL :
							    TAC_RANDOM;
	}
}

/* The real classifier: a TAC policy object's request(), nothing else. */
static void classify(struct trace *t, u32 nr_blocks)
{
	struct tac_policy *p;
	u64 i;

	if (!tac_built()) {
		classify_fallback(t);
		return;
	}
	p = tac_policy_create(nr_blocks, &params);
	if (!p)
		die("cannot create a TAC policy to classify requests");
	for (i = 0; i < t->nr; i++)
		t->r[i].cls = tac_policy_request(p, to_oblock(t->r[i].first),
						 t->r[i].nr, t->r[i].write);
	tac_policy_destroy(p);
}

/* ------------------------------------------------------------ OPT */

/* next[a]: access index of the next access to the block of access a. */
static u64 *next_uses(const struct trace *t)
{
	u64 *next = malloc((t->accesses ? t->accesses : 1) * sizeof(*next));
	u64 cap = 1 << 16, used = 0, a = t->accesses, i;
	u64 *key = malloc(cap * sizeof(*key)), *val = malloc(cap * sizeof(*val));
	u8 *full = calloc(cap, 1);

	if (!next || !key || !val || !full)
		die("out of memory for OPT's next-use table");
	for (i = t->nr; i-- > 0;) {
		u64 b = t->r[i].first + t->r[i].nr;

		while (b-- > t->r[i].first) {
			u64 h, k;

			if (2 * (used + 1) > cap) {
				u64 ncap = 2 * cap, j;
				u64 *nk = malloc(ncap * sizeof(*nk));
				u64 *nv = malloc(ncap * sizeof(*nv));
				u8 *nf = calloc(ncap, 1);

				if (!nk || !nv || !nf)
					die("out of memory for OPT's next-use table");
				for (j = 0; j < cap; j++) {
					if (!full[j])
						continue;
					h = (key[j] * 0x9e3779b97f4a7c15ULL) >> 20;
					for (h &= ncap - 1; nf[h]; h = (h + 1) & (ncap - 1))
						;
					nf[h] = 1;
					nk[h] = key[j];
					nv[h] = val[j];
				}
				free(key);
				free(val);
				free(full);
				key = nk;
				val = nv;
				full = nf;
				cap = ncap;
			}
			a--;
			h = ((b * 0x9e3779b97f4a7c15ULL) >> 20) & (cap - 1);
			for (k = h; full[k] && key[k] != b; k = (k + 1) & (cap - 1))
				;
			if (full[k]) {
				next[a] = val[k];
			} else {
				next[a] = OPT_NEVER;
				full[k] = 1;
				key[k] = b;
				used++;
			}
			/*
			 * Write-around: a write is no use of the cached copy
			 * but its end, so what precedes it sees no next use.
			 */
			val[k] = write_around && t->r[i].write ? OPT_NEVER : a;
		}
	}
	free(key);
	free(val);
	free(full);
	return next;
}

/* ------------------------------------------------------------ replay */

static struct tac_policy *create_policy(const char *name, u32 nr_blocks)
{
	if (!strcmp(name, "tac"))
		return tac_policy_create(nr_blocks, &params);
	if (!strcmp(name, "lru"))
		return lru_policy_create(nr_blocks);
	if (!strcmp(name, "fifo"))
		return fifo_policy_create(nr_blocks);
	if (!strcmp(name, "clock"))
		return clock_policy_create(nr_blocks);
	if (!strcmp(name, "arc"))
		return arc_policy_create(nr_blocks);
	if (!strcmp(name, "lru2"))
		return lru2_policy_create(nr_blocks);
	if (!strcmp(name, "opt"))
		return opt_policy_create(nr_blocks);
	return NULL;
}

static double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Read hits, as dm-tac serves them without its lock: of a read too small
 * to be part of a stream, each block found with peek() in turn, logged
 * (the first with the read's length, the others with 0), and folded into
 * the policy with hit() in order before the next request that is not
 * one (as the next request of the same CPU takes the lock in dm-tac), or
 * when the log is full.  A read whose later block is not cached, or
 * finds the log full, goes on the locked way from that block without
 * counting the request again, as its remainder does in dm-tac.  With one
 * CPU the policy decides exactly what it would with each hit accounted
 * at once (tests/unit/test_policy.c checks it).
 */
#define HIT_LOG	32	/* dm-tac's TAC_HIT_LOG */
#define STREAM_MIN_BYTES 65536	/* dm-tac's TAC_STREAM_MIN_SECTORS */

struct hit_log {
	u32 nr;
	struct {
		u64 oblock;
		tac_cblock_t cblock;
		u32 nr;		/* blocks of its read; 0: a later one */
		int cls;	/* the classifier pass's */
	} hit[HIT_LOG];
};

/*
 * Fold @log: count its sequential requests and blocks, and its classes
 * that differ from the classifier pass's.  Returns the class of its last
 * read's first block (-1 for an empty log).
 */
static int fold_hits(struct tac_policy *p, struct hit_log *log,
		     u64 *seq_req, u64 *seq_acc, u64 *mismatch)
{
	int cls = -1;
	u32 i;

	for (i = 0; i < log->nr; i++) {
		int c = tac_policy_hit(p, to_oblock(log->hit[i].oblock),
				       log->hit[i].nr, log->hit[i].cblock);

		if (log->hit[i].nr) {
			cls = c;
			*seq_req += cls == TAC_SEQUENTIAL;
			*mismatch += cls != log->hit[i].cls;
		}
		*seq_acc += cls == TAC_SEQUENTIAL;
	}
	log->nr = 0;
	return cls;
}

/*
 * Cache device I/Os: within one request, the blocks that hit go to the
 * cache in one I/O while each one's cache block is the one after the
 * last's, as dm-tac's read and write runs do, and so do the blocks
 * admitted (a fill).  @last is the request's last cache block shifted
 * left once, plus 1 for a fill, or U64_MAX after a block that did not
 * touch the cache.
 */
static void cache_io(u64 *ios, u64 *last, tac_cblock_t cb, bool fill)
{
	u64 n = (u64)from_cblock(cb) << 1 | fill;

	if (*last == U64_MAX || n != *last + 2)
		(*ios)++;
	*last = n;
}

static void replay(const struct trace *t, const char *name, u32 nr_blocks,
		   const u64 *next, struct result *res)
{
	struct tac_policy *p = create_policy(name, nr_blocks);
	bool is_tac = !strcmp(name, "tac");
	const u64 c_hit = params.cost_cache_us;
	const u64 c_rand = params.cost_hdd_random_us;
	const u64 c_seq = params.cost_hdd_seq_us;
	const u64 c_admit = cost_ssd_write_us;
	struct tac_policy_stats st;
	u64 i, a = 0, hits = 0, admits = 0, evicts = 0, time_us = 0;
	u64 seq_req = 0, seq_acc = 0, reads = 0, mismatch = 0, inval = 0;
	u64 ios = 0, last;
	struct hit_log log = { 0 };
	double t0, w0;

	if (!p)
		die("cannot create policy %s for %u blocks", name, nr_blocks);
	memset(res, 0, sizeof(*res));
	res->policy = name;
	/*
	 * Speed is CPU time of this thread: on a shared machine wall time
	 * also measures the neighbours.
	 */
	t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	w0 = now_s(CLOCK_MONOTONIC);
	for (i = 0; i < t->nr; i++) {
		const struct req *r = &t->r[i];
		u64 b = r->first, end = r->first + r->nr;
		int cls = r->cls;
		u64 c_miss;

		last = U64_MAX;
		if (is_tac && !r->write && r->nr <= fast_max_blocks) {
			/* Classes are known when they are folded. */
			while (b < end && log.nr < HIT_LOG &&
			       !tac_policy_peek(p, to_oblock(b),
						&log.hit[log.nr].cblock)) {
				log.hit[log.nr].oblock = b;
				log.hit[log.nr].nr = b == r->first ? r->nr : 0;
				log.hit[log.nr].cls = r->cls;
				cache_io(&ios, &last, log.hit[log.nr++].cblock,
					 false);
				reads++;
				hits++;
				time_us += c_hit;
				a++;
				b++;
			}
			if (b == end)
				continue;
		}
		if (is_tac) {
			int c = fold_hits(p, &log, &seq_req, &seq_acc,
					  &mismatch);

			if (b > r->first) {
				/* The rest of a read counted when folded. */
				cls = c;
			} else {
				cls = tac_policy_request(p, to_oblock(b),
							 r->nr, r->write);
				mismatch += cls != r->cls;
				seq_req += cls == TAC_SEQUENTIAL;
			}
		} else {
			seq_req += cls == TAC_SEQUENTIAL;
		}
		c_miss = cls == TAC_SEQUENTIAL ? c_seq : c_rand;
		if (cls == TAC_SEQUENTIAL)
			seq_acc += end - b;
		if (!r->write)
			reads += end - b;
		for (; b < end; b++, a++) {
			tac_cblock_t cb;
			tac_oblock_t ev;
			int ret;

			if (write_around && r->write) {
				last = U64_MAX;
				time_us += c_miss;
				if (!tac_policy_lookup(p, to_oblock(b), &cb,
						       TAC_PROBE)) {
					tac_policy_unmap(p, cb);
					tac_policy_release(p, cb);
					inval++;
				}
				continue;
			}
			if (next)
				opt_policy_next_use(p, next[a]);
			if (!tac_policy_lookup(p, to_oblock(b), &cb,
					       r->write ? TAC_USE_WRITE :
							  TAC_USE_READ)) {
				hits++;
				time_us += c_hit;
				cache_io(&ios, &last, cb, false);
				continue;
			}
			time_us += c_miss;
			ret = tac_policy_admit(p, to_oblock(b), &cb, &ev);
			if (ret < 0)
				last = U64_MAX;
			if (ret >= 0) {
				cache_io(&ios, &last, cb, true);
				admits++;
				time_us += c_admit;
				evicts += ret == 1;
			}
		}
	}
	if (is_tac)
		fold_hits(p, &log, &seq_req, &seq_acc, &mismatch);
	res->seconds = now_s(CLOCK_THREAD_CPUTIME_ID) - t0;
	res->wall_seconds = now_s(CLOCK_MONOTONIC) - w0;
	tac_policy_stats(p, &st);
	res->accesses = a;
	res->reads = reads;
	res->writes = a - reads;
	res->hits = hits;
	res->misses = a - hits;
	res->admissions = admits;
	res->evictions = evicts;
	res->bypasses = st.bypasses;
	res->invalidations = inval;
	res->io_time_us = time_us;
	res->cache_ios = ios;
	res->seq_requests = seq_req;
	res->random_requests = t->nr - seq_req;
	res->seq_accesses = seq_acc;
	res->random_accesses = a - seq_acc;
	res->ram_bytes = st.ram_bytes;
	if (mismatch)
		fprintf(stderr,
			"%s: warning: TAC classified %" PRIu64 " requests differently in the replay than in the classifier pass\n",
			prog, mismatch);
	if (is_tac && (st.admissions != admits || st.evictions != evicts))
		fprintf(stderr,
			"%s: warning: TAC's own stats (admissions %" PRIu64 ", evictions %" PRIu64 ") differ from the replay's\n",
			prog, st.admissions, st.evictions);
	tac_policy_destroy(p);
}

/* ------------------------------------------------------------ output */

/* @s as a JSON string body: quotes, backslashes, control bytes escaped. */
static const char *json_str(const char *s)
{
	static char buf[6 * sizeof(((struct trace *)0)->name) + 1];
	char *o = buf;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			o += sprintf(o, "\\u%04x", c);
		} else {
			*o++ = (char)c;
		}
	}
	*o = '\0';
	return buf;
}

static void print_json(const struct trace *t, const char *format,
		       u64 bs, u32 nr_blocks, const struct result *r)
{
	printf("{\"policy\":\"%s\",\"trace\":\"%s\",\"format\":\"%s\","
	       "\"block_size\":%" PRIu64 ",\"cache_blocks\":%u,"
	       "\"cache_bytes\":%" PRIu64 ",\"extent_blocks\":%u,"
	       "\"requests\":%" PRIu64 ",\"accesses\":%" PRIu64 ","
	       "\"reads\":%" PRIu64 ",\"writes\":%" PRIu64 ","
	       "\"hits\":%" PRIu64 ",\"misses\":%" PRIu64 ","
	       "\"hit_ratio\":%.6f,\"admissions\":%" PRIu64 ","
	       "\"evictions\":%" PRIu64 ",\"bypasses\":%" PRIu64 ","
	       "\"invalidations\":%" PRIu64 ",\"write_mode\":\"%s\","
	       "\"io_time_ms\":%.3f,\"cache_ios\":%" PRIu64 ","
	       "\"seq_requests\":%" PRIu64 ",\"random_requests\":%" PRIu64 ","
	       "\"seq_accesses\":%" PRIu64 ",\"random_accesses\":%" PRIu64 ","
	       "\"malformed_lines\":%" PRIu64 ",\"skipped_lines\":%" PRIu64 ","
	       "\"policy_ram_bytes\":%" PRIu64 ",\"sim_seconds\":%.6f,"
	       "\"sim_wall_seconds\":%.6f,"
	       "\"accesses_per_sec\":%.0f,\"cost_ssd_read_us\":%u,"
	       "\"cost_ssd_write_us\":%" PRIu64 ",\"cost_hdd_random_us\":%u,"
	       "\"cost_hdd_seq_us\":%u}\n",
	       r->policy, json_str(t->name), format, bs, nr_blocks,
	       (u64)nr_blocks * bs, params.extent_blocks, t->nr, r->accesses,
	       r->reads, r->writes, r->hits, r->misses,
	       r->accesses ? (double)r->hits / r->accesses : 0.0,
	       r->admissions, r->evictions, r->bypasses, r->invalidations,
	       write_around ? "around" : "allocate", r->io_time_us / 1000.0,
	       r->cache_ios, r->seq_requests, r->random_requests,
	       r->seq_accesses, r->random_accesses, t->malformed, t->skipped,
	       r->ram_bytes, r->seconds, r->wall_seconds,
	       r->seconds > 0 ? r->accesses / r->seconds : 0.0,
	       params.cost_cache_us, cost_ssd_write_us,
	       params.cost_hdd_random_us, params.cost_hdd_seq_us);
}

static void print_header(const struct trace *t, u64 bs, u32 nr_blocks)
{
	printf("trace %s: %" PRIu64 " requests, %" PRIu64 " accesses, %" PRIu64
	       " malformed lines skipped\n",
	       t->name, t->nr, t->accesses, t->malformed);
	printf("cache %u blocks of %" PRIu64 " bytes; extent %u blocks; costs us: "
	       "SSD read %u, SSD write %" PRIu64 ", HDD random %u, HDD seq %u\n",
	       nr_blocks, bs, params.extent_blocks, params.cost_cache_us,
	       cost_ssd_write_us, params.cost_hdd_random_us,
	       params.cost_hdd_seq_us);
	printf("%-6s %12s %12s %12s %8s %12s %12s %14s %12s %10s %10s %11s\n",
	       "policy", "accesses", "hits", "misses", "hit%", "admissions",
	       "evictions", "io_time_ms", "cache_ios", "seq_req", "rand_req",
	       "acc/s");
}

static void print_row(const struct result *r)
{
	printf("%-6s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %8.3f %12" PRIu64
	       " %12" PRIu64 " %14.3f %12" PRIu64 " %10" PRIu64 " %10" PRIu64
	       " %11.0f\n",
	       r->policy, r->accesses, r->hits, r->misses,
	       r->accesses ? 100.0 * r->hits / r->accesses : 0.0,
	       r->admissions, r->evictions, r->io_time_us / 1000.0,
	       r->cache_ios,
	       r->seq_requests, r->random_requests,
	       r->seconds > 0 ? r->accesses / r->seconds : 0.0);
}

/* ------------------------------------------------------------ main */

static const char *const all_policies[] = { "tac", "lru",  "fifo", "clock",
					    "arc", "lru2", "opt" };
#define NR_ALL (sizeof(all_policies) / sizeof(all_policies[0]))

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "cache-size", required_argument, NULL, 'c' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "extent-size", required_argument, NULL, 'e' },
		{ "format", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "blkparse-event", required_argument, NULL, 'E' },
		{ "param", required_argument, NULL, 'P' },
		{ "cost-ssd-write", required_argument, NULL, 'W' },
		{ "max-errors", required_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "write-mode", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *policies[NR_ALL];
	u32 nr_policies = 0;
	u64 sizes[16], bs = 4096, extent_bytes = 0, v;
	u32 nr_sizes = 0, i, s;
	enum trace_format fmt = FMT_AUTO;
	char blk_event = 'Q';
	bool json = false, want_opt = false;
	char *overrides[64];
	bool cache_write_param = false;
	u32 nr_overrides = 0;
	struct trace t = { 0 };
	u64 *next = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "p:c:b:e:f:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			char *list = strdup(optarg), *save = NULL, *tok;

			for (tok = strtok_r(list, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				bool known = false;

				for (i = 0; i < NR_ALL; i++) {
					if (strcmp(tok, "all") &&
					    strcmp(tok, all_policies[i]))
						continue;
					known = true;
					for (s = 0; s < nr_policies; s++)
						if (policies[s] == all_policies[i])
							break;
					if (s == nr_policies)
						policies[nr_policies++] =
							all_policies[i];
				}
				if (!known)
					die("unknown policy '%s'", tok);
			}
			free(list);
			break;
		}
		case 'c': {
			char *list = strdup(optarg), *save = NULL, *tok;

			for (tok = strtok_r(list, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (nr_sizes == 16)
					die("at most 16 cache sizes");
				if (!parse_size(tok, &sizes[nr_sizes]) ||
				    !sizes[nr_sizes])
					die("bad cache size '%s'", tok);
				nr_sizes++;
			}
			free(list);
			break;
		}
		case 'b':
			if (!parse_size(optarg, &bs) || bs < 512 ||
			    bs > (1 << 30) || bs % 512)
				die("bad block size '%s' (a multiple of 512)",
				    optarg);
			break;
		case 'e':
			if (!parse_size(optarg, &extent_bytes) || !extent_bytes)
				die("bad extent size '%s'", optarg);
			break;
		case 'f':
			fmt = trace_format_parse(optarg);
			if ((int)fmt < 0)
				die("unknown format '%s'", optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'E':
			if (strcmp(optarg, "Q") && strcmp(optarg, "C"))
				die("--blkparse-event is Q or C");
			blk_event = optarg[0];
			break;
		case 'P':
			if (nr_overrides == 64)
				die("too many --param");
			overrides[nr_overrides++] = optarg;
			break;
		case 'W':
			if (!parse_size(optarg, &cost_ssd_write_us) ||
			    cost_ssd_write_us > UINT32_MAX)
				die("bad --cost-ssd-write '%s'", optarg);
			cost_ssd_write_set = true;
			break;
		case 'm':
			if (!parse_size(optarg, &v) || v > 1000000)
				die("bad --max-errors '%s'", optarg);
			max_reports = (unsigned int)v;
			break;
		case 'q':
			quiet = true;
			break;
		case 'w':
			if (!strcmp(optarg, "around"))
				write_around = true;
			else if (strcmp(optarg, "allocate"))
				die("--write-mode is allocate or around");
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!nr_policies || !nr_sizes || optind >= argc) {
		usage(stderr);
		return 2;
	}

	if (tac_built())
		tac_params_default(&params);
	else
		fallback_params(&params);
	for (i = 0; i < nr_overrides; i++) {
		char *eq = strchr(overrides[i], '=');
		u32 *field;

		if (!eq)
			die("--param wants NAME=VALUE, not '%s'", overrides[i]);
		*eq = '\0';
		field = param_ref(overrides[i]);
		if (!field || !parse_size(eq + 1, &v) || v > UINT32_MAX)
			die("bad --param %s=%s", overrides[i], eq + 1);
		*field = (u32)v;
		if (field == &params.cost_cache_write_us)
			cache_write_param = true;
	}
	if (extent_bytes) {
		if (extent_bytes % bs || extent_bytes / bs > TAC_MAX_EXTENT_BLOCKS)
			die("extent size must be a multiple of the block size, at most %u blocks",
			    TAC_MAX_EXTENT_BLOCKS);
		params.extent_blocks = (u32)(extent_bytes / bs);
	}
	if (!params.extent_blocks)
		die("extent_blocks must not be 0");
	/*
	 * One cost for a cache write, in the policy's temperatures and in
	 * the simulated time: --cost-ssd-write, else --param
	 * cost_cache_write_us, else a read's cost (as before both existed).
	 */
	if (cost_ssd_write_set)
		params.cost_cache_write_us = (u32)cost_ssd_write_us;
	else if (cache_write_param)
		cost_ssd_write_us = params.cost_cache_write_us;
	else
		cost_ssd_write_us = params.cost_cache_write_us =
			params.cost_cache_us;
	for (s = 0; s < nr_sizes; s++) {
		if (sizes[s] / bs == 0 || sizes[s] / bs >= UINT32_MAX)
			die("cache size %" PRIu64 " gives no or too many blocks",
			    sizes[s]);
		if (tac_built()) {
			const char *why = NULL;

			if (tac_params_check(&params, (u32)(sizes[s] / bs), &why))
				die("TAC parameters rejected: %s",
				    why ? why : "?");
		}
	}
	for (i = 0; i < nr_policies; i++) {
		if (!strcmp(policies[i], "tac") && !tac_built()) {
			if (nr_policies == 1)
				die("policy tac: not built (dm-tac/policy/ missing)");
			fprintf(stderr, "%s: policy tac: not built, skipped\n",
				prog);
			memmove(&policies[i], &policies[i + 1],
				(--nr_policies - i) * sizeof(policies[0]));
			i--;
			continue;
		}
		want_opt |= !strcmp(policies[i], "opt");
	}

	fast_max_blocks = ((bs * 3 > STREAM_MIN_BYTES ? bs * 3 :
			    STREAM_MIN_BYTES) - 1) / bs;
	for (i = optind; i < (u32)argc; i++) {
		const char *base = strrchr(argv[i], '/');
		size_t len = strlen(t.name);

		load_file(&t, argv[i], fmt, blk_event, bs);
		snprintf(t.name + len, sizeof(t.name) - len, "%s%s",
			 len ? "+" : "", base ? base + 1 : argv[i]);
	}
	if (t.malformed > max_reports)
		fprintf(stderr, "%s: %" PRIu64 " malformed lines in all (%u shown)\n",
			prog, t.malformed, max_reports);
	if (!t.nr)
		die("no requests in the trace");

	classify(&t, (u32)(sizes[0] / bs));
	if (want_opt)
		next = next_uses(&t);

	for (s = 0; s < nr_sizes; s++) {
		u32 nr_blocks = (u32)(sizes[s] / bs);

		if (!json)
			print_header(&t, bs, nr_blocks);
		for (i = 0; i < nr_policies; i++) {
			struct result r;
			bool is_opt = !strcmp(policies[i], "opt");

			replay(&t, policies[i], nr_blocks, is_opt ? next : NULL,
			       &r);
			if (json)
				print_json(&t, t.format, bs, nr_blocks, &r);
			else
				print_row(&r);
			fflush(stdout);
		}
		if (!json && s + 1 < nr_sizes)
			putchar('\n');
	}
	free(next);
	free(t.r);
	return 0;
}
