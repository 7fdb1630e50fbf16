// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac policy core: the TAC policy (temperature-aware caching).
 *
 * Canim et al., "SSD Bufferpool Extensions for Database Systems", section
 * 3: cache the blocks whose extent would cost the disk the most time, as
 * measured by the extent's temperature (tac-temp.c) fed by the access
 * classifier (tac-seq.c); admit a block only when it is warmer than the
 * coldest cached block, found with a lazily corrected min-heap
 * (tac-heap.c).  Do et al., "Turbocharging DBMS Buffer Pool Using SSDs",
 * adds aggressive filling (section 3.3.1) and physical invalidation
 * (section 2.5), both used here.
 *
 * Beyond the papers (issue 10, measured with make bench-sim): TAC's heap
 * orders blocks by their extent's temperature alone, so a block in a warm
 * extent that is never used again stays, and one used again in a cooler
 * extent goes; on database traces that lost to LRU and ARC.  Here the
 * heap key is GreedyDual's (Cao and Irani): the inflation value plus a
 * credit that grows with the extent's temperature (tac_key()), renewed
 * lazily when a block used since its key was set reaches the top.
 * Admission still compares temperatures, the candidate's against the
 * victim's, through a filter that learns from ghosts of the blocks it
 * refused and evicted (tac_learn()); a victim whose extent warmed while it
 * sat unused is keyed again rather than refuse everything (tac_unstick()).
 *
 * Per cache block this file keeps (numbers for the published budget):
 *   struct tac_block      9 bytes: origin block (40 bits), hash or free
 *                                  list link
 *   pos[]                 4 bytes: heap position, or the block's state
 *   heap node             8 bytes: key (inflation + credit), block
 *   hash buckets          3 bytes: nr_blocks * 3 / 4 heads of 4 bytes
 *   dirty, held, ref      3 bits
 *   ghosts                2 bits: 2 bytes per 8 blocks, at least 4096
 * = 24.625 bytes, plus the statistics table (16 bytes per extent slot) and
 * a few KiB per policy.  tac_policy_ram_bytes() is the exact figure.
 *
 * Everything is allocated by tac_policy_create(); the methods only index
 * into those arrays with 32-bit block numbers.  The caller serialises all
 * calls (tac-policy.h), so no helper here locks anything.
 */
#include <linux/bitops.h>
#include <linux/bug.h>
#include <linux/compiler.h>
#include <linux/container_of.h>
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "tac-heap.h"
#include "tac.h"
#include "tac-seq.h"
#include "tac-temp.h"

/*
 * Default device costs for 4 KiB blocks, in microseconds (TAC eq. 1).
 *
 * Disk: the 7200 rpm Seagate SATA drive of TAC section 4.1: 8.2 ms average
 * seek, 4.17 ms average rotational latency, 1070 Mb/s maximum media rate,
 * at which a 4 KiB block takes 4096 * 8 / 1070e6 s = 30.6 us.  A random
 * read pays all three: 8200 + 4170 + 31 = 12401 us; a read in a sequential
 * run only the transfer: 31 us.
 *
 * SSD: 20 us for a 4 KiB random read, typical of a current NVMe drive at
 * low queue depth (datasheets give 20 to 90 us; TAC's Fusion-io card had
 * 50 us).  Eq. 1 assumes the SSD read is cheaper than a sequential disk
 * read (TAC section 3.1); with the low end of that range it is, and
 * sequential accesses still warm their extent a little (31 - 20 = 11 us,
 * against 12381 us for a random one).  A slower SSD makes S_HDD - R_SSD
 * negative: the cost is then taken as 0 and scans warm nothing.
 */
#define TAC_DEFAULT_HDD_RANDOM_US	12401
#define TAC_DEFAULT_HDD_SEQ_US		31
#define TAC_DEFAULT_CACHE_US		20
#define TAC_DEFAULT_CACHE_WRITE_US	20

/*
 * Halve temperatures every 2^20 block accesses (4 GiB of I/O at 4 KiB).
 * TAC gives no number.  Long enough that an extent re-read once per
 * hundreds of thousands of accesses keeps a useful temperature (a cache of
 * a few GiB turns over more slowly than that), short enough to follow a
 * shift of the hot set within a few periods.  A temperature settles near
 * 2 * period * share * cost, so with the random cost above only an extent
 * taking more than 16% of all accesses reaches the u32 ceiling (where it
 * merely ties with other saturated extents).
 */
#define TAC_DEFAULT_AGING_PERIOD	SZ_1M

/* 2^20 slots, 16 MiB: tracks 128 GiB of origin at 32 blocks of 4 KiB. */
#define TAC_DEFAULT_STATS_EXTENTS	SZ_1M

/* TAC section 3.3: re-check the heap's top at most five times. */
#define TAC_HEAP_RECHECKS	5

/* Held blocks at the top of the heap stepped over before giving up. */
#define TAC_HELD_SKIPS		8

/* admit_margin bound that keeps coldest * (100 + margin) within a u64. */
#define TAC_MAX_ADMIT_MARGIN	1000

#define TAC_NONE	U32_MAX

/* tac_decide() found no block to compare with. */
#define TAC_NO_VICTIM	U64_MAX

/* Refusals in a row against one victim before it is keyed again. */
#define TAC_STUCK_REFUSALS	64

/*
 * Votes per step of the learning filter, its loosest setting (the victim's
 * temperature halved 8 times) and its tightest (doubled 4 times).
 */
#define TAC_LEARN_VOTES		256
#define TAC_MAX_LOOSEN		8
#define TAC_MAX_TIGHTEN		4

/* Ghost fingerprints: one per 8 cache blocks, at least 4096. */
#define TAC_MIN_GHOSTS		4096

/* Heap keys stay within 2^31 of each other (tac_key()). */
#define TAC_MAX_CREDIT	(BIT(30) - 1)

/* pos[] values of blocks outside the heap; clean MAPPED blocks are in it. */
#define CB_FREE		(HEAP_NOT_IN | 0)
#define CB_DIRTY	(HEAP_NOT_IN | 1)
#define CB_DETACHED	(HEAP_NOT_IN | 2)

/*
 * Packed to 9 bytes so that one hash chain step touches one cache line:
 * the origin block in 40 bits (below TAC_MAX_ORIGIN_BLOCKS, which
 * tac_admit() and tac_load_mapping() refuse to pass), read and written
 * only through tac_ob() and tac_set_ob().
 */
struct tac_block {
	u32 ob_lo;
	u8 ob_hi;
	u32 next;		/* hash chain if MAPPED, free list if FREE */
} __packed;

struct tac {
	struct tac_policy policy;
	struct tac_params params;

	u32 nr_blocks;
	unsigned int extent_shift;
	u32 cost_seq;		/* S_HDD - R_SSD, clamped at 0 */
	u32 cost_random;	/* R_HDD - R_SSD, clamped at 0 */
	u32 cost_seq_w;		/* S_HDD - W_SSD, clamped at 0 */
	u32 cost_random_w;	/* R_HDD - W_SSD, clamped at 0 */
	u32 in_epoch;		/* block accesses since the last halving */
	u32 inflation;		/* the key of the last victim (evicted, or
				 * passed over by tac_place()) */
	u32 stuck;		/* refusals in a row against one victim */
	u32 stuck_item;

	u32 last_cost;		/* per block of the last request() */
	u64 req_first;		/* the last request()'s blocks */
	u64 req_end;

