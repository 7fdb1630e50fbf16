// SPDX-License-Identifier: GPL-2.0-only
/*
 * The clean/dirty split (tac-split.c, issue 10 item 4): where the target
 * moves for crafted sequences of rewrites of written-back blocks,
 * evictions and read misses.  A cache of 12800 blocks: 200 ghost slots
 * rounded down to 128, ghosts of one block in 64 (12800 / 128 = 100,
 * rounded down to a power of two), a decision per 8 votes, step 200
 * blocks, 20% = 2560, bounds 5% = 640 and 80% = 10240.  The crafted
 * sequences use blocks of the sample (nth()), except where a block out
 * of it is the point.
 */
#include "helpers.h"
#include "tac-split.h"
#include "tap.h"

#define NR	12800
#define R	12000	/* a random access */
#define S	60	/* a sequential one */

static struct tac_split s;

/* The @i-th block (from 0) of the sample of the split set up now. */
static u64 nth(u64 i)
{
	static u64 at, b;	/* b is the at-th block of the sample */
	static u32 sample = ~0U;

	if (sample != s.sample || i < at) {
		sample = s.sample;
		at = 0;
		for (b = 0; !tac_split_sampled(&s, b); b++)
			;
	}
	while (at < i)
		if (tac_split_sampled(&s, ++b))
			at++;
	return b;
}

/*
 * @n blocks of the sample from its @first-th, each written back for the
 * target and then written again (each write follows its ghost at once:
 * no other ghost can take its slot).
 */
static u32 rewrite_from(u64 first, u32 n, u32 cost)
{
	u32 moved = 0, i;

	for (i = 0; i < n; i++) {
		tac_split_cleaned(&s, nth(first + i));
		if (tac_split_write(&s, nth(first + i)))
			moved += tac_split_dirty_vote(&s, cost);
	}
	return moved;
}

static u32 rewrite(u32 n, u32 cost)
{
	return rewrite_from(0, n, cost);
}

/*
 * @n blocks of the sample from its @first-th, each evicted and then read
 * again (each read follows its ghost at once: no other ghost can take
 * its slot).
 */
static u32 reread(u64 first, u32 n, u32 cost)
{
	u32 moved = 0, i;

	for (i = 0; i < n; i++) {
		tac_split_evicted(&s, nth(first + i));
		moved += tac_split_read_miss(&s, nth(first + i), cost);
	}
	return moved;
}

static void starts_at_the_threshold_with_its_bounds(void)
{
	EXPECT_EQ(0, tac_split_init(&s, NR, 20, true));
	EXPECT_EQ(2560, s.target);
	EXPECT_EQ(640, s.lo);
	EXPECT_EQ(10240, s.hi);
	EXPECT_EQ(200, s.step);
	EXPECT_EQ(8, s.per_step);
	EXPECT_EQ(63, s.sample);
	EXPECT_EQ(512, tac_split_bytes(NR));
	tac_split_exit(&s);
}

/*
 * Rewrites of blocks just written back, and no evictions (a cache not
 * full): one step up per 8 votes, up to 80%.
 */
static void rewrites_of_written_back_blocks_grow_the_dirty_space(void)
{
	tac_split_init(&s, NR, 20, true);
	EXPECT_EQ(1, rewrite(8, R));
	EXPECT_EQ(2760, s.target);
	EXPECT_EQ(0, rewrite(7, R));
	EXPECT_EQ(2760, s.target);
	EXPECT_EQ(1, rewrite(1, R));
	EXPECT_EQ(2960, s.target);
	while (s.target < s.hi)
		EXPECT_EQ(1, rewrite(8, R));
	EXPECT_EQ(10240, s.target);
	EXPECT_EQ(0, rewrite(8, R));
	EXPECT_EQ(10240, s.target);
	tac_split_exit(&s);
}

