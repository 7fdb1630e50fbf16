// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TAC policy through its ops: admission and the smoothed heap (TAC
 * sections 3.2, 3.3), aggressive filling (Turbocharging 3.3.1), held and
 * dirty blocks, cleaning order, physical invalidation (Turbocharging 2.5),
 * warm restart, online parameters, memory.  Unless said otherwise, extents
 * are one block long so that a test sets a block's temperature directly
 * with load_extent().
 */
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "tap.h"

static struct tac_params base_params(void)
{
	struct tac_params params;

	tac_params_default(&params);
	params.extent_blocks = 1;
	params.stats_extents = 4096;
	return params;
}

static struct tac_policy *mk(u32 nr, u32 fill, u32 margin)
{
	struct tac_params params = base_params();

	params.fill_threshold = fill;
	params.admit_margin = margin;
	return tac_policy_create(nr, &params);
}

/*
 * mk() with cache writes that cost nothing: every block the learning
 * filter remembers votes with weight 1 when it comes back, even without a
 * request() to price its miss (tac_learn()).
 */
static struct tac_policy *mk_free_writes(u32 nr, u32 fill, u32 margin)
{
	struct tac_params params = base_params();

	params.fill_threshold = fill;
	params.admit_margin = margin;
	params.cost_cache_write_us = 0;
	return tac_policy_create(nr, &params);
}

static void set_temp(struct tac_policy *p, u64 ob, u32 temp)
{
	tac_policy_load_extent(p, to_extent(ob), temp);
}

/* admit() with plain numbers; *cb and *ev are left alone on -ENOSPC. */
static int adm(struct tac_policy *p, u64 ob, u32 *cb, u64 *ev)
{
	tac_cblock_t c = to_cblock(0);
	tac_oblock_t e = to_oblock(0);
	int r = tac_policy_admit(p, to_oblock(ob), &c, &e);

	if (r >= 0 && cb)
		*cb = from_cblock(c);
	if (r == 1 && ev)
		*ev = from_oblock(e);
	return r;
}

/* -1 if @ob is not MAPPED, else its cache block. */
static long look(struct tac_policy *p, u64 ob)
{
	tac_cblock_t c;

	if (tac_policy_lookup(p, to_oblock(ob), &c, TAC_USE_READ))
		return -1;
	return from_cblock(c);
}

/*
 * Four blocks, obs 1..4 at temperatures 1000, 5000, 6000, 7000, admitted
 * while filling (fill_threshold 100), so the cache is full.
 */
static struct tac_policy *fill4(struct tac_policy *p, u32 cold)
{
	u32 i, cb;

	if (!p)
		return NULL;
	set_temp(p, 1, cold);
	set_temp(p, 2, 5000);
	set_temp(p, 3, 6000);
	set_temp(p, 4, 7000);
	for (i = 1; i <= 4; i++)
		if (adm(p, i, &cb, NULL) != 0 || cb != i - 1)
			return NULL;
	return p;
}

static struct tac_policy *full4(u32 margin, u32 cold)
{
	return fill4(mk(4, 100, margin), cold);
}

/* 1010 * 100 = 101000 = 1000 * 101: not warmer, so bypassed. */
static void admit_exactly_one_percent_warmer_is_bypassed(void)
{
	struct tac_policy *p = full4(1, 1000);

	EXPECT_TRUE(p);
	set_temp(p, 10, 1010);
	EXPECT_EQ(-ENOSPC, adm(p, 10, NULL, NULL));
	EXPECT_EQ(1, pstats(p).bypasses);
	EXPECT_EQ(0, look(p, 1));
	EXPECT_EQ(-1, look(p, 10));
	tac_policy_destroy(p);
}

/* 1011 beats 1000 by more than 1%: the coldest block is the victim. */
static void admit_just_over_one_percent_evicts_the_coldest(void)
{
	struct tac_policy *p = full4(1, 1000);
	u32 cb = 99;
	u64 ev = 0;

	EXPECT_TRUE(p);
	set_temp(p, 10, 1011);
	EXPECT_EQ(1, adm(p, 10, &cb, &ev));
	EXPECT_EQ(0, cb);
	EXPECT_EQ(1, ev);
	EXPECT_EQ(-1, look(p, 1));
	EXPECT_EQ(0, look(p, 10));
	EXPECT_EQ(1, pstats(p).evictions);
	EXPECT_EQ(5, pstats(p).admissions);
	tac_policy_destroy(p);
}

static void admit_just_under_one_percent_is_bypassed(void)
{
	struct tac_policy *p = full4(1, 1000);

	EXPECT_TRUE(p);
	set_temp(p, 10, 1009);
	EXPECT_EQ(-ENOSPC, adm(p, 10, NULL, NULL));
	tac_policy_destroy(p);
}

/* Coldest at 0: any warmth wins, none does not. */
static void admit_against_coldest_at_zero(void)
{
	struct tac_policy *p = full4(1, 0);
	u64 ev = 0;

	EXPECT_TRUE(p);
	EXPECT_EQ(-ENOSPC, adm(p, 10, NULL, NULL));	/* temp 0 */
	set_temp(p, 11, 1);
	EXPECT_EQ(1, adm(p, 11, NULL, &ev));
	EXPECT_EQ(1, ev);
	tac_policy_destroy(p);
}

/*
 * Near the u32 ceiling: U32_MAX * 100 > c * 101 holds up to c =
 * 4252442866 and fails from 4252442867; 32-bit products would overflow.
 */
static void admit_margin_at_saturated_temperatures(void)
{
	struct tac_policy *p = full4(1, 0);

	/* ob 1 stays the victim (key 0); its extent warms afterwards. */
	EXPECT_TRUE(p);
	set_temp(p, 1, 4252442866U);
	set_temp(p, 2, U32_MAX);
	set_temp(p, 3, U32_MAX);
	set_temp(p, 4, U32_MAX);
	set_temp(p, 10, U32_MAX);
	EXPECT_EQ(1, adm(p, 10, NULL, NULL));
	tac_policy_destroy(p);

	p = full4(1, 0);
	EXPECT_TRUE(p);
	set_temp(p, 1, 4252442867U);
	set_temp(p, 2, U32_MAX);
	set_temp(p, 3, U32_MAX);
	set_temp(p, 4, U32_MAX);
	set_temp(p, 10, U32_MAX);
	EXPECT_EQ(-ENOSPC, adm(p, 10, NULL, NULL));
	tac_policy_destroy(p);
}

/* Margin 0 is TAC section 3.2's plain rule: strictly warmer. */
static void admit_margin_zero_needs_strictly_warmer(void)
{
	struct tac_policy *p = full4(0, 1000);

	EXPECT_TRUE(p);
	set_temp(p, 10, 1000);
	EXPECT_EQ(-ENOSPC, adm(p, 10, NULL, NULL));
	set_temp(p, 10, 1001);
	EXPECT_EQ(1, adm(p, 10, NULL, NULL));
	tac_policy_destroy(p);
}

/*
 * GreedyDual, lazily: ob 10 (5100) evicts ob 1 (key 1000), which sets the
 * inflation value to 1000.  ob 2 (key 5000) is next, unless it is used:
 * then it reaches the top marked, is keyed again at 1000 + 5500, and ob 3
 * (key 6000) is evicted instead.  Without the use, ob 2 goes.
 */
static void victim_search_rekeys_a_block_used_since_its_key(void)
{
	u32 used;

	for (used = 0; used <= 1; used++) {
		struct tac_policy *p = full4(1, 1000);
		u64 ev = 0;

		EXPECT_TRUE(p);
		EXPECT_EQ(1000, pstats(p).coldest_temp);
		set_temp(p, 10, 5100);
		EXPECT_EQ(1, adm(p, 10, NULL, &ev));
		EXPECT_EQ(1, ev);
		set_temp(p, 2, 5500);
		if (used)
			EXPECT_EQ(1, look(p, 2));
		set_temp(p, 11, 6100);
		EXPECT_EQ(1, adm(p, 11, NULL, &ev));
		EXPECT_EQ(used ? 3 : 2, ev);
		tac_policy_destroy(p);
	}
}

/*
 * Recency: blocks of equal temperature leave in the order they came, as
 * each admission raises the inflation value above the keys before it.
 */
static void equal_temperatures_leave_first_in_first_out(void)
{
	struct tac_policy *p = mk(4, 100, 0);
	u64 ev = 0, ob;

	EXPECT_TRUE(p);
	for (ob = 1; ob <= 4; ob++) {
		set_temp(p, ob, 999 + ob);	/* keys 1000..1003 */
		EXPECT_EQ(0, adm(p, ob, NULL, NULL));
		set_temp(p, ob, 1000);
	}
	for (ob = 5; ob <= 40; ob++) {
		set_temp(p, ob, 1001);	/* strictly warmer than the victim */
		EXPECT_EQ(1, adm(p, ob, NULL, &ev));
		EXPECT_EQ(ob - 4, ev);
		set_temp(p, ob, 1000);
	}
	tac_policy_destroy(p);
}

/*
 * A read of a cached block keys it again before it can leave; a write does
 * not (issue 10: under a database's buffer pool the write of a page is
 * often its last use).  Four blocks at keys 1000..1003; ob 5 evicts ob 1,
 * so the inflation value is 1000.  Then ob 2, the next victim, is read
 * (keyed again at 2000: ob 3 goes next) or written (ob 2 still goes
 * next).  Both requests leave the temperatures as they were.
 */