	/*
	 * The admission filter learns (tac_learn()): a block must be warmer
	 * than the victim's extent cooled by 2^step (warmed when step < 0).
	 * ghost[] holds fingerprints of blocks refused and of blocks
	 * evicted; a miss that finds its own is a vote.
	 */
	u16 *ghost;
	u32 ghost_mask;
	int step;
	u32 votes;
	u64 refused_back;	/* cost of the misses on refused blocks */
	u64 evicted_back;	/* cost of the misses on evicted blocks */

	struct tac_block *blocks;
	u32 *buckets;
	u32 nr_buckets;
	u32 *pos;
	struct tac_heap_node *nodes;
	struct tac_heap heap;
	unsigned long *dirty;
	unsigned long *held;
	unsigned long *ref;	/* used since its key was last set */

	u32 free_head;		/* FREE blocks below fresh, linked */
	u32 fresh;		/* the frontier: FREE blocks >= fresh are
				 * not linked, tac_free_pop() finds them */
	u32 nr_free;
	u32 nr_mapped;
	u32 nr_dirty;
	u32 nr_detached;

	struct tac_temp_table temps;
	struct tac_temp_entry *slots;
	struct tac_seq_window seq;

	/*
	 * would_admit()'s answer, which admit() of the same block reuses if
	 * no method that could change it ran in between: the lazy heap
	 * refresh is bounded, so deciding twice could differ.
	 */
	struct {
		tac_oblock_t oblock;
		struct tac_heap_node victim;
		u64 against;
		int r;
		bool valid;
	} pending;

	u64 seq_requests;
	u64 random_requests;
	u64 admissions;
	u64 bypasses;
	u64 evictions;
	u64 ram_bytes;
};

static struct tac *to_tac(struct tac_policy *p)
{
	return container_of(p, struct tac, policy);
}

/* Every method that could change an admission decision calls this. */
static struct tac *to_tac_changed(struct tac_policy *p)
{
	struct tac *tac = to_tac(p);

	tac->pending.valid = false;
	return tac;
}

/*
 * Parameters and memory
 */

void tac_params_default(struct tac_params *params)
{
	params->extent_blocks = 32;	/* TAC section 3.1: 32 pages */
	params->seq_window = 20;	/* TAC section 3.1, footnote 1 */
	params->seq_threshold = 2;	/* ditto */
	params->aging_period = TAC_DEFAULT_AGING_PERIOD;
	params->admit_margin = 1;	/* TAC section 3.3: smoothed heap */
	params->fill_threshold = 95;	/* Turbocharging table 2: tau */
	params->cost_hdd_random_us = TAC_DEFAULT_HDD_RANDOM_US;
	params->cost_hdd_seq_us = TAC_DEFAULT_HDD_SEQ_US;
	params->cost_cache_us = TAC_DEFAULT_CACHE_US;
	params->cost_cache_write_us = TAC_DEFAULT_CACHE_WRITE_US;
	params->stats_extents = TAC_DEFAULT_STATS_EXTENTS;
}

int tac_params_check(const struct tac_params *params, u32 nr_blocks,
		     const char **why)
{
	const char *bad = NULL;

	if (!nr_blocks || nr_blocks > TAC_MAX_CACHE_BLOCKS)
		bad = "number of cache blocks must be 1 to 2^31";
	else if (!is_power_of_2(params->extent_blocks) ||
		 params->extent_blocks > TAC_MAX_EXTENT_BLOCKS)
		bad = "extent_blocks must be a power of 2 up to 2^20";
	else if (!params->seq_window ||
		 params->seq_window > TAC_MAX_SEQ_WINDOW)
		bad = "seq_window must be 1 to 256";
	else if (params->seq_threshold >= params->seq_window)
		bad = "seq_threshold must be below seq_window";
	else if (!params->aging_period)
		bad = "aging_period must be at least 1";
	else if (params->admit_margin > TAC_MAX_ADMIT_MARGIN)
		bad = "admit_margin must be 0 to 1000 percent";
	else if (params->fill_threshold > 100)
		bad = "fill_threshold must be 0 to 100 percent";
	else if (params->stats_extents < TAC_MIN_STATS_EXTENTS ||
		 params->stats_extents > TAC_MAX_STATS_EXTENTS)
		bad = "stats_extents must be 16 to 2^28";

	if (why)
		*why = bad;
	return bad ? -EINVAL : 0;
}

static u32 tac_nr_buckets(u32 nr_blocks)
{
	/* Load factor 4/3: chains stay short within the memory budget. */
	return nr_blocks - nr_blocks / 4;
}

static u32 tac_nr_ghosts(u32 nr_blocks)
{
	return max_t(u32, roundup_pow_of_two(max_t(u32, nr_blocks / 8, 1)),
		     TAC_MIN_GHOSTS);
}

static u64 tac_bitmap_bytes(u32 nr_blocks)
{
	return (u64)BITS_TO_LONGS((u64)nr_blocks) * sizeof(unsigned long);
}

u64 tac_policy_ram_bytes(u32 nr_blocks, const struct tac_params *params)
{
	u64 n = nr_blocks;

	return sizeof(struct tac) +
	       n * sizeof(struct tac_block) +
	       n * sizeof(u32) +			/* pos */
	       n * sizeof(struct tac_heap_node) +
	       (u64)tac_nr_buckets(nr_blocks) * sizeof(u32) +
	       3 * tac_bitmap_bytes(nr_blocks) +	/* dirty, held, ref */
	       (u64)tac_nr_ghosts(nr_blocks) * sizeof(u16) +
	       (u64)params->stats_extents * sizeof(struct tac_temp_entry);
}

/* kvmalloc() refuses more than INT_MAX bytes; vmalloc() does not. */
static void *tac_array_alloc(size_t n, size_t size)
{
	if (n > INT_MAX / size)
		return vcalloc(n, size);
	return kvcalloc(n, size, GFP_KERNEL);
}

static void tac_apply_params(struct tac *tac, const struct tac_params *params)
{
	u32 cache = params->cost_cache_us;

	tac->params = *params;
	tac->cost_seq = params->cost_hdd_seq_us > cache ?
			params->cost_hdd_seq_us - cache : 0;
	tac->cost_random = params->cost_hdd_random_us > cache ?
			   params->cost_hdd_random_us - cache : 0;
	cache = params->cost_cache_write_us;
	tac->cost_seq_w = params->cost_hdd_seq_us > cache ?
			  params->cost_hdd_seq_us - cache : 0;
	tac->cost_random_w = params->cost_hdd_random_us > cache ?
			     params->cost_hdd_random_us - cache : 0;
}

/*
 * Mapping: origin block -> cache block hash, free blocks
 */

static tac_oblock_t tac_ob(const struct tac *tac, u32 cb)
{
	const struct tac_block *b = &tac->blocks[cb];

	return to_oblock((u64)b->ob_hi << 32 | b->ob_lo);
}

static void tac_set_ob(struct tac *tac, u32 cb, tac_oblock_t oblock)
{
	u64 ob = from_oblock(oblock);

	tac->blocks[cb].ob_lo = (u32)ob;
	tac->blocks[cb].ob_hi = ob >> 32;
}

static u32 tac_bucket(struct tac *tac, tac_oblock_t oblock)
{
	u32 h = (from_oblock(oblock) * 0x61c8864680b583ebULL) >> 32;

	return ((u64)h * tac->nr_buckets) >> 32;
}

