// SPDX-License-Identifier: GPL-2.0-only
/*
 * Common implementation of struct tac_policy_ops for the simulator's
 * baseline policies (see policy-base.h).  User-space only: it uses libc
 * allocation and is never linked into the kernel module.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy-base.h"

/* ---------------------------------------------------------------- hash */

static u32 hash_u64(u64 k, u32 mask)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (u32)k & mask;
}

int bl_hash_init(struct bl_hash *h, u32 nr_entries, const u64 *keys)
{
	u64 size = 16;

	while (size < 2 * (u64)nr_entries)
		size <<= 1;
	h->slot = calloc(size, sizeof(*h->slot));
	if (!h->slot)
		return -ENOMEM;
	h->mask = (u32)(size - 1);
	h->keys = keys;
	return 0;
}

void bl_hash_exit(struct bl_hash *h)
{
	free(h->slot);
	h->slot = NULL;
}

u32 bl_hash_find(const struct bl_hash *h, u64 key)
{
	u32 i = hash_u64(key, h->mask);

	for (;; i = (i + 1) & h->mask) {
		u32 s = h->slot[i];

		if (!s)
			return BL_NONE;
		if (h->keys[s - 1] == key)
			return s - 1;
	}
}

void bl_hash_add(struct bl_hash *h, u32 idx)
{
	u32 i = hash_u64(h->keys[idx], h->mask);

	while (h->slot[i])
		i = (i + 1) & h->mask;
	h->slot[i] = idx + 1;
}

/* Linear probing with backward-shift deletion: no tombstones. */
void bl_hash_del(struct bl_hash *h, u32 idx)
{
	u32 i = hash_u64(h->keys[idx], h->mask), j;

	while (h->slot[i] != idx + 1)
		i = (i + 1) & h->mask;
	for (j = (i + 1) & h->mask; h->slot[j]; j = (j + 1) & h->mask) {
		u32 home = hash_u64(h->keys[h->slot[j] - 1], h->mask);

		/* Move slot j into the hole at i unless its home lies in (i, j]. */
		if (((j - home) & h->mask) >= ((j - i) & h->mask)) {
			h->slot[i] = h->slot[j];
			i = j;
		}
	}
	h->slot[i] = 0;
}

/* ---------------------------------------------------------------- list */

void bl_list_init(struct bl_list *l)
{
	l->head = l->tail = BL_NONE;
	l->count = 0;
}

void bl_list_add_tail(struct bl_list *l, u32 *next, u32 *prev, u32 i)
{
	next[i] = BL_NONE;
	prev[i] = l->tail;
	if (l->tail != BL_NONE)
		next[l->tail] = i;
	else
		l->head = i;
	l->tail = i;
	l->count++;
}

void bl_list_add_head(struct bl_list *l, u32 *next, u32 *prev, u32 i)
{
	prev[i] = BL_NONE;
	next[i] = l->head;
	if (l->head != BL_NONE)
		prev[l->head] = i;
	else
		l->tail = i;
	l->head = i;
	l->count++;
}

void bl_list_del(struct bl_list *l, u32 *next, u32 *prev, u32 i)
{
	if (prev[i] != BL_NONE)
		next[prev[i]] = next[i];
	else
		l->head = next[i];
	if (next[i] != BL_NONE)
		prev[next[i]] = prev[i];
	else
		l->tail = prev[i];
	next[i] = prev[i] = BL_NONE;
	l->count--;
}

/* ---------------------------------------------------------------- heap */

int bl_heap_init(struct bl_heap *h, u32 nr_items)
{
	h->item = calloc(nr_items ? nr_items : 1, sizeof(*h->item));
	h->pos = malloc((nr_items ? nr_items : 1) * sizeof(*h->pos));
	h->key = calloc(nr_items ? nr_items : 1, sizeof(*h->key));
	h->count = 0;
	if (!h->item || !h->pos || !h->key) {
		bl_heap_exit(h);
		return -ENOMEM;
	}
	memset(h->pos, 0xff, nr_items * sizeof(*h->pos));
	return 0;
}

void bl_heap_exit(struct bl_heap *h)
{
	free(h->item);
	free(h->pos);
	free(h->key);
	h->item = h->pos = NULL;
	h->key = NULL;
}

static void heap_set(struct bl_heap *h, u32 at, u32 i)
{
	h->item[at] = i;
	h->pos[i] = at;
}

static void heap_up(struct bl_heap *h, u32 at)
{
	u32 i = h->item[at];

	while (at) {
		u32 parent = (at - 1) / 2;

		if (h->key[h->item[parent]] <= h->key[i])
			break;
		heap_set(h, at, h->item[parent]);
		at = parent;
	}
	heap_set(h, at, i);
}

