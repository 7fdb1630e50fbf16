/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The dm-tac cache policy interface.
 *
 * A policy decides which origin blocks deserve a place on the cache device.
 * It sees block numbers and request shapes only: no bios, no devices, no
 * locks, no clocks.  The same source files are linked into the kernel module
 * and compiled unchanged in user space (unit tests, the trace simulator)
 * through the shim headers in tools/include/.
 *
 * Model: the kernel's drivers/md/dm-cache-policy.h.  The differences: the
 * target, not the policy, tracks I/O in flight, so a policy method never
 * blocks, never allocates after creation and never fails except where its
 * comment says so; the caller serialises every call on one policy object
 * (one spinlock in the target).
 *
 * Block numbering:
 *   origin block  (tac_oblock_t): origin sector / block_size
 *   cache block   (tac_cblock_t): index into the cache data area, 0..nr-1
 *   extent        (tac_extent_t): origin block / extent_blocks
 * They are distinct __bitwise types so that sparse catches a mix-up.
 *
 * Life of a cache block (cblock):
 *
 *   FREE --admit--> MAPPED (clean) <--set_dirty/clear_dirty--> MAPPED (dirty)
 *     ^                 |
 *     |               unmap
 *     +---release--- DETACHED
 *
 * admit() may also move a clean, unheld MAPPED block straight to MAPPED for
 * another origin block (an eviction); the evicted origin block is reported.
 * DETACHED exists because the target may still have I/O in flight on the
 * block's data when its mapping must disappear (a write in write-around
 * mode, a discard): lookups stop finding it at unmap() time, but its space
 * is reused only after release().
 */
#ifndef DM_TAC_POLICY_H
#define DM_TAC_POLICY_H

#include <linux/errno.h>
#include <linux/types.h>

#include "tac-types.h"

/* The tunables: TAC's parameters, defined in tac.h. */
struct tac_params;

struct tac_policy_stats {
	u64 seq_requests;	/* requests classified sequential */
	u64 random_requests;	/* requests classified random */
	u64 admissions;		/* admit() calls that returned a block */
	u64 bypasses;		/* admit() calls that returned -ENOSPC */
	u64 evictions;		/* admissions that displaced a block */
	u32 nr_blocks;		/* cache blocks in all */
	u32 nr_mapped;		/* MAPPED blocks, clean or dirty */
	u32 nr_dirty;		/* MAPPED and dirty */
	u32 nr_detached;	/* DETACHED, awaiting release() */
	u32 tracked_extents;	/* live entries in the statistics table */
	u32 coldest_temp;	/* temperature of the next victim's extent */
	u64 ram_bytes;		/* memory the policy allocated at create */
};

struct tac_mapping {
	tac_oblock_t oblock;
	tac_cblock_t cblock;
};

struct tac_policy;

/*
 * The methods.  Every policy implements all of them unless marked optional
 * (NULL allowed).  None may block or sleep; all run under the caller's lock.
 */
struct tac_policy_ops {
	const char *name;

	/*
	 * Free everything the constructor allocated, @p included, whatever
	 * state the blocks are in; the caller has stopped every other call.
	 * The one method that may sleep (kvfree), so not under a spinlock.
	 */
	void (*destroy)(struct tac_policy *p);

	/*
	 * One request of @nr_blocks blocks starting at @first (a bio, a trace
	 * record).  Called once per request, before any lookup() or admit()
	 * for its blocks.  Classifies it (TAC section 3.1), adds its cost to
	 * the temperature of the extents it touches, once per block, and
	 * advances the aging clock by @nr_blocks.  Returns the class.
	 */
	enum tac_class (*request)(struct tac_policy *p, tac_oblock_t first,
				  u32 nr_blocks, bool is_write);

	/*
	 * Is @oblock MAPPED?  0 and *@cblock if so, -ENOENT if not.  @use
	 * (enum tac_use): TAC_PROBE for a mere probe; else a use of the
	 * block by a read or a write of the last request(), which
	 * recency-based policies count (LRU moves the block to the head; a
	 * miss on a ghost of TAC's is a vote).  TAC keys a block again when
	 * a read used it, not a write (TAC_USE_WRITE, tac_mark_used()).
	 */
	int (*lookup)(struct tac_policy *p, tac_oblock_t oblock,
		      tac_cblock_t *cblock, enum tac_use use);