static u32 tac_hash_find(struct tac *tac, tac_oblock_t oblock)
{
	u32 cb = tac->buckets[tac_bucket(tac, oblock)];

	while (cb != TAC_NONE && tac_ob(tac, cb) != oblock)
		cb = tac->blocks[cb].next;
	return cb;
}

static void tac_hash_insert(struct tac *tac, u32 cb)
{
	u32 b = tac_bucket(tac, tac_ob(tac, cb));

	tac->blocks[cb].next = tac->buckets[b];
	tac->buckets[b] = cb;
}

static void tac_hash_remove(struct tac *tac, u32 cb)
{
	u32 b = tac_bucket(tac, tac_ob(tac, cb));
	u32 prev = TAC_NONE, cur = tac->buckets[b];

	while (cur != cb) {
		if (WARN_ON_ONCE(cur == TAC_NONE))
			return;
		prev = cur;
		cur = tac->blocks[cur].next;
	}
	if (prev == TAC_NONE)
		tac->buckets[b] = tac->blocks[cb].next;
	else
		tac->blocks[prev].next = tac->blocks[cb].next;
}

/*
 * A FREE block is on the free list if and only if it is below the
 * frontier: one past it (placed there by tac_place(), then released) is
 * found by the frontier, and must not be on the list too, or a claim
 * past the frontier would leave it there, to be handed out twice.
 */
static void tac_free_push(struct tac *tac, u32 cb)
{
	tac->pos[cb] = CB_FREE;
	tac->nr_free++;
	if (cb >= tac->fresh)
		return;
	tac->blocks[cb].next = tac->free_head;
	tac->free_head = cb;
}

/*
 * Released blocks first, then the others in order from the frontier: no
 * O(n) free list to build at creation, and load_mapping() and tac_place()
 * can claim any FREE block past the frontier in O(1).
 */
static u32 tac_free_pop(struct tac *tac)
{
	u32 cb = tac->free_head;

	if (cb != TAC_NONE) {
		tac->free_head = tac->blocks[cb].next;
		tac->nr_free--;
		return cb;
	}
	while (tac->fresh < tac->nr_blocks) {
		cb = tac->fresh++;
		if (tac->pos[cb] == CB_FREE) {
			tac->nr_free--;
			return cb;
		}
	}
	WARN_ON_ONCE(tac->nr_free);
	return TAC_NONE;
}

/* Take FREE block @cb out of the free pool (load_mapping(), tac_place()). */
static void tac_free_claim(struct tac *tac, u32 cb)
{
	u32 prev = TAC_NONE, cur = tac->free_head;

	tac->nr_free--;
	if (cb >= tac->fresh)
		return;		/* the frontier will step over it */

	/* Rare: load_mapping() at construction, before any release(). */
	while (cur != cb) {
		if (WARN_ON_ONCE(cur == TAC_NONE))
			return;
		prev = cur;
		cur = tac->blocks[cur].next;
	}
	if (prev == TAC_NONE)
		tac->free_head = tac->blocks[cb].next;
	else
		tac->blocks[prev].next = tac->blocks[cb].next;
}

static bool tac_is_mapped(struct tac *tac, u32 cb)
{
	return tac_heap_contains(&tac->heap, cb) || tac->pos[cb] == CB_DIRTY;
}

static bool tac_bad_cblock(struct tac *tac, tac_cblock_t cblock)
{
	return WARN_ON_ONCE(from_cblock(cblock) >= tac->nr_blocks);
}

/*
 * Temperatures
 */

static u64 tac_extent_of(struct tac *tac, u64 oblock)
{
	return oblock >> tac->extent_shift;
}

static u32 tac_block_temp(struct tac *tac, u32 cb)
{
	u64 ob = from_oblock(tac_ob(tac, cb));

	return tac_temp_get(&tac->temps, tac_extent_of(tac, ob));
}

/*
 * A clean block's heap key (GreedyDual): the inflation value, which is the
 * key of the last block evicted, plus the block's credit.  The credit is
 * its extent's temperature up to one random access (R = cost_random), and
 * grows with the temperature's logarithm past it, R * (1 + log2(t / R)):
 * an extent a thousand times hotter does not keep its blocks a thousand
 * times longer when they are not used.
 *
 * The heap's serial-number order needs every key within 2^31 of every
 * other.  Every key is at least the inflation value: a new key is made
 * from it, the inflation value becomes the key of a victim, the heap's
 * smallest unheld key, and held blocks stepped over on the way go back at
 * that key at least (tac_find_victim()).  And no key is more than
 * TAC_MAX_CREDIT (2^30) above it.
 */
static u32 tac_key(struct tac *tac, u32 t)
{
	u64 r = max_t(u32, tac->cost_random, 1), credit = t;

	if (t > r)
		credit = r * (1 + ilog2(t / r));
	return tac->inflation + (u32)min_t(u64, credit, TAC_MAX_CREDIT);
}

static bool tac_key_before(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}

static void tac_age_tick(struct tac *tac)
{
	tac_temp_halve(&tac->temps);
	tac->in_epoch = 0;
}

/*
 * TAC eq. 1: add @cost per block to the extents of blocks [@ob, @ob + @nr),
 * halving every aging_period block accesses.  Runs split at extent and
 * epoch boundaries, so the result is the same as adding block by block:
 * O(1 + nr / extent_blocks + nr / aging_period).
 */
static void tac_account(struct tac *tac, u64 ob, u32 nr, u32 cost)
{
	u32 extent_blocks = tac->params.extent_blocks;

	while (nr) {
		u32 room = tac->params.aging_period - tac->in_epoch;
		u32 left = extent_blocks - (u32)(ob & (extent_blocks - 1));
		u32 run = min3(nr, room, left);

		tac_temp_add(&tac->temps, tac_extent_of(tac, ob),
			     (u64)run * cost);
		tac->in_epoch += run;
		if (tac->in_epoch >= tac->params.aging_period)
			tac_age_tick(tac);
		ob += run;
		nr -= run;
	}
}

/*
 * Admission and victim selection (TAC sections 3.2, 3.3)
 */

/*
 * The smoothed heap: @t must beat @coldest by admit_margin percent, once
 * @coldest is halved @step times (doubled -@step times if @step < 0).
 * No overflow: t and coldest are below 2^32, the margin at most 1000.
 */
static bool tac_warmer_at(struct tac *tac, u32 t, u64 coldest, int step)
{
	u64 mine = (u64)t * 100;
	u64 theirs = coldest * (100 + tac->params.admit_margin);

	if (step >= 0)
		mine <<= step;
	else
		theirs <<= -step;
	return mine > theirs;
}

static bool tac_warmer(struct tac *tac, u32 t, u64 coldest)
{
	return tac_warmer_at(tac, t, coldest, tac->step);
}

/*
 * A ghost is 16 bits: 14 of the block's hash, and which list it is on.  An
 * empty slot is 0.  A fingerprint may match another block (1 in 2^14 per
 * lookup): a stray vote, no more.
 */
#define GHOST_REFUSED	1
#define GHOST_EVICTED	2

static u32 tac_ghost_slot(struct tac *tac, tac_oblock_t oblock, u16 *fp)
{
	u64 h = from_oblock(oblock) * 0x9e3779b97f4a7c15ULL;

	*fp = (u16)(h >> 16) | GHOST_REFUSED | GHOST_EVICTED;
	return (h >> 32) & tac->ghost_mask;
}