static void a_write_hit_does_not_key_the_block_again(void)
{
	enum tac_use use;

	for (use = TAC_USE_READ; use <= TAC_USE_WRITE; use++) {
		struct tac_policy *p = mk(4, 100, 0);
		tac_cblock_t cb;
		u64 ev = 0, ob;

		EXPECT_TRUE(p);
		for (ob = 1; ob <= 4; ob++) {
			set_temp(p, ob, 999 + ob);
			EXPECT_EQ(0, adm(p, ob, NULL, NULL));
			set_temp(p, ob, 1000);
		}
		set_temp(p, 5, 1001);
		EXPECT_EQ(1, adm(p, 5, NULL, &ev));
		EXPECT_EQ(1, ev);
		set_temp(p, 5, 1000);
		tac_policy_request(p, to_oblock(2), 1, use == TAC_USE_WRITE);
		set_temp(p, 2, 1000);
		EXPECT_EQ(0, tac_policy_lookup(p, to_oblock(2), &cb, use));
		set_temp(p, 6, 1001);
		EXPECT_EQ(1, adm(p, 6, NULL, &ev));
		EXPECT_EQ(use == TAC_USE_READ ? 3 : 2, ev);
		tac_policy_destroy(p);
	}
}

/*
 * Seven blocks inserted at 10, 20, .., 70, all now 1000 and used.  Five
 * re-checks key the first five again; the sixth top (key 60, still
 * marked used) is taken as it is.
 */
static void victim_search_rechecks_the_top_five_times(void)
{
	struct tac_policy *p = mk(7, 100, 1);
	u64 ev = 0;
	u32 i;

	EXPECT_TRUE(p);
	for (i = 1; i <= 7; i++) {
		set_temp(p, i, 10 * i);
		EXPECT_EQ(0, adm(p, i, NULL, NULL));
	}
	for (i = 1; i <= 7; i++) {
		set_temp(p, i, 1000);
		EXPECT_EQ(i - 1, look(p, i));	/* used: keyed again */
	}
	set_temp(p, 100, 1500);
	EXPECT_EQ(1, adm(p, 100, NULL, &ev));
	EXPECT_EQ(6, ev);
	tac_policy_destroy(p);
}

/*
 * 20 blocks, fill_threshold 50: the first 10 admissions need no
 * temperature; from the 11th on the test applies though 10 blocks are
 * free, and a winner takes a free block without evicting.
 */
static void fill_threshold_admits_all_then_tests_even_with_free_blocks(void)
{
	struct tac_policy *p = mk(20, 50, 1);
	u32 i, cb;
	u64 ev;

	EXPECT_TRUE(p);
	for (i = 0; i < 10; i++) {
		EXPECT_TRUE(tac_policy_would_admit(p, to_oblock(100 + i)));
		EXPECT_EQ(0, adm(p, 100 + i, &cb, NULL));
		EXPECT_EQ(i, cb);
	}
	EXPECT_FALSE(tac_policy_would_admit(p, to_oblock(200)));
	EXPECT_EQ(-ENOSPC, adm(p, 200, NULL, NULL));
	set_temp(p, 200, 1);
	EXPECT_EQ(0, adm(p, 200, &cb, NULL));
	EXPECT_EQ(10, cb);
	EXPECT_EQ(0, pstats(p).evictions);
	/* Fill the rest with warm blocks, then the next one evicts. */
	for (i = 0; i < 9; i++) {
		set_temp(p, 300 + i, 50);
		EXPECT_EQ(0, adm(p, 300 + i, NULL, NULL));
	}
	EXPECT_EQ(20, pstats(p).nr_mapped);
	set_temp(p, 400, 1);
	EXPECT_EQ(1, adm(p, 400, &cb, &ev));
	EXPECT_EQ(100, ev);		/* temperature 0, first inserted */
	EXPECT_EQ(0, cb);
	tac_policy_destroy(p);
}

/* fill_threshold 0: the test applies from the first block (vs 0). */
static void fill_threshold_zero_tests_from_the_start(void)
{
	struct tac_policy *p = mk(4, 0, 1);

	EXPECT_TRUE(p);
	EXPECT_EQ(-ENOSPC, adm(p, 1, NULL, NULL));
	set_temp(p, 1, 1);
	EXPECT_EQ(0, adm(p, 1, NULL, NULL));
	/* Now the coldest is 1: 2 * 100 > 1 * 101. */
	set_temp(p, 2, 2);
	EXPECT_EQ(0, adm(p, 2, NULL, NULL));
	set_temp(p, 3, 1);
	EXPECT_EQ(-ENOSPC, adm(p, 3, NULL, NULL));
	tac_policy_destroy(p);
}

static void held_blocks_are_never_evicted(void)
{
	struct tac_policy *p = full4(1, 1000);
	u64 ev = 0;
	u32 i;

	EXPECT_TRUE(p);
	/* Hold ob 1 (cblock 0) twice: a flag, not a count. */
	tac_policy_hold(p, to_cblock(0), true);
	tac_policy_hold(p, to_cblock(0), true);
	set_temp(p, 10, 9000);
	EXPECT_EQ(1, adm(p, 10, NULL, &ev));
	EXPECT_EQ(2, ev);
	EXPECT_EQ(0, look(p, 1));
	/* Hold everything: nothing can go. */
	for (i = 1; i < 4; i++)
		tac_policy_hold(p, to_cblock(i), true);
	set_temp(p, 11, 100000);
	EXPECT_FALSE(tac_policy_would_admit(p, to_oblock(11)));
	EXPECT_EQ(-ENOSPC, adm(p, 11, NULL, NULL));
	/* One hold(false) undoes both hold(true) calls on cblock 0. */
	tac_policy_hold(p, to_cblock(0), false);
	EXPECT_EQ(1, adm(p, 11, NULL, &ev));
	EXPECT_EQ(1, ev);
	tac_policy_destroy(p);
}

/*
 * More than eight held blocks below the coldest free one: the search
 * gives up (bounded cost) and bypasses; the heap is intact afterwards.
 */
static void held_blocks_beyond_the_skip_bound_bypass(void)
{
	struct tac_policy *p = mk(12, 100, 1);
	u64 ev = 0;
	u32 i;

	EXPECT_TRUE(p);
	for (i = 0; i < 12; i++) {
		set_temp(p, i, 100 + i);
		EXPECT_EQ(0, adm(p, i, NULL, NULL));
	}
	for (i = 0; i < 9; i++)
		tac_policy_hold(p, to_cblock(i), true);
	set_temp(p, 50, 100000);
	EXPECT_EQ(-ENOSPC, adm(p, 50, NULL, NULL));
	tac_policy_hold(p, to_cblock(4), false);
	EXPECT_EQ(1, adm(p, 50, NULL, &ev));
	EXPECT_EQ(4, ev);
	/* Held blocks stepped over went back at ob 4's key: any comes first. */
	EXPECT_TRUE(pstats(p).coldest_temp >= 100 &&
		    pstats(p).coldest_temp <= 103);
	tac_policy_destroy(p);
}

static void dirty_blocks_are_never_evicted(void)
{
	struct tac_policy *p = full4(1, 1000);
	u64 ev = 0;
	u32 i;

	EXPECT_TRUE(p);
	for (i = 0; i < 4; i++)
		tac_policy_set_dirty(p, to_cblock(i));
	tac_policy_set_dirty(p, to_cblock(0));	/* no-op */
	EXPECT_EQ(4, pstats(p).nr_dirty);
	set_temp(p, 10, 100000);
	EXPECT_EQ(-ENOSPC, adm(p, 10, NULL, NULL));
	/* Clean ob 3 (cblock 2): the only candidate, though not coldest. */
	tac_policy_clear_dirty(p, to_cblock(2));
	tac_policy_clear_dirty(p, to_cblock(2));	/* no-op */
	EXPECT_EQ(3, pstats(p).nr_dirty);
	EXPECT_EQ(1, adm(p, 10, NULL, &ev));
	EXPECT_EQ(3, ev);
	tac_policy_destroy(p);
}

/* clear_dirty() keys the block with its extent's temperature now. */
static void clear_dirty_reinserts_with_current_temperature(void)
{
	struct tac_policy *p = full4(1, 1000);
	u64 ev = 0;

	EXPECT_TRUE(p);
	tac_policy_set_dirty(p, to_cblock(0));	/* ob 1, inserted at 1000 */
	set_temp(p, 1, 8000);
	tac_policy_clear_dirty(p, to_cblock(0));
	set_temp(p, 10, 5500);
	EXPECT_EQ(1, adm(p, 10, NULL, &ev));
	EXPECT_EQ(2, ev);		/* not ob 1, now at 8000 */
	/* ob 10 was keyed at the inflation value 5000 plus 5500: ob 3 is next. */
	EXPECT_EQ(6000, pstats(p).coldest_temp);
	tac_policy_destroy(p);
}

/*
 * Placement (issue 10).  Eight blocks, obs 10, 20, .., 80 at cache blocks
 * 0..7, admitted while filling with the temperatures (and so the keys)
 * @temps.  Extents are one block, so each block's temperature is its own.
 */
static struct tac_policy *full8(const u32 *temps)
{
	struct tac_policy *p = mk(8, 100, 0);
	u32 i, cb;

	if (!p)
		return NULL;
	for (i = 0; i < 8; i++) {
		set_temp(p, 10 * (i + 1), temps[i]);
		if (adm(p, 10 * (i + 1), &cb, NULL) != 0 || cb != i)
			return NULL;
	}
	return p;
}

/*
 * A page of two blocks, obs 200 and 201 at 3000, past the fill.  Block
 * 200 evicts the coldest, cblock 4 (key 1000), which makes the inflation
 * value 1000.  Block 201 would evict the next coldest, cblock 0 (1001),
 * but takes cblock 5 (1002), next to 200: its key is within an eighth of
 * the way from the victim's (1001) to 201's own (1000 + 3000).  Unless
 * cblock 5 is used since its key was set, held, dirty, or keyed above
 * that (1001 + 2999 / 8 = 1375): then cblock 0 goes, as before.
 */
