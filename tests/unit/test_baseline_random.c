// SPDX-License-Identifier: GPL-2.0-only
/*
 * Every baseline against its brute-force reference (tools/tacsim/
 * baseline-ref.h) on seeded random traces, for cache sizes 1 to 64: LRU,
 * FIFO, CLOCK, ARC and LRU-2 must agree on every hit and every evicted
 * block; OPT, whose ties between never-reused blocks may break either way,
 * on the number of hits.  OPT must also have at least as many hits as every
 * other policy on every trace.
 */
#include "../../tools/tacsim/baseline-ref.h"

#define N 3000

static u64 t[N], next[N];
static u8 hit[N];
static int64_t ev[N];

enum { P_LRU, P_FIFO, P_CLOCK, P_ARC, P_LRU2, P_NR };
static const char *const names[P_NR] = { "lru", "fifo", "clock", "arc",
					 "lru2" };

static struct tac_policy *create(int k, u32 c)
{
	switch (k) {
	case P_LRU:
		return lru_policy_create(c);
	case P_FIFO:
		return fifo_policy_create(c);
	case P_CLOCK:
		return clock_policy_create(c);
	case P_ARC:
		return arc_policy_create(c);
	default:
		return lru2_policy_create(c);
	}
}

/* Reference model run; returns the first index that differs, or -1. */
static long long compare(int k, u32 c, u32 n, u32 *ref_hits)
{
	static struct ref_cache rc;
	static struct ref_clock ck;
	static struct ref_arc ra;
	static struct ref_lru2 rl;
	u32 i;

	memset(&rc, 0, sizeof(rc));
	memset(&ck, 0, sizeof(ck));
	memset(&ra, 0, sizeof(ra));
	memset(&rl, 0, sizeof(rl));
	rc.c = ck.c = ra.c = rl.c = c;
	*ref_hits = 0;
	for (i = 0; i < n; i++) {
		int64_t e;
		int h;

		switch (k) {
		case P_LRU:
			h = ref_list_access(&rc, t[i], true, &e);
			break;
		case P_FIFO:
			h = ref_list_access(&rc, t[i], false, &e);
			break;
		case P_CLOCK:
			h = ref_clock_access(&ck, t[i], &e);
			break;
		case P_ARC:
			h = ref_arc_access(&ra, t[i], &e);
			break;
		default:
			h = ref_lru2_access(&rl, t[i], &e);
			break;
		}
		*ref_hits += h;
		if (h != hit[i] || e != ev[i])
			return i;
	}
	return -1;
}

int main(void)
{
	static const u32 sizes[] = { 1, 2, 3, 5, 8, 16, 33, 64 };
	u32 s, k, round;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		u32 c = sizes[s];
		long long bad[P_NR] = { -1, -1, -1, -1, -1 };
		u32 worst_opt_deficit = 0, opt_mismatch = 0;
		u64 exp_opt = 0, got_opt = 0;
		char name[128];

		for (round = 0; round < 12; round++) {
			u32 universe = c + 1 + (u32)(ref_rand() % (4 * c + 8));
			u32 ref_hits, hits, opt_hits, best = 0;
			struct tac_policy *p;

			ref_trace(t, N, universe);
			ref_next_use(t, N, next);
			for (k = 0; k < P_NR; k++) {
				p = create(k, c);
				hits = run_policy(p, t, NULL, N, hit, ev);
				tac_policy_destroy(p);
				if (hits > best)
					best = hits;
				if (bad[k] < 0 && compare(k, c, N, &ref_hits) >= 0)
					bad[k] = compare(k, c, N, &ref_hits);
			}
			p = opt_policy_create(c);
			opt_hits = run_policy(p, t, next, N, hit, ev);
			tac_policy_destroy(p);
			ref_hits = ref_opt_hits(t, N, c);
			if (opt_hits != ref_hits && !opt_mismatch++) {
				exp_opt = ref_hits;
				got_opt = opt_hits;
			}
			if (best > opt_hits && best - opt_hits > worst_opt_deficit)
				worst_opt_deficit = best - opt_hits;
		}
		for (k = 0; k < P_NR; k++) {
			snprintf(name, sizeof(name),
				 "%s %u blocks: every hit and eviction as the reference (first difference at)",
				 names[k], c);
			TAP_EQ(name, -1, bad[k]);
		}
		snprintf(name, sizeof(name),
			 "opt %u blocks: hits as the brute-force MIN", c);
		TAP_EQ(name, exp_opt, got_opt);
		snprintf(name, sizeof(name),
			 "opt %u blocks: no policy has more hits (largest excess)",
			 c);
		TAP_EQ(name, 0, worst_opt_deficit);
	}
	return tap_done();
}
