/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Simulator-only extension of the dm-tac policy interface: constructors for
 * the baseline policies tacsim compares TAC against, and the one extra
 * method offline OPT needs.  Nothing here is linked into the kernel module;
 * dm-tac/policy/tac-policy.h is unchanged.
 *
 * The baselines implement every method of struct tac_policy_ops in the
 * textbook "every access is a reference, a miss inserts the block" mode:
 * lookup(TAC_USE_READ or _WRITE) is one reference, and admit() after a missed
 * lookup always finds room (evicting if the cache is full) unless every
 * mapped block is dirty or held.  They do not classify requests:
 * request() only returns TAC_RANDOM; tacsim classifies each request once
 * with the TAC core's classifier and uses that for cost accounting of every
 * policy alike.  The optional methods (extents, set_params) are NULL.
 */
#ifndef TACSIM_SIM_POLICY_H
#define TACSIM_SIM_POLICY_H

#include "../../dm-tac/policy/tac.h"

struct tac_policy *lru_policy_create(u32 nr_blocks);
struct tac_policy *fifo_policy_create(u32 nr_blocks);
struct tac_policy *clock_policy_create(u32 nr_blocks);
struct tac_policy *arc_policy_create(u32 nr_blocks);
struct tac_policy *lru2_policy_create(u32 nr_blocks);
struct tac_policy *opt_policy_create(u32 nr_blocks);

/*
 * OPT (Belady's MIN) is offline: before each reference, that is before the
 * lookup(TAC_USE_READ or _WRITE) and, on a miss, the admit() of one access, the
 * caller tells it when the block being accessed will next be accessed
 * (an access index, strictly larger than any earlier one; OPT_NEVER if
 * never).  tacsim computes these from the whole trace in a backward pass.
 */
#define OPT_NEVER (~(u64)0)
void opt_policy_next_use(struct tac_policy *p, u64 next_use);

/* Is @p an OPT policy (needs opt_policy_next_use())? */
bool policy_is_opt(const struct tac_policy *p);

#endif /* TACSIM_SIM_POLICY_H */
