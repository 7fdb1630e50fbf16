// SPDX-License-Identifier: GPL-2.0-only
/*
 * Extent temperatures (TAC section 3.1, eq. 1), aging by halving, and the
 * bounded statistics table.  Costs below are chosen so that the sums are
 * easy to check by hand.
 */
#include <linux/limits.h>
#include <string.h>

#include "helpers.h"
#include "tac-temp.h"
#include "tap.h"

static struct tac_policy *make(u32 extent_blocks, u32 aging_period,
			       u32 random_us, u32 seq_us, u32 cache_us,
			       u32 stats_extents)
{
	struct tac_params params;

	tac_params_default(&params);
	params.extent_blocks = extent_blocks;
	params.aging_period = aging_period;
	params.cost_hdd_random_us = random_us;
	params.cost_hdd_seq_us = seq_us;
	params.cost_cache_us = cache_us;
	params.stats_extents = stats_extents;
	return tac_policy_create(64, &params);
}

/* Defaults: 12401 - 20 = 12381 us per random block, 31 - 20 = 11 seq. */
static void temperature_default_costs_follow_eq_1(void)
{
	struct tac_params d;
	struct tac_policy *p;

	tac_params_default(&d);
	EXPECT_EQ(12401, d.cost_hdd_random_us);
	EXPECT_EQ(31, d.cost_hdd_seq_us);
	EXPECT_EQ(20, d.cost_cache_us);
	EXPECT_EQ(32, d.extent_blocks);
	p = make(32, 1U << 20, 12401, 31, 20, 1024);
	EXPECT_TRUE(p);
	req(p, 0, 1);			/* random: 12381 */
	EXPECT_EQ(12381, extent_temp(p, 0));
	req(p, 64, 8);			/* sequential: 8 * 11 */
	EXPECT_EQ(88, extent_temp(p, 2));
	tac_policy_destroy(p);
}

/*
 * FD-Buffer: a write credits what the disk would pay minus what the cache
 * pays for a write, a read minus a read.  Random write 12401 - 200, random
 * read 12401 - 20; a sequential write costs the cache more than the disk
 * saves (31 < 200) and credits nothing.  The default is a read's cost.
 */
static void temperature_writes_credit_the_cache_write_cost(void)
{
	struct tac_params params;
	struct tac_policy *p;

	tac_params_default(&params);
	EXPECT_EQ(params.cost_cache_us, params.cost_cache_write_us);
	params.cost_cache_write_us = 200;
	p = tac_policy_create(64, &params);
	EXPECT_TRUE(p);
	tac_policy_request(p, to_oblock(0), 1, true);
	EXPECT_EQ(12201, extent_temp(p, 0));
	req(p, 64, 1);
	EXPECT_EQ(12381, extent_temp(p, 2));
	tac_policy_request(p, to_oblock(128), 8, true);
	EXPECT_EQ(0, extent_temp(p, 4));
	tac_policy_destroy(p);
}

/* Blocks 0..3 one at a time: R R S S, so 2 * 1000 + 2 * 10. */
static void temperature_sums_cost_per_block_by_class(void)
{
	struct tac_policy *p = make(32, 1000000, 1000, 10, 0, 1024);

	EXPECT_TRUE(p);
	req(p, 0, 1);
	req(p, 1, 1);
	req(p, 2, 1);
	req(p, 3, 1);
	EXPECT_EQ(2020, extent_temp(p, 0));
	/* A random 2-block request: 2 * 1000 in extent 5. */
	req(p, 5 * 32 + 7, 2);
	EXPECT_EQ(2000, extent_temp(p, 5));
	tac_policy_destroy(p);
}

/* Blocks 30..33 (sequential): two land in extent 0, two in extent 1. */
static void temperature_request_across_extents_splits_per_block(void)
{
	struct tac_policy *p = make(32, 1000000, 1000, 10, 0, 1024);

	EXPECT_TRUE(p);
	EXPECT_EQ(TAC_SEQUENTIAL, req(p, 30, 4));
	EXPECT_EQ(20, extent_temp(p, 0));
	EXPECT_EQ(20, extent_temp(p, 1));
	tac_policy_destroy(p);
}

/* A disk faster than the SSD gives cost 0, never a wrapped negative. */
static void temperature_negative_cost_counts_as_zero(void)
{
	struct tac_policy *p = make(32, 1000000, 1000, 10, 50, 1024);

	EXPECT_TRUE(p);
	req(p, 64, 8);			/* sequential: 10 - 50 -> 0 */
	EXPECT_EQ(0, extent_temp(p, 2));
	req(p, 0, 1);			/* random: 950 */
	EXPECT_EQ(950, extent_temp(p, 0));
	tac_policy_destroy(p);
}