/*
 * Issue 10's learning filter, after ARC's ghost lists.  A miss on a block
 * that one step looser would have admitted says the filter is too strict;
 * a miss on a block evicted for a newcomer that one step tighter would
 * have refused says it is too loose (for a refusal, one step or back to
 * the margin alone: tac_step_looser()).  Only those are remembered (see
 * tac_admit()): a block no step would have changed says nothing about the
 * step.  Each vote weighs the disk time the other decision would have
 * saved, net of the cache write (FD-Buffer's W_SSD) that an admission
 * costs:
 *   refused, back:  admitting it would have saved this miss (the request's
 *                   class: little for a scan) and cost one cache write, so
 *                   it weighs last_cost + 1 - W, and a return worth no
 *                   more than the write is no vote at all;
 *   evicted, back:  refusing its newcomer would have saved this miss and
 *                   that newcomer's cache write: last_cost + 1 + W (the 1:
 *                   a free miss still counts).
 * Every TAC_LEARN_VOTES votes the filter moves one step toward the side
 * that cost more: looser up to TAC_MAX_LOOSEN steps, and tighter than
 * admit_margin alone, down to TAC_MAX_TIGHTEN, where admitting costs more
 * than it saves (a scan the margin lets in, measured on make bench-sim's
 * DW trace).
 */
static bool tac_learn(struct tac *tac, bool refused)
{
	u64 miss = (u64)tac->last_cost + 1;
	u32 write = tac->params.cost_cache_write_us;
	int was = tac->step;

	if (refused) {
		if (miss <= write)
			return false;
		tac->refused_back += miss - write;
	} else {
		tac->evicted_back += miss + write;
	}
	if (++tac->votes < TAC_LEARN_VOTES)
		return false;
	if (tac->refused_back > tac->evicted_back &&
	    tac->step < TAC_MAX_LOOSEN)
		tac->step++;
	else if (tac->refused_back < tac->evicted_back &&
		 tac->step > -TAC_MAX_TIGHTEN)
		tac->step--;
	tac->votes = 0;
	tac->refused_back = 0;
	tac->evicted_back = 0;
	return tac->step != was;
}

/*
 * The step a refusal is judged against: one step looser than the filter,
 * and at least as loose as the margin alone.  A filter 4 steps tight
 * refuses blocks up to 16 times warmer than the victim, and one step
 * looser would refuse those up to 8 times too: if only the blocks one
 * step away left ghosts, the others' returns would never vote, and with
 * nothing evicted the filter would stay that tight (found by review; unit
 * test a_tightened_filter_loosens_again).  An eviction is judged one step
 * tighter, whatever the step: judging a loose filter's evictions against
 * the margin alone as well cost make bench-sim's OLTP trace 7% of I/O
 * time at 256M (more votes to tighten, from blocks any step evicts).
 */
static int tac_step_looser(struct tac *tac)
{
	return max_t(int, tac->step + 1, 0);
}

/* Remember @oblock as refused or evicted, over whatever the slot held. */
static void tac_ghost_add(struct tac *tac, tac_oblock_t oblock, bool refused)
{
	u16 fp;
	u32 slot = tac_ghost_slot(tac, oblock, &fp);

	tac->ghost[slot] = fp & ~(refused ? GHOST_EVICTED : GHOST_REFUSED);
}

/*
 * A miss on @oblock: if it is a ghost, vote and forget it.  True if the
 * filter moved.
 */
static bool tac_ghost_check(struct tac *tac, tac_oblock_t oblock)
{
	u16 fp;
	u32 slot = tac_ghost_slot(tac, oblock, &fp);
	u16 g = tac->ghost[slot];

	if (!g || (g | GHOST_REFUSED | GHOST_EVICTED) != fp)
		return false;
	tac->ghost[slot] = 0;
	return tac_learn(tac, g & GHOST_REFUSED);
}

/* Turbocharging section 3.3.1: aggressive filling up to tau percent. */
static bool tac_filling(struct tac *tac)
{
	u64 used = tac->nr_blocks - tac->nr_free;

	return used * 100 < (u64)tac->params.fill_threshold * tac->nr_blocks;
}

/*
 * A block used since its key was set gets a new one before it can be
 * evicted: the inflation value plus the credit of its extent's temperature
 * now (tac_key()).  That
 * is GreedyDual's update on a hit, made lazily, when the block reaches the
 * top (as TAC section 3.3 corrects its keys lazily), at most *@budget
 * times in all.
 */
static void tac_refresh_top(struct tac *tac, u32 *budget)
{
	while (*budget && !tac_heap_empty(&tac->heap)) {
		u32 cb = tac_heap_top(&tac->heap).item;

		if (!test_bit(cb, tac->ref))
			return;
		(*budget)--;
		__clear_bit(cb, tac->ref);
		tac_heap_update(&tac->heap, cb,
				tac_key(tac, tac_block_temp(tac, cb)));
	}
}

/*
 * The clean block with the lowest key that is not held, with its key;
 * false if none is found within TAC_HELD_SKIPS held blocks.  Held blocks
 * are popped and put back afterwards, so each costs O(log n).
 */
static bool tac_find_victim(struct tac *tac, struct tac_heap_node *victim)
{
	struct tac_heap_node aside[TAC_HELD_SKIPS];
	u32 budget = TAC_HEAP_RECHECKS, nr_aside = 0;
	bool found = false;

	for (;;) {
		tac_refresh_top(tac, &budget);
		if (tac_heap_empty(&tac->heap))
			break;
		*victim = tac_heap_top(&tac->heap);
		if (!test_bit(victim->item, tac->held)) {
			found = true;
			break;
		}
		if (nr_aside == TAC_HELD_SKIPS)
			break;
		aside[nr_aside++] = tac_heap_pop(&tac->heap);
	}
	/*
	 * Held blocks go back no lower than the victim's key, which becomes
	 * the inflation value if it is evicted (tac_key()).
	 */
	while (nr_aside--) {
		u32 key = aside[nr_aside].key, floor;

		floor = found ? victim->key : tac->inflation;
		if (tac_key_before(key, floor))
			key = floor;
		tac_heap_push(&tac->heap, aside[nr_aside].item, key);
	}
	return found;
}

/*
 * A victim unused since its extent warmed up refuses every cooler
 * candidate, and with nothing evicted it stays on top: admissions would
 * stop until it is used or its extent cools.  After TAC_STUCK_REFUSALS
 * refusals in a row against the same top, it is keyed again, its
 * extent's warmth counting as a use (as TAC's own lazy correction would),
 * and always behind its old key: with nothing evicted the inflation value
 * has not moved, and the same credit would leave it where it was, ahead
 * of blocks with its key.  The next block in line is compared from then
 * on.  At most one step past TAC_MAX_CREDIT per TAC_STUCK_REFUSALS
 * refusals: the keys stay far inside their 2^31 window.
 */
static void tac_unstick(struct tac *tac, const struct tac_heap_node *top)
{
	u32 key;

	if (tac->stuck_item != top->item) {
		tac->stuck_item = top->item;
		tac->stuck = 0;
	}
	if (++tac->stuck < TAC_STUCK_REFUSALS)
		return;
	tac->stuck = 0;
	key = tac_key(tac, tac_block_temp(tac, top->item));
	if (!tac_key_before(top->key, key))
		key = top->key + 1;
	tac_heap_update(&tac->heap, top->item, key);
}

