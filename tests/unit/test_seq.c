// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sequential/random classifier (TAC section 3.1) on crafted request
 * streams, default window 20 and threshold 2 unless said otherwise.  The
 * expectations are worked out in the comments from the rule in tac-seq.c:
 * a one-block request is sequential when its extent is among the 19 newest
 * window entries at least twice.
 */
#include "helpers.h"
#include "tac-seq.h"
#include "tap.h"

#define SHIFT	5	/* 32-block extents */

static struct tac_seq_window w;

static enum tac_class one(u64 block)
{
	return tac_seq_classify(&w, block, 1, SHIFT, 20, 2);
}

/* Blocks 0, 1, 2, 3 of one extent: R R S S (third sight is > 2). */
static void classifier_third_block_of_an_extent_is_sequential(void)
{
	tac_seq_init(&w);
	EXPECT_EQ(TAC_RANDOM, one(0));
	EXPECT_EQ(TAC_RANDOM, one(1));
	EXPECT_EQ(TAC_SEQUENTIAL, one(2));
	EXPECT_EQ(TAC_SEQUENTIAL, one(3));
}

/* A request counts its own blocks: 3 blocks > 2, 2 blocks are not. */
static void classifier_request_of_more_than_threshold_blocks_is_sequential(void)
{
	tac_seq_init(&w);
	EXPECT_EQ(TAC_RANDOM, tac_seq_classify(&w, 1000, 2, SHIFT, 20, 2));
	tac_seq_init(&w);
	EXPECT_EQ(TAC_SEQUENTIAL, tac_seq_classify(&w, 1000, 3, SHIFT, 20, 2));
	tac_seq_init(&w);
	EXPECT_EQ(TAC_SEQUENTIAL, tac_seq_classify(&w, 5000, 300, SHIFT, 20, 2));
}

/* Random single blocks, each in its own extent, never look sequential. */
static void classifier_random_blocks_in_distinct_extents_are_random(void)
{
	u32 i;

	tac_seq_init(&w);
	for (i = 0; i < 500; i++)
		EXPECT_EQ(TAC_RANDOM, one((u64)(i * 7919 + 13) << SHIFT));
}

/*
 * Scan block k, then two random blocks, repeated.  The 19 entries before
 * scan request k hold scan requests k-1 .. k-6 (every third entry), so
 * its extent k / 32 was seen min(6, k % 32) times: sequential iff
 * k % 32 >= 2.
 */
static void classifier_one_scan_among_random_traffic(void)
{
	u64 s = rnd_seed(1);
	u32 k;

	tac_seq_init(&w);
	for (k = 0; k < 300; k++) {
		enum tac_class want = k % 32 >= 2 ? TAC_SEQUENTIAL : TAC_RANDOM;

		EXPECT_EQ(want, one(k));
		EXPECT_EQ(TAC_RANDOM, one((1ULL << 40) + (rnd_next(&s) >> 24)));
		EXPECT_EQ(TAC_RANDOM, one((1ULL << 41) + (rnd_next(&s) >> 24)));
	}
}

/*
 * n scans of single blocks in round robin: the 19 entries before request
 * k of a scan hold floor(19 / n) of its earlier requests, so with n <= 9
 * request k is sequential iff k % 32 >= 2, and with n >= 10 (one earlier
 * request in view) never.
 */
static bool interleaved(u32 nr_scans, u32 rounds, u32 *wrong)
{
	u32 k, s;

	tac_seq_init(&w);
	*wrong = 0;
	for (k = 0; k < rounds; k++) {
		for (s = 0; s < nr_scans; s++) {
			u64 base = (u64)s << 30;
			enum tac_class want = TAC_RANDOM;

			if (nr_scans <= 9 && k % 32 >= 2)
				want = TAC_SEQUENTIAL;
			if (one(base + k) != want)
				(*wrong)++;
		}
	}
	return *wrong == 0;
}

static void classifier_four_interleaved_scans_are_each_sequential(void)
{
	u32 wrong;

	interleaved(4, 200, &wrong);
	EXPECT_EQ(0, wrong);
}

static void classifier_nine_interleaved_scans_fill_the_window(void)
{
	u32 wrong;

	interleaved(9, 200, &wrong);
	EXPECT_EQ(0, wrong);
}

static void classifier_ten_interleaved_scans_overflow_the_window(void)
{
	u32 wrong;

	interleaved(10, 200, &wrong);
	EXPECT_EQ(0, wrong);
}

