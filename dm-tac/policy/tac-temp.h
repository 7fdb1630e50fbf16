/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-tac policy core: the extent statistics table (TAC section 3.1, eq. 1
 * and aging).  Private to the policy core.
 */
#ifndef DM_TAC_TEMP_H
#define DM_TAC_TEMP_H

#include <linux/bits.h>

#include "tac-types.h"

/* Slots examined for one extent: its home slot and the next ones. */
#define TEMP_PROBE		8

/* A slot's stamp: TEMP_USED, and the epoch its temp is aged to. */
#define TEMP_USED		BIT(31)
#define TEMP_EPOCH_MASK		(TEMP_USED - 1)

/* 16 bytes per tracked extent. */
struct tac_temp_entry {
	u64 extent;
	u32 temp;
	u32 stamp;
};

struct tac_temp_table {
	struct tac_temp_entry *slots;
	u32 nr_slots;
	u32 nr_used;
	u32 epoch;	/* halvings so far, modulo 2^31 */
	u32 sweep;	/* next slot the aging sweep normalises */
	u32 hint;	/* slot of the last extent found */
	u64 dropped;	/* extents forgotten to make room */
};

void tac_temp_init(struct tac_temp_table *t, struct tac_temp_entry *slots,
		   u32 nr_slots);
u32 tac_temp_home(const struct tac_temp_table *t, u64 extent);
u32 tac_temp_get(struct tac_temp_table *t, u64 extent);
void tac_temp_add(struct tac_temp_table *t, u64 extent, u64 amount);
void tac_temp_halve(struct tac_temp_table *t);
int tac_temp_set(struct tac_temp_table *t, u64 extent, u32 temp);
int tac_temp_walk(struct tac_temp_table *t,
		  int (*fn)(void *ctx, const struct tac_extent_rec *r), void *ctx);
u32 tac_temp_hottest(struct tac_temp_table *t, struct tac_extent_rec *out,
		     u32 n);

#endif /* DM_TAC_TEMP_H */
