// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac policy core: the extent statistics table.
 *
 * TAC section 3.1 keeps a temperature per region (extent): the sum of the
 * disk time its accesses would save if served from the SSD (eq. 1), halved
 * every so many accesses so that the past weighs less than the present.
 * TAC section 3.3 keeps these in a memory-resident hash table that, unlike
 * the paper's, must not grow with the origin here: the table has a fixed
 * number of slots chosen at creation, 16 bytes each, and no pointers.
 *
 * Placement: an extent lives in one of TEMP_PROBE slots starting at its
 * hash (open addressing with a bounded window).  Slots are filled in window
 * order and never emptied again, so a lookup may stop at the first empty
 * slot.  When the window is full a new extent replaces the coldest entry
 * in it (ties: the one aged least recently).  Coldest rather than least
 * recently touched because the temperature already is a recency-weighted
 * value (it halves every aging period), it is exactly what admission
 * compares, and an extent that a scan touched a moment ago but never again
 * is cold yet recent: dropping it keeps the hot random regions, which are
 * the ones worth caching.  A new extent always gets a slot, so a new hot
 * region can be noticed even when the table is full of older ones.
 *
 * Aging in O(1): instead of halving every entry, a global epoch counts the
 * halvings and each entry records the epoch its temperature is aged to; a
 * reader shifts right by the difference (0 once it reaches 32).  The stamp
 * has 31 bits (the top bit marks a used slot), so the difference is taken
 * modulo 2^31.  To keep it exact, every halving also normalises one slot
 * in turn (the sweep), so each entry is brought up to date at least once
 * every nr_slots <= TAC_MAX_STATS_EXTENTS = 2^28 epochs: no entry is ever
 * 2^31 epochs old, whatever the aging period and however long the policy
 * runs.  The sweep costs O(1) per halving.
 */
#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/string.h>

#include "tac-temp.h"

#define TEMP_NONE	U32_MAX

void tac_temp_init(struct tac_temp_table *t, struct tac_temp_entry *slots,
		   u32 nr_slots)
{
	BUILD_BUG_ON(sizeof(struct tac_temp_entry) != 16);
	BUILD_BUG_ON(TAC_MAX_STATS_EXTENTS > TEMP_EPOCH_MASK);
	memset(t, 0, sizeof(*t));
	memset(slots, 0, (size_t)nr_slots * sizeof(*slots));
	t->slots = slots;
	t->nr_slots = nr_slots;
}

/* The first slot of @extent's window. */
u32 tac_temp_home(const struct tac_temp_table *t, u64 extent)
{
	/* Fibonacci hashing, then a multiply to map onto nr_slots. */
	u32 h = (extent * 0x61c8864680b583ebULL) >> 32;

	return ((u64)h * t->nr_slots) >> 32;
}

static u32 temp_aged(struct tac_temp_table *t, const struct tac_temp_entry *e)
{
	u32 age = (t->epoch - e->stamp) & TEMP_EPOCH_MASK;

	return age >= 32 ? 0 : e->temp >> age;
}

static void temp_normalise(struct tac_temp_table *t, struct tac_temp_entry *e)
{
	e->temp = temp_aged(t, e);
	e->stamp = TEMP_USED | t->epoch;
}

/*
 * The slot holding @extent, or TEMP_NONE.  *@room (optional) gets the slot
 * a new entry for @extent should take: the first empty one in the window,
 * else the coldest.
 */
static u32 temp_find(struct tac_temp_table *t, u64 extent, u32 *room)
{
	u32 i = t->hint, k, coldest = TEMP_NONE, coldest_temp = 0;
	u32 coldest_age = 0;
	struct tac_temp_entry *e = &t->slots[i];

	if (e->extent == extent && (e->stamp & TEMP_USED))
		return i;

	i = tac_temp_home(t, extent);
	for (k = 0; k < TEMP_PROBE; k++) {
		u32 temp, age;

		e = &t->slots[i];
		if (!(e->stamp & TEMP_USED)) {
			if (room)
				*room = i;
			return TEMP_NONE;
		}
		if (e->extent == extent) {
			t->hint = i;
			return i;
		}
		temp = temp_aged(t, e);
		age = (t->epoch - e->stamp) & TEMP_EPOCH_MASK;
		if (coldest == TEMP_NONE || temp < coldest_temp ||
		    (temp == coldest_temp && age > coldest_age)) {
			coldest = i;
			coldest_temp = temp;
			coldest_age = age;
		}
		if (++i == t->nr_slots)
			i = 0;
	}
	if (room)
		*room = coldest;
	return TEMP_NONE;
}

