/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-tac policy core: an indexed binary min-heap of u32 items keyed by u32
 * (TAC section 3.3).  Private to the policy core.
 */
#ifndef DM_TAC_HEAP_H
#define DM_TAC_HEAP_H

#include <linux/bits.h>
#include <linux/types.h>

/*
 * pos[item] is the item's index in nodes[] while it is in the heap.  Any
 * value with HEAP_NOT_IN set means "not in the heap"; the heap never
 * writes such values, so the owner of pos[] may use them to record what
 * else the item is (the policy keeps its block states there).
 */
#define HEAP_NOT_IN	BIT(31)

struct tac_heap_node {
	u32 key;
	u32 item;
};

struct tac_heap {
	struct tac_heap_node *nodes;
	u32 *pos;
	u32 size;
	u32 capacity;
};

void tac_heap_init(struct tac_heap *h, struct tac_heap_node *nodes, u32 *pos,
		   u32 capacity);
void tac_heap_push(struct tac_heap *h, u32 item, u32 key);
struct tac_heap_node tac_heap_pop(struct tac_heap *h);
void tac_heap_remove(struct tac_heap *h, u32 item);
void tac_heap_update(struct tac_heap *h, u32 item, u32 key);
void tac_heap_filter(struct tac_heap *h, bool (*keep)(void *ctx, u32 item),
		     void *ctx);
bool tac_heap_valid(const struct tac_heap *h);

static inline bool tac_heap_contains(const struct tac_heap *h, u32 item)
{
	return !(h->pos[item] & HEAP_NOT_IN);
}

static inline bool tac_heap_empty(const struct tac_heap *h)
{
	return !h->size;
}

/* Only when !tac_heap_empty(). */
static inline struct tac_heap_node tac_heap_top(const struct tac_heap *h)
{
	return h->nodes[0];
}

#endif /* DM_TAC_HEAP_H */
