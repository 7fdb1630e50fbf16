// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac policy core: the indexed min-heap behind victim selection.
 *
 * TAC section 3.3 keeps every cached page in a heap so that the next
 * victim is found in logarithmic time; the caller sets and corrects the
 * keys (tac-policy.c: GreedyDual keys over temperatures, compared as
 * serial numbers, see heap_less()).  This heap stores (key, item) pairs
 * in one preallocated array and the position of each item in a second
 * one, both indexed by 32-bit numbers, so that any item can be removed or
 * re-keyed in O(log n).  Capacity up to 2^31 items.
 */
#include <linux/bug.h>

#include "tac-heap.h"

void tac_heap_init(struct tac_heap *h, struct tac_heap_node *nodes, u32 *pos,
		   u32 capacity)
{
	h->nodes = nodes;
	h->pos = pos;
	h->size = 0;
	h->capacity = capacity;
}

/*
 * Keys are compared as serial numbers (RFC 1982): @a comes before @b if
 * it is less than 2^31 behind it, modulo 2^32.  The owner keeps every key
 * within 2^31 of every other, so this is a total order on the heap, and
 * keys can grow for ever (the policy's inflation value wraps).
 */
static bool heap_less(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}

static void heap_place(struct tac_heap *h, u32 i, struct tac_heap_node n)
{
	h->nodes[i] = n;
	h->pos[n.item] = i;
}

/* Move @n up from hole @i; returns where it landed. */
static u32 heap_sift_up(struct tac_heap *h, u32 i, struct tac_heap_node n)
{
	while (i) {
		u32 parent = (i - 1) / 2;

		if (!heap_less(n.key, h->nodes[parent].key))
			break;
		heap_place(h, i, h->nodes[parent]);
		i = parent;
	}
	heap_place(h, i, n);
	return i;
}

static void heap_sift_down(struct tac_heap *h, u32 i, struct tac_heap_node n)
{
	for (;;) {
		u32 c = 2 * i + 1;

		if (c >= h->size)
			break;
		if (c + 1 < h->size &&
		    heap_less(h->nodes[c + 1].key, h->nodes[c].key))
			c++;
		if (!heap_less(h->nodes[c].key, n.key))
			break;
		heap_place(h, i, h->nodes[c]);
		i = c;
	}
	heap_place(h, i, n);
}

/* Put @n into hole @i, up or down as its key requires. */
static void heap_fill_hole(struct tac_heap *h, u32 i, struct tac_heap_node n)
{
	if (heap_sift_up(h, i, n) == i)
		heap_sift_down(h, i, n);
}

void tac_heap_push(struct tac_heap *h, u32 item, u32 key)
{
	struct tac_heap_node n = { .key = key, .item = item };

	if (WARN_ON_ONCE(h->size >= h->capacity))
		return;
	heap_sift_up(h, h->size++, n);
}

struct tac_heap_node tac_heap_pop(struct tac_heap *h)
{
	struct tac_heap_node top = h->nodes[0];

	if (--h->size)
		heap_sift_down(h, 0, h->nodes[h->size]);
	return top;
}

void tac_heap_remove(struct tac_heap *h, u32 item)
{
	u32 i = h->pos[item];

	if (WARN_ON_ONCE(i >= h->size || h->nodes[i].item != item))
		return;
	if (i != --h->size)
		heap_fill_hole(h, i, h->nodes[h->size]);
}

void tac_heap_update(struct tac_heap *h, u32 item, u32 key)
{
	u32 i = h->pos[item];
	struct tac_heap_node n = { .key = key, .item = item };

	if (WARN_ON_ONCE(i >= h->size || h->nodes[i].item != item))
		return;
	heap_fill_hole(h, i, n);
}

/*
 * Drop every item for which @keep returns false (@keep may then overwrite
 * its pos[]), in O(n): compact, then Floyd's bottom-up heap construction.
 */
void tac_heap_filter(struct tac_heap *h, bool (*keep)(void *ctx, u32 item),
		     void *ctx)
{
	u32 i, kept = 0;

	for (i = 0; i < h->size; i++) {
		struct tac_heap_node n = h->nodes[i];

		if (keep(ctx, n.item))
			heap_place(h, kept++, n);
	}
	h->size = kept;
	for (i = kept / 2; i-- > 0;)
		heap_sift_down(h, i, h->nodes[i]);
}

/* The heap property and the position index agree: for tests, O(n). */
bool tac_heap_valid(const struct tac_heap *h)
{
	u32 i;

	if (h->size > h->capacity)
		return false;
	for (i = 0; i < h->size; i++) {
		if (h->pos[h->nodes[i].item] != i)
			return false;
		if (i && heap_less(h->nodes[i].key, h->nodes[(i - 1) / 2].key))
			return false;
	}
	return true;
}
