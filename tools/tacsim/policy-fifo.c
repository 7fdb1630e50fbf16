// SPDX-License-Identifier: GPL-2.0-only
/*
 * FIFO baseline for tacsim: blocks leave in the order they were admitted,
 * whatever their hits.  The victim is the oldest clean, unheld block.
 */
#include "policy-base.h"

struct fifo_priv {
	struct bl_list q;
};

static struct fifo_priv *fifo(struct bl_base *b)
{
	return b->priv;
}

static void fifo_hit(struct bl_base *b, u32 cb)
{
}

static void fifo_insert(struct bl_base *b, u32 cb)
{
	bl_list_add_tail(&fifo(b)->q, b->next, b->prev, cb);
}

static void fifo_remove(struct bl_base *b, u32 cb, bool evict)
{
	bl_list_del(&fifo(b)->q, b->next, b->prev, cb);
}

static u32 fifo_victim(struct bl_base *b)
{
	u32 cb;

	for (cb = fifo(b)->q.head; cb != BL_NONE; cb = b->next[cb])
		if (bl_evictable(b, cb))
			return cb;
	return BL_NONE;
}

static const struct bl_hooks fifo_hooks = {
	.name = "fifo",
	.hit = fifo_hit,
	.insert = fifo_insert,
	.remove = fifo_remove,
	.victim = fifo_victim,
};

struct tac_policy *fifo_policy_create(u32 nr_blocks)
{
	struct bl_base *b = bl_base_create(nr_blocks, &fifo_hooks,
					   sizeof(struct fifo_priv));

	if (!b)
		return NULL;
	bl_list_init(&fifo(b)->q);
	return &b->policy;
}