static void heap_down(struct bl_heap *h, u32 at)
{
	u32 i = h->item[at];

	for (;;) {
		u32 c = 2 * at + 1;

		if (c >= h->count)
			break;
		if (c + 1 < h->count && h->key[h->item[c + 1]] < h->key[h->item[c]])
			c++;
		if (h->key[i] <= h->key[h->item[c]])
			break;
		heap_set(h, at, h->item[c]);
		at = c;
	}
	heap_set(h, at, i);
}

void bl_heap_push(struct bl_heap *h, u32 i, bl_key_t key)
{
	h->key[i] = key;
	heap_set(h, h->count++, i);
	heap_up(h, h->count - 1);
}

void bl_heap_del(struct bl_heap *h, u32 i)
{
	u32 at = h->pos[i];
	u32 last = h->item[--h->count];

	h->pos[i] = BL_NONE;
	if (last == i)
		return;
	heap_set(h, at, last);
	heap_up(h, at);
	heap_down(h, h->pos[last]);
}

void bl_heap_update(struct bl_heap *h, u32 i, bl_key_t key)
{
	bl_key_t old = h->key[i];

	h->key[i] = key;
	if (key < old)
		heap_up(h, h->pos[i]);
	else
		heap_down(h, h->pos[i]);
}

/* ---------------------------------------------------------------- base */

void *bl_zalloc(struct bl_base *b, size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (p)
		b->ram_bytes += (u64)n * size;
	return p;
}

static void base_destroy(struct tac_policy *p)
{
	struct bl_base *b = to_base(p);

	if (!b)
		return;
	if (b->hooks->destroy)
		b->hooks->destroy(b);
	bl_hash_exit(&b->map);
	free(b->oblock);
	free(b->state);
	free(b->dirty);
	free(b->held);
	free(b->next);
	free(b->prev);
	free(b->priv);
	free(b);
}

static enum tac_class base_request(struct tac_policy *p, tac_oblock_t first,
				   u32 nr_blocks, bool is_write)
{
	return TAC_RANDOM;
}

static int base_lookup(struct tac_policy *p, tac_oblock_t oblock,
		       tac_cblock_t *cblock, enum tac_use use)
{
	struct bl_base *b = to_base(p);
	u32 cb;

	/* Reads and writes are references alike here. */
	if (use != TAC_PROBE)
		b->now++;
	cb = bl_hash_find(&b->map, from_oblock(oblock));
	if (cb == BL_NONE)
		return -ENOENT;
	if (use != TAC_PROBE)
		b->hooks->hit(b, cb);
	*cblock = to_cblock(cb);
	return 0;
}

/* Is there a FREE block or a clean, unheld MAPPED one?  No side effects. */
static bool room_for_one(const struct bl_base *b)
{
	u32 cb;

	if (b->free.count || b->nr_mapped > b->nr_dirty + b->nr_held_mapped)
		return true;
	/* Dirty and held blocks may overlap: look for real. */
	for (cb = 0; cb < b->nr_blocks; cb++)
		if (bl_evictable(b, cb))
			return true;
	return false;
}

static bool base_would_admit(struct tac_policy *p, tac_oblock_t oblock)
{
	return room_for_one(to_base(p));
}

u32 bl_take_free(struct bl_base *b, u64 oblock)
{
	u32 cb = b->free.head;

	if (cb == BL_NONE)
		return BL_NONE;
	bl_list_del(&b->free, b->next, b->prev, cb);
	b->oblock[cb] = oblock;
	b->state[cb] = BL_MAPPED;
	b->dirty[cb] = 0;
	bl_hash_add(&b->map, cb);
	b->nr_mapped++;
	if (b->held[cb])
		b->nr_held_mapped++;
	return cb;
}

void bl_replace(struct bl_base *b, u32 cb, u64 oblock)
{
	bl_hash_del(&b->map, cb);
	b->oblock[cb] = oblock;
	bl_hash_add(&b->map, cb);
}

