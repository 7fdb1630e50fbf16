// SPDX-License-Identifier: GPL-2.0-only
/*
 * CLOCK (second chance) baseline for tacsim.
 *
 * The clock is kept as a queue whose head is the block under the hand: a
 * new block goes in just behind the hand (the tail) with its reference bit
 * clear, a hit sets the bit, and the hand clears set bits, passing those
 * blocks (to the tail), until it finds a clear one: the victim.  This is
 * exactly the ring-with-a-hand formulation with the ring unrolled.  A newly
 * admitted block starts with a clear bit: the reference that brought it in
 * is its admission, as in FIFO, and only a later hit earns the second
 * chance.  Dirty or held blocks are passed over with their bit untouched.
 */
#include <stdlib.h>

#include "policy-base.h"

struct clock_priv {
	struct bl_list q;
	u8 *ref;
};

static struct clock_priv *clk(struct bl_base *b)
{
	return b->priv;
}

static void clock_hit(struct bl_base *b, u32 cb)
{
	clk(b)->ref[cb] = 1;
}

static void clock_insert(struct bl_base *b, u32 cb)
{
	clk(b)->ref[cb] = 0;
	bl_list_add_tail(&clk(b)->q, b->next, b->prev, cb);
}

static void clock_remove(struct bl_base *b, u32 cb, bool evict)
{
	bl_list_del(&clk(b)->q, b->next, b->prev, cb);
}

static u32 clock_victim(struct bl_base *b)
{
	struct clock_priv *c = clk(b);
	u64 steps = 2 * (u64)c->q.count + 1;	/* every bit cleared by then */
	u32 cb;

	while (steps-- && (cb = c->q.head) != BL_NONE) {
		if (bl_evictable(b, cb) && !c->ref[cb])
			return cb;
		if (bl_evictable(b, cb))
			c->ref[cb] = 0;
		bl_list_del(&c->q, b->next, b->prev, cb);
		bl_list_add_tail(&c->q, b->next, b->prev, cb);
	}
	return BL_NONE;
}

static void clock_destroy(struct bl_base *b)
{
	if (b->priv)
		free(clk(b)->ref);
}

static const struct bl_hooks clock_hooks = {
	.name = "clock",
	.hit = clock_hit,
	.insert = clock_insert,
	.remove = clock_remove,
	.victim = clock_victim,
	.destroy = clock_destroy,
};

struct tac_policy *clock_policy_create(u32 nr_blocks)
{
	struct bl_base *b = bl_base_create(nr_blocks, &clock_hooks,
					   sizeof(struct clock_priv));

	if (!b)
		return NULL;
	bl_list_init(&clk(b)->q);
	clk(b)->ref = bl_zalloc(b, nr_blocks, 1);
	if (!clk(b)->ref) {
		b->ops.destroy(&b->policy);
		return NULL;
	}
	return &b->policy;
}