/*
 * The admission decision for an origin block of temperature @t:
 *   0        take a free block;
 *   1        evict *@victim;
 *   -ENOSPC  bypass.
 *
 * Below fill_threshold percent used, every block is admitted (Turbocharging
 * 3.3.1).  From there on the smoothed-heap test applies (TAC 3.3) to the
 * temperatures, loosened or tightened by the learning filter: while free
 * blocks remain, against the extent of the heap's top, held or not (0 if
 * there is none), and a winner takes a free block, evicting nothing; once
 * no block is free, against the extent of the top block that is not
 * held, which the winner replaces.
 *
 * *@against is the temperature the candidate was compared with, or
 * TAC_NO_VICTIM if there was none (no step of the filter would admit).
 *
 * It may key blocks again on the way, which changes no mapping and no
 * counter: used blocks as a CLOCK hand passing spends their mark, and a
 * stuck top (tac_unstick()).  So would_admit() can share it, and admit()
 * reuse its answer.
 */
static int tac_decide(struct tac *tac, u32 t, struct tac_heap_node *victim,
		      u64 *against)
{
	u32 budget = TAC_HEAP_RECHECKS;

	*against = 0;
	if (tac->nr_free) {
		struct tac_heap_node top;

		if (tac_filling(tac))
			return 0;
		tac_refresh_top(tac, &budget);
		if (tac_heap_empty(&tac->heap))
			return tac_warmer(tac, t, 0) ? 0 : -ENOSPC;
		top = tac_heap_top(&tac->heap);
		*against = tac_block_temp(tac, top.item);
		if (tac_warmer(tac, t, *against))
			return 0;
		tac_unstick(tac, &top);
		return -ENOSPC;
	}

	*against = TAC_NO_VICTIM;
	if (!tac_find_victim(tac, victim))
		return -ENOSPC;
	*against = tac_block_temp(tac, victim->item);
	if (tac_warmer(tac, t, *against))
		return 1;
	tac_unstick(tac, victim);
	return -ENOSPC;
}

/*
 * The methods
 */

static void tac_destroy(struct tac_policy *p)
{
	struct tac *tac = to_tac(p);

	kvfree(tac->blocks);
	kvfree(tac->pos);
	kvfree(tac->nodes);
	kvfree(tac->buckets);
	kvfree(tac->dirty);
	kvfree(tac->held);
	kvfree(tac->ref);
	kvfree(tac->ghost);
	kvfree(tac->slots);
	kfree(tac);
}

static enum tac_class tac_request(struct tac_policy *p, tac_oblock_t first,
				  u32 nr_blocks, bool is_write)
{
	struct tac *tac = to_tac_changed(p);
	u64 ob = from_oblock(first);
	enum tac_class class;

	/*
	 * Writes count like reads, at what the cache charges for a write
	 * (FD-Buffer: cost_cache_write_us): in write-back mode a cached
	 * block saves the disk the write as well, and either way the extent
	 * is busy.  last_cost stays a read's: it prices a miss.
	 */

	if (unlikely(!nr_blocks))
		return TAC_RANDOM;
	if (unlikely(ob + nr_blocks - 1 < ob))
		nr_blocks = -ob;	/* clamp at the end of the u64 space */

	tac->req_first = ob;
	tac->req_end = ob + nr_blocks;
	class = tac_seq_classify(&tac->seq, ob, nr_blocks, tac->extent_shift,
				 tac->params.seq_window,
				 tac->params.seq_threshold);
	tac->last_cost = class == TAC_SEQUENTIAL ? tac->cost_seq : tac->cost_random;
	if (class == TAC_SEQUENTIAL) {
		tac->seq_requests++;
		tac_account(tac, ob, nr_blocks,
			    is_write ? tac->cost_seq_w : tac->cost_seq);
	} else {
		tac->random_requests++;
		tac_account(tac, ob, nr_blocks,
			    is_write ? tac->cost_random_w : tac->cost_random);
	}
	return class;
}

/*
 * Lockless (tac-policy.h, peek()): every index read is checked before it
 * is used, and the walk is bounded, so a chain changing under it can
 * give a wrong answer but never a wild read or an endless loop.  Hash
 * steps taken: the chains average under 1.5 links (nr_blocks * 4 / 3
 * buckets).
 */
#define TAC_PEEK_STEPS	16

static int tac_peek(struct tac_policy *p, tac_oblock_t oblock,
		    tac_cblock_t *cblock)
{
	struct tac *tac = to_tac(p);
	u32 cb = READ_ONCE(tac->buckets[tac_bucket(tac, oblock)]);
	u32 steps;

	for (steps = 0; steps < TAC_PEEK_STEPS; steps++) {
		/* Volatile: each field read once, where it is packed. */
		const volatile struct tac_block *b;
		u64 ob;

		if (cb >= tac->nr_blocks)
			return -ENOENT;		/* TAC_NONE, or torn */
		b = &tac->blocks[cb];
		ob = (u64)b->ob_hi << 32 | b->ob_lo;
		if (ob == from_oblock(oblock)) {
			*cblock = to_cblock(cb);
			return 0;
		}
		cb = b->next;
	}
	return -EAGAIN;
}

static bool tac_peek_dirty(struct tac_policy *p, tac_cblock_t cblock)
{
	struct tac *tac = to_tac(p);
	u32 cb = from_cblock(cblock);

	return cb < tac->nr_blocks &&
	       (READ_ONCE(tac->dirty[BIT_WORD(cb)]) & BIT_MASK(cb));
}

/*
 * @cb, mapped, was just read: what lookup(TAC_USE_READ) marks, so that it
 * is keyed again before it can leave (tac_refresh_top()).  A write does
 * not mark it (issue 10): under a database's own buffer pool, the write of
 * a page says the pool holds it, and the pool reads it again only once it
 * has let it go, if ever; the write of a page read a while ago is that
 * page's last use more often than not.  A mark there kept such blocks a
 * second lifetime, as LRU keeps them: make bench-sim's pgbench trace at
 * 32 MiB lost 13% to ARC in I/O time that way, and wins by 3% without.
 */
static void tac_mark_used(struct tac *tac, u32 cb)
{
	if (test_bit(cb, tac->ref))
		return;
	__set_bit(cb, tac->ref);
	/* The victim admit() would take was just used. */
	if (tac->pending.valid && tac->pending.victim.item == cb)
		tac->pending.valid = false;
}

static enum tac_class tac_hit(struct tac_policy *p, tac_oblock_t oblock,
			      u32 nr, tac_cblock_t cblock)
{
	struct tac *tac = to_tac(p);
	enum tac_class class = nr ? tac_request(p, oblock, nr, false) :
				    TAC_RANDOM;
	u32 cb = from_cblock(cblock);

	if (cb < tac->nr_blocks && tac_hash_find(tac, oblock) == cb)
		tac_mark_used(tac, cb);
	return class;
}

static int tac_lookup(struct tac_policy *p, tac_oblock_t oblock,
		      tac_cblock_t *cblock, enum tac_use use)
{
	struct tac *tac = to_tac(p);
	u32 cb = tac_hash_find(tac, oblock);

	if (cb == TAC_NONE) {
		/* A miss on a ghost is a vote; the filter may move. */
		if (use != TAC_PROBE && tac_ghost_check(tac, oblock))
			tac->pending.valid = false;
		return -ENOENT;
	}
	if (use == TAC_USE_READ)
		tac_mark_used(tac, cb);
	*cblock = to_cblock(cb);
	return 0;
}