	/*
	 * Would admit(@oblock) succeed now?  Used by the target to decide
	 * whether a multi-block bio must be split.  It changes no mapping
	 * and no counter, and admit() of the same block with no other call
	 * in between agrees with it, as does would_admit() of the same block
	 * again (which decides nothing anew); it may change the order in
	 * which blocks are evicted (TAC keys used blocks again on the way).
	 */
	bool (*would_admit)(struct tac_policy *p, tac_oblock_t oblock);

	/*
	 * Find room for @oblock, which must not be MAPPED.
	 *   0:       *@cblock was FREE, now MAPPED clean to @oblock.
	 *   1:       *@cblock was MAPPED clean to *@evicted and not held; it
	 *            is now MAPPED clean to @oblock (the caller's lookups for
	 *            *@evicted now miss).
	 *   -ENOSPC: not admitted (not warm enough, or no victim found that
	 *            is clean and not held); nothing changed but the bypass
	 *            counter.
	 */
	int (*admit)(struct tac_policy *p, tac_oblock_t oblock,
		     tac_cblock_t *cblock, tac_oblock_t *evicted);

	/*
	 * Optional: a read hit in two halves, for a caller that serves hits
	 * without its lock (dm-tac's tac_read_hit_fast()).
	 *
	 * peek(): lookup(@oblock, TAC_PROBE), except that it may run
	 * at the same time as any other method, those that change mappings
	 * included.  Its answer is then a guess: -ENOENT, or 0 and a block
	 * that mapped @oblock at some moment of the call, or none.  The
	 * caller confirms it: admit(), unmap(), load_mapping() and
	 * drop_clean() are the only methods that change which block maps
	 * which origin block, so a sequence count the caller bumps around
	 * them says whether any ran meanwhile.  -EAGAIN: it gave up after a
	 * few hash steps (a long chain, or one changing under it).
	 *
	 * peek_dirty(): is @cblock dirty?  May run at the same time as any
	 * other method; the answer is exact when no set_dirty() of @cblock
	 * can run meanwhile (the caller excludes writers of the block).
	 *
	 * hit(): the rest of the hit, under the caller's lock, later: what
	 * request(@oblock, @nr, false) then lookup(@oblock, TAC_USE_READ)
	 * would have done, except that if @cblock no longer maps @oblock the
	 * use counts for nothing (and a ghost never votes).  @nr is the
	 * blocks of the read whose first block @oblock is; 0 for a later
	 * block of a read whose first block was counted (no request()).
	 * Returns the class request() gave, TAC_RANDOM for @nr 0.
	 */
	int (*peek)(struct tac_policy *p, tac_oblock_t oblock,
		    tac_cblock_t *cblock);
	bool (*peek_dirty)(struct tac_policy *p, tac_cblock_t cblock);
	enum tac_class (*hit)(struct tac_policy *p, tac_oblock_t oblock,
			      u32 nr, tac_cblock_t cblock);

	/* MAPPED -> DETACHED.  The caller stops using the data later. */
	void (*unmap)(struct tac_policy *p, tac_cblock_t cblock);

	/* DETACHED -> FREE. */
	void (*release)(struct tac_policy *p, tac_cblock_t cblock);

	/*
	 * Held blocks are never chosen as victims by admit().  The caller
	 * holds a block while a write to its data is in flight, and for
	 * reasons of its own (dm-tac: while the on-disk entry may say
	 * dirty); it need not hold one being read, if it does not reuse a
	 * victim still being read (dm-tac's __tac_reserve() unmaps it
	 * instead).  Not counted: hold(true) twice then hold(false) once
	 * releases it.
	 */
	void (*hold)(struct tac_policy *p, tac_cblock_t cblock, bool held);

	/*
	 * Dirty blocks are never victims.  clear_dirty() puts a block back
	 * among the clean candidates with its extent's current temperature.
	 * Both are no-ops when the state already matches.
	 */
	void (*set_dirty)(struct tac_policy *p, tac_cblock_t cblock);
	void (*clear_dirty)(struct tac_policy *p, tac_cblock_t cblock);