/*
 * aging_period 4, random cost 1000: four accesses in four extents, then
 * every temperature halves to 500; one more access to extent 0 makes it
 * 1500; three more accesses halve again: 750, and extent 1 250.
 */
static void temperature_halves_every_aging_period_accesses(void)
{
	struct tac_policy *p = make(32, 4, 1000, 10, 0, 1024);

	EXPECT_TRUE(p);
	req(p, 0, 1);
	req(p, 32, 1);
	req(p, 64, 1);
	EXPECT_EQ(1000, extent_temp(p, 0));
	req(p, 96, 1);
	EXPECT_EQ(500, extent_temp(p, 0));
	EXPECT_EQ(500, extent_temp(p, 3));
	req(p, 1, 1);
	EXPECT_EQ(1500, extent_temp(p, 0));
	req(p, 200 * 32, 1);
	req(p, 201 * 32, 1);
	req(p, 202 * 32, 1);
	EXPECT_EQ(750, extent_temp(p, 0));
	EXPECT_EQ(250, extent_temp(p, 1));
	tac_policy_destroy(p);
}

/* A request longer than the period halves in the middle: 5 blocks, period
 * 2, sequential cost 8: +16, halve, +16, halve, +8 = ((16/2+16)/2)+8 = 20.
 */
static void temperature_halving_inside_one_request(void)
{
	struct tac_policy *p = make(32, 2, 1000, 8, 0, 1024);

	EXPECT_TRUE(p);
	EXPECT_EQ(TAC_SEQUENTIAL, req(p, 0, 5));
	EXPECT_EQ(20, extent_temp(p, 0));
	tac_policy_destroy(p);
}

static void temperature_saturates_at_u32_max(void)
{
	struct tac_policy *p = make(32, 1000000, U32_MAX, 10, 0, 1024);

	EXPECT_TRUE(p);
	req(p, 0, 1);
	EXPECT_EQ_U64(U32_MAX, extent_temp(p, 0));
	req(p, 1, 1);			/* still random: saturates */
	EXPECT_EQ_U64(U32_MAX, extent_temp(p, 0));
	tac_policy_destroy(p);
}

/* Shortening aging_period below the accesses already counted halves now. */
static void temperature_shorter_period_set_online_halves_at_once(void)
{
	struct tac_params params;
	struct tac_policy *p = make(32, 100, 1000, 10, 0, 1024);

	EXPECT_TRUE(p);
	req(p, 0, 1);
	req(p, 32, 1);
	req(p, 64, 1);
	tac_params_default(&params);
	params.aging_period = 3;
	params.cost_hdd_random_us = 1000;
	params.cost_hdd_seq_us = 10;
	params.cost_cache_us = 0;
	params.stats_extents = 1024;
	EXPECT_EQ(0, tac_policy_set_params(p, &params));
	EXPECT_EQ(500, extent_temp(p, 0));
	tac_policy_destroy(p);
}

/*
 * The eager reference: every extent's temperature in an array, halved all
 * at once every aging_period block accesses.
 */
#define EAGER_EXTENTS	64

struct eager {
	u32 temp[EAGER_EXTENTS];
	u32 since;
	u32 period;
};

static void eager_halve(struct eager *e)
{
	u32 i;

	for (i = 0; i < EAGER_EXTENTS; i++)
		e->temp[i] >>= 1;
	e->since = 0;
}

static void eager_access(struct eager *e, u64 extent, u32 cost)
{
	if (U32_MAX - e->temp[extent] <= cost)
		e->temp[extent] = U32_MAX;
	else
		e->temp[extent] += cost;
	if (++e->since >= e->period)
		eager_halve(e);
}

/*
 * Random request sequences over 64 extents of 4 blocks, random costs
 * (some near saturation), random aging periods changed online: after every
 * request the lazy table must equal the eager one, extent by extent.
 */
