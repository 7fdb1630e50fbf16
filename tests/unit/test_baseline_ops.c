// SPDX-License-Identifier: GPL-2.0-only
/*
 * The parts of the tac_policy_ops contract (dm-tac/policy/tac-policy.h) that a
 * trace replay never exercises, checked for every baseline: dirty and held
 * blocks are never victims, -ENOSPC changes nothing, unmap/release,
 * load_mapping's refusals, mapping(), the dirty_batch order and wrap,
 * drop_clean, and the stats counters.
 */
#include "../../tools/tacsim/baseline-ref.h"

typedef struct tac_policy *(*create_fn)(u32);

static const struct {
	const char *name;
	create_fn create;
} pols[] = {
	{ "lru", lru_policy_create },	  { "fifo", fifo_policy_create },
	{ "clock", clock_policy_create }, { "arc", arc_policy_create },
	{ "lru2", lru2_policy_create },	  { "opt", opt_policy_create },
};

static char name_buf[160];

static const char *nm(const char *pol, const char *what)
{
	snprintf(name_buf, sizeof(name_buf), "%s: %s", pol, what);
	return name_buf;
}

/* One reference to @b: lookup, admit on a miss.  Returns admit's result. */
static int touch(struct tac_policy *p, u64 b, u64 next, tac_cblock_t *cb,
		 u64 *evicted)
{
	tac_oblock_t ev = to_oblock(~0ULL);
	int r;

	if (policy_is_opt(p))
		opt_policy_next_use(p, next);
	if (tac_policy_lookup(p, to_oblock(b), cb, TAC_USE_READ) == 0)
		return 2;
	r = tac_policy_admit(p, to_oblock(b), cb, &ev);
	*evicted = from_oblock(ev);
	return r;
}