/* The temperature of @extent aged to now; 0 if it is not tracked. */
u32 tac_temp_get(struct tac_temp_table *t, u64 extent)
{
	u32 i = temp_find(t, extent, NULL);

	return i == TEMP_NONE ? 0 : temp_aged(t, &t->slots[i]);
}

/* Add @amount to @extent's temperature, saturating at U32_MAX. */
void tac_temp_add(struct tac_temp_table *t, u64 extent, u64 amount)
{
	struct tac_temp_entry *e;
	u32 room, i = temp_find(t, extent, &room);

	if (i == TEMP_NONE) {
		i = room;
		e = &t->slots[i];
		if (e->stamp & TEMP_USED)
			t->dropped++;
		else
			t->nr_used++;
		e->extent = extent;
		e->temp = 0;
		e->stamp = TEMP_USED | t->epoch;
		t->hint = i;
	} else {
		e = &t->slots[i];
		temp_normalise(t, e);
	}

	if (amount >= U32_MAX - e->temp)
		e->temp = U32_MAX;
	else
		e->temp += amount;
}

/* One aging step (TAC section 3.1): every temperature halves. */
void tac_temp_halve(struct tac_temp_table *t)
{
	struct tac_temp_entry *e = &t->slots[t->sweep];

	t->epoch = (t->epoch + 1) & TEMP_EPOCH_MASK;
	if (e->stamp & TEMP_USED)
		temp_normalise(t, e);
	if (++t->sweep == t->nr_slots)
		t->sweep = 0;
}

/* Warm restart: -ENOSPC if @extent is new and its window is full. */
int tac_temp_set(struct tac_temp_table *t, u64 extent, u32 temp)
{
	struct tac_temp_entry *e;
	u32 room, i = temp_find(t, extent, &room);

	if (i == TEMP_NONE) {
		i = room;
		e = &t->slots[i];
		if (e->stamp & TEMP_USED)
			return -ENOSPC;
		t->nr_used++;
		e->extent = extent;
	}
	e = &t->slots[i];
	e->temp = temp;
	e->stamp = TEMP_USED | t->epoch;
	return 0;
}

int tac_temp_walk(struct tac_temp_table *t,
		  int (*fn)(void *ctx, const struct tac_extent_rec *r), void *ctx)
{
	struct tac_extent_rec r;
	u32 i;
	int ret;

	for (i = 0; i < t->nr_slots; i++) {
		const struct tac_temp_entry *e = &t->slots[i];

		if (!(e->stamp & TEMP_USED))
			continue;
		r.extent = to_extent(e->extent);
		r.temp = temp_aged(t, e);
		ret = fn(ctx, &r);
		if (ret)
			return ret;
	}
	return 0;
}

/* @out[0..n) as a min-heap on temp: the root is the coldest kept. */
static void temp_rec_sift_down(struct tac_extent_rec *out, u32 n, u32 i)
{
	struct tac_extent_rec r = out[i];

	for (;;) {
		u32 c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && out[c + 1].temp < out[c].temp)
			c++;
		if (out[c].temp >= r.temp)
			break;
		out[i] = out[c];
		i = c;
	}
	out[i] = r;
}

static void temp_rec_sift_up(struct tac_extent_rec *out, u32 i)
{
	struct tac_extent_rec r = out[i];

	while (i) {
		u32 parent = (i - 1) / 2;

		if (out[parent].temp <= r.temp)
			break;
		out[i] = out[parent];
		i = parent;
	}
	out[i] = r;
}

/* The @n hottest extents, hottest first: O(nr_slots log n). */
u32 tac_temp_hottest(struct tac_temp_table *t, struct tac_extent_rec *out,
		     u32 n)
{
	u32 i, count = 0;

	if (!n)
		return 0;
	for (i = 0; i < t->nr_slots; i++) {
		const struct tac_temp_entry *e = &t->slots[i];
		struct tac_extent_rec r;

		if (!(e->stamp & TEMP_USED))
			continue;
		r.extent = to_extent(e->extent);
		r.temp = temp_aged(t, e);
		if (count < n) {
			out[count] = r;
			temp_rec_sift_up(out, count++);
		} else if (r.temp > out[0].temp) {
			out[0] = r;
			temp_rec_sift_down(out, count, 0);
		}
	}

	/* Heap sort: the coldest goes last, so the result is hottest first. */
	for (i = count; i > 1; i--) {
		struct tac_extent_rec r = out[0];

		out[0] = out[i - 1];
		out[i - 1] = r;
		temp_rec_sift_down(out, i - 1, 0);
	}
	return count;
}