static void a_page_goes_next_to_its_first_block(void)
{
	enum { FREE_TO_TAKE, USED, HELD, DIRTY, TOO_WARM, NR_CASES };
	u32 temps[8] = { 1001, 5000, 5000, 5000, 1000, 1002, 5000, 5000 };
	int k;

	for (k = 0; k < NR_CASES; k++) {
		struct tac_policy *p;
		u64 ev = 0;
		u32 cb = 99;

		temps[5] = k == TOO_WARM ? 1376 : 1002;
		p = full8(temps);
		EXPECT_TRUE(p);
		if (k == USED)
			EXPECT_EQ(5, look(p, 60));
		if (k == HELD)
			tac_policy_hold(p, to_cblock(5), true);
		if (k == DIRTY)
			tac_policy_set_dirty(p, to_cblock(5));
		req(p, 200, 2);
		set_temp(p, 200, 3000);
		set_temp(p, 201, 3000);
		EXPECT_EQ(1, adm(p, 200, &cb, &ev));
		EXPECT_EQ(4, cb);
		EXPECT_EQ(50, ev);
		EXPECT_EQ(1, adm(p, 201, &cb, &ev));
		EXPECT_EQ(k == FREE_TO_TAKE ? 5 : 0, cb);
		EXPECT_EQ(k == FREE_TO_TAKE ? 60 : 10, ev);
		EXPECT_EQ(2, pstats(p).evictions);
		/* What was not evicted is still there. */
		EXPECT_EQ(k == FREE_TO_TAKE ? 0 : -1, look(p, 10));
		tac_policy_destroy(p);
	}
}

/*
 * A block whose origin neighbour after it is cached goes before it: ob
 * 199 (3000), its own request, takes cblock 3 (1002) before ob 200's
 * cblock 4, not the coldest, cblock 0 (1001).
 */
static void a_block_goes_before_its_next_neighbour(void)
{
	const u32 temps[8] = { 1001, 5000, 5000, 1002, 1000, 5000, 5000, 5000 };
	struct tac_policy *p = full8(temps);
	u64 ev = 0;
	u32 cb = 99;

	EXPECT_TRUE(p);
	req(p, 200, 1);
	set_temp(p, 200, 3000);
	EXPECT_EQ(1, adm(p, 200, &cb, &ev));
	EXPECT_EQ(4, cb);
	req(p, 199, 1);
	set_temp(p, 199, 3000);
	EXPECT_EQ(1, adm(p, 199, &cb, &ev));
	EXPECT_EQ(3, cb);
	EXPECT_EQ(40, ev);
	tac_policy_destroy(p);
}

/*
 * The first block of a request of several, with no neighbour cached,
 * starts as far before the victim as the rule allows, up to the request's
 * length less one.  Victim cblock 5 (1000); cblocks 4 (1001) and 3 (1002)
 * before it are as cold, 2 (5000) is not.  A request of three blocks
 * (300..302) takes 3, 4, 5; of two, 4 and 5; of one, 5.
 */
static void a_request_of_several_starts_before_its_victim(void)
{
	const u32 temps[8] = { 5000, 5000, 5000, 1002, 1001, 1000, 5000, 5000 };
	u32 nr;

	for (nr = 1; nr <= 3; nr++) {
		struct tac_policy *p = full8(temps);
		u32 i, cb = 99;

		EXPECT_TRUE(p);
		req(p, 300, nr);
		for (i = 0; i < nr; i++) {
			set_temp(p, 300 + i, 3000);
			EXPECT_EQ(1, adm(p, 300 + i, &cb, NULL));
			EXPECT_EQ(6 - nr + i, cb);
		}
		tac_policy_destroy(p);
	}
}

/*
 * While free blocks remain, a block goes to the free block after its
 * neighbour's if that one was never handed out, though a released block
 * comes first otherwise; the free count stays right.
 */
static void a_free_block_next_to_the_neighbour_comes_first(void)
{
	struct tac_policy *p = mk(8, 100, 0);
	u32 cb = 99;

	EXPECT_TRUE(p);
	EXPECT_EQ(0, adm(p, 10, &cb, NULL));
	EXPECT_EQ(0, adm(p, 20, &cb, NULL));
	EXPECT_EQ(0, adm(p, 30, &cb, NULL));
	EXPECT_EQ(2, cb);
	tac_policy_unmap(p, to_cblock(1));
	tac_policy_release(p, to_cblock(1));
	EXPECT_EQ(0, adm(p, 31, &cb, NULL));
	EXPECT_EQ(3, cb);
	EXPECT_EQ(0, adm(p, 40, &cb, NULL));	/* the released one */
	EXPECT_EQ(1, cb);
	EXPECT_EQ(0, adm(p, 50, &cb, NULL));
	EXPECT_EQ(4, cb);
	EXPECT_EQ(0, adm(p, 60, &cb, NULL));
	EXPECT_EQ(5, cb);
	/* Nothing handed out twice, and the last free one found. */
	EXPECT_EQ(0, adm(p, 70, &cb, NULL));
	EXPECT_EQ(0, adm(p, 80, &cb, NULL));
	EXPECT_EQ(7, cb);
	EXPECT_EQ(8, pstats(p).nr_mapped);
	tac_policy_destroy(p);
}

/*
 * A block placed past the frontier, then released (or dropped clean) and
 * placed there again, is handed out once.  It used to be on the free list
 * as well, and the next admission took it a second time: a dirty block's
 * mapping went to another origin block (its data lost), and a hash chain
 * could loop on itself (cold review of the placement).
 */
static void a_block_placed_past_the_frontier_is_handed_out_once(void)
{
	int drop;

	for (drop = 0; drop <= 1; drop++) {
		struct tac_policy *p = mk(8, 100, 0);
		bool seen[8] = { false };
		tac_oblock_t o = to_oblock(0);
		bool dirty = false;
		u32 cb = 99, i;

		EXPECT_TRUE(p);
		EXPECT_EQ(0, adm(p, 100, &cb, NULL));
		EXPECT_EQ(0, cb);
		/* Past the frontier. */
		EXPECT_EQ(0, adm(p, 101, &cb, NULL));
		EXPECT_EQ(1, cb);
		if (drop) {
			tac_policy_set_dirty(p, to_cblock(0));
			tac_policy_drop_clean(p);
		} else {
			tac_policy_unmap(p, to_cblock(1));
			tac_policy_release(p, to_cblock(1));
		}
		EXPECT_EQ(0, adm(p, 101, &cb, NULL));
		EXPECT_EQ(1, cb);
		tac_policy_set_dirty(p, to_cblock(1));
		seen[0] = seen[1] = true;
		for (i = 0; i < 6; i++) {
			EXPECT_EQ(0, adm(p, 600 + 7 * i, &cb, NULL));
			EXPECT_TRUE(cb < 8 && !seen[cb]);
			if (cb < 8)
				seen[cb] = true;
		}
		EXPECT_EQ(8, pstats(p).nr_mapped);
		EXPECT_EQ(1, look(p, 101));
		EXPECT_TRUE(tac_policy_mapping(p, to_cblock(1), &o, &dirty));
		EXPECT_EQ(101, from_oblock(o));
		EXPECT_TRUE(dirty);
		tac_policy_destroy(p);
	}
}

static u32 batch(struct tac_policy *p, u64 from, u32 max, u64 *obs)
{
	struct tac_mapping out[64];
	u32 n = tac_policy_dirty_batch(p, to_oblock(from), out, max), i;

	for (i = 0; i < n; i++)
		obs[i] = from_oblock(out[i].oblock);
	return n;
}

/* Dirty obs 50 10 40 20 30 70 60: ascending from @from, then wrapped. */
static void dirty_batch_orders_by_origin_block_with_wrap(void)
{
	static const u64 dirty[] = { 50, 10, 40, 20, 30, 70, 60 };
	struct tac_policy *p = mk(16, 100, 1);
	u64 got[64];
	u32 i;

	EXPECT_TRUE(p);
	for (i = 0; i < 7; i++)
		EXPECT_EQ(0, tac_policy_load_mapping(p, to_cblock(i * 2),
						     to_oblock(dirty[i]),
						     true));
	EXPECT_EQ(0, tac_policy_load_mapping(p, to_cblock(1), to_oblock(45),
					     false));
	EXPECT_EQ(3, batch(p, 35, 3, got));
	EXPECT_EQ(40, got[0]);
	EXPECT_EQ(50, got[1]);
	EXPECT_EQ(60, got[2]);
	EXPECT_EQ(4, batch(p, 65, 4, got));
	EXPECT_EQ(70, got[0]);
	EXPECT_EQ(10, got[1]);
	EXPECT_EQ(20, got[2]);
	EXPECT_EQ(30, got[3]);
	EXPECT_EQ(7, batch(p, 40, 64, got));
	EXPECT_EQ(40, got[0]);
	EXPECT_EQ(30, got[6]);
	EXPECT_EQ(2, batch(p, 0, 2, got));
	EXPECT_EQ(10, got[0]);
	EXPECT_EQ(20, got[1]);
	EXPECT_EQ(0, batch(p, 0, 0, got));
	tac_policy_destroy(p);
}

static u64 g_from;

static int cmp_dist(const void *a, const void *b)
{
	u64 x = *(const u64 *)a - g_from, y = *(const u64 *)b - g_from;

	return x < y ? -1 : x > y;
}

/* Random dirty sets (64-bit obs too) against sort-everything. */
static void dirty_batch_matches_brute_force_on_random_sets(void)
{
	u32 seed;

	for (seed = 1; seed <= 100; seed++) {
		struct tac_policy *p = mk(200, 100, 1);
		u64 s = rnd_seed(seed), obs[200], want[200], got[64];
		u32 i, nd = 0, max, n;

		EXPECT_TRUE(p);
		for (i = 0; i < 200; i++) {
			bool dirty = rnd_below(&s, 3) == 0;

			obs[i] = seed % 2 ? rnd_next(&s) :
					    rnd_below(&s, 100000);
			if (tac_policy_load_mapping(p, to_cblock(i),
						    to_oblock(obs[i]), dirty))
				continue;	/* duplicate ob */
			if (dirty)
				want[nd++] = obs[i];
		}
		g_from = seed % 3 ? obs[rnd_below(&s, 200)] : rnd_next(&s);
		qsort(want, nd, sizeof(u64), cmp_dist);
		max = 1 + rnd_below(&s, 64);
		n = batch(p, g_from, max, got);
		EXPECT_EQ(nd < max ? nd : max, n);
		for (i = 0; i < n; i++)
			EXPECT_EQ_U64(want[i], got[i]);
		tac_policy_destroy(p);
	}
}