static bool tac_would_admit(struct tac_policy *p, tac_oblock_t oblock)
{
	struct tac *tac = to_tac(p);
	u32 t;

	/* Asked again with nothing in between: the same answer. */
	if (tac->pending.valid && tac->pending.oblock == oblock)
		return tac->pending.r >= 0;
	t = tac_temp_get(&tac->temps, tac_extent_of(tac, from_oblock(oblock)));
	/* Keying used blocks again changes no mapping: kept for admit(). */
	tac->pending.r = tac_decide(tac, t, &tac->pending.victim,
				    &tac->pending.against);
	tac->pending.oblock = oblock;
	tac->pending.valid = true;
	return tac->pending.r >= 0;
}

/*
 * Placement (issue 10).  A database reads and writes a page of several
 * blocks at once, and dm-tac sends blocks that follow each other on the
 * cache device in one bio (read and write runs).  Past the fill, each
 * block's victim is wherever the heap's top happens to be, so a page's
 * blocks land apart; here a block may instead take a cache block next to
 * its origin neighbour's, when that block is nearly as cold as the victim.
 *
 * A cache block @n may take @oblock, of temperature @t, in place of the
 * victim tac_decide() chose (key @floor) when it is clean (in the heap),
 * not held, not used since its key was set, @oblock passes the admission
 * test against it too, and its key is at most 1/8 of the way from the
 * victim's to the key @oblock gets (none if that one is lower).  Blocks
 * of one page placed together have nearly the same key, so a page tends to
 * leave whole, and the next page takes its place whole.  tacsim on make
 * bench-sim's traces: I/O time within 0.5% either way, cache I/Os (hits
 * and fills in a row counted as one) 14% to 82% fewer.
 */
#define TAC_PLACE_SLACK_SHIFT	3	/* 1/8 */
#define TAC_PLACE_MAX		32	/* blocks a walk back spans */

static bool tac_may_replace(struct tac *tac, u32 n, u32 t, u32 floor)
{
	u32 key = tac_key(tac, t), lim = floor;

	if (n >= tac->nr_blocks || !tac_heap_contains(&tac->heap, n) ||
	    test_bit(n, tac->held) || test_bit(n, tac->ref) ||
	    !tac_warmer(tac, t, tac_block_temp(tac, n)))
		return false;
	if (tac_key_before(floor, key))
		lim += (key - floor) >> TAC_PLACE_SLACK_SHIFT;
	return !tac_key_before(lim, tac->nodes[tac->pos[n]].key);
}

/*
 * The cache block next to where origin block @ob + @dir is (after it for
 * @dir -1, before it for +1), if it may take @ob: while @r is 0 (a free
 * block was chosen), if it is free and past the frontier (off the free
 * list: claimed in O(1)); while @r is 1, tac_may_replace().
 */
static u32 tac_place_by(struct tac *tac, u64 ob, int dir, int r, u32 t,
			u32 floor)
{
	u32 cb, n;

	if ((dir < 0 && !ob) || ob + dir >= TAC_MAX_ORIGIN_BLOCKS)
		return TAC_NONE;
	cb = tac_hash_find(tac, to_oblock(ob + dir));
	if (cb == TAC_NONE || (dir > 0 && !cb))
		return TAC_NONE;
	n = cb - dir;
	if (r == 0)
		return n < tac->nr_blocks && n >= tac->fresh &&
		       tac->pos[n] == CB_FREE ? n : TAC_NONE;
	return tac_may_replace(tac, n, t, floor) ? n : TAC_NONE;
}

/*
 * Where @oblock goes instead of what tac_decide() chose (@r, @victim), or
 * TAC_NONE: next to its neighbour before, else after it.  The first block
 * of a request of several, with no neighbour cached, takes the block as
 * far before the victim as tac_may_replace() allows of every block from
 * there to the victim, up to the request's length less one: the blocks
 * after it then find those and the victim (in a cache of pages placed
 * whole, the victim's page).
 */
static u32 tac_place(struct tac *tac, tac_oblock_t oblock, int r, u32 t,
		     const struct tac_heap_node *victim)
{
	u64 ob = from_oblock(oblock);
	u32 floor = r ? victim->key : 0, n, s, i, k;

	n = tac_place_by(tac, ob, -1, r, t, floor);
	if (n == TAC_NONE)
		n = tac_place_by(tac, ob, 1, r, t, floor);
	if (n != TAC_NONE || r != 1 || ob != tac->req_first)
		return n;
	k = min_t(u64, tac->req_end - ob, TAC_PLACE_MAX);
	s = victim->item;
	for (i = 1; i < k && s && tac_may_replace(tac, s - 1, t, floor); i++)
		s--;
	return s != victim->item ? s : TAC_NONE;
}

static int tac_admit(struct tac_policy *p, tac_oblock_t oblock,
		     tac_cblock_t *cblock, tac_oblock_t *evicted)
{
	struct tac *tac = to_tac(p);
	u32 t = tac_temp_get(&tac->temps,
			     tac_extent_of(tac, from_oblock(oblock)));
	struct tac_heap_node victim;
	u64 against;
	u32 cb;
	int r;

	if (WARN_ON_ONCE(from_oblock(oblock) >= TAC_MAX_ORIGIN_BLOCKS)) {
		tac->bypasses++;
		return -EINVAL;
	}
	if (tac->pending.valid && tac->pending.oblock == oblock) {
		r = tac->pending.r;
		victim = tac->pending.victim;
		against = tac->pending.against;
	} else {
		r = tac_decide(tac, t, &victim, &against);
	}
	tac->pending.valid = false;

	if (r < 0) {
		/* Refused, but one step looser would have admitted it. */
		if (tac->step < TAC_MAX_LOOSEN && against != TAC_NO_VICTIM &&
		    tac_warmer_at(tac, t, against, tac_step_looser(tac)))
			tac_ghost_add(tac, oblock, true);
		tac->bypasses++;
		return r;
	}

	cb = tac_place(tac, oblock, r, t, &victim);
	if (r == 0) {
		if (cb != TAC_NONE)
			tac_free_claim(tac, cb);
		else
			cb = tac_free_pop(tac);
		if (WARN_ON_ONCE(cb == TAC_NONE)) {
			tac->bypasses++;
			return -ENOSPC;
		}
		/* A new mapping starts unheld, whatever came before. */
		__clear_bit(cb, tac->held);
		__clear_bit(cb, tac->ref);
		tac_set_ob(tac, cb, oblock);
		tac_hash_insert(tac, cb);
		tac_heap_push(&tac->heap, cb, tac_key(tac, t));
		tac->nr_mapped++;
	} else {
		if (cb == TAC_NONE) {
			cb = victim.item;
		} else if (cb != victim.item) {
			/* The victim stays; its key is still the floor. */
			against = tac_block_temp(tac, cb);
		}
		*evicted = tac_ob(tac, cb);
		tac_hash_remove(tac, cb);
		if (tac_key_before(tac->inflation, victim.key))
			tac->inflation = victim.key;
		tac->stuck = 0;
		/* Evicted for a block one step tighter would have refused. */
		if (tac->step > -TAC_MAX_TIGHTEN &&
		    !tac_warmer_at(tac, t, against, tac->step - 1))
			tac_ghost_add(tac, *evicted, false);
		__clear_bit(cb, tac->ref);
		tac_set_ob(tac, cb, oblock);
		tac_hash_insert(tac, cb);
		tac_heap_update(&tac->heap, cb, tac_key(tac, t));
		tac->evictions++;
	}
	tac->admissions++;
	*cblock = to_cblock(cb);
	return r;
}

