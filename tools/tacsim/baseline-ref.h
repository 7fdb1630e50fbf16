/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test support for tests/unit/test_baseline_*.c: TAP output, a seeded
 * generator of random traces, a replay driver for the fast baselines, and
 * brute-force reference implementations of every baseline written straight
 * from the textbook definitions on small arrays (O(cache size) or worse per
 * reference), against which the fast ones are checked access by access.
 */
#ifndef TACSIM_BASELINE_REF_H
#define TACSIM_BASELINE_REF_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-policy.h"

/* ---------------------------------------------------------------- TAP */

static int tap_n __attribute__((unused)), tap_failed __attribute__((unused));

static inline void tap_ok(int ok, const char *name, long long expected, long long got)
{
	tap_n++;
	if (ok) {
		printf("ok %d - %s\n", tap_n, name);
	} else {
		tap_failed++;
		printf("not ok %d - %s # expected %lld got %lld\n", tap_n, name,
		       expected, got);
	}
}

#define TAP_EQ(name, expected, got)                                        \
	do {                                                               \
		long long e_ = (long long)(expected), g_ = (long long)(got); \
		tap_ok(e_ == g_, name, e_, g_);                            \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

/* ---------------------------------------------------------------- random */

static u64 ref_rng __attribute__((unused)) = 88172645463325252ULL;

static inline u64 ref_rand(void)
{
	ref_rng ^= ref_rng << 13;
	ref_rng ^= ref_rng >> 7;
	ref_rng ^= ref_rng << 17;
	return ref_rng;
}

/*
 * @n references over @universe blocks: a mix of uniform picks, a hot set of
 * a tenth of the universe, and short runs of consecutive blocks, so that
 * every policy's cases (ghost hits, second chances, ties) come up.
 */
static inline void ref_trace(u64 *t, u32 n, u32 universe)
{
	u32 i = 0;

	while (i < n) {
		u32 kind = ref_rand() % 10;

		if (kind < 4) {
			t[i++] = ref_rand() % universe;
		} else if (kind < 8) {
			t[i++] = ref_rand() % (universe / 10 + 1);
		} else {
			u64 s = ref_rand() % universe;
			u32 len = 2 + ref_rand() % 6;

			while (len-- && i < n)
				t[i++] = s++ % universe;
		}
	}
}

/* next[i]: index of the next reference to t[i], or OPT_NEVER. Quadratic. */
static inline void ref_next_use(const u64 *t, u32 n, u64 *next)
{
	u32 i, j;

	for (i = 0; i < n; i++) {
		next[i] = OPT_NEVER;
		for (j = i + 1; j < n; j++)
			if (t[j] == t[i]) {
				next[i] = j;
				break;
			}
	}
}

/*
 * Replay @t through @p in "every reference, a miss inserts" mode.  hit[i]
 * is 1 on a hit; evicted[i] the block evicted at reference i, or -1.
 * Returns the number of hits.
 */
static inline u32 run_policy(struct tac_policy *p, const u64 *t, const u64 *next,
		      u32 n, u8 *hit, int64_t *evicted)
{
	u32 i, hits = 0;

	for (i = 0; i < n; i++) {
		tac_cblock_t cb;
		tac_oblock_t ev;
		int r;

		if (next)
			opt_policy_next_use(p, next[i]);
		evicted[i] = -1;
		if (tac_policy_lookup(p, to_oblock(t[i]), &cb, TAC_USE_READ) == 0) {
			hit[i] = 1;
			hits++;
			continue;
		}
		hit[i] = 0;
		r = tac_policy_admit(p, to_oblock(t[i]), &cb, &ev);
		if (r == 1)
			evicted[i] = (int64_t)from_oblock(ev);
	}
	return hits;
}

/* ------------------------------------------------------- reference models */

/*
 * Each reference model keeps its cache as a plain array and returns, per
 * reference, hit (1/0) and the evicted block (-1 if none).
 */
struct ref_cache {
	u32 c;
	u32 n;
	u64 blk[256];
};

static inline int ref_find(const u64 *a, u32 n, u64 x)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (a[i] == x)
			return (int)i;
	return -1;
}