/* MAPPED -> DETACHED -> FREE, and the block is not reused in between. */
static void unmap_and_release_lifecycle(void)
{
	struct tac_policy *p = mk(1, 100, 1);
	tac_oblock_t ob;
	u64 got[8];
	bool dirty;
	u32 cb = 9;

	EXPECT_TRUE(p);
	EXPECT_EQ(0, adm(p, 7, &cb, NULL));
	EXPECT_EQ(0, cb);
	tac_policy_set_dirty(p, to_cblock(0));
	tac_policy_unmap(p, to_cblock(0));
	EXPECT_EQ(-1, look(p, 7));
	EXPECT_FALSE(tac_policy_mapping(p, to_cblock(0), &ob, &dirty));
	EXPECT_EQ(0, pstats(p).nr_mapped);
	EXPECT_EQ(0, pstats(p).nr_dirty);
	EXPECT_EQ(1, pstats(p).nr_detached);
	EXPECT_EQ(0, batch(p, 0, 8, got));
	/* Detached space is still in use: nothing free, nothing to evict. */
	set_temp(p, 8, 100000);
	EXPECT_EQ(-ENOSPC, adm(p, 8, NULL, NULL));
	tac_policy_release(p, to_cblock(0));
	EXPECT_EQ(0, pstats(p).nr_detached);
	EXPECT_EQ(0, adm(p, 8, &cb, NULL));
	EXPECT_EQ(0, cb);
	EXPECT_EQ(0, look(p, 8));
	tac_policy_destroy(p);
}

/* Broken calls warn and change nothing. */
static void contract_violations_warn_and_change_nothing(void)
{
	struct tac_policy *p = mk(4, 100, 1);
	unsigned long warns = tools_warn_count;

	EXPECT_TRUE(p);
	EXPECT_EQ(0, adm(p, 7, NULL, NULL));
	tac_policy_release(p, to_cblock(0));	/* MAPPED, not DETACHED */
	tac_policy_unmap(p, to_cblock(1));		/* FREE */
	tac_policy_set_dirty(p, to_cblock(2));	/* FREE */
	tac_policy_hold(p, to_cblock(4), true);	/* out of range */
	EXPECT_EQ(warns + 4, tools_warn_count);
	EXPECT_EQ(0, look(p, 7));
	EXPECT_EQ(1, pstats(p).nr_mapped);
	EXPECT_EQ(0, pstats(p).nr_dirty);
	EXPECT_EQ(0, pstats(p).nr_detached);
	tac_policy_destroy(p);
}

static void load_mapping_rejects_bad_block_busy_block_and_duplicate(void)
{
	struct tac_policy *p = mk(4, 100, 1);
	tac_oblock_t ob;
	bool dirty;

	EXPECT_TRUE(p);
	EXPECT_EQ(-EINVAL, tac_policy_load_mapping(p, to_cblock(4),
						   to_oblock(1), false));
	EXPECT_EQ(0, tac_policy_load_mapping(p, to_cblock(2), to_oblock(1),
					     true));
	EXPECT_EQ(-EINVAL, tac_policy_load_mapping(p, to_cblock(2),
						   to_oblock(5), false));
	EXPECT_EQ(-EINVAL, tac_policy_load_mapping(p, to_cblock(3),
						   to_oblock(1), false));
	EXPECT_TRUE(tac_policy_mapping(p, to_cblock(2), &ob, &dirty));
	EXPECT_EQ(1, from_oblock(ob));
	EXPECT_TRUE(dirty);
	EXPECT_FALSE(tac_policy_mapping(p, to_cblock(3), &ob, &dirty));
	EXPECT_FALSE(tac_policy_mapping(p, to_cblock(4), &ob, &dirty));
	EXPECT_EQ(1, pstats(p).nr_mapped);
	EXPECT_EQ(1, pstats(p).nr_dirty);
	tac_policy_destroy(p);
}

/* Loaded blocks are never handed out by admit(), wherever they lie. */
static void load_mapping_claims_blocks_from_the_free_pool(void)
{
	struct tac_policy *p = mk(4, 100, 1);
	u32 cb, seen = 0;

	EXPECT_TRUE(p);
	EXPECT_EQ(0, adm(p, 100, &cb, NULL));	/* cblock 0 */
	EXPECT_EQ(0, adm(p, 101, &cb, NULL));	/* cblock 1 */
	tac_policy_unmap(p, to_cblock(0));
	tac_policy_release(p, to_cblock(0));
	tac_policy_unmap(p, to_cblock(1));
	tac_policy_release(p, to_cblock(1));
	/* 0 is on the released list, 3 above the never-used frontier. */
	EXPECT_EQ(0, tac_policy_load_mapping(p, to_cblock(0), to_oblock(5),
					     false));
	EXPECT_EQ(0, tac_policy_load_mapping(p, to_cblock(3), to_oblock(6),
					     false));
	EXPECT_EQ(0, adm(p, 7, &cb, NULL));
	seen |= 1U << cb;
	EXPECT_EQ(0, adm(p, 8, &cb, NULL));
	seen |= 1U << cb;
	EXPECT_EQ(0x6, seen);
	EXPECT_EQ(4, pstats(p).nr_mapped);
	EXPECT_EQ(0, look(p, 5));
	EXPECT_EQ(3, look(p, 6));
	tac_policy_destroy(p);
}

static void set_params_rejects_fixed_and_invalid_fields(void)
{
	struct tac_policy *p = full4(1, 1000);
	struct tac_params params = base_params();

	EXPECT_TRUE(p);
	params.fill_threshold = 100;
	params.extent_blocks = 2;
	EXPECT_EQ(-EINVAL, tac_policy_set_params(p, &params));
	params = base_params();
	params.fill_threshold = 100;
	params.stats_extents = 8192;
	EXPECT_EQ(-EINVAL, tac_policy_set_params(p, &params));
	params = base_params();
	params.admit_margin = 50;
	params.seq_threshold = params.seq_window;
	EXPECT_EQ(-EINVAL, tac_policy_set_params(p, &params));
	/* Nothing changed: the 1% margin still holds. */
	set_temp(p, 10, 1011);
	EXPECT_EQ(1, adm(p, 10, NULL, NULL));
	tac_policy_destroy(p);
}

static void set_params_changes_the_margin_online(void)
{
	struct tac_policy *p = full4(1, 1000);
	struct tac_params params = base_params();

	EXPECT_TRUE(p);
	params.admit_margin = 50;
	EXPECT_EQ(0, tac_policy_set_params(p, &params));
	set_temp(p, 10, 1500);
	EXPECT_EQ(-ENOSPC, adm(p, 10, NULL, NULL));
	set_temp(p, 10, 1501);
	EXPECT_EQ(1, adm(p, 10, NULL, NULL));
	tac_policy_destroy(p);
}

static void params_check_names_each_bad_field(void)
{
	struct tac_params d, params;
	const char *why = "x";

	tac_params_default(&d);
	EXPECT_EQ(0, tac_params_check(&d, 1024, &why));
	EXPECT_TRUE(!why);
	EXPECT_EQ(-EINVAL, tac_params_check(&d, 0, &why));
	EXPECT_TRUE(why && strstr(why, "cache blocks"));
	EXPECT_EQ(0, tac_params_check(&d, TAC_MAX_CACHE_BLOCKS, &why));
	EXPECT_EQ(-EINVAL,
		  tac_params_check(&d, TAC_MAX_CACHE_BLOCKS + 1, &why));
#define BAD(field, value, word) do {					\
	params = d;							\
	params.field = value;						\
	why = NULL;							\
	EXPECT_EQ(-EINVAL, tac_params_check(&params, 1024, &why));	\
	EXPECT_TRUE(why && strstr(why, word));				\
	EXPECT_TRUE(!tac_policy_create(16, &params));		\
} while (0)
	BAD(extent_blocks, 0, "extent_blocks");
	BAD(extent_blocks, 48, "extent_blocks");
	BAD(extent_blocks, TAC_MAX_EXTENT_BLOCKS * 2, "extent_blocks");
	BAD(seq_window, 0, "seq_window");
	BAD(seq_window, TAC_MAX_SEQ_WINDOW + 1, "seq_window");
	BAD(seq_threshold, 20, "seq_threshold");
	BAD(aging_period, 0, "aging_period");
	BAD(admit_margin, 1001, "admit_margin");
	BAD(fill_threshold, 101, "fill_threshold");
	BAD(stats_extents, TAC_MIN_STATS_EXTENTS - 1, "stats_extents");
	BAD(stats_extents, TAC_MAX_STATS_EXTENTS + 1, "stats_extents");
#undef BAD
}

/* The published budget: at most 25 bytes per cache block. */
static void ram_bytes_per_block_within_budget_at_1m_and_16m(void)
{
	struct tac_params params;
	u64 sizes[] = { 1U << 20, 1U << 24 }, stats;
	u32 i;

	tac_params_default(&params);
	stats = (u64)params.stats_extents * 16;
	for (i = 0; i < 2; i++) {
		u64 ram = tac_policy_ram_bytes(sizes[i], &params);
		u64 per_block_x100 = (ram - stats) * 100 / sizes[i];

		/* 24.625 bytes and a few KiB of fixed state. */
		EXPECT_TRUE(per_block_x100 >= 2462);
		EXPECT_TRUE(per_block_x100 <= 2500);
	}
	/* 16 bytes per statistics slot, and nothing else grows with it. */
	params.stats_extents = 2 * 16;
	stats = tac_policy_ram_bytes(1024, &params);
	params.stats_extents = 16;
	EXPECT_EQ(16 * 16, stats - tac_policy_ram_bytes(1024, &params));
}

static void create_reports_the_ram_it_allocated(void)
{
	struct tac_params params = base_params();
	struct tac_policy *p = tac_policy_create(1U << 20, &params);
	struct tac_policy_stats s;

	EXPECT_TRUE(p);
	s = pstats(p);
	EXPECT_EQ(tac_policy_ram_bytes(1U << 20, &params), s.ram_bytes);
	EXPECT_EQ(1U << 20, s.nr_blocks);
	tac_policy_destroy(p);
}