/* Evicted blocks read again pull it down, to 5% and no further. */
static void rereads_of_evicted_blocks_grow_the_clean_space(void)
{
	tac_split_init(&s, NR, 20, true);
	EXPECT_EQ(1, reread(0, 8, R));
	EXPECT_EQ(2360, s.target);
	while (s.target > s.lo)
		EXPECT_EQ(1, reread(7, 8, R));
	EXPECT_EQ(640, s.target);
	EXPECT_EQ(0, reread(7, 8, R));
	tac_split_exit(&s);
}

/*
 * Votes weigh what the disk pays: 4 random rereads outweigh 4 sequential
 * rewrites, although they are as many; and the other way round.
 */
static void votes_weigh_the_cost_not_the_count(void)
{
	u32 i;

	tac_split_init(&s, NR, 20, true);
	for (i = 0; i < 4; i++) {
		rewrite(1, S);
		reread(100 + i, 1, R);
	}
	EXPECT_EQ(2360, s.target);
	for (i = 0; i < 4; i++) {
		rewrite(1, R);
		reread(100 + i, 1, S);
	}
	EXPECT_EQ(2560, s.target);
	tac_split_exit(&s);
}

/*
 * A miss or a write with no ghost votes for nothing; nor does a ghost of
 * the other side: a read of a block written back, a write of one evicted.
 */
static void only_a_ghost_of_its_own_side_votes(void)
{
	u32 i;

	tac_split_init(&s, NR, 20, true);
	for (i = 0; i < 1000; i++) {
		EXPECT_TRUE(!tac_split_read_miss(&s, nth(i), R));
		EXPECT_TRUE(!tac_split_write(&s, nth(i)));
	}
	for (i = 0; i < 64; i++) {
		tac_split_cleaned(&s, nth(i));
		tac_split_read_miss(&s, nth(i), R);
		tac_split_evicted(&s, nth(1000 + i));
		EXPECT_TRUE(!tac_split_write(&s, nth(1000 + i)));
	}
	EXPECT_EQ(0, s.votes);
	EXPECT_EQ(2560, s.target);
	tac_split_exit(&s);
}

/* A ghost votes once; newer ones in its slot replace it. */
static void a_ghost_votes_once(void)
{
	u32 i;
	u64 b;

	tac_split_init(&s, NR, 20, true);
	b = nth(5);
	tac_split_evicted(&s, b);
	EXPECT_TRUE(!tac_split_read_miss(&s, b, R) && s.votes == 1);
	for (i = 0; i < 100; i++)
		tac_split_read_miss(&s, b, R);
	EXPECT_EQ(1, s.votes);
	/* 4096 other blocks of the sample over 128 slots: b's are gone. */
	tac_split_evicted(&s, b);
	tac_split_cleaned(&s, b);
	for (i = 0; i < 4096; i++) {
		tac_split_evicted(&s, nth(10000 + i));
		tac_split_cleaned(&s, nth(10000 + i));
	}
	EXPECT_TRUE(!tac_split_read_miss(&s, b, R));
	EXPECT_TRUE(!tac_split_write(&s, b));
	EXPECT_EQ(1, s.votes);
	tac_split_exit(&s);
}

/* Pinned (dirty_adapt off): the votes are counted, the target stays. */
static void a_pinned_split_does_not_move(void)
{
	tac_split_init(&s, NR, 20, false);
	EXPECT_EQ(0, rewrite(8 * 20, R));
	EXPECT_EQ(0, reread(0, 8 * 5, R));
	EXPECT_EQ(2560, s.target);
	tac_split_set(&s, 50, true);
	EXPECT_EQ(6400, s.target);
	EXPECT_EQ(1, rewrite(8, R));
	EXPECT_EQ(6600, s.target);
	tac_split_exit(&s);
}

/* A threshold outside [5, 80] widens the range to include it. */
static void a_threshold_outside_the_bounds_widens_them(void)
{
	tac_split_init(&s, NR, 95, true);
	EXPECT_EQ(12160, s.hi);
	EXPECT_EQ(12160, s.target);
	tac_split_set(&s, 1, true);
	EXPECT_EQ(128, s.lo);
	EXPECT_EQ(10240, s.hi);
	tac_split_exit(&s);
}