static inline void ref_remove_at(u64 *a, u32 *n, u32 i)
{
	memmove(a + i, a + i + 1, (*n - i - 1) * sizeof(*a));
	(*n)--;
}

/* LRU: blk[0] least recent.  FIFO: blk[0] oldest admission. */
static inline int ref_list_access(struct ref_cache *rc, u64 x, bool lru,
			   int64_t *ev)
{
	int i = ref_find(rc->blk, rc->n, x);

	*ev = -1;
	if (i >= 0) {
		if (lru) {
			ref_remove_at(rc->blk, &rc->n, i);
			rc->blk[rc->n++] = x;
		}
		return 1;
	}
	if (rc->n == rc->c) {
		*ev = (int64_t)rc->blk[0];
		ref_remove_at(rc->blk, &rc->n, 0);
	}
	rc->blk[rc->n++] = x;
	return 0;
}

/* CLOCK as a ring of c frames, their reference bits and a hand. */
struct ref_clock {
	u32 c, used, hand;
	u64 frame[256];
	u8 ref[256];
};

static inline int ref_clock_access(struct ref_clock *k, u64 x, int64_t *ev)
{
	int i = ref_find(k->frame, k->used, x);

	*ev = -1;
	if (i >= 0) {
		k->ref[i] = 1;
		return 1;
	}
	if (k->used < k->c) {
		k->frame[k->used] = x;
		k->ref[k->used++] = 0;
		return 0;
	}
	while (k->ref[k->hand]) {
		k->ref[k->hand] = 0;
		k->hand = (k->hand + 1) % k->c;
	}
	*ev = (int64_t)k->frame[k->hand];
	k->frame[k->hand] = x;
	k->ref[k->hand] = 0;
	k->hand = (k->hand + 1) % k->c;
	return 0;
}

/* ARC, Megiddo and Modha FAST 2003 figure 4; each list LRU-first. */
struct ref_arc {
	u32 c, p;
	u64 t1[256], t2[256], b1[256], b2[256];
	u32 nt1, nt2, nb1, nb2;
};

static inline void ref_arc_replace(struct ref_arc *a, bool x_in_b2, int64_t *ev)
{
	if (a->nt1 >= 1 && ((x_in_b2 && a->nt1 == a->p) || a->nt1 > a->p)) {
		*ev = (int64_t)a->t1[0];
		a->b1[a->nb1++] = a->t1[0];
		ref_remove_at(a->t1, &a->nt1, 0);
	} else {
		*ev = (int64_t)a->t2[0];
		a->b2[a->nb2++] = a->t2[0];
		ref_remove_at(a->t2, &a->nt2, 0);
	}
}

static inline int ref_arc_access(struct ref_arc *a, u64 x, int64_t *ev)
{
	int i;

	*ev = -1;
	i = ref_find(a->t1, a->nt1, x);
	if (i >= 0) {					/* case I */
		ref_remove_at(a->t1, &a->nt1, i);
		a->t2[a->nt2++] = x;
		return 1;
	}
	i = ref_find(a->t2, a->nt2, x);
	if (i >= 0) {
		ref_remove_at(a->t2, &a->nt2, i);
		a->t2[a->nt2++] = x;
		return 1;
	}
	i = ref_find(a->b1, a->nb1, x);
	if (i >= 0) {					/* case II */
		u32 d = a->nb1 >= a->nb2 ? 1 : a->nb2 / a->nb1;

		a->p = a->p + d < a->c ? a->p + d : a->c;
		ref_arc_replace(a, false, ev);
		i = ref_find(a->b1, a->nb1, x);
		ref_remove_at(a->b1, &a->nb1, i);
		a->t2[a->nt2++] = x;
		return 0;
	}
	i = ref_find(a->b2, a->nb2, x);
	if (i >= 0) {					/* case III */
		u32 d = a->nb2 >= a->nb1 ? 1 : a->nb1 / a->nb2;

		a->p = a->p > d ? a->p - d : 0;
		ref_arc_replace(a, true, ev);
		i = ref_find(a->b2, a->nb2, x);
		ref_remove_at(a->b2, &a->nb2, i);
		a->t2[a->nt2++] = x;
		return 0;
	}
	/* case IV */
	if (a->nt1 + a->nb1 == a->c) {
		if (a->nt1 < a->c) {
			ref_remove_at(a->b1, &a->nb1, 0);
			ref_arc_replace(a, false, ev);
		} else {
			*ev = (int64_t)a->t1[0];
			ref_remove_at(a->t1, &a->nt1, 0);
		}
	} else {
		u32 total = a->nt1 + a->nt2 + a->nb1 + a->nb2;

		if (total >= a->c) {
			if (total == 2 * a->c)
				ref_remove_at(a->b2, &a->nb2, 0);
			ref_arc_replace(a, false, ev);
		}
	}
	a->t1[a->nt1++] = x;
	return 0;
}

