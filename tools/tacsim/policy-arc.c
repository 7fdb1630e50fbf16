// SPDX-License-Identifier: GPL-2.0-only
/*
 * ARC baseline for tacsim: Megiddo and Modha, "ARC: A Self-Tuning, Low
 * Overhead Replacement Cache" (FAST 2003), figure 4, with c = nr_blocks.
 *
 * T1 and T2 are lists of cached blocks (seen once recently, seen at least
 * twice), B1 and B2 their ghost lists of recently evicted origin blocks; p
 * is the adaptive target size of T1.  Lists have their LRU end at the head.
 * The adaptation steps use integer division (delta1 = |B2| / |B1|).
 *
 * Departures forced by the dm-tac interface, none of which occur in a plain
 * trace replay: REPLACE is skipped while a FREE block exists (blocks freed by
 * unmap/release or drop_clean); REPLACE passes over dirty or held blocks,
 * falling back to the other list; a block leaving by unmap() leaves no ghost
 * (its data was invalidated, it was not evicted).
 */
#include <stdlib.h>

#include "policy-base.h"

enum { ARC_T1 = 0, ARC_T2 = 1, ARC_B1 = 0, ARC_B2 = 1 };

struct arc_priv {
	struct bl_list t[2];	/* over cblocks, links in bl_base */
	u8 *in;			/* ARC_T1 or ARC_T2 per cblock */
	/* Ghost directory: capacity 2c (|B1| + |B2| <= c in the paper). */
	u32 nr_ghosts;
	u64 *gkey;
	u32 *gnext, *gprev;
	u8 *gin;
	struct bl_hash gmap;
	struct bl_list b[2];
	struct bl_list gfree;
	u32 p;
};

static struct arc_priv *arc(struct bl_base *b)
{
	return b->priv;
}

static void ghost_del(struct arc_priv *a, u32 g)
{
	bl_list_del(&a->b[a->gin[g]], a->gnext, a->gprev, g);
	bl_hash_del(&a->gmap, g);
	bl_list_add_tail(&a->gfree, a->gnext, a->gprev, g);
}

static void ghost_add(struct arc_priv *a, u64 oblock, int list)
{
	u32 g = a->gfree.head;

	if (g == BL_NONE) {
		/* Only reachable with DETACHED blocks: drop the oldest. */
		int l = a->b[ARC_B2].count > a->b[ARC_B1].count ? ARC_B2 :
								   ARC_B1;
		ghost_del(a, a->b[l].head);
		g = a->gfree.head;
	}
	bl_list_del(&a->gfree, a->gnext, a->gprev, g);
	a->gkey[g] = oblock;
	a->gin[g] = list;
	bl_hash_add(&a->gmap, g);
	bl_list_add_tail(&a->b[list], a->gnext, a->gprev, g);
}

static u32 first_evictable(struct bl_base *b, struct bl_list *l)
{
	u32 cb;

	for (cb = l->head; cb != BL_NONE; cb = b->next[cb])
		if (bl_evictable(b, cb))
			return cb;
	return BL_NONE;
}

/*
 * Evict the LRU block of list @from (the other list if none is evictable),
 * remember it in the matching ghost list if @ghost, and remap it to @oblock.
 */
static u32 evict_from(struct bl_base *b, int from, u64 oblock, u64 *evicted,
		      bool ghost)
{
	struct arc_priv *a = arc(b);
	u32 cb = first_evictable(b, &a->t[from]);

	if (cb == BL_NONE) {
		from = !from;
		cb = first_evictable(b, &a->t[from]);
	}
	/* The caller guarantees an evictable block exists. */
	*evicted = b->oblock[cb];
	bl_list_del(&a->t[from], b->next, b->prev, cb);
	if (ghost)
		ghost_add(a, b->oblock[cb], from == ARC_T1 ? ARC_B1 : ARC_B2);
	bl_replace(b, cb, oblock);
	return cb;
}

/* REPLACE(x, p); x_in_b2 is "x is in B2". */
static u32 arc_replace(struct bl_base *b, bool x_in_b2, u64 oblock,
		       u64 *evicted)
{
	struct arc_priv *a = arc(b);
	u32 t1 = a->t[ARC_T1].count;

	if (t1 >= 1 && ((x_in_b2 && t1 == a->p) || t1 > a->p))
		return evict_from(b, ARC_T1, oblock, evicted, true);
	return evict_from(b, ARC_T2, oblock, evicted, true);
}

/* A FREE block if there is one, else REPLACE. */
static int room(struct bl_base *b, bool x_in_b2, u64 oblock, u32 *cb,
		u64 *evicted)
{
	*cb = bl_take_free(b, oblock);
	if (*cb != BL_NONE)
		return 0;
	*cb = arc_replace(b, x_in_b2, oblock, evicted);
	return 1;
}

