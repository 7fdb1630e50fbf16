/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared machinery of the baseline policies (simulator only): the cache
 * block table (origin block per cblock, state, dirty and held bits), an
 * origin-block hash, intrusive doubly linked lists and an indexed binary
 * heap, all over 32-bit indexes into preallocated arrays, in the manner of
 * dm-cache-policy-smq.c.  Each baseline supplies hooks for "a mapped block
 * was referenced", "a block became mapped", "a block stops being mapped" and
 * "choose a victim"; policy-base.c turns them into a full tac_policy_ops.
 */
#ifndef TACSIM_POLICY_BASE_H
#define TACSIM_POLICY_BASE_H

#include <linux/types.h>
#include "sim-policy.h"

/* Hooks ignore arguments they do not need, as kernel code does. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define BL_NONE ((u32)~0U)

/* cblock states */
enum { BL_FREE = 0, BL_MAPPED = 1, BL_DETACHED = 2 };

/* Hash of u32 indexes keyed by the u64 in keys[index]. */
struct bl_hash {
	u32 *slot;		/* index + 1; 0 is empty */
	u32 mask;
	const u64 *keys;
};

int bl_hash_init(struct bl_hash *h, u32 nr_entries, const u64 *keys);
void bl_hash_exit(struct bl_hash *h);
u32 bl_hash_find(const struct bl_hash *h, u64 key);	/* index or BL_NONE */
void bl_hash_add(struct bl_hash *h, u32 idx);
void bl_hash_del(struct bl_hash *h, u32 idx);

/* Doubly linked list threaded through caller-owned next/prev arrays. */
struct bl_list {
	u32 head, tail, count;
};

void bl_list_init(struct bl_list *l);
void bl_list_add_tail(struct bl_list *l, u32 *next, u32 *prev, u32 i);
void bl_list_add_head(struct bl_list *l, u32 *next, u32 *prev, u32 i);
void bl_list_del(struct bl_list *l, u32 *next, u32 *prev, u32 i);

/* Indexed binary min-heap of u32 items with 128-bit keys. */
typedef unsigned __int128 bl_key_t;

struct bl_heap {
	u32 *item;		/* heap order */
	u32 *pos;		/* pos[item] or BL_NONE */
	bl_key_t *key;		/* key[item] */
	u32 count;
};

int bl_heap_init(struct bl_heap *h, u32 nr_items);
void bl_heap_exit(struct bl_heap *h);
void bl_heap_push(struct bl_heap *h, u32 i, bl_key_t key);
void bl_heap_del(struct bl_heap *h, u32 i);
void bl_heap_update(struct bl_heap *h, u32 i, bl_key_t key);
static inline u32 bl_heap_top(const struct bl_heap *h)
{
	return h->count ? h->item[0] : BL_NONE;
}

struct bl_base;

struct bl_hooks {
	const char *name;
	/* A MAPPED block was referenced (lookup, not TAC_PROBE). */
	void (*hit)(struct bl_base *b, u32 cb);
	/* @cb just became MAPPED to oblock[cb] (admit or load_mapping). */
	void (*insert)(struct bl_base *b, u32 cb);
	/* @cb stops being MAPPED: @evict if replaced by admit(). */
	void (*remove)(struct bl_base *b, u32 cb, bool evict);
	/*
	 * A clean, unheld MAPPED block to replace.  Only called when one
	 * exists; may update policy state (CLOCK moves its hand).
	 */
	u32 (*victim)(struct bl_base *b);
	/* Called at the start of admit(), before any choice. Optional. */
	void (*admit_begin)(struct bl_base *b, u64 oblock);
	/* Policy-private memory. Optional. */
	void (*destroy)(struct bl_base *b);
	/*
	 * Replaces the generic admit() when set (ARC).  Only called when a
	 * FREE or an evictable block exists; returns 0 or 1 as admit().
	 */
	int (*admit)(struct bl_base *b, u64 oblock, u32 *cblock, u64 *evicted);
};

struct bl_base {
	struct tac_policy policy;
	struct tac_policy_ops ops;
	const struct bl_hooks *hooks;
	u32 nr_blocks;
	u64 *oblock;
	u8 *state;
	u8 *dirty;
	u8 *held;
	u32 *next, *prev;	/* free list or the policy's lists */
	struct bl_hash map;
	struct bl_list free;
	u64 now;		/* references so far (lookup, not TAC_PROBE) */
	u32 nr_mapped, nr_dirty, nr_detached, nr_held_mapped;
	u64 admissions, bypasses, evictions;
	u64 ram_bytes;
	void *priv;
};

static inline struct bl_base *to_base(struct tac_policy *p)
{
	return (struct bl_base *)p;
}

/* Allocate the common part; @priv_size bytes of zeroed policy state. */
struct bl_base *bl_base_create(u32 nr_blocks, const struct bl_hooks *hooks,
			       size_t priv_size);

/* For hooks->admit: take a FREE block (BL_NONE if none), map it. */
u32 bl_take_free(struct bl_base *b, u64 oblock);
/* For hooks->admit: remap clean, unheld MAPPED @cb to @oblock. */
void bl_replace(struct bl_base *b, u32 cb, u64 oblock);

static inline bool bl_evictable(const struct bl_base *b, u32 cb)
{
	return b->state[cb] == BL_MAPPED && !b->dirty[cb] && !b->held[cb];
}

void *bl_zalloc(struct bl_base *b, size_t n, size_t size);

#endif /* TACSIM_POLICY_BASE_H */