static int base_admit(struct tac_policy *p, tac_oblock_t oblock,
		      tac_cblock_t *cblock, tac_oblock_t *evicted)
{
	struct bl_base *b = to_base(p);
	u64 ob = from_oblock(oblock);
	u64 ev = 0;
	u32 cb;
	int r;

	/* Fail before any policy state changes (ARC adapts on admit). */
	if (!room_for_one(b)) {
		b->bypasses++;
		return -ENOSPC;
	}
	if (b->hooks->admit) {
		r = b->hooks->admit(b, ob, &cb, &ev);
	} else {
		if (b->hooks->admit_begin)
			b->hooks->admit_begin(b, ob);
		cb = bl_take_free(b, ob);
		r = 0;
		if (cb == BL_NONE) {
			cb = b->hooks->victim(b);
			if (cb == BL_NONE) {
				r = -ENOSPC;
			} else {
				ev = b->oblock[cb];
				b->hooks->remove(b, cb, true);
				bl_replace(b, cb, ob);
				r = 1;
			}
		}
		if (r >= 0)
			b->hooks->insert(b, cb);
	}
	if (r < 0) {
		b->bypasses++;
		return r;
	}
	b->admissions++;
	if (r == 1) {
		b->evictions++;
		*evicted = to_oblock(ev);
	}
	*cblock = to_cblock(cb);
	return r;
}

static void detach(struct bl_base *b, u32 cb, u8 new_state)
{
	b->hooks->remove(b, cb, false);
	bl_hash_del(&b->map, cb);
	b->nr_mapped--;
	if (b->dirty[cb])
		b->nr_dirty--;
	if (b->held[cb])
		b->nr_held_mapped--;
	b->dirty[cb] = 0;
	b->state[cb] = new_state;
	if (new_state == BL_FREE)
		bl_list_add_tail(&b->free, b->next, b->prev, cb);
	else
		b->nr_detached++;
}

static void base_unmap(struct tac_policy *p, tac_cblock_t cblock)
{
	struct bl_base *b = to_base(p);
	u32 cb = from_cblock(cblock);

	if (cb < b->nr_blocks && b->state[cb] == BL_MAPPED)
		detach(b, cb, BL_DETACHED);
}

static void base_release(struct tac_policy *p, tac_cblock_t cblock)
{
	struct bl_base *b = to_base(p);
	u32 cb = from_cblock(cblock);

	if (cb >= b->nr_blocks || b->state[cb] != BL_DETACHED)
		return;
	b->state[cb] = BL_FREE;
	b->held[cb] = 0;
	b->nr_detached--;
	bl_list_add_tail(&b->free, b->next, b->prev, cb);
}

static void base_hold(struct tac_policy *p, tac_cblock_t cblock, bool held)
{
	struct bl_base *b = to_base(p);
	u32 cb = from_cblock(cblock);

	if (cb >= b->nr_blocks || b->held[cb] == held)
		return;
	b->held[cb] = held;
	if (b->state[cb] == BL_MAPPED) {
		if (held)
			b->nr_held_mapped++;
		else
			b->nr_held_mapped--;
	}
}

static void base_set_dirty(struct tac_policy *p, tac_cblock_t cblock)
{
	struct bl_base *b = to_base(p);
	u32 cb = from_cblock(cblock);

	if (cb < b->nr_blocks && b->state[cb] == BL_MAPPED && !b->dirty[cb]) {
		b->dirty[cb] = 1;
		b->nr_dirty++;
	}
}

static void base_clear_dirty(struct tac_policy *p, tac_cblock_t cblock)
{
	struct bl_base *b = to_base(p);
	u32 cb = from_cblock(cblock);

	if (cb < b->nr_blocks && b->state[cb] == BL_MAPPED && b->dirty[cb]) {
		b->dirty[cb] = 0;
		b->nr_dirty--;
	}
}

/* Insert @m into the sorted @out[0..*n), keeping at most @max entries. */
static void batch_insert(struct tac_mapping *out, u32 *n, u32 max,
			 u64 ob, u32 cb)
{
	u32 i = *n;

	if (i == max) {
		if (from_oblock(out[max - 1].oblock) <= ob)
			return;
		i--;
	} else {
		(*n)++;
	}
	while (i && from_oblock(out[i - 1].oblock) > ob) {
		out[i] = out[i - 1];
		i--;
	}
	out[i].oblock = to_oblock(ob);
	out[i].cblock = to_cblock(cb);
}

static u32 base_dirty_batch(struct tac_policy *p, tac_oblock_t from,
			    struct tac_mapping *out, u32 max)
{
	struct bl_base *b = to_base(p);
	u64 f = from_oblock(from);
	u32 n = 0, m = 0, cb;

	if (!max)
		return 0;
	for (cb = 0; cb < b->nr_blocks; cb++)
		if (b->state[cb] == BL_MAPPED && b->dirty[cb] &&
		    b->oblock[cb] >= f)
			batch_insert(out, &n, max, b->oblock[cb], cb);
	if (n == max)
		return n;
	/* Wrap: the smallest blocks below @from follow. */
	for (cb = 0; cb < b->nr_blocks; cb++)
		if (b->state[cb] == BL_MAPPED && b->dirty[cb] &&
		    b->oblock[cb] < f)
			batch_insert(out + n, &m, max - n, b->oblock[cb], cb);
	return n + m;
}