/* Turbocharging section 2.5: physical invalidation, the space is freed. */
static void tac_unmap(struct tac_policy *p, tac_cblock_t cblock)
{
	struct tac *tac = to_tac_changed(p);
	u32 cb = from_cblock(cblock);

	if (tac_bad_cblock(tac, cblock) ||
	    WARN_ON_ONCE(!tac_is_mapped(tac, cb)))
		return;
	tac_hash_remove(tac, cb);
	if (tac->pos[cb] == CB_DIRTY) {
		__clear_bit(cb, tac->dirty);
		tac->nr_dirty--;
	} else {
		tac_heap_remove(&tac->heap, cb);
	}
	tac->pos[cb] = CB_DETACHED;
	tac->nr_mapped--;
	tac->nr_detached++;
}

static void tac_release(struct tac_policy *p, tac_cblock_t cblock)
{
	struct tac *tac = to_tac_changed(p);
	u32 cb = from_cblock(cblock);

	if (tac_bad_cblock(tac, cblock) ||
	    WARN_ON_ONCE(tac->pos[cb] != CB_DETACHED))
		return;
	tac->nr_detached--;
	tac_free_push(tac, cb);
}

static void tac_hold(struct tac_policy *p, tac_cblock_t cblock, bool held)
{
	struct tac *tac = to_tac_changed(p);
	u32 cb = from_cblock(cblock);

	if (tac_bad_cblock(tac, cblock))
		return;
	if (held)
		__set_bit(cb, tac->held);
	else
		__clear_bit(cb, tac->held);
}

static void tac_set_dirty(struct tac_policy *p, tac_cblock_t cblock)
{
	struct tac *tac = to_tac_changed(p);
	u32 cb = from_cblock(cblock);

	if (tac_bad_cblock(tac, cblock) || tac->pos[cb] == CB_DIRTY ||
	    WARN_ON_ONCE(!tac_is_mapped(tac, cb)))
		return;
	tac_heap_remove(&tac->heap, cb);
	tac->pos[cb] = CB_DIRTY;
	__set_bit(cb, tac->dirty);
	tac->nr_dirty++;
}

static void tac_clear_dirty(struct tac_policy *p, tac_cblock_t cblock)
{
	struct tac *tac = to_tac_changed(p);
	u32 cb = from_cblock(cblock);

	if (tac_bad_cblock(tac, cblock) || tac_heap_contains(&tac->heap, cb) ||
	    WARN_ON_ONCE(tac->pos[cb] != CB_DIRTY))
		return;
	__clear_bit(cb, tac->dirty);
	tac->nr_dirty--;
	tac_heap_push(&tac->heap, cb, tac_key(tac, tac_block_temp(tac, cb)));
}

/*
 * @out[0..n) as a max-heap on the distance from @from (origin block minus
 * @from, modulo 2^64): blocks below @from come after every block above it,
 * which is the wrap to block 0.
 */
static void tac_batch_sift_down(struct tac_mapping *out, u32 n, u32 i, u64 from)
{
	struct tac_mapping m = out[i];
	u64 d = from_oblock(m.oblock) - from;

	for (;;) {
		u32 c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && from_oblock(out[c + 1].oblock) - from >
				 from_oblock(out[c].oblock) - from)
			c++;
		if (from_oblock(out[c].oblock) - from <= d)
			break;
		out[i] = out[c];
		i = c;
	}
	out[i] = m;
}

static void tac_batch_sift_up(struct tac_mapping *out, u32 i, u64 from)
{
	struct tac_mapping m = out[i];
	u64 d = from_oblock(m.oblock) - from;

	while (i) {
		u32 parent = (i - 1) / 2;

		if (from_oblock(out[parent].oblock) - from >= d)
			break;
		out[i] = out[parent];
		i = parent;
	}
	out[i] = m;
}

/* Turbocharging section 2.3.3: clean in origin order, from @from on. */
static u32 tac_dirty_batch(struct tac_policy *p, tac_oblock_t from,
			   struct tac_mapping *out, u32 max)
{
	struct tac *tac = to_tac(p);
	u64 f = from_oblock(from);
	u32 w, n = 0, nr_words = BITS_TO_LONGS(tac->nr_blocks);

	if (!max || !tac->nr_dirty)
		return 0;

	for (w = 0; w < nr_words; w++) {
		unsigned long bits = tac->dirty[w];

		while (bits) {
			u32 cb = w * BITS_PER_LONG + __ffs(bits);
			struct tac_mapping m = {
				.oblock = tac_ob(tac, cb),
				.cblock = to_cblock(cb),
			};

			bits &= bits - 1;
			if (n < max) {
				out[n] = m;
				tac_batch_sift_up(out, n++, f);
			} else if (from_oblock(m.oblock) - f <
				   from_oblock(out[0].oblock) - f) {
				out[0] = m;
				tac_batch_sift_down(out, n, 0, f);
			}
		}
	}

	/* Heap sort: the farthest goes last. */
	for (w = n; w > 1; w--) {
		struct tac_mapping m = out[0];

		out[0] = out[w - 1];
		out[w - 1] = m;
		tac_batch_sift_down(out, w - 1, 0, f);
	}
	return n;
}

/* TAC_MAP_*: what mapping() and mappings() report of @cb (in range). */
static u8 tac_map_state(const struct tac *tac, u32 cb)
{
	if (tac->pos[cb] == CB_DIRTY)
		return TAC_MAP_DIRTY;
	return tac_heap_contains(&tac->heap, cb) ? TAC_MAP_CLEAN :
						   TAC_MAP_NONE;
}

static bool tac_mapping(struct tac_policy *p, tac_cblock_t cblock,
			tac_oblock_t *oblock, bool *dirty)
{
	struct tac *tac = to_tac(p);
	u32 cb = from_cblock(cblock);
	u8 st;

	if (cb >= tac->nr_blocks)
		return false;
	st = tac_map_state(tac, cb);
	if (st == TAC_MAP_NONE)
		return false;
	*oblock = tac_ob(tac, cb);
	*dirty = st == TAC_MAP_DIRTY;
	return true;
}

static void tac_mappings(struct tac_policy *p, tac_cblock_t first, u32 n,
			 tac_oblock_t *oblocks, u8 *state)
{
	struct tac *tac = to_tac(p);
	u32 cb = from_cblock(first), i;

	for (i = 0; i < n; i++, cb++) {
		state[i] = tac_map_state(tac, cb);
		if (state[i] != TAC_MAP_NONE)
			oblocks[i] = tac_ob(tac, cb);
	}
}

