/* SPDX-License-Identifier: GPL-2.0-only */
/* Shared helpers for the policy unit tests: a seeded PRNG, policy setup. */
#ifndef TESTS_UNIT_HELPERS_H
#define TESTS_UNIT_HELPERS_H

#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/types.h>
#include <stdlib.h>

#include "tac.h"

/* xorshift64*: deterministic across libcs, unlike rand(). */
static inline u64 rnd_next(u64 *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static inline u64 rnd_seed(u64 seed)
{
	return seed * 0x9e3779b97f4a7c15ULL + 1;
}

/* Uniform in [0, n) for small n. */
static inline u32 rnd_below(u64 *s, u32 n)
{
	return (u32)((rnd_next(s) >> 32) * n >> 32);
}

static inline enum tac_class req(struct tac_policy *p, u64 first, u32 nr)
{
	return tac_policy_request(p, to_oblock(first), nr, false);
}

/* Aged temperature of @extent as the policy reports it; 0 if untracked. */
struct find_ctx {
	u64 extent;
	u32 temp;
};

static inline int find_fn(void *ctx, const struct tac_extent_rec *r)
{
	struct find_ctx *f = ctx;

	if (from_extent(r->extent) != f->extent)
		return 0;
	f->temp = r->temp;
	return 1;
}

static inline u32 extent_temp(struct tac_policy *p, u64 extent)
{
	struct find_ctx f = { .extent = extent, .temp = 0 };

	tac_policy_walk_extents(p, find_fn, &f);
	return f.temp;
}

static inline struct tac_policy_stats pstats(struct tac_policy *p)
{
	struct tac_policy_stats s;

	tac_policy_stats(p, &s);
	return s;
}

#endif /* TESTS_UNIT_HELPERS_H */
