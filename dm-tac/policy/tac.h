/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The TAC policy (tac-policy.c): its parameters and its constructor.  The
 * interface every policy implements is tac-policy.h; a caller that only
 * drives a policy object needs that alone.
 */
#ifndef DM_TAC_TAC_H
#define DM_TAC_TAC_H

#include "tac-policy.h"

/*
 * Tunables.  All integers (the core is kernel code: no floating point).
 * Costs are per block access at the target's block size, in microseconds.
 */
struct tac_params {
	u32 extent_blocks;	/* blocks per extent (TAC: 32 pages) */
	u32 seq_window;		/* requests remembered by the classifier */
	u32 seq_threshold;	/* > this many window hits: sequential */
	u32 aging_period;	/* block accesses between halvings */
	u32 admit_margin;	/* percent warmer than the victim's extent */
	u32 fill_threshold;	/* percent of blocks filled without a test */
	u32 cost_hdd_random_us;	/* R_HDD */
	u32 cost_hdd_seq_us;	/* S_HDD */
	u32 cost_cache_us;	/* R_SSD */
	u32 cost_cache_write_us; /* W_SSD (FD-Buffer: writes cost more) */
	u32 stats_extents;	/* entries in the extent statistics table */
};

void tac_params_default(struct tac_params *params);

/*
 * 0 if @params is usable for a cache of @nr_blocks blocks; else -EINVAL
 * and *@why names the first bad field in words fit for ti->error.
 */
int tac_params_check(const struct tac_params *params, u32 nr_blocks,
		     const char **why);

/* Bytes tac_policy_create() will allocate: published and tested. */
u64 tac_policy_ram_bytes(u32 nr_blocks, const struct tac_params *params);

/* NULL if memory is short or @params fails tac_params_check(). */
struct tac_policy *tac_policy_create(u32 nr_blocks,
				     const struct tac_params *params);

#endif /* DM_TAC_TAC_H */