static void lazy_aging_matches_eager_halving_on_random_sequences(void)
{
	u32 seed;

	for (seed = 1; seed <= 300; seed++) {
		u64 s = rnd_seed(seed);
		struct tac_params params;
		struct tac_policy *p;
		struct eager e;
		u32 step, i;

		tac_params_default(&params);
		params.extent_blocks = 4;
		params.stats_extents = 1024;
		params.aging_period = 1 + rnd_below(&s, 40);
		params.cost_cache_us = 0;
		params.cost_hdd_seq_us = 1 + rnd_below(&s, 100);
		params.cost_hdd_random_us = seed % 7 ? 1 + rnd_below(&s, 5000) :
				U32_MAX - rnd_below(&s, 3);
		p = tac_policy_create(16, &params);
		EXPECT_TRUE(p);
		memset(&e, 0, sizeof(e));
		e.period = params.aging_period;

		for (step = 0; step < 400; step++) {
			u64 first = rnd_below(&s, EAGER_EXTENTS * 4);
			u32 nr = 1 + rnd_below(&s, 12);
			enum tac_class c;
			u32 cost;

			if (first + nr > EAGER_EXTENTS * 4)
				nr = EAGER_EXTENTS * 4 - first;
			if (rnd_below(&s, 50) == 0) {
				params.aging_period = 1 + rnd_below(&s, 40);
				EXPECT_EQ(0, tac_policy_set_params(p, &params));
				e.period = params.aging_period;
				if (e.since >= e.period)
					eager_halve(&e);
			}
			c = req(p, first, nr);
			cost = c == TAC_SEQUENTIAL ? params.cost_hdd_seq_us :
						     params.cost_hdd_random_us;
			for (i = 0; i < nr; i++)
				eager_access(&e, (first + i) / 4, cost);
			for (i = 0; i < EAGER_EXTENTS; i++)
				EXPECT_EQ(e.temp[i], extent_temp(p, i));
		}
		tac_policy_destroy(p);
	}
}

/* White box: the epoch counter wraps at 2^31 without reviving anything. */
static void aging_is_exact_across_epoch_wrap(void)
{
	struct tac_temp_entry slots[16];
	struct tac_temp_table t;
	u32 i;

	tac_temp_init(&t, slots, 16);
	t.epoch = TEMP_EPOCH_MASK - 2;
	tac_temp_add(&t, 7, 1000);
	for (i = 0; i < 5; i++)
		tac_temp_halve(&t);
	EXPECT_EQ(1, t.epoch >> 1);	/* wrapped to 2 */
	EXPECT_EQ(1000 >> 5, tac_temp_get(&t, 7));
	for (i = 0; i < 27; i++)
		tac_temp_halve(&t);
	EXPECT_EQ(0, tac_temp_get(&t, 7));	/* 32 halvings */
	tac_temp_add(&t, 7, 64);
	EXPECT_EQ(64, tac_temp_get(&t, 7));
}

/*
 * The sweep brings every slot to the current epoch within nr_slots
 * halvings, so no stamp can ever be 2^31 epochs old: an entry left alone
 * for 2^31 + 3 epochs must read 0, not 1000 >> 3.  Checked on a 16-slot
 * table: after 16 halvings no stamp is 16 or more epochs old.
 */
static void aging_sweep_normalises_every_slot_within_table_size(void)
{
	struct tac_temp_entry slots[16];
	struct tac_temp_table t;
	u32 i, used = 0;

	tac_temp_init(&t, slots, 16);
	for (i = 0; i < 40; i++)
		tac_temp_set(&t, i * 3, 1000 + i);
	for (i = 0; i < 16; i++)
		tac_temp_halve(&t);
	for (i = 0; i < 16; i++) {
		if (!(slots[i].stamp & TEMP_USED))
			continue;
		used++;
		/* Slot i was normalised at epoch i + 1: age 15 - i. */
		EXPECT_EQ(15 - i, (t.epoch - slots[i].stamp) & TEMP_EPOCH_MASK);
	}
	EXPECT_EQ(t.nr_used, used);
	EXPECT_TRUE(used > 8);
}

/*
 * A full window: a new extent replaces the coldest entry of its window,
 * and nothing else changes.
 */
static void stats_table_full_drops_coldest_in_probe_window(void)
{
	struct tac_temp_entry slots[16], before[16];
	struct tac_temp_table t;
	u64 x, newcomer = 0;
	u32 i, home, victim = 0, coldest = U32_MAX;

	tac_temp_init(&t, slots, 16);
	/* Fill every slot, each extent with its own temperature. */
	for (x = 0; t.nr_used < 16; x++)
		tac_temp_set(&t, x, 5000 - (u32)((x * 37) % 4000));
	/* An extent not in the table. */
	for (x = 1000; tac_temp_get(&t, x) || newcomer == 0; x++)
		if (!tac_temp_get(&t, x))
			newcomer = x;
	home = tac_temp_home(&t, newcomer);
	for (i = 0; i < TEMP_PROBE; i++) {
		u32 slot = (home + i) % 16;

		if (slots[slot].temp < coldest) {
			coldest = slots[slot].temp;
			victim = slot;
		}
	}
	memcpy(before, slots, sizeof(slots));
	EXPECT_EQ(-ENOSPC, tac_temp_set(&t, newcomer, 1));
	tac_temp_add(&t, newcomer, 3);
	EXPECT_EQ(16, t.nr_used);
	EXPECT_EQ(1, t.dropped);
	EXPECT_EQ(newcomer, slots[victim].extent);
	EXPECT_EQ(3, tac_temp_get(&t, newcomer));
	EXPECT_EQ(0, tac_temp_get(&t, before[victim].extent));
	for (i = 0; i < 16; i++)
		if (i != victim)
			EXPECT_EQ(before[i].temp,
				  tac_temp_get(&t, before[i].extent));
}