static bool base_mapping(struct tac_policy *p, tac_cblock_t cblock,
			 tac_oblock_t *oblock, bool *dirty)
{
	struct bl_base *b = to_base(p);
	u32 cb = from_cblock(cblock);

	if (cb >= b->nr_blocks || b->state[cb] != BL_MAPPED)
		return false;
	*oblock = to_oblock(b->oblock[cb]);
	*dirty = b->dirty[cb];
	return true;
}

static int base_load_mapping(struct tac_policy *p, tac_cblock_t cblock,
			     tac_oblock_t oblock, bool dirty)
{
	struct bl_base *b = to_base(p);
	u32 cb = from_cblock(cblock);

	if (cb >= b->nr_blocks || b->state[cb] != BL_FREE ||
	    bl_hash_find(&b->map, from_oblock(oblock)) != BL_NONE)
		return -EINVAL;
	bl_list_del(&b->free, b->next, b->prev, cb);
	b->oblock[cb] = from_oblock(oblock);
	b->state[cb] = BL_MAPPED;
	bl_hash_add(&b->map, cb);
	b->nr_mapped++;
	if (b->held[cb])
		b->nr_held_mapped++;
	b->hooks->insert(b, cb);
	if (dirty) {
		b->dirty[cb] = 1;
		b->nr_dirty++;
	}
	return 0;
}

static void base_drop_clean(struct tac_policy *p)
{
	struct bl_base *b = to_base(p);
	u32 cb;

	for (cb = 0; cb < b->nr_blocks; cb++)
		if (bl_evictable(b, cb))
			detach(b, cb, BL_FREE);
}

static void base_stats(struct tac_policy *p, struct tac_policy_stats *s)
{
	struct bl_base *b = to_base(p);

	memset(s, 0, sizeof(*s));
	s->admissions = b->admissions;
	s->bypasses = b->bypasses;
	s->evictions = b->evictions;
	s->nr_blocks = b->nr_blocks;
	s->nr_mapped = b->nr_mapped;
	s->nr_dirty = b->nr_dirty;
	s->nr_detached = b->nr_detached;
	s->ram_bytes = b->ram_bytes;
}

static void base_reset_stats(struct tac_policy *p)
{
	struct bl_base *b = to_base(p);

	b->admissions = b->bypasses = b->evictions = 0;
}

struct bl_base *bl_base_create(u32 nr_blocks, const struct bl_hooks *hooks,
			       size_t priv_size)
{
	struct bl_base *b;
	u32 i;

	if (!nr_blocks || nr_blocks == BL_NONE)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->hooks = hooks;
	b->nr_blocks = nr_blocks;
	b->ram_bytes = sizeof(*b);
	b->oblock = bl_zalloc(b, nr_blocks, sizeof(*b->oblock));
	b->state = bl_zalloc(b, nr_blocks, sizeof(*b->state));
	b->dirty = bl_zalloc(b, nr_blocks, sizeof(*b->dirty));
	b->held = bl_zalloc(b, nr_blocks, sizeof(*b->held));
	b->next = bl_zalloc(b, nr_blocks, sizeof(*b->next));
	b->prev = bl_zalloc(b, nr_blocks, sizeof(*b->prev));
	b->priv = priv_size ? bl_zalloc(b, 1, priv_size) : NULL;
	if (!b->oblock || !b->state || !b->dirty || !b->held || !b->next ||
	    !b->prev || (priv_size && !b->priv) ||
	    bl_hash_init(&b->map, nr_blocks, b->oblock)) {
		base_destroy(&b->policy);
		return NULL;
	}
	b->ram_bytes += ((u64)b->map.mask + 1) * sizeof(*b->map.slot);
	bl_list_init(&b->free);
	for (i = 0; i < nr_blocks; i++)
		bl_list_add_tail(&b->free, b->next, b->prev, i);

	b->ops = (struct tac_policy_ops){
		.name = hooks->name,
		.destroy = base_destroy,
		.request = base_request,
		.lookup = base_lookup,
		.would_admit = base_would_admit,
		.admit = base_admit,
		.unmap = base_unmap,
		.release = base_release,
		.hold = base_hold,
		.set_dirty = base_set_dirty,
		.clear_dirty = base_clear_dirty,
		.dirty_batch = base_dirty_batch,
		.mapping = base_mapping,
		.load_mapping = base_load_mapping,
		.drop_clean = base_drop_clean,
		.stats = base_stats,
		.reset_stats = base_reset_stats,
	};
	b->policy.ops = &b->ops;
	return b;
}
