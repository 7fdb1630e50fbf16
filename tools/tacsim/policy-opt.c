// SPDX-License-Identifier: GPL-2.0-only
/*
 * OPT baseline for tacsim: Belady's MIN (IBM Systems Journal 5(2), 1966)
 * in demand-paging form: every miss is admitted, and the victim is the
 * cached block whose next reference is farthest in the future (never
 * before anything else).  It minimises misses, not I/O time: TAC section 4
 * notes that an online cost-aware policy may beat it on cost.
 *
 * Offline: the caller announces the next-use time of each accessed block
 * with opt_policy_next_use() (see sim-policy.h).  The cached blocks sit in a
 * heap keyed by next use, farthest at the top.
 */
#include "policy-base.h"

struct opt_priv {
	struct bl_heap heap;
	u64 next_use;		/* of the block being referenced */
};

static const struct bl_hooks opt_hooks;

static struct opt_priv *opt(struct bl_base *b)
{
	return b->priv;
}

/* Farthest first; ties (never used again) by lowest cblock. */
static bl_key_t key_of(u64 next_use, u32 cb)
{
	return ((bl_key_t)~next_use << 32) | cb;
}

void opt_policy_next_use(struct tac_policy *p, u64 next_use)
{
	opt(to_base(p))->next_use = next_use;
}

bool policy_is_opt(const struct tac_policy *p)
{
	return p->ops->name == opt_hooks.name;
}

static void opt_hit(struct bl_base *b, u32 cb)
{
	bl_heap_update(&opt(b)->heap, cb, key_of(opt(b)->next_use, cb));
}

static void opt_insert(struct bl_base *b, u32 cb)
{
	bl_heap_push(&opt(b)->heap, cb, key_of(opt(b)->next_use, cb));
}

static void opt_remove(struct bl_base *b, u32 cb, bool evict)
{
	bl_heap_del(&opt(b)->heap, cb);
}

static u32 opt_victim(struct bl_base *b)
{
	struct bl_heap *h = &opt(b)->heap;
	u32 cb = bl_heap_top(h), i, best = BL_NONE;

	if (cb != BL_NONE && bl_evictable(b, cb))
		return cb;
	for (i = 0; i < h->count; i++) {
		cb = h->item[i];
		if (bl_evictable(b, cb) &&
		    (best == BL_NONE || h->key[cb] < h->key[best]))
			best = cb;
	}
	return best;
}

static void opt_destroy(struct bl_base *b)
{
	if (b->priv)
		bl_heap_exit(&opt(b)->heap);
}

static const struct bl_hooks opt_hooks = {
	.name = "opt",
	.hit = opt_hit,
	.insert = opt_insert,
	.remove = opt_remove,
	.victim = opt_victim,
	.destroy = opt_destroy,
};

struct tac_policy *opt_policy_create(u32 nr_blocks)
{
	struct bl_base *b = bl_base_create(nr_blocks, &opt_hooks,
					   sizeof(struct opt_priv));

	if (!b)
		return NULL;
	if (bl_heap_init(&opt(b)->heap, nr_blocks)) {
		b->ops.destroy(&b->policy);
		return NULL;
	}
	opt(b)->next_use = OPT_NEVER;
	b->ram_bytes += (u64)nr_blocks * (4 + 4 + sizeof(bl_key_t));
	return &b->policy;
}
