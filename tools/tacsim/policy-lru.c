// SPDX-License-Identifier: GPL-2.0-only
/*
 * LRU baseline for tacsim: one list of mapped blocks, least recently
 * referenced at the head.  A hit moves the block to the tail; the victim is
 * the first clean, unheld block from the head.  FIFO (policy-fifo.c) is the
 * same list without the move on a hit.
 */
#include "policy-base.h"

struct lru_priv {
	struct bl_list q;
};

static struct lru_priv *lru(struct bl_base *b)
{
	return b->priv;
}

static void lru_hit(struct bl_base *b, u32 cb)
{
	struct bl_list *q = &lru(b)->q;

	bl_list_del(q, b->next, b->prev, cb);
	bl_list_add_tail(q, b->next, b->prev, cb);
}

static void lru_insert(struct bl_base *b, u32 cb)
{
	bl_list_add_tail(&lru(b)->q, b->next, b->prev, cb);
}

static void lru_remove(struct bl_base *b, u32 cb, bool evict)
{
	bl_list_del(&lru(b)->q, b->next, b->prev, cb);
}

static u32 lru_victim(struct bl_base *b)
{
	u32 cb;

	for (cb = lru(b)->q.head; cb != BL_NONE; cb = b->next[cb])
		if (bl_evictable(b, cb))
			return cb;
	return BL_NONE;
}

static const struct bl_hooks lru_hooks = {
	.name = "lru",
	.hit = lru_hit,
	.insert = lru_insert,
	.remove = lru_remove,
	.victim = lru_victim,
};

struct tac_policy *lru_policy_create(u32 nr_blocks)
{
	struct bl_base *b = bl_base_create(nr_blocks, &lru_hooks,
					   sizeof(struct lru_priv));

	if (!b)
		return NULL;
	bl_list_init(&lru(b)->q);
	return &b->policy;
}