/*
 * LRU-2: per cached block its last and penultimate reference times (0:
 * none); history of evicted blocks kept for the c most recent evictions.
 */
struct ref_lru2 {
	u32 c, n, nh;
	u64 now;
	u64 blk[256], last[256], pen[256];
	u64 hblk[256], hlast[256];	/* hblk[0] evicted longest ago */
};

static inline int ref_lru2_access(struct ref_lru2 *l, u64 x, int64_t *ev)
{
	int i = ref_find(l->blk, l->n, x);
	u32 j, v;

	*ev = -1;
	l->now++;
	if (i >= 0) {
		l->pen[i] = l->last[i];
		l->last[i] = l->now;
		return 1;
	}
	if (l->n == l->c) {
		v = 0;
		for (j = 1; j < l->n; j++)
			if (l->pen[j] < l->pen[v] ||
			    (l->pen[j] == l->pen[v] && l->last[j] < l->last[v]))
				v = j;
		*ev = (int64_t)l->blk[v];
		if (l->nh == l->c) {	/* forget the oldest history */
			memmove(l->hblk, l->hblk + 1, (l->nh - 1) * 8);
			memmove(l->hlast, l->hlast + 1, (l->nh - 1) * 8);
			l->nh--;
		}
		l->hblk[l->nh] = l->blk[v];
		l->hlast[l->nh++] = l->last[v];
		l->blk[v] = l->blk[l->n - 1];
		l->last[v] = l->last[l->n - 1];
		l->pen[v] = l->pen[l->n - 1];
		l->n--;
	}
	l->blk[l->n] = x;
	l->last[l->n] = l->now;
	l->pen[l->n] = 0;
	i = ref_find(l->hblk, l->nh, x);
	if (i >= 0) {
		l->pen[l->n] = l->hlast[i];
		memmove(l->hblk + i, l->hblk + i + 1, (l->nh - i - 1) * 8);
		memmove(l->hlast + i, l->hlast + i + 1, (l->nh - i - 1) * 8);
		l->nh--;
	}
	l->n++;
	return 0;
}

/* OPT: scan the future for each cached block (brute force). */
static inline u32 ref_opt_hits(const u64 *t, u32 n, u32 c)
{
	u64 blk[256];
	u32 nb = 0, hits = 0, i, j, k;

	for (i = 0; i < n; i++) {
		if (ref_find(blk, nb, t[i]) >= 0) {
			hits++;
			continue;
		}
		if (nb == c) {
			u32 victim = 0;
			u64 far = 0;

			for (j = 0; j < nb; j++) {
				u64 nu = OPT_NEVER;

				for (k = i + 1; k < n; k++)
					if (t[k] == blk[j]) {
						nu = k;
						break;
					}
				if (nu > far || j == 0) {
					far = nu;
					victim = j;
				}
			}
			blk[victim] = t[i];
		} else {
			blk[nb++] = t[i];
		}
	}
	return hits;
}

#endif /* TACSIM_BASELINE_REF_H */