static void drop_clean_frees_clean_unheld_blocks_only(void)
{
	struct tac_policy *p = mk(6, 100, 1);
	u32 i;

	EXPECT_TRUE(p);
	for (i = 0; i < 6; i++)
		EXPECT_EQ(0, adm(p, 10 + i, NULL, NULL));
	tac_policy_set_dirty(p, to_cblock(1));
	tac_policy_hold(p, to_cblock(2), true);
	tac_policy_unmap(p, to_cblock(3));
	tac_policy_drop_clean(p);
	EXPECT_EQ(-1, look(p, 10));
	EXPECT_EQ(1, look(p, 11));
	EXPECT_EQ(2, look(p, 12));
	EXPECT_EQ(-1, look(p, 14));
	EXPECT_EQ(2, pstats(p).nr_mapped);
	EXPECT_EQ(1, pstats(p).nr_detached);
	/* Three freed blocks can be admitted again, no more. */
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, adm(p, 20 + i, NULL, NULL));
	EXPECT_EQ(5, pstats(p).nr_mapped);
	tac_policy_destroy(p);
}

/* Every stats field after a scripted run, 32-block extents. */
static void stats_report_every_field(void)
{
	struct tac_params params;
	struct tac_policy *p;
	struct tac_policy_stats s;

	tac_params_default(&params);
	params.stats_extents = 64;
	params.fill_threshold = 100;
	p = tac_policy_create(3, &params);
	EXPECT_TRUE(p);
	req(p, 0, 1);				/* R, extent 0: 12381 */
	EXPECT_EQ(0, adm(p, 0, NULL, NULL));
	req(p, 64, 8);				/* S, extent 2: 88 */
	EXPECT_EQ(0, adm(p, 64, NULL, NULL));
	EXPECT_EQ(0, adm(p, 65, NULL, NULL));
	req(p, 1000, 1);			/* R, extent 31: 12381 */
	EXPECT_EQ(1, adm(p, 1000, NULL, NULL));	/* evicts 64 (88) */
	req(p, 2000, 1);			/* R, extent 62 */
	EXPECT_EQ(1, adm(p, 2000, NULL, NULL));	/* evicts 65 (88) */
	req(p, 3000, 2);			/* R, extent 93: 24762 */
	tac_policy_set_dirty(p, to_cblock(0));
	tac_policy_unmap(p, to_cblock(2));
	s = pstats(p);
	EXPECT_EQ(1, s.seq_requests);
	EXPECT_EQ(4, s.random_requests);
	EXPECT_EQ(5, s.admissions);
	EXPECT_EQ(0, s.bypasses);
	EXPECT_EQ(2, s.evictions);
	EXPECT_EQ(3, s.nr_blocks);
	EXPECT_EQ(2, s.nr_mapped);
	EXPECT_EQ(1, s.nr_dirty);
	EXPECT_EQ(1, s.nr_detached);
	EXPECT_EQ(5, s.tracked_extents);
	EXPECT_EQ(12381, s.coldest_temp);	/* block of ob 1000 */
	EXPECT_EQ(tac_policy_ram_bytes(3, &params), s.ram_bytes);
	tac_policy_reset_stats(p);
	s = pstats(p);
	EXPECT_EQ(0, s.admissions + s.evictions + s.bypasses);
	EXPECT_EQ(2, s.nr_mapped);
	tac_policy_destroy(p);
}

/* Origin blocks use all 64 bits, up to the last one. */
/*
 * Origin blocks are kept in 40 bits (9-byte struct tac_block): the
 * largest round-trips, one that differs only above bit 32 is another
 * block, and one of 40 bits or more is refused (the target refuses such
 * origins): kept truncated it would alias a block below and serve its
 * data.  Classification and temperatures still take all 64 bits.
 */
static void origin_blocks_use_40_bits(void)
{
	struct tac_params params;
	struct tac_policy *p;
	u64 top = TAC_MAX_ORIGIN_BLOCKS - 1;
	unsigned long warns = tools_warn_count;
	tac_oblock_t ob;
	bool dirty;

	tac_params_default(&params);
	params.stats_extents = 64;
	p = tac_policy_create(4, &params);
	EXPECT_TRUE(p);
	EXPECT_EQ(TAC_SEQUENTIAL, req(p, ~0ULL - 3, 10));	/* clamped: 4 */
	EXPECT_EQ(44, extent_temp(p, ~0ULL >> 5));
	EXPECT_EQ(0, adm(p, top, NULL, NULL));
	EXPECT_EQ(0, adm(p, top - (1ULL << 32), NULL, NULL));
	EXPECT_EQ(0, look(p, top));
	EXPECT_EQ(1, look(p, top - (1ULL << 32)));
	EXPECT_EQ(-1, look(p, (u32)top));
	EXPECT_TRUE(tac_policy_mapping(p, to_cblock(0), &ob, &dirty));
	EXPECT_EQ(top, from_oblock(ob));
	EXPECT_EQ(-EINVAL, adm(p, TAC_MAX_ORIGIN_BLOCKS + 1, NULL, NULL));
	EXPECT_EQ(warns + 1, tools_warn_count);
	EXPECT_EQ(-1, look(p, TAC_MAX_ORIGIN_BLOCKS + top));
	EXPECT_EQ(-EINVAL, tac_policy_load_mapping(p, to_cblock(3),
			to_oblock(TAC_MAX_ORIGIN_BLOCKS), false));
	EXPECT_EQ(2, pstats(p).nr_mapped);
	tac_policy_destroy(p);
}

/*
 * Random runs of every operation against a model of the block states:
 * admit() only ever takes FREE blocks or evicts clean unheld ones, agrees
 * with would_admit(), and mapping(), lookup(), dirty_batch() and the
 * counters always match the model.
 */
enum { M_FREE, M_CLEAN, M_DIRTY, M_DETACHED };

#define MB	24

struct model {
	int state[MB];
	u64 ob[MB];
	bool held[MB];
};

static long model_find(const struct model *m, u64 ob)
{
	u32 i;

	for (i = 0; i < MB; i++)
		if ((m->state[i] == M_CLEAN || m->state[i] == M_DIRTY) &&
		    m->ob[i] == ob)
			return i;
	return -1;
}

/* Look up @ob, and admit it if it is not cached, checked against @m. */
static void model_access(struct tac_policy *p, struct model *m, u64 ob,
			 u64 *s)
{
	long want = model_find(m, ob);
	tac_cblock_t c;
	tac_oblock_t o;
	bool would;
	u32 i;
	int r;

	EXPECT_EQ(want, look(p, ob));
	if (want >= 0)
		return;
	would = tac_policy_would_admit(p, to_oblock(ob));
	/* Asked twice (dm-tac may): the same answer. */
	if (rnd_below(s, 2))
		EXPECT_EQ(would, tac_policy_would_admit(p, to_oblock(ob)));
	r = tac_policy_admit(p, to_oblock(ob), &c, &o);
	EXPECT_EQ(would, r >= 0);
	if (r == 0) {
		i = from_cblock(c);
		EXPECT_EQ(M_FREE, m->state[i]);
		m->state[i] = M_CLEAN;
		m->held[i] = false;
		m->ob[i] = ob;
	} else if (r == 1) {
		i = from_cblock(c);
		EXPECT_EQ(M_CLEAN, m->state[i]);
		EXPECT_FALSE(m->held[i]);
		EXPECT_EQ(m->ob[i], from_oblock(o));
		m->ob[i] = ob;
	} else {
		EXPECT_EQ(-ENOSPC, r);
	}
}