static int arc_admit(struct bl_base *b, u64 oblock, u32 *cb, u64 *evicted)
{
	struct arc_priv *a = arc(b);
	u32 c = b->nr_blocks;
	u32 g = bl_hash_find(&a->gmap, oblock);
	u32 b1 = a->b[ARC_B1].count, b2 = a->b[ARC_B2].count;
	u32 l1, total;
	int r, dest = ARC_T2;

	if (g != BL_NONE && a->gin[g] == ARC_B1) {
		/* Case II: ghost hit in B1, favour recency. */
		u32 d = b1 >= b2 ? 1 : b2 / b1;

		a->p = a->p + d > c ? c : a->p + d;
		ghost_del(a, g);
		r = room(b, false, oblock, cb, evicted);
	} else if (g != BL_NONE) {
		/* Case III: ghost hit in B2, favour frequency. */
		u32 d = b2 >= b1 ? 1 : b1 / b2;

		a->p = a->p > d ? a->p - d : 0;
		ghost_del(a, g);
		r = room(b, true, oblock, cb, evicted);
	} else {
		/* Case IV: a miss in the whole directory. */
		dest = ARC_T1;
		l1 = a->t[ARC_T1].count + b1;
		total = l1 + a->t[ARC_T2].count + b2;
		if (l1 >= c) {
			if (a->t[ARC_T1].count < c && b1) {
				ghost_del(a, a->b[ARC_B1].head);
				r = room(b, false, oblock, cb, evicted);
			} else {
				/* B1 empty, T1 full: evict without a ghost. */
				*cb = bl_take_free(b, oblock);
				r = 0;
				if (*cb == BL_NONE) {
					*cb = evict_from(b, ARC_T1, oblock,
							 evicted, false);
					r = 1;
				}
			}
		} else {
			if (total >= 2 * c && b2)
				ghost_del(a, a->b[ARC_B2].head);
			r = room(b, false, oblock, cb, evicted);
		}
	}
	a->in[*cb] = dest;
	bl_list_add_tail(&a->t[dest], b->next, b->prev, *cb);
	return r;
}

/* Case I: a hit moves the block to the MRU end of T2. */
static void arc_hit(struct bl_base *b, u32 cb)
{
	struct arc_priv *a = arc(b);

	bl_list_del(&a->t[a->in[cb]], b->next, b->prev, cb);
	a->in[cb] = ARC_T2;
	bl_list_add_tail(&a->t[ARC_T2], b->next, b->prev, cb);
}

/* load_mapping(): a block of unknown history enters T1. */
static void arc_insert(struct bl_base *b, u32 cb)
{
	struct arc_priv *a = arc(b);
	u32 g = bl_hash_find(&a->gmap, b->oblock[cb]);

	if (g != BL_NONE)
		ghost_del(a, g);
	a->in[cb] = ARC_T1;
	bl_list_add_tail(&a->t[ARC_T1], b->next, b->prev, cb);
}

static void arc_remove(struct bl_base *b, u32 cb, bool evict)
{
	struct arc_priv *a = arc(b);

	bl_list_del(&a->t[a->in[cb]], b->next, b->prev, cb);
}

static u32 arc_victim(struct bl_base *b)
{
	return BL_NONE;	/* arc_admit() does its own replacement */
}

static void arc_destroy(struct bl_base *b)
{
	struct arc_priv *a = b->priv;

	if (!a)
		return;
	free(a->in);
	free(a->gkey);
	free(a->gnext);
	free(a->gprev);
	free(a->gin);
	bl_hash_exit(&a->gmap);
}

static const struct bl_hooks arc_hooks = {
	.name = "arc",
	.hit = arc_hit,
	.insert = arc_insert,
	.remove = arc_remove,
	.victim = arc_victim,
	.admit = arc_admit,
	.destroy = arc_destroy,
};

struct tac_policy *arc_policy_create(u32 nr_blocks)
{
	struct bl_base *b = bl_base_create(nr_blocks, &arc_hooks,
					   sizeof(struct arc_priv));
	struct arc_priv *a;
	u32 g;

	if (!b)
		return NULL;
	a = b->priv;
	a->nr_ghosts = 2 * nr_blocks;
	a->in = bl_zalloc(b, nr_blocks, sizeof(*a->in));
	a->gkey = bl_zalloc(b, a->nr_ghosts, sizeof(*a->gkey));
	a->gnext = bl_zalloc(b, a->nr_ghosts, sizeof(*a->gnext));
	a->gprev = bl_zalloc(b, a->nr_ghosts, sizeof(*a->gprev));
	a->gin = bl_zalloc(b, a->nr_ghosts, sizeof(*a->gin));
	if (!a->in || !a->gkey || !a->gnext || !a->gprev || !a->gin ||
	    bl_hash_init(&a->gmap, a->nr_ghosts, a->gkey)) {
		b->ops.destroy(&b->policy);
		return NULL;
	}
	b->ram_bytes += ((u64)a->gmap.mask + 1) * sizeof(*a->gmap.slot);
	bl_list_init(&a->t[ARC_T1]);
	bl_list_init(&a->t[ARC_T2]);
	bl_list_init(&a->b[ARC_B1]);
	bl_list_init(&a->b[ARC_B2]);
	bl_list_init(&a->gfree);
	for (g = 0; g < a->nr_ghosts; g++)
		bl_list_add_tail(&a->gfree, a->gnext, a->gprev, g);
	return &b->policy;
}