	/*
	 * Cleaning order (Turbocharging section 2.3.3): fill @out with up to
	 * @max dirty mappings, those with the smallest origin block >= @from,
	 * sorted by origin block; wraps to block 0 when fewer remain after
	 * @from.  Returns the count.  Cost O(nr_blocks / 64 + nr_dirty log
	 * @max): call it for a batch, not per block.
	 */
	u32 (*dirty_batch)(struct tac_policy *p, tac_oblock_t from,
			   struct tac_mapping *out, u32 max);

	/*
	 * Warm restart.  mapping() reports whether @cblock is MAPPED and if
	 * so to what and whether dirty.  load_mapping() puts a FREE block
	 * straight into MAPPED (at construction, before any I/O); -EINVAL if
	 * @cblock is out of range, not FREE, or @oblock is already MAPPED.
	 */
	bool (*mapping)(struct tac_policy *p, tac_cblock_t cblock,
			tac_oblock_t *oblock, bool *dirty);
	int (*load_mapping)(struct tac_policy *p, tac_cblock_t cblock,
			    tac_oblock_t oblock, bool dirty);

	/*
	 * Optional.  mapping() of the @n cache blocks from @first, all in
	 * range, in one call (a metadata commit captures a sector of
	 * entries at a time): @state[i] is TAC_MAP_NONE, TAC_MAP_CLEAN or
	 * TAC_MAP_DIRTY, and @oblocks[i] is set when it is not NONE.
	 */
	void (*mappings)(struct tac_policy *p, tac_cblock_t first, u32 n,
			 tac_oblock_t *oblocks, u8 *state);

	/*
	 * Optional.  Extent temperatures: walk_extents() calls @fn for every
	 * tracked extent with its aged temperature (stop early by returning
	 * non-zero, which walk_extents() then returns); load_extent() sets
	 * one (-ENOSPC when the table is full).  hottest() fills @out with
	 * the @n hottest extents, hottest first, and returns the count.
	 */
	int (*walk_extents)(struct tac_policy *p,
			    int (*fn)(void *ctx, const struct tac_extent_rec *r),
			    void *ctx);
	int (*load_extent)(struct tac_policy *p, tac_extent_t extent, u32 temp);
	u32 (*hottest)(struct tac_policy *p, struct tac_extent_rec *out, u32 n);

	/*
	 * Optional.  Change tunables that can change online (everything but
	 * extent_blocks and stats_extents, which need a new policy object);
	 * -EINVAL and nothing changed if @params is invalid or changes those.
	 */
	int (*set_params)(struct tac_policy *p, const struct tac_params *params);

	/*
	 * Forget every clean, unheld block (they become FREE): only with no
	 * read in flight (readers are not holds, see hold()).
	 */
	void (*drop_clean)(struct tac_policy *p);

	/*
	 * Fill @s: the counters since the last reset_stats(), the block
	 * counts and temperatures as they are now, and ram_bytes.
	 */
	void (*stats)(struct tac_policy *p, struct tac_policy_stats *s);
	/* Zero the counters of struct tac_policy_stats; nothing else. */
	void (*reset_stats)(struct tac_policy *p);
};

struct tac_policy {
	const struct tac_policy_ops *ops;
};

/*
 * Callers go through these, never p->ops directly: an optional method a
 * policy lacks answers "nothing" (no extents, 0 hottest, -EOPNOTSUPP).
 */
static inline void tac_policy_destroy(struct tac_policy *p)
{
	p->ops->destroy(p);
}

static inline enum tac_class tac_policy_request(struct tac_policy *p,
						tac_oblock_t first,
						u32 nr_blocks, bool is_write)
{
	return p->ops->request(p, first, nr_blocks, is_write);
}

static inline int tac_policy_lookup(struct tac_policy *p, tac_oblock_t oblock,
				    tac_cblock_t *cblock, enum tac_use use)
{
	return p->ops->lookup(p, oblock, cblock, use);
}

static inline bool tac_policy_would_admit(struct tac_policy *p,
					  tac_oblock_t oblock)
{
	return p->ops->would_admit(p, oblock);
}

static inline int tac_policy_admit(struct tac_policy *p, tac_oblock_t oblock,
				   tac_cblock_t *cblock, tac_oblock_t *evicted)
{
	return p->ops->admit(p, oblock, cblock, evicted);
}

/* A policy without peek() never has a hit found without the lock. */
static inline int tac_policy_peek(struct tac_policy *p, tac_oblock_t oblock,
				  tac_cblock_t *cblock)
{
	return p->ops->peek ? p->ops->peek(p, oblock, cblock) : -EOPNOTSUPP;
}