static void random_operations_match_a_model_of_block_states(void)
{
	u32 seed;

	for (seed = 1; seed <= 60; seed++) {
		struct tac_params params;
		struct tac_policy *p;
		struct model m;
		u64 s = rnd_seed(seed);
		u32 step;

		tac_params_default(&params);
		params.stats_extents = 256;
		params.extent_blocks = 4;
		params.aging_period = 50 + rnd_below(&s, 500);
		params.fill_threshold = rnd_below(&s, 101);
		params.admit_margin = rnd_below(&s, 5);
		p = tac_policy_create(MB, &params);
		EXPECT_TRUE(p);
		memset(&m, 0, sizeof(m));

		for (step = 0; step < 3000; step++) {
			u32 cb = rnd_below(&s, MB), op = rnd_below(&s, 20);
			tac_cblock_t c;
			tac_oblock_t o;
			struct tac_policy_stats st;
			struct tac_mapping out[MB];
			u32 i, n, nm = 0, nd = 0, nx = 0;
			bool dirty;

			if (op < 10) {
				u64 ob, b0 = rnd_below(&s, 200);
				u32 k = 1 + rnd_below(&s, 3);

				/*
				 * A request of k blocks, each looked up and
				 * admitted in turn, as dm-tac does (so the
				 * placement of a page's blocks is taken).
				 */
				req(p, b0, k);
				for (ob = b0; ob < b0 + k; ob++)
					model_access(p, &m, ob, &s);
			} else if (op == 10 || op == 11) {
				tac_policy_hold(p, to_cblock(cb), op == 10);
				m.held[cb] = op == 10;
			} else if (op == 12 && m.state[cb] == M_CLEAN) {
				tac_policy_set_dirty(p, to_cblock(cb));
				m.state[cb] = M_DIRTY;
			} else if (op == 13 && m.state[cb] == M_DIRTY) {
				tac_policy_clear_dirty(p, to_cblock(cb));
				m.state[cb] = M_CLEAN;
			} else if (op == 14 && (m.state[cb] == M_CLEAN ||
						m.state[cb] == M_DIRTY)) {
				tac_policy_unmap(p, to_cblock(cb));
				m.state[cb] = M_DETACHED;
			} else if (op == 15 && m.state[cb] == M_DETACHED) {
				tac_policy_release(p, to_cblock(cb));
				m.state[cb] = M_FREE;
				m.held[cb] = false;
			} else if (op == 16 && rnd_below(&s, 10) == 0) {
				tac_policy_drop_clean(p);
				for (i = 0; i < MB; i++)
					if (m.state[i] == M_CLEAN &&
					    !m.held[i])
						m.state[i] = M_FREE;
			}

			st = pstats(p);
			for (i = 0; i < MB; i++) {
				bool mapped = m.state[i] == M_CLEAN ||
					      m.state[i] == M_DIRTY;

				nm += mapped;
				nd += m.state[i] == M_DIRTY;
				nx += m.state[i] == M_DETACHED;
				c = to_cblock(i);
				EXPECT_EQ(mapped,
					  tac_policy_mapping(p, c, &o, &dirty));
				if (mapped) {
					EXPECT_EQ(m.ob[i], from_oblock(o));
					EXPECT_EQ(m.state[i] == M_DIRTY, dirty);
				}
			}
			EXPECT_EQ(nm, st.nr_mapped);
			EXPECT_EQ(nd, st.nr_dirty);
			EXPECT_EQ(nx, st.nr_detached);

			/*
			 * mappings() of a random range says what the model
			 * (and so mapping(), checked above) does, and writes
			 * nothing past the range.
			 */
			{
				u32 first = rnd_below(&s, MB);
				u32 cnt = 1 + rnd_below(&s, MB - first);
				tac_oblock_t obs[MB + 1];
				u8 mst[MB + 1];

				obs[cnt] = to_oblock(0x5eed);
				mst[cnt] = 0xa5;
				tac_policy_mappings(p, to_cblock(first), cnt,
						    obs, mst);
				EXPECT_EQ(0x5eed, from_oblock(obs[cnt]));
				EXPECT_EQ(0xa5, mst[cnt]);
				for (i = 0; i < cnt; i++) {
					u32 b = first + i;
					u8 want = m.state[b] == M_DIRTY ?
						  TAC_MAP_DIRTY :
						  m.state[b] == M_CLEAN ?
						  TAC_MAP_CLEAN : TAC_MAP_NONE;

					EXPECT_EQ(want, mst[i]);
					if (want != TAC_MAP_NONE)
						EXPECT_EQ(m.ob[b],
							  from_oblock(obs[i]));
				}
			}

			/* The cleaning order lists exactly the dirty blocks. */
			n = tac_policy_dirty_batch(p, to_oblock(0), out, MB);
			EXPECT_EQ(nd, n);
			for (i = 0; i < n; i++) {
				u32 b = from_cblock(out[i].cblock);

				EXPECT_EQ(M_DIRTY, m.state[b]);
				EXPECT_EQ(m.ob[b], from_oblock(out[i].oblock));
				if (i)
					EXPECT_TRUE(out[i - 1].oblock <
						    out[i].oblock);
			}
		}
		tac_policy_destroy(p);
	}
}

/*
 * The learning filter (issue 10): ob 100 at 800 is refused against a
 * victim at 1000, and one step looser (1000 halved) would admit it.  Each
 * time it comes back (a miss on a refused block) is a vote; after 256
 * votes the filter halves the victim's temperature, and ob 100 is
 * admitted.  Then newcomers at 600 evict blocks at 600 to 1000, which
 * only the loosened filter allows; 256 misses on those evicted blocks
 * tighten it again, and a block at 800 is refused once more.
 */
static void refused_blocks_that_come_back_loosen_the_filter(void)
{
	struct tac_policy *p = fill4(mk_free_writes(4, 100, 1), 1000);
	u64 ev = 0, ob;
	u32 i;

	EXPECT_TRUE(p);
	set_temp(p, 100, 800);
	for (i = 0; i < 256; i++) {
		EXPECT_EQ(-ENOSPC, adm(p, 100, NULL, NULL));
		EXPECT_EQ(-1, look(p, 100));
	}
	EXPECT_EQ(1, adm(p, 100, NULL, &ev));
	EXPECT_EQ(1, ev);

	/* Newcomers the tight filter would refuse evict, and come back. */
	for (ob = 2; ob <= 4; ob++)
		set_temp(p, ob, 1000);
	for (ob = 1000, i = 0; i < 256; i++, ob++) {
		set_temp(p, ob, 600);
		EXPECT_EQ(1, adm(p, ob, NULL, &ev));
		EXPECT_EQ(-1, look(p, ev));
	}
	for (i = 0; i < 4; i++) {
		tac_oblock_t o;
		bool dirty;

		EXPECT_TRUE(tac_policy_mapping(p, to_cblock(i), &o, &dirty));
		set_temp(p, from_oblock(o), 1000);
	}
	set_temp(p, 101, 800);
	EXPECT_EQ(-ENOSPC, adm(p, 101, NULL, NULL));
	set_temp(p, 101, 1011);
	EXPECT_EQ(1, adm(p, 101, NULL, NULL));
	tac_policy_destroy(p);
}

/* Four blocks at 1000 in a cache that tests every admission (margin 1). */
static struct tac_policy *full4_at_1000(void)
{
	struct tac_policy *p = mk(4, 100, 1);
	u64 ob;

	if (!p)
		return NULL;
	for (ob = 1; ob <= 4; ob++) {
		set_temp(p, ob, 1000);
		if (adm(p, ob, NULL, NULL) != 0)
			return NULL;
	}
	return p;
}

/*
 * Tighten the filter @steps times: each time, 256 newcomers just inside
 * the current step (1100, 3000, 6000, 12000, 24000 against victims at
 * 1000) evict a victim that comes back at once.  Newcomers from @ob on.
 */
static void tighten(struct tac_policy *p, u32 steps, u64 ob)
{
	static const u32 temp[] = { 1100, 3000, 6000, 12000, 24000 };
	u64 ev = 0;
	u32 k, i;

	for (k = 0; k < steps && k < sizeof(temp) / sizeof(temp[0]); k++) {
		for (i = 0; i < 256; i++, ob++) {
			set_temp(p, ob, temp[k]);
			EXPECT_EQ(1, adm(p, ob, NULL, &ev));
			set_temp(p, ob, 1000);
			EXPECT_EQ(-1, look(p, ev));
		}
	}
}

/*
 * 64 candidates at @temp, each missed @rounds times as a random read
 * (64 extents in turn: the classifier's window never holds one twice);
 * *@admitted: how many misses were admitted.
 */
static void random_returns(struct tac_policy *p, u32 temp, u32 rounds,
			   u32 *admitted)
{
	u32 i;

	*admitted = 0;
	for (i = 0; i < rounds * 64; i++) {
		u64 ob = 100000 + (i % 64) * 7;

		EXPECT_EQ(TAC_RANDOM, req(p, ob, 1));
		if (look(p, ob) >= 0)
			continue;
		set_temp(p, ob, temp);
		if (adm(p, ob, NULL, NULL) >= 0) {
			(*admitted)++;
			set_temp(p, ob, 1000000);	/* it stays */
		}
	}
}

/*
 * The filter tightens past admit_margin too (issue 10).  Newcomers at 1100
 * evict victims at 1000 (1% would do), and each victim comes back: 256
 * such misses, and no refused block back, make the filter compare with
 * the victim's temperature doubled.  A candidate at 1500 is then refused,
 * one at 2100 (over 2 * 1000 * 1.01) admitted.
 */
static void evicted_blocks_that_come_back_tighten_past_the_margin(void)
{
	struct tac_policy *p = full4_at_1000();

	EXPECT_TRUE(p);
	tighten(p, 1, 1000);
	set_temp(p, 5000, 1500);
	EXPECT_EQ(-ENOSPC, adm(p, 5000, NULL, NULL));
	set_temp(p, 5001, 2100);
	EXPECT_EQ(1, adm(p, 5001, NULL, NULL));
	tac_policy_destroy(p);
}

/*
 * A refused block that comes back as part of a scan would have saved the
 * disk a sequential read (11 us) had it been admitted, for one cache write
 * (20 us): no vote (issue 10).  ob 100 at 800, refused against a victim at
 * 1000 and admitted one step looser, comes back 256 times in 16-block
 * requests, which are sequential: the filter does not move, and ob 100 is
 * still refused.  The same returns priced as random reads loosen it
 * (refused_blocks_back_as_random_reads_loosen).
 */
static void refused_blocks_back_in_a_scan_do_not_loosen(void)
{
	struct tac_policy *p = full4(1, 1000);
	u32 i;

	EXPECT_TRUE(p);
	set_temp(p, 100, 800);
	for (i = 0; i < 256; i++) {
		EXPECT_EQ(-ENOSPC, adm(p, 100, NULL, NULL));
		EXPECT_EQ(TAC_SEQUENTIAL,
			  tac_policy_request(p, to_oblock(100), 16, false));
		set_temp(p, 100, 800);
		EXPECT_EQ(-1, look(p, 100));
	}
	EXPECT_EQ(-ENOSPC, adm(p, 100, NULL, NULL));
	tac_policy_destroy(p);
}

/*
 * The filter stops at 4 steps tight (TAC_MAX_TIGHTEN): after five rounds
 * of returns that would each tighten it, a block just over 16 times the
 * victim's 1000 (plus the 1% margin) is admitted, one just under is not.
 */
static void the_filter_tightens_at_most_four_steps(void)
{
	struct tac_policy *p = full4_at_1000();

	EXPECT_TRUE(p);
	tighten(p, 5, 1000);
	set_temp(p, 500000, 1010 << 4);
	EXPECT_EQ(-ENOSPC, adm(p, 500000, NULL, NULL));
	set_temp(p, 500001, (1010 << 4) + 1);
	EXPECT_EQ(1, adm(p, 500001, NULL, NULL));
	tac_policy_destroy(p);
}

/*
 * Found by review: a filter 4 steps tight refuses blocks at 4 times the
 * victim, which one step looser (8 times) refuses too.  Their returns must
 * still vote, or nothing ever loosens it: they are judged against the
 * margin alone as well (tac_step_looser()).  64 such blocks, each back 20
 * times as a random read: some are admitted (768 votes make it 1 step
 * tight, where 4 times the victim passes).  Before the fix, none.
 */