/*
 * Free space is clean space: half the free blocks beyond a 1/16 reserve
 * (800 of 12800) add to the target, where it has moved, up to hi (10240,
 * or the threshold when higher); a full cache, a cache down to its
 * reserve, and a pinned split get the target alone.
 */
static void free_blocks_beyond_the_reserve_add_to_the_target(void)
{
	tac_split_init(&s, NR, 20, true);
	EXPECT_EQ(2560, tac_split_high(&s, 0));
	EXPECT_EQ(2560, tac_split_high(&s, 800));
	EXPECT_EQ(2560, tac_split_high(&s, 801));
	EXPECT_EQ(2561, tac_split_high(&s, 802));
	EXPECT_EQ(2560 + 2000, tac_split_high(&s, 4800));
	EXPECT_EQ(2560 + 6000, tac_split_high(&s, NR));
	/* From where the target is, not where it started. */
	EXPECT_EQ(1, rewrite(8, R));
	EXPECT_EQ(2760, s.target);
	EXPECT_EQ(2760 + 2000, tac_split_high(&s, 4800));
	tac_split_set(&s, 70, true);
	EXPECT_EQ(10240, tac_split_high(&s, NR));
	tac_split_set(&s, 20, false);
	EXPECT_EQ(2560, tac_split_high(&s, NR));
	/* Up to hi, which a threshold of 90 raises to 11520. */
	tac_split_set(&s, 90, true);
	EXPECT_EQ(1, reread(0, 8, R));
	EXPECT_EQ(11320, s.target);
	EXPECT_EQ(11520, tac_split_high(&s, NR));
	tac_split_exit(&s);
	/* A cache of fewer than 16 blocks keeps no reserve. */
	tac_split_init(&s, 10, 20, true);
	EXPECT_EQ(2, tac_split_high(&s, 0));
	EXPECT_EQ(7, tac_split_high(&s, 10));
	tac_split_exit(&s);
}

/* Tiny and huge caches: the table has 64 slots at least, steps >= 1. */
static void sizes_at_the_edges(void)
{
	EXPECT_EQ(0, tac_split_init(&s, 10, 20, true));
	EXPECT_EQ(64, s.mask + 1);
	EXPECT_EQ(0, s.sample);
	EXPECT_EQ(1, s.step);
	EXPECT_EQ(8, s.per_step);
	EXPECT_EQ(2, s.target);
	EXPECT_EQ(1, s.lo);
	while (s.target > 1)
		reread(0, 8, R);
	EXPECT_EQ(1, s.target);
	EXPECT_EQ(0, reread(0, 8, R));
	tac_split_exit(&s);
	/* 20% of 4 blocks is 0.8: one block, not none. */
	EXPECT_EQ(0, tac_split_init(&s, 4, 20, true));
	EXPECT_EQ(1, s.target);
	EXPECT_EQ(1, s.lo);
	tac_split_exit(&s);
	EXPECT_EQ(0, tac_split_init(&s, 1U << 30, 20, true));
	EXPECT_EQ(1U << 24, s.mask + 1);
	EXPECT_EQ(63, s.sample);
	EXPECT_EQ(1U << 18, s.per_step);
	EXPECT_EQ(1U << 24, s.step);
	tac_split_exit(&s);
	/* 8191 blocks: 64 slots (127 rounded down), one block in 64. */
	EXPECT_EQ(0, tac_split_init(&s, 8191, 20, true));
	EXPECT_EQ(64, s.mask + 1);
	EXPECT_EQ(63, s.sample);
	tac_split_exit(&s);
	/* The largest: 2^25 slots, the slot's bits (32-56) below the */
	/* sample's (57-62). */
	EXPECT_EQ(0, tac_split_init(&s, U32_MAX, 20, true));
	EXPECT_EQ(1U << 25, s.mask + 1);
	EXPECT_EQ(63, s.sample);
	tac_split_exit(&s);
}

/*
 * One block in 64 is sampled (NR / 128 slots = 100, rounded down to a
 * power of two); the others leave no ghost and never vote.
 */
