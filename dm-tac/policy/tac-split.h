/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-tac policy core: the clean/dirty split of a write-back cache
 * (FD-Buffer, On et al., section 4), learnt from what each side costs the
 * disk.  Portable: the kernel's cleaner and tests/unit/ build it
 * unchanged.
 */
#ifndef DM_TAC_SPLIT_H
#define DM_TAC_SPLIT_H

#include "tac-types.h"

#define TAC_SPLIT_MIN_PCT	5	/* the target's bounds, percent of */
#define TAC_SPLIT_MAX_PCT	80	/* the cache, unless set outside */
#define TAC_SPLIT_RESERVE	16	/* free blocks up to 1/16 of the */
					/* cache count for nothing */

struct tac_split {
	u16 *evicted;		/* ghosts of the last evictions */
	u16 *cleaned;		/* ghosts of the last target write-backs */
	u32 mask;		/* slots - 1, in each table */
	u32 sample;		/* ghosts are kept of the blocks whose */
				/* hash has these bits clear */
	u32 nr_blocks;
	u32 target;		/* dirty blocks the cleaner lets be */
	u32 lo, hi;		/* the target's range */
	u32 step;		/* blocks the target moves at once */
	u32 per_step;		/* votes per decision */
	bool adapt;		/* false: the target stays where it is set */
	u32 votes;
	u64 clean_back;		/* cost of misses more clean space saves */
	u64 dirty_back;		/* cost of writes more dirty space saves */
};

/* Bytes tac_split_init() allocates for @nr_blocks cache blocks. */
u64 tac_split_bytes(u32 nr_blocks);
int tac_split_init(struct tac_split *s, u32 nr_blocks, u32 pct, bool adapt);
void tac_split_exit(struct tac_split *s);
/* Start again from @pct percent, adapting or not (the tunables). */
void tac_split_set(struct tac_split *s, u32 pct, bool adapt);

/*
 * Dirty blocks the cleaner lets be while @nr_free cache blocks are free:
 * the target, plus half the free blocks beyond 1/TAC_SPLIT_RESERVE of
 * the cache, at most hi in all; the target alone when not adapting.
 */
u32 tac_split_high(const struct tac_split *s, u32 nr_free);

/*
 * Whether @oblock is one of the blocks the split keeps ghosts of (one in
 * about nr_blocks / slots): the others' events are not recorded and
 * never vote.
 */
bool tac_split_sampled(const struct tac_split *s, u64 oblock);

/* A clean block left the cache to make room for another. */
void tac_split_evicted(struct tac_split *s, u64 oblock);
/* The cleaner wrote a dirty block back to keep under the target. */
void tac_split_cleaned(struct tac_split *s, u64 oblock);
/*
 * A read the cache could not serve, costing the disk @cost: if the block
 * was evicted lately, a vote for clean space.  True if the target moved.
 */
bool tac_split_read_miss(struct tac_split *s, u64 oblock, u32 cost);
/*
 * A write to @oblock: did the cleaner write it back lately?  Then that
 * write-back was wasted: the caller votes for dirty space with what it
 * cost the disk (tac_split_dirty_vote(), true if the target moved).  In
 * two steps so that the cost is worked out only for a ghost.
 */
bool tac_split_write(struct tac_split *s, u64 oblock);
bool tac_split_dirty_vote(struct tac_split *s, u32 cost);

#endif /* DM_TAC_SPLIT_H */