static void a_tightened_filter_loosens_again(void)
{
	struct tac_policy *p = full4_at_1000();
	u32 admitted;

	EXPECT_TRUE(p);
	tighten(p, 4, 1000);
	random_returns(p, 4000, 20, &admitted);
	EXPECT_TRUE(admitted > 0);
	tac_policy_destroy(p);
}

/*
 * The control of refused_blocks_back_in_a_scan_do_not_loosen, at the
 * default cache write cost: the same refused block back 256 times as a
 * random read (12,381 us, more than the 20 us write) loosens the filter,
 * and it is admitted.
 */
static void refused_blocks_back_as_random_reads_loosen(void)
{
	struct tac_policy *p = full4(1, 1000);
	u32 i, j;

	EXPECT_TRUE(p);
	set_temp(p, 100, 800);
	for (i = 0; i < 256; i++) {
		EXPECT_EQ(-ENOSPC, adm(p, 100, NULL, NULL));
		for (j = 0; j < 20; j++)	/* out of the window */
			req(p, 10000 + 64 * j, 1);
		EXPECT_EQ(TAC_RANDOM, req(p, 100, 1));
		set_temp(p, 100, 800);
		EXPECT_EQ(-1, look(p, 100));
	}
	EXPECT_EQ(1, adm(p, 100, NULL, NULL));
	tac_policy_destroy(p);
}

/* A write that misses on a refused block votes as a read does. */
static void refused_blocks_back_as_writes_loosen(void)
{
	struct tac_policy *p = fill4(mk_free_writes(4, 100, 1), 1000);
	tac_cblock_t cb;
	u32 i;

	EXPECT_TRUE(p);
	set_temp(p, 100, 800);
	for (i = 0; i < 256; i++) {
		EXPECT_EQ(-ENOSPC, adm(p, 100, NULL, NULL));
		EXPECT_EQ(-ENOENT, tac_policy_lookup(p, to_oblock(100), &cb,
						     TAC_USE_WRITE));
	}
	EXPECT_EQ(1, adm(p, 100, NULL, NULL));
	tac_policy_destroy(p);
}

/*
 * ob 1 is admitted at 1000 and never used; then its extent saturates.  It
 * is the victim every candidate (at 10^6) is compared with, and with
 * nothing evicted it stays on top.  After 64 refusals in a row it is keyed
 * again, and the next candidates evict the blocks at 10,000 to 20,000
 * instead (then the candidates are no warmer than the cache: refused).
 */
static void a_victim_whose_extent_warmed_does_not_stop_admissions(void)
{
	struct tac_policy *p = mk(4, 100, 1);
	u32 i, admitted = 0, refused_first = 0;
	u64 ev = 0, ob, evicted = 0;

	EXPECT_TRUE(p);
	for (ob = 1; ob <= 4; ob++) {
		set_temp(p, ob, ob == 1 ? 1000 : 5000 * ob);
		EXPECT_EQ(0, adm(p, ob, NULL, NULL));
	}
	set_temp(p, 1, U32_MAX);
	for (i = 0; i < 200; i++) {
		int r;

		ob = 1000 + i;
		set_temp(p, ob, 1000000);
		r = adm(p, ob, NULL, &ev);
		if (r == 1) {
			evicted |= 1ULL << ev;
			admitted++;
		} else if (!admitted) {
			refused_first++;
		}
	}
	EXPECT_EQ(64, refused_first);
	EXPECT_EQ(3, admitted);
	EXPECT_EQ(0x1c, evicted);	/* obs 2, 3 and 4 */
	EXPECT_EQ(0, look(p, 1));	/* still cached: its extent is hot */
	tac_policy_destroy(p);
}

/*
 * A warm restart loads the saved temperatures before the mappings
 * (tac_md_load()), so restored blocks are keyed by them: the coldest goes
 * first.
 */
static void restored_blocks_are_keyed_by_their_saved_temperatures(void)
{
	struct tac_policy *p = mk(4, 100, 1);
	u64 ev = 0;
	u32 i;

	EXPECT_TRUE(p);
	set_temp(p, 1, 1000000);
	set_temp(p, 2, 50000);
	set_temp(p, 3, 50000);
	set_temp(p, 4, 10);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, tac_policy_load_mapping(p, to_cblock(i),
						     to_oblock(i + 1), false));
	set_temp(p, 100, 1000);
	EXPECT_EQ(1, adm(p, 100, NULL, &ev));
	EXPECT_EQ(4, ev);
	tac_policy_destroy(p);
}

/* One random access's worth (cost_hdd_random_us - cost_cache_us). */
#define R 12381U

/*
 * The log credit gives every temperature in [2R, 4R) the credit 2R.  ob 1
 * is on top among four equal keys, and its extent warms from 2R to 3.9R:
 * keyed again at the same inflation value it would keep its key, and its
 * place.  tac_unstick() puts it behind its old key, and candidates at 3R
 * then replace the blocks at 2R.  (Review of 4039199: none admitted.)
 */
static void unstick_moves_a_top_whose_key_would_not_change(void)
{
	u32 warm;

	for (warm = 0; warm <= 1; warm++) {
		struct tac_policy *p = mk(4, 100, 1);
		u32 i, admitted = 0;
		u64 ob, ev;

		EXPECT_TRUE(p);
		for (ob = 1; ob <= 4; ob++) {
			/* Cold: ob 1 comes in at 3.9R, the rest at 2R. */
			set_temp(p, ob, ob == 1 && !warm ? 39 * R / 10 : 2 * R);
			EXPECT_EQ(0, adm(p, ob, NULL, NULL));
		}
		if (warm)
			set_temp(p, 1, 39 * R / 10);
		for (i = 0; i < 200; i++) {
			ob = 1000 + i;
			set_temp(p, ob, 3 * R);
			if (adm(p, ob, NULL, &ev) == 1) {
				EXPECT_TRUE(ev != 1);
				admitted++;
			}
		}
		EXPECT_EQ(3, admitted);	/* obs 2, 3, 4 */
		tac_policy_destroy(p);
	}
}

/*
 * Between fill_threshold and a full cache the candidate is compared with
 * the heap's top, held or not.  A top whose extent warmed to U32_MAX is
 * keyed again after 64 refusals there too, and admissions resume.
 */
static void unstick_applies_while_free_blocks_remain(void)
{
	struct tac_policy *p = mk(100, 50, 1);
	u32 i, admitted = 0, refused_first = 0;
	u64 ob;

	EXPECT_TRUE(p);
	for (ob = 1; ob <= 50; ob++) {
		set_temp(p, ob, ob == 1 ? 1000 : 20000);
		EXPECT_EQ(0, adm(p, ob, NULL, NULL));
	}
	set_temp(p, 1, U32_MAX);
	for (i = 0; i < 200; i++) {
		ob = 1000 + i;
		set_temp(p, ob, 1000000);
		if (adm(p, ob, NULL, NULL) >= 0)
			admitted++;
		else if (!admitted)
			refused_first++;
	}
	EXPECT_EQ(64, refused_first);
	/* 50 into free blocks, then 49 in place of obs 2..50 (ob 1 is hot). */
	EXPECT_EQ(99, admitted);
	EXPECT_EQ(0, look(p, 1));
	tac_policy_destroy(p);
}

/*
 * A refused block leaves a ghost even when the victim's extent is
 * saturated (U32_MAX once meant "no victim" too): candidates at 0.6 of
 * U32_MAX that come back loosen the filter, and get in, whether the
 * victims are at U32_MAX or one below.
 */
static void refused_against_a_saturated_victim_still_votes(void)
{
	u32 victim_temp;

	for (victim_temp = U32_MAX - 1; victim_temp; victim_temp++) {
		struct tac_policy *p = mk_free_writes(4, 100, 1);
		u32 i, admitted = 0;
		u64 ob;

		EXPECT_TRUE(p);
		for (ob = 1; ob <= 4; ob++) {
			set_temp(p, ob, victim_temp);
			EXPECT_EQ(0, adm(p, ob, NULL, NULL));
		}
		for (i = 0; i < 600; i++) {
			ob = 1000 + i;
			set_temp(p, ob, U32_MAX / 10 * 6);
			if (adm(p, ob, NULL, NULL) == 1)
				admitted++;
			else
				EXPECT_EQ(-1, look(p, ob));
		}
		EXPECT_TRUE(admitted > 0);
		tac_policy_destroy(p);
	}
}

/*
 * A hit found without the caller's lock (peek(), then hit() later, in a
 * batch) decides what request() and lookup(TAC_USE_READ) at once decide:
 * two policies take the same random trace of reads and writes of one to
 * three blocks, one plainly, one with the reads whose every block is
 * cached peeked and folded in batches of up to 32 blocks before any other
 * call, as dm-tac folds them (hit() with the read's length for its first
 * block, 0 for the others).  Every admission, victim and counter agree;
 * peek() agrees with lookup() and peek_dirty() with mapping() all along.
 */