static void check(const char *pn, create_fn create)
{
	struct tac_policy *p = create(4);
	struct tac_policy_stats st;
	struct tac_mapping m[8];
	tac_cblock_t cb[8], c;
	tac_oblock_t ob;
	bool dirty;
	u64 ev = 0;
	u32 i, n;
	int r, fails;

	/* Fill: blocks 10..13 take the four FREE blocks. */
	for (i = 0, fails = 0; i < 4; i++)
		fails += touch(p, 10 + i, 100 + i, &cb[i], &ev) != 0;
	TAP_EQ(nm(pn, "4 misses fill 4 free blocks (admit returns 0)"), 0,
	       fails);
	TAP_EQ(nm(pn, "lookup of a mapped block: 0"), 0,
	       tac_policy_lookup(p, to_oblock(12), &c, TAC_PROBE));
	TAP_EQ(nm(pn, "lookup gives the admitted cblock"), from_cblock(cb[2]),
	       from_cblock(c));
	TAP_EQ(nm(pn, "lookup of an unmapped block: -ENOENT"), -ENOENT,
	       tac_policy_lookup(p, to_oblock(99), &c, TAC_PROBE));

	/* Dirty 10 and 11, hold 12: the only possible victim is 13. */
	tac_policy_set_dirty(p, cb[0]);
	tac_policy_set_dirty(p, cb[1]);
	tac_policy_set_dirty(p, cb[1]);	/* no-op */
	tac_policy_hold(p, cb[2], true);
	r = touch(p, 20, 1000, &c, &ev);
	TAP_EQ(nm(pn, "full, one clean unheld block: admit evicts (1)"), 1, r);
	TAP_EQ(nm(pn, "the victim is the only clean unheld block"), 13, ev);
	tac_policy_set_dirty(p, c);
	tac_policy_stats(p, &st);
	TAP_EQ(nm(pn, "stats: 3 dirty"), 3, st.nr_dirty);
	TAP_EQ(nm(pn, "would_admit: false when all dirty or held"), 0,
	       tac_policy_would_admit(p, to_oblock(30)));
	r = touch(p, 30, 1001, &c, &ev);
	TAP_EQ(nm(pn, "admit with no clean unheld block: -ENOSPC"), -ENOSPC,
	       r);
	TAP_EQ(nm(pn, "-ENOSPC left the rejected block unmapped"), -ENOENT,
	       tac_policy_lookup(p, to_oblock(30), &c, TAC_PROBE));
	tac_policy_stats(p, &st);
	TAP_EQ(nm(pn, "stats: one bypass"), 1, st.bypasses);
	TAP_EQ(nm(pn, "stats: 5 admissions"), 5, st.admissions);
	TAP_EQ(nm(pn, "stats: 1 eviction"), 1, st.evictions);

	/* Cleaning order: dirty 10, 11, 20 sorted by origin block. */
	n = tac_policy_dirty_batch(p, to_oblock(11), m, 8);
	TAP_EQ(nm(pn, "dirty_batch from 11: 3 mappings"), 3, n);
	TAP_EQ(nm(pn, "dirty_batch from 11: 11 first"), 11,
	       from_oblock(m[0].oblock));
	TAP_EQ(nm(pn, "dirty_batch from 11: then 20"), 20,
	       from_oblock(m[1].oblock));
	TAP_EQ(nm(pn, "dirty_batch from 11: wraps to 10"), 10,
	       from_oblock(m[2].oblock));
	n = tac_policy_dirty_batch(p, to_oblock(0), m, 2);
	TAP_EQ(nm(pn, "dirty_batch max 2: 2 mappings"), 2, n);
	TAP_EQ(nm(pn, "dirty_batch max 2: the smallest two (second)"), 11,
	       from_oblock(m[1].oblock));

	/* Clean 10 again: it becomes the victim (12 is held, 11, 20 dirty). */
	tac_policy_clear_dirty(p, cb[0]);
	r = touch(p, 40, 1002, &c, &ev);
	TAP_EQ(nm(pn, "clear_dirty makes a block a victim again"), 10, ev);
	TAP_EQ(nm(pn, "mapping(): the new block"), 1,
	       tac_policy_mapping(p, c, &ob, &dirty) && from_oblock(ob) == 40 &&
	       !dirty);

	/*
	 * Invalidate 40: DETACHED, not found, its space back only after
	 * release().
	 */
	tac_policy_unmap(p, c);
	TAP_EQ(nm(pn, "unmap: lookups miss"), -ENOENT,
	       tac_policy_lookup(p, to_oblock(40), &c, TAC_PROBE));
	tac_policy_stats(p, &st);
	TAP_EQ(nm(pn, "unmap: one detached"), 1, st.nr_detached);
	TAP_EQ(nm(pn, "load_mapping into a DETACHED block: -EINVAL"),
	       -EINVAL, tac_policy_load_mapping(p, c, to_oblock(50), false));
	tac_policy_release(p, c);
	TAP_EQ(nm(pn, "load_mapping of a mapped origin block: -EINVAL"),
	       -EINVAL, tac_policy_load_mapping(p, c, to_oblock(11), false));
	TAP_EQ(nm(pn, "load_mapping out of range: -EINVAL"), -EINVAL,
	       tac_policy_load_mapping(p, to_cblock(4), to_oblock(50), false));
	TAP_EQ(nm(pn, "load_mapping into the released block: 0"), 0,
	       tac_policy_load_mapping(p, c, to_oblock(50), true));
	TAP_EQ(nm(pn, "load_mapping dirty: mapping() says dirty"), 1,
	       tac_policy_mapping(p, c, &ob, &dirty) && from_oblock(ob) == 50 &&
	       dirty);

	/* drop_clean: only 12 (clean, held) remains clean; held stays. */
	tac_policy_hold(p, cb[2], false);
	tac_policy_drop_clean(p);
	tac_policy_stats(p, &st);
	TAP_EQ(nm(pn, "drop_clean leaves the 3 dirty blocks"), 3,
	       st.nr_mapped);
	TAP_EQ(nm(pn, "drop_clean freed the clean block"), -ENOENT,
	       tac_policy_lookup(p, to_oblock(12), &c, TAC_PROBE));
	r = touch(p, 60, 1003, &c, &ev);
	TAP_EQ(nm(pn, "after drop_clean admit takes a free block (0)"), 0, r);
	tac_policy_reset_stats(p);
	tac_policy_stats(p, &st);
	TAP_EQ(nm(pn, "reset_stats zeroes admissions"), 0, st.admissions);
	tac_policy_destroy(p);
}

int main(void)
{
	u32 i;

	for (i = 0; i < sizeof(pols) / sizeof(pols[0]); i++)
		check(pols[i].name, pols[i].create);
	return tap_done();
}