static int tac_load_mapping(struct tac_policy *p, tac_cblock_t cblock,
			    tac_oblock_t oblock, bool dirty)
{
	struct tac *tac = to_tac_changed(p);
	u32 cb = from_cblock(cblock);

	if (cb >= tac->nr_blocks || tac->pos[cb] != CB_FREE ||
	    from_oblock(oblock) >= TAC_MAX_ORIGIN_BLOCKS ||
	    tac_hash_find(tac, oblock) != TAC_NONE)
		return -EINVAL;

	tac_free_claim(tac, cb);
	__clear_bit(cb, tac->held);
	__clear_bit(cb, tac->ref);
	tac_set_ob(tac, cb, oblock);
	tac_hash_insert(tac, cb);
	tac->nr_mapped++;
	if (dirty) {
		tac->pos[cb] = CB_DIRTY;
		__set_bit(cb, tac->dirty);
		tac->nr_dirty++;
	} else {
		tac_heap_push(&tac->heap, cb,
			      tac_key(tac, tac_block_temp(tac, cb)));
	}
	return 0;
}

typedef int (*tac_walk_fn)(void *ctx, const struct tac_extent_rec *r);

static int tac_walk_extents(struct tac_policy *p, tac_walk_fn fn, void *ctx)
{
	return tac_temp_walk(&to_tac(p)->temps, fn, ctx);
}

static int tac_load_extent(struct tac_policy *p, tac_extent_t extent,
			   u32 temp)
{
	return tac_temp_set(&to_tac_changed(p)->temps, from_extent(extent), temp);
}

static u32 tac_hottest(struct tac_policy *p, struct tac_extent_rec *out,
		       u32 n)
{
	return tac_temp_hottest(&to_tac(p)->temps, out, n);
}

static int tac_set_params(struct tac_policy *p,
			  const struct tac_params *params)
{
	struct tac *tac = to_tac_changed(p);

	if (tac_params_check(params, tac->nr_blocks, NULL) ||
	    params->extent_blocks != tac->params.extent_blocks ||
	    params->stats_extents != tac->params.stats_extents)
		return -EINVAL;

	tac_apply_params(tac, params);
	/* A shorter period that has already elapsed ends the epoch now. */
	if (tac->in_epoch >= params->aging_period)
		tac_age_tick(tac);
	return 0;
}

static bool tac_drop_if_unheld(void *ctx, u32 cb)
{
	struct tac *tac = ctx;

	if (test_bit(cb, tac->held))
		return true;
	tac_hash_remove(tac, cb);
	tac->nr_mapped--;
	tac_free_push(tac, cb);
	return false;
}

static void tac_drop_clean(struct tac_policy *p)
{
	struct tac *tac = to_tac_changed(p);

	tac_heap_filter(&tac->heap, tac_drop_if_unheld, tac);
}

static void tac_stats(struct tac_policy *p, struct tac_policy_stats *s)
{
	struct tac *tac = to_tac(p);

	s->seq_requests = tac->seq_requests;
	s->random_requests = tac->random_requests;
	s->admissions = tac->admissions;
	s->bypasses = tac->bypasses;
	s->evictions = tac->evictions;
	s->nr_blocks = tac->nr_blocks;
	s->nr_mapped = tac->nr_mapped;
	s->nr_dirty = tac->nr_dirty;
	s->nr_detached = tac->nr_detached;
	s->tracked_extents = tac->temps.nr_used;
	/* The temperature of the next victim's extent. */
	s->coldest_temp = tac_heap_empty(&tac->heap) ? 0 :
			  tac_block_temp(tac, tac_heap_top(&tac->heap).item);
	s->ram_bytes = tac->ram_bytes;
}

static void tac_reset_stats(struct tac_policy *p)
{
	struct tac *tac = to_tac(p);

	tac->seq_requests = 0;
	tac->random_requests = 0;
	tac->admissions = 0;
	tac->bypasses = 0;
	tac->evictions = 0;
}

static const struct tac_policy_ops tac_ops = {
	.name = "tac",
	.destroy = tac_destroy,
	.request = tac_request,
	.lookup = tac_lookup,
	.peek = tac_peek,
	.peek_dirty = tac_peek_dirty,
	.hit = tac_hit,
	.would_admit = tac_would_admit,
	.admit = tac_admit,
	.unmap = tac_unmap,
	.release = tac_release,
	.hold = tac_hold,
	.set_dirty = tac_set_dirty,
	.clear_dirty = tac_clear_dirty,
	.dirty_batch = tac_dirty_batch,
	.mapping = tac_mapping,
	.mappings = tac_mappings,
	.load_mapping = tac_load_mapping,
	.walk_extents = tac_walk_extents,
	.load_extent = tac_load_extent,
	.hottest = tac_hottest,
	.set_params = tac_set_params,
	.drop_clean = tac_drop_clean,
	.stats = tac_stats,
	.reset_stats = tac_reset_stats,
};

struct tac_policy *tac_policy_create(u32 nr_blocks,
				     const struct tac_params *params)
{
	struct tac *tac;
	u32 i;

	BUILD_BUG_ON(sizeof(struct tac_block) != 9);
	BUILD_BUG_ON(sizeof(struct tac_heap_node) != 8);
	BUILD_BUG_ON(TAC_MAX_CACHE_BLOCKS > HEAP_NOT_IN);
	BUILD_BUG_ON(TAC_MAX_CREDIT >= BIT(31));

	if (tac_params_check(params, nr_blocks, NULL))
		return NULL;

	tac = kzalloc(sizeof(*tac), GFP_KERNEL);
	if (!tac)
		return NULL;
	tac->policy.ops = &tac_ops;
	tac->nr_blocks = nr_blocks;
	tac->nr_buckets = tac_nr_buckets(nr_blocks);
	tac->extent_shift = ilog2(params->extent_blocks);
	tac_apply_params(tac, params);

	tac->blocks = tac_array_alloc(nr_blocks, sizeof(*tac->blocks));
	tac->pos = tac_array_alloc(nr_blocks, sizeof(*tac->pos));
	tac->nodes = tac_array_alloc(nr_blocks, sizeof(*tac->nodes));
	tac->buckets = tac_array_alloc(tac->nr_buckets, sizeof(*tac->buckets));
	tac->dirty = tac_array_alloc(BITS_TO_LONGS(nr_blocks),
				     sizeof(unsigned long));
	tac->held = tac_array_alloc(BITS_TO_LONGS(nr_blocks),
				    sizeof(unsigned long));
	tac->ref = tac_array_alloc(BITS_TO_LONGS(nr_blocks),
				   sizeof(unsigned long));
	tac->ghost_mask = tac_nr_ghosts(nr_blocks) - 1;
	tac->ghost = tac_array_alloc(tac->ghost_mask + 1, sizeof(u16));
	tac->slots = tac_array_alloc(params->stats_extents,
				     sizeof(*tac->slots));
	if (!tac->blocks || !tac->pos || !tac->nodes || !tac->buckets ||
	    !tac->dirty || !tac->held || !tac->ref || !tac->ghost ||
	    !tac->slots) {
		tac_destroy(&tac->policy);
		return NULL;
	}

	for (i = 0; i < nr_blocks; i++)
		tac->pos[i] = CB_FREE;
	memset(tac->buckets, 0xff, (size_t)tac->nr_buckets * sizeof(u32));
	tac_heap_init(&tac->heap, tac->nodes, tac->pos, nr_blocks);
	tac_temp_init(&tac->temps, tac->slots, params->stats_extents);
	tac_seq_init(&tac->seq);
	tac->free_head = TAC_NONE;
	tac->nr_free = nr_blocks;
	tac->ram_bytes = tac_policy_ram_bytes(nr_blocks, params);
	return &tac->policy;
}