/* Equal temperatures: the entry aged least recently goes. */
static void stats_table_tie_drops_least_recently_touched(void)
{
	struct tac_temp_entry slots[16];
	struct tac_temp_table t;
	u64 x, newcomer = 0;
	u32 i, home, oldest = 0, n = 0;

	tac_temp_init(&t, slots, 16);
	for (x = 0; t.nr_used < 16; x++)
		tac_temp_set(&t, x, 64);
	for (x = 1000; newcomer == 0; x++)
		if (!tac_temp_get(&t, x))
			newcomer = x;
	home = tac_temp_home(&t, newcomer);
	/* One slot in the window, not the one the sweep will visit (0), is
	 * left at 64 from epoch 0; the others get 32 at epoch 1.
	 */
	oldest = (home + 5) % 16 ? (home + 5) % 16 : (home + 6) % 16;
	tac_temp_halve(&t);
	for (i = 0; i < 16; i++)
		if (i != oldest) {
			tac_temp_set(&t, slots[i].extent, 32);
			n++;
		}
	EXPECT_EQ(15, n);
	EXPECT_EQ(32, tac_temp_get(&t, slots[oldest].extent));
	tac_temp_add(&t, newcomer, 1);
	EXPECT_EQ(newcomer, slots[oldest].extent);
}

/*
 * Through the policy: 16 slots, 2000 random one-block requests to new
 * extents, every other one to one hot extent.  The table stays at 16, the
 * hot extent is never dropped and stays the hottest.
 */
static void stats_table_keeps_hot_extent_when_full(void)
{
	struct tac_policy *p = make(32, 1000000, 1000, 10, 0, 16);
	struct tac_extent_rec top[2];
	u64 s = rnd_seed(99);
	u32 i;

	EXPECT_TRUE(p);
	for (i = 0; i < 2000; i++) {
		req(p, (5000 + (rnd_next(&s) >> 40)) << 5, 1);
		req(p, (7 << 5) + (i % 2), 1);
		EXPECT_TRUE(extent_temp(p, 7) > 0);
	}
	EXPECT_EQ(16, pstats(p).tracked_extents);
	EXPECT_EQ(2, tac_policy_hottest(p, top, 2));
	EXPECT_EQ(7, from_extent(top[0].extent));
	EXPECT_TRUE(top[0].temp > top[1].temp);
	tac_policy_destroy(p);
}

/* hottest() sorts, walk_extents() stops early, load_extent() sets. */
static void extent_walk_hottest_and_load(void)
{
	struct tac_policy *p = make(32, 1000000, 1000, 10, 0, 64);
	struct tac_extent_rec out[8];
	struct find_ctx f = { .extent = 3, .temp = 0 };
	u32 i;

	EXPECT_TRUE(p);
	for (i = 0; i < 6; i++)
		EXPECT_EQ(0, tac_policy_load_extent(p, to_extent(i),
						    100 * i + 5));
	EXPECT_EQ(4, tac_policy_hottest(p, out, 4));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(5 - i, from_extent(out[i].extent));
		EXPECT_EQ(100 * (5 - i) + 5, out[i].temp);
	}
	EXPECT_EQ(6, tac_policy_hottest(p, out, 8));
	EXPECT_EQ(0, from_extent(out[5].extent));
	EXPECT_EQ(1, tac_policy_walk_extents(p, find_fn, &f));
	EXPECT_EQ(305, f.temp);
	EXPECT_EQ(6, pstats(p).tracked_extents);
	tac_policy_destroy(p);
}

int main(void)
{
	RUN(temperature_default_costs_follow_eq_1);
	RUN(temperature_writes_credit_the_cache_write_cost);
	RUN(temperature_sums_cost_per_block_by_class);
	RUN(temperature_request_across_extents_splits_per_block);
	RUN(temperature_negative_cost_counts_as_zero);
	RUN(temperature_halves_every_aging_period_accesses);
	RUN(temperature_halving_inside_one_request);
	RUN(temperature_saturates_at_u32_max);
	RUN(temperature_shorter_period_set_online_halves_at_once);
	RUN(lazy_aging_matches_eager_halving_on_random_sequences);
	RUN(aging_is_exact_across_epoch_wrap);
	RUN(aging_sweep_normalises_every_slot_within_table_size);
	RUN(stats_table_full_drops_coldest_in_probe_window);
	RUN(stats_table_tie_drops_least_recently_touched);
	RUN(stats_table_keeps_hot_extent_when_full);
	RUN(extent_walk_hottest_and_load);
	return tap_done();
}