/*
 * A multi-block request enters every block: blocks 60..63 go to extent 1
 * (blocks 32..63) and 64..67 to extent 2 (64..95).  Block 68 then sees
 * four entries of extent 2, so it is sequential though it is the first
 * one-block request there; block 40 sees four of extent 1.
 */
static void classifier_multi_block_request_fills_window_per_block(void)
{
	tac_seq_init(&w);
	EXPECT_EQ(TAC_SEQUENTIAL, tac_seq_classify(&w, 60, 8, SHIFT, 20, 2));
	EXPECT_EQ(TAC_SEQUENTIAL, one(68));
	/* Extent 1 (32..63) had 60..63: four entries, still in view. */
	EXPECT_EQ(TAC_SEQUENTIAL, one(40));
	/* Extent 3 was never touched. */
	EXPECT_EQ(TAC_RANDOM, one(100));
}

/* Only the newest seq_window - 1 entries count: older ones drop out. */
static void classifier_forgets_entries_older_than_the_window(void)
{
	u32 i;

	tac_seq_init(&w);
	one(0);
	one(1);
	for (i = 0; i < 18; i++)
		one((u64)(i + 10) << SHIFT);
	/* Entries 0 and 1 are the 19th and 20th newest: only 1 in view. */
	EXPECT_EQ(TAC_RANDOM, one(2));

	tac_seq_init(&w);
	one(0);
	one(1);
	for (i = 0; i < 17; i++)
		one((u64)(i + 10) << SHIFT);
	/* Now both are among the 19 newest. */
	EXPECT_EQ(TAC_SEQUENTIAL, one(2));
}

/* seq_window changes online: the ring keeps TAC_MAX_SEQ_WINDOW entries. */
static void classifier_window_and_threshold_change_online(void)
{
	struct tac_params params;
	struct tac_policy *p;
	u32 i;

	tac_params_default(&params);
	params.stats_extents = 64;
	p = tac_policy_create(16, &params);
	EXPECT_TRUE(p);

	/* A, then 30 other extents, then A: with window 20, random. */
	req(p, 0, 1);
	req(p, 1, 1);
	for (i = 0; i < 30; i++)
		req(p, (u64)(i + 10) << SHIFT, 1);
	EXPECT_EQ(TAC_RANDOM, req(p, 2, 1));

	/* Widen to 64: A's three entries are back in view. */
	params.seq_window = 64;
	EXPECT_EQ(0, tac_policy_set_params(p, &params));
	EXPECT_EQ(TAC_SEQUENTIAL, req(p, 3, 1));

	/* Threshold 5: the fifth sight of A (block 4) is not enough. */
	params.seq_threshold = 5;
	EXPECT_EQ(0, tac_policy_set_params(p, &params));
	EXPECT_EQ(TAC_RANDOM, req(p, 4, 1));
	EXPECT_EQ(TAC_SEQUENTIAL, req(p, 5, 1));
	tac_policy_destroy(p);
}

/* The policy counts requests by class, once per request. */
static void classifier_counts_requests_by_class(void)
{
	struct tac_params params;
	struct tac_policy *p;
	struct tac_policy_stats s;

	tac_params_default(&params);
	params.stats_extents = 64;
	p = tac_policy_create(16, &params);
	EXPECT_TRUE(p);
	req(p, 0, 1);		/* R */
	req(p, 1, 1);		/* R */
	req(p, 2, 1);		/* S */
	req(p, 100, 8);		/* S */
	req(p, 5000, 2);	/* R */
	s = pstats(p);
	EXPECT_EQ(2, s.seq_requests);
	EXPECT_EQ(3, s.random_requests);
	tac_policy_reset_stats(p);
	s = pstats(p);
	EXPECT_EQ(0, s.seq_requests);
	EXPECT_EQ(0, s.random_requests);
	tac_policy_destroy(p);
}

int main(void)
{
	RUN(classifier_third_block_of_an_extent_is_sequential);
	RUN(classifier_request_of_more_than_threshold_blocks_is_sequential);
	RUN(classifier_random_blocks_in_distinct_extents_are_random);
	RUN(classifier_one_scan_among_random_traffic);
	RUN(classifier_four_interleaved_scans_are_each_sequential);
	RUN(classifier_nine_interleaved_scans_fill_the_window);
	RUN(classifier_ten_interleaved_scans_overflow_the_window);
	RUN(classifier_multi_block_request_fills_window_per_block);
	RUN(classifier_forgets_entries_older_than_the_window);
	RUN(classifier_window_and_threshold_change_online);
	RUN(classifier_counts_requests_by_class);
	return tap_done();
}
