// SPDX-License-Identifier: GPL-2.0-only
/*
 * The indexed min-heap (TAC section 3.3): the heap property and the
 * position index are checked after every operation of random sequences,
 * against a plain array of the keys each item should have.
 */
#include <stdlib.h>

#include "helpers.h"
#include "tac-heap.h"
#include "tap.h"

#define CAP	300
#define ABSENT	U32_MAX

struct fixture {
	struct tac_heap_node nodes[CAP];
	u32 pos[CAP];
	u32 model[CAP];		/* expected key, or ABSENT */
	struct tac_heap h;
};

static void fixture_init(struct fixture *f)
{
	u32 i;

	for (i = 0; i < CAP; i++) {
		f->pos[i] = HEAP_NOT_IN;
		f->model[i] = ABSENT;
	}
	tac_heap_init(&f->h, f->nodes, f->pos, CAP);
}

/* The smallest key in the model, and how many items are in. */
static u32 model_min(const struct fixture *f, u32 *size)
{
	u32 i, min = ABSENT;

	*size = 0;
	for (i = 0; i < CAP; i++) {
		if (f->model[i] == ABSENT)
			continue;
		(*size)++;
		if (f->model[i] < min)
			min = f->model[i];
	}
	return min;
}

/* Heap property, positions, membership and keys all match the model. */
static bool consistent(struct fixture *f, const char **why)
{
	u32 i, size, min = model_min(f, &size);

	*why = NULL;
	if (!tac_heap_valid(&f->h))
		*why = "heap property or position index broken";
	else if (f->h.size != size)
		*why = "size differs from model";
	else if (size && tac_heap_top(&f->h).key != min)
		*why = "top is not the smallest key";
	for (i = 0; !*why && i < CAP; i++) {
		bool in = f->model[i] != ABSENT;

		if (tac_heap_contains(&f->h, i) != in)
			*why = "membership differs from model";
		else if (in && f->nodes[f->pos[i]].key != f->model[i])
			*why = "key differs from model";
	}
	return !*why;
}

static void heap_invariant_holds_after_every_random_operation(void)
{
	static struct fixture f;
	u32 seed;

	for (seed = 1; seed <= 200; seed++) {
		u64 s = rnd_seed(seed);
		u32 step, keys = seed % 3 ? 1000 : 4;	/* many duplicates */

		fixture_init(&f);
		for (step = 0; step < 2000; step++) {
			u32 item = rnd_below(&s, CAP);
			u32 key = rnd_below(&s, keys);
			u32 op = rnd_below(&s, 4);
			const char *why;

			if (f.model[item] == ABSENT && op != 3) {
				tac_heap_push(&f.h, item, key);
				f.model[item] = key;
			} else if (op == 0 && f.model[item] != ABSENT) {
				tac_heap_update(&f.h, item, key);
				f.model[item] = key;
			} else if (op == 1 && f.model[item] != ABSENT) {
				tac_heap_remove(&f.h, item);
				f.pos[item] = HEAP_NOT_IN;
				f.model[item] = ABSENT;
			} else if (!tac_heap_empty(&f.h)) {
				struct tac_heap_node n = tac_heap_pop(&f.h);
				u32 size;

				EXPECT_EQ(model_min(&f, &size), n.key);
				EXPECT_EQ(n.key, f.model[n.item]);
				f.pos[n.item] = HEAP_NOT_IN;
				f.model[n.item] = ABSENT;
			}
			if (!consistent(&f, &why)) {
				tap_fail(__LINE__, "seed %u step %u: %s", seed,
					 step, why);
				return;
			}
		}
	}
}

static int cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Pushing keys and popping them all gives them back sorted, in serial
 * number order: keys spread over 2^31 from 0xc0000000 wrap past 2^32 and
 * still come out in order.
 */
static void heap_pops_keys_in_ascending_order(void)
{
	static struct fixture f;
	u32 sorted[CAP], i, base = 0xc0000000U;
	u64 s = rnd_seed(7);

	fixture_init(&f);
	for (i = 0; i < CAP; i++) {
		sorted[i] = (u32)rnd_next(&s) & 0x7fffffffU;
		tac_heap_push(&f.h, i, base + sorted[i]);
	}
	qsort(sorted, CAP, sizeof(u32), cmp_u32);
	for (i = 0; i < CAP; i++)
		EXPECT_EQ(base + sorted[i], tac_heap_pop(&f.h).key);
	EXPECT_TRUE(tac_heap_empty(&f.h));
}

static bool keep_even(void *ctx, u32 item)
{
	u32 *pos = ctx;

	if (item % 2 == 0)
		return true;
	pos[item] = HEAP_NOT_IN | 5;
	return false;
}

/* tac_heap_filter() drops what it is told to, and the rest is a heap. */
static void heap_filter_keeps_selected_items_as_a_heap(void)
{
	static struct fixture f;
	const char *why;
	u64 s = rnd_seed(3);
	u32 i;

	fixture_init(&f);
	for (i = 0; i < CAP; i++) {
		f.model[i] = rnd_below(&s, 500);
		tac_heap_push(&f.h, i, f.model[i]);
	}
	tac_heap_filter(&f.h, keep_even, f.pos);
	for (i = 1; i < CAP; i += 2) {
		f.model[i] = ABSENT;
		EXPECT_EQ(HEAP_NOT_IN | 5, f.pos[i]);
	}
	EXPECT_TRUE(consistent(&f, &why));
	EXPECT_EQ(CAP / 2, f.h.size);
}

/* Re-keying the top downwards keeps it on top; upwards sinks it. */
static void heap_update_moves_item_both_ways(void)
{
	static struct fixture f;

	fixture_init(&f);
	tac_heap_push(&f.h, 1, 10);
	tac_heap_push(&f.h, 2, 20);
	tac_heap_push(&f.h, 3, 30);
	tac_heap_update(&f.h, 1, 5);
	EXPECT_EQ(1, tac_heap_top(&f.h).item);
	tac_heap_update(&f.h, 1, 25);
	EXPECT_EQ(2, tac_heap_top(&f.h).item);
	tac_heap_update(&f.h, 3, 1);
	EXPECT_EQ(3, tac_heap_top(&f.h).item);
	EXPECT_TRUE(tac_heap_valid(&f.h));
}

int main(void)
{
	RUN(heap_invariant_holds_after_every_random_operation);
	RUN(heap_pops_keys_in_ascending_order);
	RUN(heap_filter_keeps_selected_items_as_a_heap);
	RUN(heap_update_moves_item_both_ways);
	return tap_done();
}