static void blocks_out_of_the_sample_never_vote(void)
{
	u32 i, in = 0, out = 0;

	tac_split_init(&s, NR, 20, true);
	for (i = 0; i < 64000; i++) {
		if (tac_split_sampled(&s, i)) {
			in++;
			continue;
		}
		if (out++ >= 1000)
			continue;
		tac_split_cleaned(&s, i);
		EXPECT_TRUE(!tac_split_write(&s, i));
		tac_split_evicted(&s, i);
		EXPECT_TRUE(!tac_split_read_miss(&s, i, R));
	}
	/* 1000 expected; 1 in 64 of 64000 by the hash's top bits */
	EXPECT_TRUE(in > 1000 - 150 && in < 1000 + 150);
	EXPECT_EQ(0, s.votes);
	EXPECT_EQ(2560, s.target);
	tac_split_exit(&s);
}

/*
 * The fingerprint is not the slot: of two blocks of the sample in one
 * slot, the later one's ghost replaces the earlier one's, which no longer
 * votes (a fingerprint taken from the slot's bits would match both).
 */
static void a_ghost_in_the_same_slot_is_another_block(void)
{
	u64 a, b = 0, i;

	tac_split_init(&s, NR, 20, true);
	a = nth(0);
	tac_split_cleaned(&s, a);
	/* 128 slots: one of the next few hundred blocks takes a's. */
	for (i = 1; i < 4096; i++) {
		b = nth(i);
		tac_split_cleaned(&s, b);
		if (!tac_split_write(&s, a))
			break;
		tac_split_cleaned(&s, a);	/* seen again: put it back */
	}
	EXPECT_TRUE(i < 4096);
	/* b took a's slot: a no longer votes, b does. */
	EXPECT_TRUE(!tac_split_write(&s, a));
	EXPECT_TRUE(tac_split_write(&s, b));
	tac_split_exit(&s);
}

/*
 * The horizon is a third to two thirds of the cache: a block written
 * back, then a third of the cache written back after it (4266 blocks in
 * a row, about 67 of them in the sample), then written again, still
 * votes, most times; so does a block evicted and read again as late.
 * Ghosts of every block over 128 slots kept none past 4266 others: the
 * target never saw a database rewrite its pages once per checkpoint.
 */
static void a_ghost_is_seen_a_third_of_the_cache_later(void)
{
	u32 i, v, dirty = 0, clean = 0;

	tac_split_init(&s, NR, 20, false);
	for (i = 0; i < 64; i++) {
		tac_split_cleaned(&s, nth(i));
		tac_split_evicted(&s, nth(100 + i));
	}
	for (i = 0; i < NR / 3; i++) {
		tac_split_cleaned(&s, 1000000 + i);
		tac_split_evicted(&s, 2000000 + i);
	}
	for (i = 0; i < 64; i++) {
		dirty += tac_split_write(&s, nth(i));
		v = s.votes;	/* per_step 8: a vote always changes it */
		tac_split_read_miss(&s, nth(100 + i), R);
		clean += s.votes != v;
	}
	printf("# of 64 ghosts a third of the cache old, %u written and %u read again voted\n",
	       dirty, clean);
	EXPECT_TRUE(dirty >= 24);
	EXPECT_TRUE(clean >= 24);
	tac_split_exit(&s);
}

int main(void)
{
	RUN(starts_at_the_threshold_with_its_bounds);
	RUN(rewrites_of_written_back_blocks_grow_the_dirty_space);
	RUN(rereads_of_evicted_blocks_grow_the_clean_space);
	RUN(votes_weigh_the_cost_not_the_count);
	RUN(only_a_ghost_of_its_own_side_votes);
	RUN(a_ghost_votes_once);
	RUN(a_pinned_split_does_not_move);
	RUN(a_threshold_outside_the_bounds_widens_them);
	RUN(free_blocks_beyond_the_reserve_add_to_the_target);
	RUN(sizes_at_the_edges);
	RUN(blocks_out_of_the_sample_never_vote);
	RUN(a_ghost_is_seen_a_third_of_the_cache_later);
	RUN(a_ghost_in_the_same_slot_is_another_block);
	return tap_done();
}