static inline bool tac_policy_peek_dirty(struct tac_policy *p,
					 tac_cblock_t cblock)
{
	return p->ops->peek_dirty(p, cblock);
}

static inline enum tac_class tac_policy_hit(struct tac_policy *p,
					    tac_oblock_t oblock, u32 nr,
					    tac_cblock_t cblock)
{
	return p->ops->hit(p, oblock, nr, cblock);
}

static inline void tac_policy_unmap(struct tac_policy *p, tac_cblock_t cblock)
{
	p->ops->unmap(p, cblock);
}

static inline void tac_policy_release(struct tac_policy *p,
				      tac_cblock_t cblock)
{
	p->ops->release(p, cblock);
}

static inline void tac_policy_hold(struct tac_policy *p, tac_cblock_t cblock,
				   bool held)
{
	p->ops->hold(p, cblock, held);
}

static inline void tac_policy_set_dirty(struct tac_policy *p,
					tac_cblock_t cblock)
{
	p->ops->set_dirty(p, cblock);
}

static inline void tac_policy_clear_dirty(struct tac_policy *p,
					  tac_cblock_t cblock)
{
	p->ops->clear_dirty(p, cblock);
}

static inline u32 tac_policy_dirty_batch(struct tac_policy *p,
					 tac_oblock_t from,
					 struct tac_mapping *out, u32 max)
{
	return p->ops->dirty_batch(p, from, out, max);
}

static inline bool tac_policy_mapping(struct tac_policy *p,
				      tac_cblock_t cblock,
				      tac_oblock_t *oblock, bool *dirty)
{
	return p->ops->mapping(p, cblock, oblock, dirty);
}

enum { TAC_MAP_NONE, TAC_MAP_CLEAN, TAC_MAP_DIRTY };

static inline void tac_policy_mappings(struct tac_policy *p,
				       tac_cblock_t first, u32 n,
				       tac_oblock_t *oblocks, u8 *state)
{
	u32 i;
	bool dirty;

	if (p->ops->mappings) {
		p->ops->mappings(p, first, n, oblocks, state);
		return;
	}
	for (i = 0; i < n; i++)
		state[i] = !p->ops->mapping(p, to_cblock(from_cblock(first) + i),
					    &oblocks[i], &dirty) ? TAC_MAP_NONE :
			   dirty ? TAC_MAP_DIRTY : TAC_MAP_CLEAN;
}

static inline int tac_policy_load_mapping(struct tac_policy *p,
					  tac_cblock_t cblock,
					  tac_oblock_t oblock, bool dirty)
{
	return p->ops->load_mapping(p, cblock, oblock, dirty);
}

/* Does the policy keep extent temperatures (walk_extents, load_extent)? */
static inline bool tac_policy_has_extents(const struct tac_policy *p)
{
	return p->ops->walk_extents && p->ops->load_extent;
}

static inline int tac_policy_walk_extents(struct tac_policy *p,
		int (*fn)(void *ctx, const struct tac_extent_rec *r), void *ctx)
{
	return p->ops->walk_extents ? p->ops->walk_extents(p, fn, ctx) : 0;
}

static inline int tac_policy_load_extent(struct tac_policy *p,
					 tac_extent_t extent, u32 temp)
{
	return p->ops->load_extent ? p->ops->load_extent(p, extent, temp) :
				     -EOPNOTSUPP;
}

static inline u32 tac_policy_hottest(struct tac_policy *p,
				     struct tac_extent_rec *out, u32 n)
{
	return p->ops->hottest ? p->ops->hottest(p, out, n) : 0;
}

static inline int tac_policy_set_params(struct tac_policy *p,
					const struct tac_params *params)
{
	return p->ops->set_params ? p->ops->set_params(p, params) :
				    -EOPNOTSUPP;
}

static inline void tac_policy_drop_clean(struct tac_policy *p)
{
	p->ops->drop_clean(p);
}

static inline void tac_policy_stats(struct tac_policy *p,
				    struct tac_policy_stats *s)
{
	p->ops->stats(p, s);
}

static inline void tac_policy_reset_stats(struct tac_policy *p)
{
	p->ops->reset_stats(p);
}

#endif /* DM_TAC_POLICY_H */
