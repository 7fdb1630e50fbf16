// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac policy core: how much of a write-back cache may be dirty.
 *
 * FD-Buffer (On et al., section 4) splits a buffer into a clean and a
 * dirty pool and sizes them to minimise the I/O a miss costs, not the
 * number of misses.  Here the dirty pool's size is the cleaner's target:
 * the cleaner writes back only while more blocks than the target are
 * dirty.  A dirty block is never evicted, so each block of dirty space is
 * a block less for clean data once the cache is full.
 *
 * FD-Buffer compares what more space on either side would save, from
 * LRU stack distances.  Here, after ARC's ghost lists, over a horizon of
 * a third to two thirds of the cache:
 *
 *  - dirty space: the blocks the cleaner wrote back lately to keep under
 *    the target are about those a larger target would still hold dirty.
 *    A write to one of them made its write-back a waste: a vote for dirty
 *    space, weighing what a write-back costs the disk (the caller knows:
 *    the cleaner writes runs in origin order);
 *  - clean space: the clean blocks evicted lately are about those a
 *    larger clean share would still hold.  A read of one of them cost the
 *    disk a read: a vote for clean space, weighing that read.
 *
 * Every max(slots / 64, 8) votes the target moves one step (1/64 of the
 * cache) toward the side that cost more, within [lo, hi].  While the
 * cache has free blocks nothing is evicted and only rewrites vote: the
 * target grows.
 *
 * Why a long horizon: a database writes many blocks again only after a
 * long while (PostgreSQL its pages once per checkpoint, its WAL once per
 * recycling of its segments).  One step past the target, such a rewrite
 * is not seen, the target stays, and each of those blocks is written
 * back once per round.  bench/split-model.py, on the pgbench trace of
 * tools/traces with a cache of 40,000 blocks: ghosts over a third of a
 * step kept the target at 18-20% (I/O cost 372,264 reads and
 * write-backs); over a third to two thirds of the cache it climbed to
 * 80% (42% on average) and the cost fell 8.4% (340,847).  On reads of a
 * hot set with writes never read or written again, both went down to 5%.
 * Both sides are compared over the same horizon, so a flat stretch of a
 * step or two past the target does not hide what lies beyond it.
 *
 * Free space is clean space (tac_split_high()): while the cache fills,
 * the cleaner lets dirty blocks take half the free blocks beyond a
 * reserve too, as no admission needs a clean block to evict yet.  A
 * write-back put off may never be needed (the block is written again),
 * goes out in a longer run in origin order, or in idle time.  The
 * allowance shrinks by half a block per block the cache takes, so once
 * it starts, the cleaner must write back 1.5 blocks per block a write
 * takes from the free space to be at the target when only the reserve is
 * left; a slower cleaner leaves the excess to drain once the cache is
 * full (with the whole free space instead of half, a cleaner only as
 * fast as the writes left 57% of the cache dirty against a target of
 * 20%; with half, 45%).  A pinned split (adapt off) is the target alone.
 *
 * Each side's ghosts are 16-bit fingerprints in a direct-mapped table of
 * one slot per 64 to 128 cache blocks (a power of two, at least 64
 * slots): 15 bits of the block's hash, and a bit that keeps it from 0, an
 * empty slot.  The tables keep ghosts of a sample of the blocks, one in
 * 2^k, 2^k the largest power of two not above nr_blocks / slots (64
 * from 4096 cache blocks up): spatial sampling by the hash, as SHARDS
 * samples reuse distances (Waldspurger et al., FAST 2015).  A newer ghost
 * takes an older one's slot, so each table holds about 63% of its last
 * (slots) sampled events: a horizon of 0.63 * slots * 2^k events, a
 * third to two thirds of the cache, the same on both sides.  A vote
 * stands for the 2^k blocks it samples, on both sides alike, so the
 * votes compare as they are.  A fingerprint may match another block (1
 * in 2^15): a stray vote.  Memory: 4 bytes per 64 cache blocks.
 *
 * Not thread-safe: the caller serialises (the kernel: the cache's lock).
 */
#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "tac-split.h"

static u32 tac_split_slots(u32 nr_blocks)
{
	return max_t(u32, 1U << ilog2(max_t(u32, nr_blocks / 64, 1)), 64);
}

/* log2 of the sample: one block in nr_blocks / slots, rounded down. */
static u32 tac_split_shift(u32 nr_blocks, u32 slots)
{
	return ilog2(max_t(u32, nr_blocks / slots, 1));
}

u64 tac_split_bytes(u32 nr_blocks)
{
	return 2ULL * tac_split_slots(nr_blocks) * sizeof(u16);
}

static u32 pct_of(u32 nr_blocks, u32 pct)
{
	return (u32)((u64)nr_blocks * pct / 100);
}

/*
 * The ghosts stay: what was written back or evicted lately is still true
 * of the blocks, whatever the target.
 */
void tac_split_set(struct tac_split *s, u32 pct, bool adapt)
{
	/* At least one block (of a cache of one or more): 0 would clean */
	/* every dirty block as soon as it is made. */
	s->target = max_t(u32, pct_of(s->nr_blocks, pct),
			  min_t(u32, s->nr_blocks, 1));
	s->lo = max_t(u32, pct_of(s->nr_blocks,
				  min_t(u32, pct, TAC_SPLIT_MIN_PCT)), 1);
	s->lo = min_t(u32, s->lo, s->target);
	s->hi = pct_of(s->nr_blocks, max_t(u32, pct, TAC_SPLIT_MAX_PCT));
	s->adapt = adapt;
	s->votes = 0;
	s->clean_back = 0;
	s->dirty_back = 0;
}

int tac_split_init(struct tac_split *s, u32 nr_blocks, u32 pct, bool adapt)
{
	u32 slots = tac_split_slots(nr_blocks);

	memset(s, 0, sizeof(*s));
	s->evicted = kvcalloc(slots, sizeof(u16), GFP_KERNEL);
	s->cleaned = kvcalloc(slots, sizeof(u16), GFP_KERNEL);
	if (!s->evicted || !s->cleaned) {
		tac_split_exit(s);
		return -ENOMEM;
	}
	s->mask = slots - 1;
	s->sample = (1U << tac_split_shift(nr_blocks, slots)) - 1;
	s->nr_blocks = nr_blocks;
	s->step = max_t(u32, nr_blocks / 64, 1);
	s->per_step = max_t(u32, slots / 64, 8);
	tac_split_set(s, pct, adapt);
	return 0;
}

void tac_split_exit(struct tac_split *s)
{
	kvfree(s->evicted);
	kvfree(s->cleaned);
	s->evicted = NULL;
	s->cleaned = NULL;
}

/*
 * splitmix64's finaliser: a multiplication alone (Fibonacci hashing)
 * leaves the slots of the blocks of a sample bunched (64 of them took 39
 * slots of 128, where 50 are expected), and a third of the cache later
 * one side kept 7 of 64 ghosts, the other 24.
 */
static u64 tac_split_hash(u64 oblock)
{
	u64 h = oblock * 0x9e3779b97f4a7c15ULL;

	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

/*
 * The hash's bits: 16-31 the fingerprint, 32 up the slot (at most 25
 * bits, 32-56, for 2^32 blocks), 57 up the sample (at most 6 bits,
 * 57-62: nr_blocks / slots < 128, so 2^k <= 64).
 */
static bool tac_split_keeps(const struct tac_split *s, u64 h)
{
	return !((h >> 57) & s->sample);
}

bool tac_split_sampled(const struct tac_split *s, u64 oblock)
{
	return tac_split_keeps(s, tac_split_hash(oblock));
}

/* @oblock's slot in @table, or NULL if it is not in the sample. */
static u16 *tac_split_slot(struct tac_split *s, u16 *table, u64 oblock,
			   u16 *fp)
{
	u64 h = tac_split_hash(oblock);

	if (!tac_split_keeps(s, h))
		return NULL;
	*fp = (u16)(h >> 16) | 1;	/* never 0, an empty slot */
	return &table[(h >> 32) & s->mask];
}

static void tac_split_remember(struct tac_split *s, u16 *table, u64 oblock)
{
	u16 fp, *g = tac_split_slot(s, table, oblock, &fp);

	if (g)
		*g = fp;
}

void tac_split_evicted(struct tac_split *s, u64 oblock)
{
	tac_split_remember(s, s->evicted, oblock);
}

void tac_split_cleaned(struct tac_split *s, u64 oblock)
{
	tac_split_remember(s, s->cleaned, oblock);
}

u32 tac_split_high(const struct tac_split *s, u32 nr_free)
{
	u32 reserve = s->nr_blocks / TAC_SPLIT_RESERVE;

	if (!s->adapt || nr_free <= reserve || s->target >= s->hi)
		return s->target;
	return s->target + min_t(u32, (nr_free - reserve) / 2,
				 s->hi - s->target);
}

/* One vote of @cost for dirty space (@dirty) or clean space. */
static bool tac_split_vote(struct tac_split *s, bool dirty, u32 cost)
{
	u32 was = s->target;

	if (dirty)
		s->dirty_back += (u64)cost + 1;
	else
		s->clean_back += (u64)cost + 1;
	if (++s->votes < s->per_step)
		return false;
	if (s->adapt && s->dirty_back > s->clean_back)
		s->target = min_t(u32, s->hi, s->target + s->step);
	else if (s->adapt && s->dirty_back < s->clean_back)
		s->target = s->target > s->lo + s->step ?
			    s->target - s->step : s->lo;
	s->votes = 0;
	s->clean_back = 0;
	s->dirty_back = 0;
	return s->target != was;
}

/* If @table holds @oblock's ghost, forget it (it votes once). */
static bool tac_split_hit(struct tac_split *s, u16 *table, u64 oblock)
{
	u16 fp, *g = tac_split_slot(s, table, oblock, &fp);

	if (!g || *g != fp)
		return false;
	*g = 0;
	return true;
}

bool tac_split_read_miss(struct tac_split *s, u64 oblock, u32 cost)
{
	return tac_split_hit(s, s->evicted, oblock) &&
	       tac_split_vote(s, false, cost);
}

bool tac_split_write(struct tac_split *s, u64 oblock)
{
	return tac_split_hit(s, s->cleaned, oblock);
}

bool tac_split_dirty_vote(struct tac_split *s, u32 cost)
{
	return tac_split_vote(s, true, cost);
}
