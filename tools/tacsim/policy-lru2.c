// SPDX-License-Identifier: GPL-2.0-only
/*
 * LRU-2 baseline for tacsim: LRU-K with K = 2 (O'Neil, O'Neil and Weikum,
 * SIGMOD 1993).  The victim is the block whose second most recent reference
 * is oldest; a block referenced only once has an infinite backward
 * 2-distance and goes first, the least recently referenced of those first
 * (the subsidiary LRU rule).  Correlated reference period: 0 (every
 * reference counts).  Retained information period: the history (last
 * reference time) of up to nr_blocks evicted blocks is kept, the oldest
 * evicted forgotten first, so a block re-admitted soon after its eviction
 * keeps its second-to-last reference.  Time is the reference count.
 *
 * The cached blocks sit in a min-heap keyed by (penultimate, last)
 * reference times, penultimate 0 meaning "none": O(log n) per reference.
 */
#include <stdlib.h>

#include "policy-base.h"

struct lru2_priv {
	struct bl_heap heap;	/* over cblocks */
	u64 *last;		/* per cblock */
	/* History of evicted blocks: a FIFO ring of nr_blocks entries. */
	u64 *hkey, *hlast;
	u32 *hnext, *hprev;
	struct bl_hash hmap;
	struct bl_list hist, hfree;
};

static struct lru2_priv *lru2(struct bl_base *b)
{
	return b->priv;
}

static bl_key_t key_of(u64 penult, u64 last)
{
	return ((bl_key_t)penult << 64) | last;
}

static void lru2_hit(struct bl_base *b, u32 cb)
{
	struct lru2_priv *l = lru2(b);

	bl_heap_update(&l->heap, cb, key_of(l->last[cb], b->now));
	l->last[cb] = b->now;
}

static void lru2_insert(struct bl_base *b, u32 cb)
{
	struct lru2_priv *l = lru2(b);
	u32 h = bl_hash_find(&l->hmap, b->oblock[cb]);
	u64 penult = 0;

	if (h != BL_NONE) {
		penult = l->hlast[h];
		bl_list_del(&l->hist, l->hnext, l->hprev, h);
		bl_hash_del(&l->hmap, h);
		bl_list_add_tail(&l->hfree, l->hnext, l->hprev, h);
	}
	l->last[cb] = b->now;
	bl_heap_push(&l->heap, cb, key_of(penult, b->now));
}

static void lru2_remove(struct bl_base *b, u32 cb, bool evict)
{
	struct lru2_priv *l = lru2(b);
	u32 h;

	bl_heap_del(&l->heap, cb);
	if (!evict)
		return;
	h = l->hfree.head;
	if (h == BL_NONE) {
		h = l->hist.head;
		bl_list_del(&l->hist, l->hnext, l->hprev, h);
		bl_hash_del(&l->hmap, h);
	} else {
		bl_list_del(&l->hfree, l->hnext, l->hprev, h);
	}
	l->hkey[h] = b->oblock[cb];
	l->hlast[h] = l->last[cb];
	bl_hash_add(&l->hmap, h);
	bl_list_add_tail(&l->hist, l->hnext, l->hprev, h);
}

static u32 lru2_victim(struct bl_base *b)
{
	struct lru2_priv *l = lru2(b);
	u32 cb = bl_heap_top(&l->heap), i, best = BL_NONE;

	if (cb != BL_NONE && bl_evictable(b, cb))
		return cb;
	/* Dirty or held blocks at the top: take the best evictable one. */
	for (i = 0; i < l->heap.count; i++) {
		cb = l->heap.item[i];
		if (bl_evictable(b, cb) &&
		    (best == BL_NONE || l->heap.key[cb] < l->heap.key[best]))
			best = cb;
	}
	return best;
}

static void lru2_destroy(struct bl_base *b)
{
	struct lru2_priv *l = b->priv;

	if (!l)
		return;
	bl_heap_exit(&l->heap);
	free(l->last);
	free(l->hkey);
	free(l->hlast);
	free(l->hnext);
	free(l->hprev);
	bl_hash_exit(&l->hmap);
}

static const struct bl_hooks lru2_hooks = {
	.name = "lru2",
	.hit = lru2_hit,
	.insert = lru2_insert,
	.remove = lru2_remove,
	.victim = lru2_victim,
	.destroy = lru2_destroy,
};

struct tac_policy *lru2_policy_create(u32 nr_blocks)
{
	struct bl_base *b = bl_base_create(nr_blocks, &lru2_hooks,
					   sizeof(struct lru2_priv));
	struct lru2_priv *l;
	u32 h;

	if (!b)
		return NULL;
	l = b->priv;
	l->last = bl_zalloc(b, nr_blocks, sizeof(*l->last));
	l->hkey = bl_zalloc(b, nr_blocks, sizeof(*l->hkey));
	l->hlast = bl_zalloc(b, nr_blocks, sizeof(*l->hlast));
	l->hnext = bl_zalloc(b, nr_blocks, sizeof(*l->hnext));
	l->hprev = bl_zalloc(b, nr_blocks, sizeof(*l->hprev));
	if (!l->last || !l->hkey || !l->hlast || !l->hnext || !l->hprev ||
	    bl_heap_init(&l->heap, nr_blocks) ||
	    bl_hash_init(&l->hmap, nr_blocks, l->hkey)) {
		b->ops.destroy(&b->policy);
		return NULL;
	}
	b->ram_bytes += (u64)nr_blocks * (4 + 4 + sizeof(bl_key_t)) +
			((u64)l->hmap.mask + 1) * sizeof(*l->hmap.slot);
	bl_list_init(&l->hist);
	bl_list_init(&l->hfree);
	for (h = 0; h < nr_blocks; h++)
		bl_list_add_tail(&l->hfree, l->hnext, l->hprev, h);
	return &b->policy;
}
