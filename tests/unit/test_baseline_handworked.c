// SPDX-License-Identifier: GPL-2.0-only
/*
 * Baselines on reference strings small enough to work out by hand.
 *
 * Belady's string 1 2 3 4 1 2 5 1 2 3 4 5 (Belady, Nelson and Shedler 1969;
 * the textbook example of FIFO's anomaly), worked out:
 *   LRU  3 frames: hits at the 2nd "1 2" only            -> 2 hits, 10 misses
 *   LRU  4 frames: "1 2" twice, then 5 evicts 3, 3 evicts 4, 4 evicts 5,
 *                  5 evicts 1                            -> 4 hits, 8 misses
 *   FIFO 3 frames: hits at the 2nd "1 2" and the last 5  -> 3 hits, 9 misses
 *   FIFO 4 frames: hits at the 1st "1 2" only            -> 2 hits, 10 misses
 *   OPT  3 frames: 4 evicts 3, 5 evicts 4, 3 and 4 evict blocks never used
 *                  again; hits 1 2 1 2 5                 -> 5 hits, 7 misses
 *   OPT  4 frames: 5 evicts 4; hits 1 2 1 2 3 5          -> 6 hits, 6 misses
 * CLOCK, 3 frames, 1 2 3 1 4 2 5: 1 hits (reference bit set); 4 finds the
 * hand on 1, clears it, evicts 2; 2 evicts 3; 5 finds 1's bit clear and
 * evicts it                                              -> 1 hit, evicted 2 3 1
 */
#include "../../tools/tacsim/baseline-ref.h"

static const u64 belady[] = { 1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5 };
#define NB (sizeof(belady) / sizeof(belady[0]))

static u32 hits_of(struct tac_policy *p, const u64 *t, u32 n, int64_t *ev)
{
	u64 next[64];
	u8 hit[64];
	u32 h;

	ref_next_use(t, n, next);
	h = run_policy(p, t, policy_is_opt(p) ? next : NULL, n, hit, ev);
	tac_policy_destroy(p);
	return h;
}

int main(void)
{
	int64_t ev[64];
	static const u64 clk[] = { 1, 2, 3, 1, 4, 2, 5 };

	TAP_EQ("lru 3 frames belady string: 2 hits",
	       2, hits_of(lru_policy_create(3), belady, NB, ev));
	TAP_EQ("lru 4 frames belady string: 4 hits",
	       4, hits_of(lru_policy_create(4), belady, NB, ev));
	TAP_EQ("fifo 3 frames belady string: 3 hits",
	       3, hits_of(fifo_policy_create(3), belady, NB, ev));
	TAP_EQ("fifo 4 frames belady string: 2 hits (anomaly)",
	       2, hits_of(fifo_policy_create(4), belady, NB, ev));
	TAP_EQ("opt 3 frames belady string: 5 hits",
	       5, hits_of(opt_policy_create(3), belady, NB, ev));
	TAP_EQ("opt 4 frames belady string: 6 hits",
	       6, hits_of(opt_policy_create(4), belady, NB, ev));
	hits_of(lru_policy_create(3), belady, NB, ev);
	TAP_EQ("lru 3 frames: 4 evicts 1", 1, ev[3]);
	TAP_EQ("lru 3 frames: 1 evicts 2, 2 evicts 3, 5 evicts 4", 4, ev[6]);
	hits_of(opt_policy_create(3), belady, NB, ev);
	TAP_EQ("opt 3 frames: 4 evicts 3 (used last)", 3, ev[3]);
	TAP_EQ("opt 3 frames: 5 evicts 4", 4, ev[6]);
	TAP_EQ("clock 3 frames 1 2 3 1 4 2 5: 1 hit",
	       1, hits_of(clock_policy_create(3), clk, 7, ev));
	TAP_EQ("clock: 4 evicts 2 (1 had its second chance)", 2, ev[4]);
	TAP_EQ("clock: 2 evicts 3", 3, ev[5]);
	TAP_EQ("clock: 5 evicts 1 (bit cleared by the hand)", 1, ev[6]);
	TAP_EQ("arc 1 frame 1 1 2 2: 2 hits",
	       2, hits_of(arc_policy_create(1), (const u64[]){ 1, 1, 2, 2 },
			  4, ev));
	TAP_EQ("lru2 2 frames 1 1 2 3: 3 evicts 2 (one reference)",
	       2, (hits_of(lru2_policy_create(2), (const u64[]){ 1, 1, 2, 3 },
			   4, ev), ev[3]));
	return tap_done();
}