static void hits_folded_in_batches_decide_what_hits_at_once_do(void)
{
	u32 seed, multi = 0;

	for (seed = 1; seed <= 20; seed++) {
		struct tac_params params;
		struct tac_policy *a, *b;
		struct tac_policy_stats sa, sb;
		struct { u64 ob; u32 nr; tac_cblock_t cb; } q[32];
		u64 s = rnd_seed(seed);
		u32 step, nq = 0, folded = 0, i, k;

		tac_params_default(&params);
		params.stats_extents = 512;
		params.extent_blocks = 4;
		params.aging_period = 200 + rnd_below(&s, 2000);
		params.fill_threshold = rnd_below(&s, 101);
		a = tac_policy_create(64, &params);
		b = tac_policy_create(64, &params);
		EXPECT_TRUE(a && b);

		for (step = 0; step < 20000; step++) {
			/*
			 * A hot set of 48 blocks that moves on every 2000
			 * steps, and a cold tail of 2000.
			 */
			u64 hot = step / 2000 * 40;
			u64 ob = rnd_below(&s, 4) ? hot + rnd_below(&s, 48) :
				 1000 + rnd_below(&s, 2000);
			u32 nr = rnd_below(&s, 4) ? 1 : 2 + rnd_below(&s, 2);
			bool write = !rnd_below(&s, 5), cached = true;
			tac_cblock_t ca, cbb[3];
			tac_oblock_t ea, eb;
			int ra, rb, pa;

			for (k = 0; k < nr; k++) {
				pa = tac_policy_lookup(a, to_oblock(ob + k),
						       &ca, TAC_PROBE);
				rb = tac_policy_peek(b, to_oblock(ob + k),
						     &cbb[k]);
				EXPECT_EQ(pa, rb);
				cached = cached && !rb;
				if (!pa && !rb) {
					bool da, db;
					tac_oblock_t o;

					EXPECT_EQ(from_cblock(ca),
						  from_cblock(cbb[k]));
					EXPECT_TRUE(tac_policy_mapping(a, ca,
								       &o, &da));
					db = tac_policy_peek_dirty(b, cbb[k]);
					EXPECT_EQ(da, db);
				}
			}
			if (!write && cached && nq + nr <= 32) {
				/* b: the hits are logged, a: they happen now. */
				for (k = 0; k < nr; k++) {
					q[nq].ob = ob + k;
					q[nq].nr = k ? 0 : nr;
					q[nq++].cb = cbb[k];
				}
				multi += nr > 1;
				tac_policy_request(a, to_oblock(ob), nr, false);
				for (k = 0; k < nr; k++)
					EXPECT_EQ(0, tac_policy_lookup(a,
						  to_oblock(ob + k), &ca,
						  TAC_USE_READ));
				continue;
			}
			/* Anything else folds b's log first, as dm-tac does. */
			for (i = 0; i < nq; i++)
				tac_policy_hit(b, to_oblock(q[i].ob), q[i].nr,
					       q[i].cb);
			folded += nq;
			nq = 0;
			EXPECT_EQ(tac_policy_request(a, to_oblock(ob), nr, write),
				  tac_policy_request(b, to_oblock(ob), nr, write));
			for (k = 0; k < nr; k++) {
				ra = tac_policy_lookup(a, to_oblock(ob + k),
						       &ca, write ? TAC_USE_WRITE :
								    TAC_USE_READ);
				rb = tac_policy_lookup(b, to_oblock(ob + k),
						       &cbb[k], write ? TAC_USE_WRITE :
									TAC_USE_READ);
				EXPECT_EQ(ra, rb);
				if (!ra)
					continue;
				ra = tac_policy_admit(a, to_oblock(ob + k), &ca,
						      &ea);
				rb = tac_policy_admit(b, to_oblock(ob + k),
						      &cbb[k], &eb);
				EXPECT_EQ(ra, rb);
				if (ra >= 0)
					EXPECT_EQ(from_cblock(ca),
						  from_cblock(cbb[k]));
				if (ra == 1)
					EXPECT_EQ(from_oblock(ea),
						  from_oblock(eb));
				if (ra >= 0 && write) {
					tac_policy_set_dirty(a, ca);
					tac_policy_set_dirty(b, cbb[k]);
				}
			}
			if (!rnd_below(&s, 7)) {
				u32 c = rnd_below(&s, 64);

				tac_policy_clear_dirty(a, to_cblock(c));
				tac_policy_clear_dirty(b, to_cblock(c));
			}
		}
		for (i = 0; i < nq; i++)
			tac_policy_hit(b, to_oblock(q[i].ob), q[i].nr, q[i].cb);
		tac_policy_stats(a, &sa);
		tac_policy_stats(b, &sb);
		EXPECT_EQ(sa.admissions, sb.admissions);
		EXPECT_EQ(sa.evictions, sb.evictions);
		EXPECT_EQ(sa.bypasses, sb.bypasses);
		EXPECT_EQ(sa.seq_requests, sb.seq_requests);
		EXPECT_EQ(sa.random_requests, sb.random_requests);
		EXPECT_EQ(sa.coldest_temp, sb.coldest_temp);
		EXPECT_TRUE(folded > 1000);
		EXPECT_TRUE(sa.evictions > 100);
		tac_policy_destroy(a);
		tac_policy_destroy(b);
	}
	/* Reads of several blocks were among the folded hits. */
	EXPECT_TRUE(multi > 1000);
}

/*
 * hit() of a block remapped since it was peeked counts the request but
 * marks nothing: the new block stays unused, and the victim search takes
 * it while on top; a block used since its key (lookup with TAC_USE_READ,
 * the control) is keyed again and spared.
 */
static void a_late_hit_of_a_remapped_block_marks_nothing(void)
{
	int late;

	for (late = 0; late < 2; late++) {
		struct tac_policy *p = full4(1, 1000);
		tac_cblock_t c;
		u32 cb;
		u64 ev;

		EXPECT_TRUE(p);
		EXPECT_EQ(0, tac_policy_peek(p, to_oblock(1), &c));
		EXPECT_EQ(0, from_cblock(c));
		EXPECT_EQ(-ENOENT, tac_policy_peek(p, to_oblock(9), &c));
		/* ob 1 (block 0) gives way to ob 9, keyed below ob 2. */
		set_temp(p, 9, 1100);
		EXPECT_EQ(1, adm(p, 9, &cb, &ev));
		EXPECT_EQ(0, cb);
		EXPECT_EQ(1, ev);
		EXPECT_EQ(-ENOENT, tac_policy_peek(p, to_oblock(1), &c));
		if (late)
			tac_policy_hit(p, to_oblock(1), 1, to_cblock(0));
		else
			EXPECT_EQ(0, look(p, 9));
		/* ob 9's extent warms: only a use would key it again. */
		set_temp(p, 9, 8000);
		set_temp(p, 10, 9000);
		EXPECT_EQ(1, adm(p, 10, &cb, &ev));
		EXPECT_EQ(late ? 0 : 1, cb);
		EXPECT_EQ(late ? 9 : 2, ev);
		tac_policy_destroy(p);
	}
}

/* peek_dirty() follows set_dirty() and clear_dirty(). */
static void peek_dirty_follows_set_and_clear(void)
{
	struct tac_policy *p = full4(1, 1000);

	EXPECT_TRUE(p);
	EXPECT_FALSE(tac_policy_peek_dirty(p, to_cblock(1)));
	tac_policy_set_dirty(p, to_cblock(1));
	EXPECT_TRUE(tac_policy_peek_dirty(p, to_cblock(1)));
	tac_policy_clear_dirty(p, to_cblock(1));
	EXPECT_FALSE(tac_policy_peek_dirty(p, to_cblock(1)));
	EXPECT_FALSE(tac_policy_peek_dirty(p, to_cblock(4)));	/* no block */
	tac_policy_destroy(p);
}

int main(void)
{
	RUN(admit_exactly_one_percent_warmer_is_bypassed);
	RUN(admit_just_over_one_percent_evicts_the_coldest);
	RUN(admit_just_under_one_percent_is_bypassed);
	RUN(admit_against_coldest_at_zero);
	RUN(admit_margin_at_saturated_temperatures);
	RUN(admit_margin_zero_needs_strictly_warmer);
	RUN(victim_search_rekeys_a_block_used_since_its_key);
	RUN(equal_temperatures_leave_first_in_first_out);
	RUN(a_write_hit_does_not_key_the_block_again);
	RUN(refused_blocks_that_come_back_loosen_the_filter);
	RUN(evicted_blocks_that_come_back_tighten_past_the_margin);
	RUN(refused_blocks_back_in_a_scan_do_not_loosen);
	RUN(the_filter_tightens_at_most_four_steps);
	RUN(a_tightened_filter_loosens_again);
	RUN(refused_blocks_back_as_random_reads_loosen);
	RUN(refused_blocks_back_as_writes_loosen);
	RUN(a_victim_whose_extent_warmed_does_not_stop_admissions);
	RUN(restored_blocks_are_keyed_by_their_saved_temperatures);
	RUN(unstick_moves_a_top_whose_key_would_not_change);
	RUN(unstick_applies_while_free_blocks_remain);
	RUN(refused_against_a_saturated_victim_still_votes);
	RUN(victim_search_rechecks_the_top_five_times);
	RUN(fill_threshold_admits_all_then_tests_even_with_free_blocks);
	RUN(fill_threshold_zero_tests_from_the_start);
	RUN(held_blocks_are_never_evicted);
	RUN(held_blocks_beyond_the_skip_bound_bypass);
	RUN(dirty_blocks_are_never_evicted);
	RUN(clear_dirty_reinserts_with_current_temperature);
	RUN(dirty_batch_orders_by_origin_block_with_wrap);
	RUN(dirty_batch_matches_brute_force_on_random_sets);
	RUN(unmap_and_release_lifecycle);
	RUN(contract_violations_warn_and_change_nothing);
	RUN(load_mapping_rejects_bad_block_busy_block_and_duplicate);
	RUN(load_mapping_claims_blocks_from_the_free_pool);
	RUN(set_params_rejects_fixed_and_invalid_fields);
	RUN(set_params_changes_the_margin_online);
	RUN(params_check_names_each_bad_field);
	RUN(ram_bytes_per_block_within_budget_at_1m_and_16m);
	RUN(create_reports_the_ram_it_allocated);
	RUN(drop_clean_frees_clean_unheld_blocks_only);
	RUN(stats_report_every_field);
	RUN(origin_blocks_use_40_bits);
	RUN(random_operations_match_a_model_of_block_states);
	RUN(hits_folded_in_batches_decide_what_hits_at_once_do);
	RUN(a_late_hit_of_a_remapped_block_marks_nothing);
	RUN(peek_dirty_follows_set_and_clear);
	RUN(a_page_goes_next_to_its_first_block);
	RUN(a_block_goes_before_its_next_neighbour);
	RUN(a_request_of_several_starts_before_its_victim);
	RUN(a_free_block_next_to_the_neighbour_comes_first);
	RUN(a_block_placed_past_the_frontier_is_handed_out_once);
	return tap_done();
}
