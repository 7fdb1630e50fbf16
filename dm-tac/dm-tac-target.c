// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac: a temperature-aware cache target.  This file is the device-mapper
 * glue: the constructor and destructor, bio routing, status, messages and
 * the suspend/resume hooks.  Policy decisions live in tac-policy.c and the
 * on-disk format in dm-tac-metadata.c.
 *
 * Coherence
 * =========
 * The rule: the cache never holds data for an origin block that differs
 * from what the origin holds once the writes in flight to that block have
 * completed.  Nothing on the I/O path waits for a lock; instead:
 *
 *  - Every write and discard registers its origin blocks in a small hashed
 *    table (c->wtrack) while it is in flight: a count of writes in flight
 *    and a generation bumped when each starts.  Hash collisions only make
 *    the checks below more cautious.
 *
 *  - A block is filled from the origin (a promotion after a read miss)
 *    only if no write to it is in flight when the origin read is issued;
 *    the fill records the generation then and, when the cache write is
 *    done, the block becomes readable only if the generation has not
 *    moved.  A write that started in between makes the fill be dropped.
 *    Until then the block is PENDING: mapped in the policy, so it cannot
 *    be admitted twice, but every read of it goes to the origin.
 *
 *  - A write to a cached block in write-through mode writes both devices
 *    and pins the block.  If another write to the block is already in
 *    flight, the two could land in different orders on the two devices,
 *    so the block is invalidated instead and the write goes to the origin
 *    alone.  A failed origin or cache write invalidates the block too.
 *
 *  - Every I/O in flight on a block's cache data pins it (CB_PINS).  A
 *    pinned or pending block is held in the policy, so it is never chosen
 *    as a victim, and an invalidation of a pinned block only unmaps it
 *    (CB_DOOMED): its space is released when the last pin goes.
 *
 *  - Write-around and pass-through writes invalidate the cached copy before
 *    the write is issued; discards do the same for the blocks they touch.
 */
#include <linux/blkdev.h>
#include <linux/crc32c.h>
#include <linux/hash.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/delay.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dm-tac.h"
#include "dm-tac-compat.h"

static LIST_HEAD(tac_caches);
static DEFINE_MUTEX(tac_caches_lock);

static const char * const tac_mode_names[TAC_MODE_NR] = {
	[TAC_MODE_PASSTHROUGH] = "passthrough",
	[TAC_MODE_WRITETHROUGH] = "writethrough",
	[TAC_MODE_WRITEAROUND] = "writearound",
	[TAC_MODE_WRITEBACK] = "writeback",
};

static int tac_mode_parse(const char *s, enum tac_mode *mode)
{
	int i;

	for (i = 0; i < TAC_MODE_NR; i++) {
		if (!strcasecmp(s, tac_mode_names[i])) {
			*mode = i;
			return 0;
		}
	}
	return -EINVAL;
}

/* ------------------------------------------------------------------ */
/* Tunables */

enum tac_opt {
	OPT_EXTENT_SIZE,
	OPT_SEQ_WINDOW,
	OPT_SEQ_THRESHOLD,
	OPT_AGING_PERIOD,
	OPT_ADMIT_MARGIN,
	OPT_FILL_THRESHOLD,
	OPT_COST_HDD_RANDOM,
	OPT_COST_HDD_SEQ,
	OPT_COST_CACHE,
	OPT_MAX_CACHE_INFLIGHT,
	OPT_STATS_EXTENTS,
	OPT_ERROR_THRESHOLD,
	OPT_DIRTY_THRESHOLD,
	OPT_CLEAN_BATCH,
	OPT_CLEANER_INFLIGHT,
	OPT_CLEAN_IDLE_MS,
	OPT_COMMIT_INTERVAL,
	OPT_NR,
	OPT_NO_DISCARD_PASSDOWN = OPT_NR,	/* flags, no value */
	OPT_DISCARD_DIRTY,
};

struct tac_opt_desc {
	const char *name;
	u32 min, max;
	bool online;		/* "set" may change it */
};

static const struct tac_opt_desc tac_opts[OPT_NR] = {
	[OPT_EXTENT_SIZE] = { "extent_size", 1, TAC_MAX_EXTENT_BLOCKS, false },
	[OPT_SEQ_WINDOW] = { "seq_window", 1, TAC_MAX_SEQ_WINDOW, true },
	[OPT_SEQ_THRESHOLD] = { "seq_threshold", 0, TAC_MAX_SEQ_WINDOW - 1, true },
	[OPT_AGING_PERIOD] = { "aging_period", 1, U32_MAX, true },
	[OPT_ADMIT_MARGIN] = { "admit_margin", 0, 1000, true },
	[OPT_FILL_THRESHOLD] = { "fill_threshold", 0, 100, true },
	[OPT_COST_HDD_RANDOM] = { "cost_hdd_random_us", 0, 10000000, true },
	[OPT_COST_HDD_SEQ] = { "cost_hdd_seq_us", 0, 10000000, true },
	[OPT_COST_CACHE] = { "cost_cache_us", 0, 10000000, true },
	[OPT_MAX_CACHE_INFLIGHT] = { "max_cache_inflight", 1, 65536, true },
	[OPT_STATS_EXTENTS] = { "stats_extents", TAC_MIN_STATS_EXTENTS,
				TAC_MAX_STATS_EXTENTS, false },
	[OPT_ERROR_THRESHOLD] = { "error_threshold", 1, 1000000, true },
	[OPT_DIRTY_THRESHOLD] = { "dirty_threshold", 1, 100, true },
	[OPT_CLEAN_BATCH] = { "clean_batch", 1, 256, true },
	[OPT_CLEANER_INFLIGHT] = { "cleaner_inflight", 1, 64, true },
	[OPT_CLEAN_IDLE_MS] = { "clean_idle_ms", 0, 3600000, true },
	[OPT_COMMIT_INTERVAL] = { "commit_interval", 10, 3600000, true },
};

static u32 *tac_opt_field(struct tac_tunables *t, int opt)
{
	switch (opt) {
	case OPT_EXTENT_SIZE: return &t->policy.extent_blocks;
	case OPT_SEQ_WINDOW: return &t->policy.seq_window;
	case OPT_SEQ_THRESHOLD: return &t->policy.seq_threshold;
	case OPT_AGING_PERIOD: return &t->policy.aging_period;
	case OPT_ADMIT_MARGIN: return &t->policy.admit_margin;
	case OPT_FILL_THRESHOLD: return &t->policy.fill_threshold;
	case OPT_COST_HDD_RANDOM: return &t->policy.cost_hdd_random_us;
	case OPT_COST_HDD_SEQ: return &t->policy.cost_hdd_seq_us;
	case OPT_COST_CACHE: return &t->policy.cost_cache_us;
	case OPT_MAX_CACHE_INFLIGHT: return &t->max_cache_inflight;
	case OPT_STATS_EXTENTS: return &t->policy.stats_extents;
	case OPT_DIRTY_THRESHOLD: return &t->dirty_threshold;
	case OPT_CLEAN_BATCH: return &t->clean_batch;
	case OPT_CLEANER_INFLIGHT: return &t->cleaner_inflight;
	case OPT_CLEAN_IDLE_MS: return &t->clean_idle_ms;
	case OPT_COMMIT_INTERVAL: return &t->commit_interval;
	default: return &t->error_threshold;
	}
}

static int tac_opt_lookup(const char *name)
{
	int i;

	for (i = 0; i < OPT_NR; i++)
		if (!strcasecmp(name, tac_opts[i].name))
			return i;
	if (!strcasecmp(name, "no_discard_passdown"))
		return OPT_NO_DISCARD_PASSDOWN;
	if (!strcasecmp(name, "discard_dirty"))
		return OPT_DISCARD_DIRTY;
	return -1;
}

/*
 * Defaults that depend on the block size.  Device costs per block access
 * (TAC eq. 1): a 7200 rpm disk seeks 8.2 ms and waits 4.17 ms for the
 * platter on average (the TAC paper's Seagate disk) and streams about
 * 133 MB/s; an NVMe SSD reads 4 KiB in about 20 us and streams ~2 GB/s.
 */
static void tac_tunables_default(struct tac_tunables *t, u32 block_sectors)
{
	u64 bytes = (u64)block_sectors << SECTOR_SHIFT;
	u32 hdd_xfer = div_u64(bytes * 1000000, 133000000);
	u32 ssd_xfer = div_u64(bytes * 1000000, 2000000000);

	memset(t, 0, sizeof(*t));
	tac_params_default(&t->policy);
	t->policy.cost_hdd_seq_us = max(hdd_xfer, 1U);
	t->policy.cost_hdd_random_us = 12370 + hdd_xfer;
	t->policy.cost_cache_us = 18 + ssd_xfer;
	t->max_cache_inflight = 256;
	t->error_threshold = 8;
	/* Turbocharging table 2: lambda 20%, alpha 32 pages. */
	t->dirty_threshold = 20;
	t->clean_batch = 32;
	t->cleaner_inflight = 4;
	t->clean_idle_ms = 1000;
	t->commit_interval = 1000;
}

/*
 * Track about 4 times as many extents as the cache can hold: enough to
 * know the warm regions just outside the cache, at half a byte per cache
 * block with the default extent size.
 */
static u32 tac_default_stats_extents(u32 nr_cblocks, u32 extent_blocks)
{
	u64 n = roundup_pow_of_two(max_t(u64, (u64)nr_cblocks * 4 /
					 extent_blocks, 1));

	return clamp_t(u64, n, 4096, 1U << 20);
}

/* ------------------------------------------------------------------ */
/* Cache block state and write tracking (see "Coherence" above) */

static struct tac_wtrack *__wt(struct tac_cache *c, u64 oblock)
{
	return &c->wtrack[hash_64(oblock, TAC_WTRACK_BITS)];
}

u32 __wt_gen(struct tac_cache *c, u64 oblock)
{
	return __wt(c, oblock)->gen;
}

u32 __wt_inflight(struct tac_cache *c, u64 oblock)
{
	return __wt(c, oblock)->inflight;
}

/* Register (+1) or retire (-1) writes to origin blocks [first, first+n). */
static void __wtrack(struct tac_cache *c, u64 first, u64 n, int delta)
{
	u64 b;

	if (n >= TAC_WTRACK_SIZE) {
		for (b = 0; b < TAC_WTRACK_SIZE; b++) {
			c->wtrack[b].inflight += delta;
			c->wtrack[b].gen += delta > 0;
		}
		return;
	}
	for (b = first; b < first + n; b++) {
		struct tac_wtrack *w = __wt(c, b);

		w->inflight += delta;
		w->gen += delta > 0;
	}
}

/*
 * A block is held (never a victim) while I/O is in flight on its data,
 * while it is being filled, and while its on-disk entry may say dirty:
 * reusing it then could make a crash recover another block's data as
 * this one's.  (Dirty blocks themselves the policy never evicts.)
 */
void __tac_update_hold(struct tac_cache *c, u32 cb)
{
	u16 st = c->cb_state[cb];

	if (st & CB_DOOMED)
		return;
	c->policy->ops->hold(c->policy, to_cblock(cb),
			     st & (CB_PINS | CB_PENDING | CB_DISK_DIRTY));
}

bool __tac_pinnable(struct tac_cache *c, u32 cb)
{
	return (c->cb_state[cb] & CB_PINS) < CB_PINS;
}

void __tac_pin(struct tac_cache *c, u32 cb)
{
	c->cb_state[cb]++;
	c->cache_inflight++;
	__tac_update_hold(c, cb);
}

/* A doomed block's space goes back when nothing refers to it any more. */
void __tac_maybe_free(struct tac_cache *c, u32 cb)
{
	u16 st = c->cb_state[cb];

	if (!(st & CB_DOOMED) || (st & (CB_PINS | CB_DISK_DIRTY)))
		return;
	c->policy->ops->release(c->policy, to_cblock(cb));
	c->cb_state[cb] = 0;
}

void __tac_unpin(struct tac_cache *c, u32 cb)
{
	c->cb_state[cb]--;
	c->cache_inflight--;
	__tac_maybe_free(c, cb);
	__tac_update_hold(c, cb);
}

static bool __is_dirty(struct tac_cache *c, u32 cb)
{
	tac_oblock_t ob;
	bool dirty;

	return c->policy->ops->mapping(c->policy, to_cblock(cb), &ob, &dirty) &&
	       dirty;
}

/* A mapped block leaves the cache now (its data may be stale). */
static void __invalidate(struct tac_cache *c, u32 cb)
{
	c->policy->ops->unmap(c->policy, to_cblock(cb));
	c->n.invalidations++;
	c->cb_state[cb] |= CB_DOOMED;
	c->cb_state[cb] &= ~CB_NOCRC;
	tac_md_changed(c, cb);
	__tac_maybe_free(c, cb);
}

enum tac_lookup {
	LK_NONE,	/* not cached */
	LK_VALID,	/* cached and readable */
	LK_PENDING,	/* being filled */
};

static enum tac_lookup __lookup(struct tac_cache *c, u64 oblock, u32 *cb)
{
	tac_cblock_t cblock;

	if (oblock >= c->nr_oblocks ||
	    c->policy->ops->lookup(c->policy, to_oblock(oblock), &cblock,
				   true))
		return LK_NONE;
	*cb = from_cblock(cblock);
	return (c->cb_state[*cb] & CB_PENDING) ? LK_PENDING : LK_VALID;
}

/*
 * Reserve a cache block for @oblock if the policy admits it and nothing
 * forbids a fill now (@own_writes: writes to it this bio itself has
 * registered).  On success the block is PENDING and *@gen the write
 * generation to validate the fill against.
 */
static bool __reserve(struct tac_cache *c, u64 oblock, u32 own_writes,
		      u32 *cb, u32 *gen)
{
	struct tac_wtrack *w = __wt(c, oblock);
	tac_cblock_t cblock;
	tac_oblock_t victim;
	int r;

	if (oblock < c->nr_oblocks &&
	    !c->policy->ops->lookup(c->policy, to_oblock(oblock), &cblock,
				    false))
		return false;		/* already mapped (being filled) */
	if (c->health != TAC_OK || oblock >= c->nr_oblocks ||
	    w->inflight > own_writes ||
	    c->cache_inflight >= c->tun.max_cache_inflight) {
		c->n.bypassed++;
		return false;
	}
	r = c->policy->ops->admit(c->policy, to_oblock(oblock), &cblock,
				  &victim);
	if (r < 0) {
		c->n.bypassed++;
		return false;
	}
	*cb = from_cblock(cblock);
	*gen = w->gen;
	c->cb_state[*cb] = CB_PENDING;
	__tac_update_hold(c, *cb);
	c->cache_inflight++;
	return true;
}

/* A fill of @cb ended: make it readable, or drop it. */
static void __fill_done(struct tac_cache *c, u32 cb, u64 oblock, u32 gen,
			bool ok)
{
	c->cb_state[cb] &= ~CB_PENDING;
	c->cache_inflight--;
	if (ok && __wt(c, oblock)->gen == gen && c->health == TAC_OK) {
		c->n.promotions++;
		tac_md_changed(c, cb);
		__tac_update_hold(c, cb);
		return;
	}
	c->n.promo_aborts++;
	c->policy->ops->unmap(c->policy, to_cblock(cb));
	c->cb_state[cb] |= CB_DOOMED;
	__tac_maybe_free(c, cb);
}

/* Drop every readable block that is not dirty (message, degradation). */
static void tac_invalidate_all(struct tac_cache *c)
{
	tac_oblock_t ob;
	bool dirty;
	u32 cb;

	for (cb = 0; cb < c->nr_cblocks; cb++) {
		spin_lock_irq(&c->lock);
		if (!(c->cb_state[cb] & (CB_PENDING | CB_DOOMED)) &&
		    c->policy->ops->mapping(c->policy, to_cblock(cb), &ob,
					    &dirty) && !dirty)
			__invalidate(c, cb);
		spin_unlock_irq(&c->lock);
		if (!(cb & 1023))
			cond_resched();
	}
}

/* Count a cache error; too many switch the cache to passthrough. */
void __tac_cache_error(struct tac_cache *c, const char *what)
{
	c->n.cache_errors++;
	DMERR_LIMIT("cache device %s error (%llu so far)", what,
		    c->n.cache_errors);
	if (c->health == TAC_OK &&
	    c->n.cache_errors >= c->tun.error_threshold) {
		c->health = TAC_DEGRADED;
		c->mode = TAC_MODE_PASSTHROUGH;
		DMERR("%llu cache device errors: switching to passthrough; clean blocks are dropped%s",
		      c->n.cache_errors, __tac_wb_active(c) ?
		      ", dirty ones kept and still written back" : "");
		c->drop_all = true;
		queue_work(c->wq, &c->worker);
	}
}

/*
 * Write-back data was lost or cannot be read: latch the failure (status
 * "fail").  Nothing is dropped: dirty blocks stay dirty, reads of them
 * return errors rather than stale origin data, the cleaner keeps trying.
 */
void __tac_fail(struct tac_cache *c, const char *why)
{
	c->n.cache_errors++;
	if (c->health != TAC_FAIL)
		DMERR("write-back cache failed: %s; dirty data may be lost, status shows 'fail'",
		      why);
	c->health = TAC_FAIL;
	if (c->mode == TAC_MODE_WRITEBACK)
		c->mode = TAC_MODE_PASSTHROUGH;
}

u32 __tac_nr_dirty(struct tac_cache *c)
{
	struct tac_policy_stats ps;

	c->policy->ops->stats(c->policy, &ps);
	return ps.nr_dirty;
}

/* Write-back state to keep on disk: dirty blocks, or their shadows. */
bool __tac_wb_active(struct tac_cache *c)
{
	return c->mode == TAC_MODE_WRITEBACK || c->disk_dirty ||
	       __tac_nr_dirty(c);
}

/* ------------------------------------------------------------------ */
/* Per-bio state */

enum tac_route {
	ROUTE_ORIGIN,		/* remapped to the origin */
	ROUTE_HIT,		/* remapped to a cached block */
	ROUTE_RETRY,		/* a failed hit re-read from the origin */
	ROUTE_FANOUT,		/* served by clones we issued */
	ROUTE_DISCARD,		/* invalidated, then to the origin or done */
	ROUTE_CACHE_FLUSH,	/* the cache device's share of a flush */
	ROUTE_WB,		/* write-back: written to the cache only */
	ROUTE_COMMIT,		/* waits for a metadata commit */
};

struct tac_fill;

struct tac_bio {
	struct tac_cache *c;
	struct bvec_iter iter;		/* as mapped, origin sector */
	u64 wfirst, wcount;		/* write-tracked origin blocks */
	u64 oblock;			/* HIT, FANOUT: the block */
	u32 cblock;
	u8 route;
	bool racy;			/* HIT, WB: a write was in flight */
	bool dirty;			/* HIT: of a dirty block */
	bool admitted;			/* FANOUT: filling a new block */
	bool cache_failed;		/* FANOUT: the cache clone failed */
	u32 gen;			/* HIT, FANOUT: write generation */
	blk_status_t status;		/* FANOUT: the origin clone's */
	atomic_t pending;		/* FANOUT: clones in flight */
	struct tac_fill *fills;		/* promotions from this read */
};

/*
 * A promotion.  Whole blocks read by a user bio are copied into our own
 * pages when that read completes and written to the cache from there (the
 * origin is not read twice); a block the user read only partly is read
 * from the origin again, whole, into those pages.  Either way the data's
 * checksums are computed from our pages before they go to the cache.
 */
struct tac_fill {
	struct list_head list;
	struct tac_fill *next;		/* on the user bio */
	struct tac_cache *c;
	struct bio *bio;		/* our pages */
	u64 oblock;
	u32 cblock;
	u32 gen;
	u32 offset;			/* bytes into the user bio */
	bool whole;			/* the user bio covers the block */
	bool need_read;			/* read the origin first */
	u16 crc[];			/* c->units checksums */
};

/* A split's remainder comes back to map(): don't classify it twice. */
struct tac_split_mark {
	struct dm_target *ti;
	sector_t sector;
};

static DEFINE_PER_CPU(struct tac_split_mark, tac_split_mark);

static struct tac_bio *tac_pb(struct bio *bio)
{
	return dm_per_bio_data(bio, sizeof(struct tac_bio));
}

static void tac_split(struct dm_target *ti, struct bio *bio,
		      sector_t sectors)
{
	struct tac_split_mark *m = get_cpu_ptr(&tac_split_mark);

	m->ti = ti;
	m->sector = bio->bi_iter.bi_sector + sectors;
	put_cpu_ptr(&tac_split_mark);
	dm_accept_partial_bio(bio, sectors);
}

static bool tac_is_remainder(struct dm_target *ti, struct bio *bio)
{
	struct tac_split_mark *m = get_cpu_ptr(&tac_split_mark);
	bool r = m->ti == ti && m->sector == bio->bi_iter.bi_sector;

	if (r)
		m->ti = NULL;
	put_cpu_ptr(&tac_split_mark);
	return r;
}

/* ------------------------------------------------------------------ */
/* Fills (promotions) */

/*
 * Checksums of @nr data units of @bio from @iter (at a unit boundary):
 * crc32c, low 16 bits.  Stale or lost cache writes are caught by these.
 */
static void tac_bio_crcs(struct tac_cache *c, struct bio *bio,
			 struct bvec_iter iter, u32 nr, u16 *out)
{
	u32 unit = SECTOR_SIZE << c->unit_shift, left = unit, crc = ~0U;
	struct bio_vec bv;

	while (nr && iter.bi_size) {
		void *p;
		u32 len;

		bv = bio_iter_iovec(bio, iter);
		len = min(bv.bv_len, left);
		p = bvec_kmap_local(&bv);
		crc = crc32c(crc, p, len);
		kunmap_local(p);
		bio_advance_iter_single(bio, &iter, len);
		left -= len;
		if (!left) {
			*out++ = crc;
			nr--;
			left = unit;
			crc = ~0U;
		}
	}
}

static void tac_fill_free(struct tac_fill *f)
{
	if (f->bio) {
		struct bio_vec *bv;
		struct bvec_iter_all it;

		bio_for_each_segment_all(bv, f->bio, it)
			__free_page(bv->bv_page);
		bio_put(f->bio);
	}
	kfree(f);
}

/* A fill ended (under the lock): publish the block and its checksums. */
static void __fill_end(struct tac_fill *f, bool ok, bool cache_fault)
{
	struct tac_cache *c = f->c;

	if (ok && __wt(c, f->oblock)->gen == f->gen)
		memcpy(&c->crc[(u64)f->cblock * c->units], f->crc,
		       c->units * sizeof(u16));
	__fill_done(c, f->cblock, f->oblock, f->gen, ok);
	if (cache_fault)
		__tac_cache_error(c, "fill write");
	if (!--c->bg_inflight)
		wake_up(&c->bg_wait);
}

static void tac_fill_end(struct tac_fill *f, bool ok, bool cache_fault)
{
	struct tac_cache *c = f->c;
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	__fill_end(f, ok, cache_fault);
	spin_unlock_irqrestore(&c->lock, flags);
	tac_fill_free(f);
}

static void tac_fill_write_endio(struct bio *bio)
{
	tac_fill_end(bio->bi_private, !bio->bi_status, bio->bi_status);
}

static void tac_queue_fill(struct tac_cache *c, struct tac_fill *f)
{
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	list_add_tail(&f->list, &c->fills);
	spin_unlock_irqrestore(&c->lock, flags);
	queue_work(c->wq, &c->worker);
}

static void tac_fill_read_endio(struct bio *bio)
{
	struct tac_fill *f = bio->bi_private;

	if (bio->bi_status) {
		tac_fill_end(f, false, false);	/* the origin's fault */
		return;
	}
	f->need_read = false;
	tac_queue_fill(f->c, f);
}

/* Pages for a fill, allocated without sleeping. */
static struct bio *tac_fill_bio(struct tac_cache *c)
{
	unsigned int bytes = c->block_sectors << SECTOR_SHIFT;
	unsigned int nr = DIV_ROUND_UP(bytes, PAGE_SIZE), i;
	struct bvec_iter_all it;
	struct bio_vec *bv;
	struct bio *bio;

	bio = bio_alloc_bioset(c->cache, nr, REQ_OP_WRITE, GFP_NOWAIT,
			       &c->bs);
	if (!bio)
		return NULL;
	for (i = 0; i < nr; i++) {
		struct page *p = alloc_page(GFP_NOWAIT | __GFP_NOWARN);

		if (!p)
			goto fail;
		__bio_add_page(bio, p, min_t(unsigned int, PAGE_SIZE,
					     bytes - i * PAGE_SIZE), 0);
	}
	return bio;
fail:
	bio_for_each_segment_all(bv, bio, it)
		__free_page(bv->bv_page);
	bio_put(bio);
	return NULL;
}

/* The same pages in a fresh bio (a completed bio's iterator is spent). */
static void tac_fill_rebio(struct tac_cache *c, struct tac_fill *f,
			   struct block_device *bdev, blk_opf_t opf,
			   sector_t sector)
{
	struct bio *old = f->bio, *bio;
	struct bvec_iter_all it;
	struct bio_vec *bv;

	bio = bio_alloc_bioset(bdev, old->bi_vcnt, opf, GFP_NOIO, &c->bs);
	bio_for_each_segment_all(bv, old, it)
		__bio_add_page(bio, bv->bv_page, bv->bv_len, bv->bv_offset);
	bio_put(old);
	bio->bi_iter.bi_sector = sector;
	bio->bi_private = f;
	f->bio = bio;
}

static void tac_fill_abort(struct tac_fill *f)
{
	tac_fill_end(f, false, false);
}

/* The user's read is done: copy what its fills need, or drop them. */
static void tac_fills_from_read(struct tac_cache *c, struct bio *bio,
				struct tac_bio *pb, bool ok)
{
	struct tac_fill *f, *next;

	for (f = pb->fills; f; f = next) {
		next = f->next;
		if (ok) {
			struct bvec_iter src = pb->iter;
			struct bvec_iter dst = f->bio->bi_iter;

			bio_advance_iter(bio, &src, f->offset);
			bio_copy_data_iter(f->bio, &dst, bio, &src);
			tac_queue_fill(c, f);
		} else {
			tac_fill_abort(f);
		}
	}
	pb->fills = NULL;
}

/*
 * Promotions for the missed blocks [b, b + n) of a read covering sectors
 * [start, end).  Blocks are reserved under the lock (with tracking
 * structures allocated without sleeping); pages come after it is dropped.
 */
static struct tac_fill *__plan_fills(struct tac_cache *c, u64 b, u64 n,
				     sector_t start, sector_t end)
{
	struct tac_fill *list = NULL, *f;
	u32 cb, gen;
	u64 i;

	if (c->mode == TAC_MODE_PASSTHROUGH)
		return NULL;
	for (i = 0; i < n; i++) {
		sector_t bs = (b + i) << c->block_shift;

		if (!__reserve(c, b + i, 0, &cb, &gen))
			continue;
		f = kzalloc(struct_size(f, crc, c->units),
			    GFP_NOWAIT | __GFP_NOWARN);
		if (!f) {
			__fill_done(c, cb, b + i, gen, false);
			continue;
		}
		f->c = c;
		f->oblock = b + i;
		f->cblock = cb;
		f->gen = gen;
		f->whole = bs >= start && bs + c->block_sectors <= end;
		f->need_read = !f->whole;
		f->offset = f->whole ? (bs - start) << SECTOR_SHIFT : 0;
		f->next = list;
		list = f;
		c->bg_inflight++;
	}
	return list;
}

/* Give fills their pages; partial ones start reading the origin now. */
static void tac_start_fills(struct tac_cache *c, struct tac_bio *pb,
			    struct tac_fill *list)
{
	struct tac_fill *f, *next;

	pb->fills = NULL;
	for (f = list; f; f = next) {
		next = f->next;
		f->bio = tac_fill_bio(c);
		if (!f->bio) {
			tac_fill_abort(f);
			continue;
		}
		if (f->need_read) {
			tac_queue_fill(c, f);
			continue;
		}
		f->next = pb->fills;
		pb->fills = f;
	}
}

/* Worker context: read the origin, or checksum and write the cache. */
static void tac_submit_fill(struct tac_cache *c, struct tac_fill *f)
{
	if (f->need_read) {
		tac_fill_rebio(c, f, c->origin, REQ_OP_READ,
			       f->oblock << c->block_shift);
		f->bio->bi_end_io = tac_fill_read_endio;
	} else {
		/* After an origin read the bio's own iterator is spent. */
		struct bvec_iter all = {
			.bi_size = c->block_sectors << SECTOR_SHIFT,
		};

		tac_bio_crcs(c, f->bio, all, c->units, f->crc);
		tac_fill_rebio(c, f, c->cache, REQ_OP_WRITE,
			       tac_cblock_sector(c, f->cblock));
		f->bio->bi_end_io = tac_fill_write_endio;
	}
	submit_bio_noacct(f->bio);
}

/* ------------------------------------------------------------------ */
/* Writes to both devices (write-through) */

static void tac_fanout_done(struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);
	struct tac_cache *c = pb->c;
	bool ok = !pb->status && !pb->cache_failed;
	u32 first = (pb->iter.bi_sector & (c->block_sectors - 1)) >>
		    c->unit_shift;
	u32 nr = pb->iter.bi_size >> (c->unit_shift + SECTOR_SHIFT);
	u16 crc[32];
	unsigned long flags;

	/* The written units' new checksums, from the data written. */
	if (ok)
		tac_bio_crcs(c, bio, pb->iter, nr, crc);

	spin_lock_irqsave(&c->lock, flags);
	if (ok)
		memcpy(&c->crc[(u64)pb->cblock * c->units + first], crc,
		       nr * sizeof(u16));
	if (pb->admitted) {
		__fill_done(c, pb->cblock, pb->wfirst, pb->gen, ok);
	} else {
		/* An origin failure leaves the origin's contents unknown. */
		if (!ok && !(c->cb_state[pb->cblock] & CB_DOOMED))
			__invalidate(c, pb->cblock);
		__tac_unpin(c, pb->cblock);
	}
	if (pb->cache_failed)
		__tac_cache_error(c, "write");
	__wtrack(c, pb->wfirst, pb->wcount, -1);
	pb->wcount = 0;
	spin_unlock_irqrestore(&c->lock, flags);

	bio->bi_status = pb->status;
	bio_endio(bio);
}

static void tac_fanout_origin_endio(struct bio *clone)
{
	struct bio *bio = clone->bi_private;
	struct tac_bio *pb = tac_pb(bio);

	pb->status = clone->bi_status;
	bio_put(clone);
	if (atomic_dec_and_test(&pb->pending))
		tac_fanout_done(bio);
}

static void tac_fanout_cache_endio(struct bio *clone)
{
	struct bio *bio = clone->bi_private;
	struct tac_bio *pb = tac_pb(bio);

	if (clone->bi_status)
		pb->cache_failed = true;
	bio_put(clone);
	if (atomic_dec_and_test(&pb->pending))
		tac_fanout_done(bio);
}

/*
 * Write @bio (within one block) to the origin and to cache block
 * pb->cblock at once; the user's bio completes when both have.  FUA and
 * the other flags go to both.  The bioset has a rescuer, so allocating the
 * second clone cannot deadlock on the first one, which sits unsubmitted on
 * current->bio_list until map() returns.
 */
static int tac_fanout(struct tac_cache *c, struct bio *bio,
		      struct tac_bio *pb)
{
	sector_t offset = bio->bi_iter.bi_sector & (c->block_sectors - 1);
	struct bio *o, *k;

	o = bio_alloc_clone(c->origin, bio, GFP_NOIO, &c->bs);
	k = bio_alloc_clone(c->cache, bio, GFP_NOIO, &c->bs);
	k->bi_iter.bi_sector = tac_cblock_sector(c, pb->cblock) + offset;
	o->bi_end_io = tac_fanout_origin_endio;
	k->bi_end_io = tac_fanout_cache_endio;
	o->bi_private = bio;
	k->bi_private = bio;
	pb->route = ROUTE_FANOUT;
	pb->iter = bio->bi_iter;
	pb->status = BLK_STS_OK;
	pb->cache_failed = false;
	atomic_set(&pb->pending, 2);
	submit_bio_noacct(o);
	submit_bio_noacct(k);
	return DM_MAPIO_SUBMITTED;
}

/* ------------------------------------------------------------------ */
/* Mapping */

/*
 * Only whole data units can be checked against their checksums: a read or
 * write of part of one goes to the origin (and a write invalidates).
 */
static bool tac_units_aligned(struct tac_cache *c, sector_t start,
			      sector_t end)
{
	sector_t mask = (1 << c->unit_shift) - 1;

	return !(start & mask) && !(end & mask);
}

static bool tac_whole_block(struct tac_cache *c, u64 b, sector_t start,
			    sector_t end)
{
	sector_t bs = b << c->block_shift;

	return bs >= start && bs + c->block_sectors <= end;
}

static int tac_map_read(struct dm_target *ti, struct tac_cache *c,
			struct bio *bio, struct tac_bio *pb)
{
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	u64 b0 = start >> c->block_shift, bl = (end - 1) >> c->block_shift;
	bool classify = !tac_is_remainder(ti, bio);
	struct tac_fill *fills;
	enum tac_lookup st;
	bool dirty, aligned;
	u64 b;
	u32 cb;

retry:
	spin_lock_irq(&c->lock);
	/* A split's remainder belongs to the request classified last. */
	if (classify)
		c->last_class = c->policy->ops->request(c->policy,
							to_oblock(b0),
							bl - b0 + 1, false);
	classify = false;
	st = __lookup(c, b0, &cb);
	dirty = st == LK_VALID && __is_dirty(c, cb);
	if (dirty && !__tac_pinnable(c, cb)) {
		/* Thousands of I/Os on one dirty block: wait for a pin. */
		spin_unlock_irq(&c->lock);
		usleep_range(1000, 2000);
		goto retry;
	}
	aligned = tac_units_aligned(c, start,
				    min_t(sector_t, end, (b0 + 1) << c->block_shift));
	if (dirty || (st == LK_VALID && c->mode != TAC_MODE_PASSTHROUGH &&
		      __tac_pinnable(c, cb) && aligned)) {
		/*
		 * A hit: one block, to its place on the cache device.  Dirty
		 * data exists only there: it is read there in every mode.
		 */
		if (bl > b0)
			tac_split(ti, bio, ((b0 + 1) << c->block_shift) - start);
		__tac_pin(c, cb);
		c->n.read_hits++;
		if (c->last_class == TAC_RANDOM)
			c->n.random_read_hits++;
		c->last_io = jiffies;
		pb->gen = __wt(c, b0)->gen;
		pb->racy = __wt(c, b0)->inflight;
		pb->dirty = dirty;
		spin_unlock_irq(&c->lock);
		pb->route = ROUTE_HIT;
		pb->oblock = b0;
		pb->cblock = cb;
		pb->iter = bio->bi_iter;
		bio_set_dev(bio, c->cache);
		bio->bi_iter.bi_sector = tac_cblock_sector(c, cb) +
					 (start & (c->block_sectors - 1));
		return DM_MAPIO_REMAPPED;
	}

	/* A miss: the run of missed blocks goes to the origin in one bio. */
	for (b = b0 + 1; b <= bl; b++)
		if (__lookup(c, b, &cb) == LK_VALID &&
		    (c->mode != TAC_MODE_PASSTHROUGH || __is_dirty(c, cb)))
			break;
	if (b <= bl) {
		tac_split(ti, bio, (b << c->block_shift) - start);
		end = b << c->block_shift;
	}
	c->n.read_misses += b - b0;
	if (c->last_class == TAC_RANDOM)
		c->n.random_read_misses += b - b0;
	c->last_io = jiffies;
	fills = __plan_fills(c, b0, b - b0, start, end);
	spin_unlock_irq(&c->lock);

	pb->iter = bio->bi_iter;
	if (fills)
		tac_start_fills(c, pb, fills);
	bio_set_dev(bio, c->origin);
	return DM_MAPIO_REMAPPED;
}

/* Write-through: what happens to the first block decides the route. */
static int __map_write_through(struct dm_target *ti, struct tac_cache *c,
			       struct bio *bio, struct tac_bio *pb, u64 *last)
{
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	u64 b0 = start >> c->block_shift, b;
	enum tac_lookup st = __lookup(c, b0, &pb->cblock);
	sector_t split = ((b0 + 1) << c->block_shift) - start;

	if (st == LK_VALID) {
		if (*last > b0)
			tac_split(ti, bio, split);
		c->n.write_hits++;
		__wtrack(c, b0, 1, 1);
		pb->wfirst = b0;
		pb->wcount = 1;
		if (__wt(c, b0)->inflight > 1 || !__tac_pinnable(c, pb->cblock) ||
		    !tac_units_aligned(c, start, min_t(sector_t, end,
					(b0 + 1) << c->block_shift))) {
			/* Another write in flight (see "Coherence"), or
			 * part of a checksummed unit: drop the block.
			 */
			__invalidate(c, pb->cblock);
			*last = b0;
			return DM_MAPIO_REMAPPED;
		}
		__tac_pin(c, pb->cblock);
		pb->admitted = false;
		return DM_MAPIO_SUBMITTED;
	}

	if (st == LK_NONE && tac_whole_block(c, b0, start, end)) {
		/* A whole-block write to a hot extent fills the cache. */
		__wtrack(c, b0, 1, 1);
		if (__reserve(c, b0, 1, &pb->cblock, &pb->gen)) {
			if (*last > b0)
				tac_split(ti, bio, split);
			c->n.write_misses++;
			pb->wfirst = b0;
			pb->wcount = 1;
			pb->admitted = true;
			return DM_MAPIO_SUBMITTED;
		}
		__wtrack(c, b0, 1, -1);
	}

	/* Then the origin alone, up to the next block that wants the cache. */
	for (b = b0 + 1; b <= *last; b++) {
		u32 cb;

		st = __lookup(c, b, &cb);
		if (st == LK_VALID ||
		    (st == LK_NONE && tac_whole_block(c, b, start, end) &&
		     c->health == TAC_OK && !__wt(c, b)->inflight &&
		     c->cache_inflight < c->tun.max_cache_inflight &&
		     c->policy->ops->would_admit(c->policy, to_oblock(b))))
			break;
	}
	if (b <= *last) {
		tac_split(ti, bio, (b << c->block_shift) - start);
		*last = b - 1;
	}
	c->n.write_misses += *last - b0 + 1;
	return DM_MAPIO_REMAPPED;
}

/*
 * Write-back: @bio (one block) goes to cache block pb->cblock only.  A
 * block already dirty takes writes in every mode (its only current copy
 * is there); in write-back mode a clean cached block becomes dirty, and a
 * whole block of a warm extent is admitted straight into the cache.
 */
static int __map_write_back(struct tac_cache *c, struct bio *bio,
			    struct tac_bio *pb, u64 b0, bool admitted)
{
	pb->route = ROUTE_WB;
	pb->oblock = b0;
	pb->admitted = admitted;
	if (!admitted)
		__tac_pin(c, pb->cblock);
	pb->wfirst = b0;
	pb->wcount = 1;
	pb->racy = __wt(c, b0)->inflight > 1;
	pb->iter = bio->bi_iter;
	return DM_MAPIO_REMAPPED;
}

static int tac_map_write(struct dm_target *ti, struct tac_cache *c,
			 struct bio *bio, struct tac_bio *pb)
{
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	u64 b0 = start >> c->block_shift, bl = (end - 1) >> c->block_shift;
	sector_t split = ((b0 + 1) << c->block_shift) - start;
	bool classify = !tac_is_remainder(ti, bio);
	int r = DM_MAPIO_REMAPPED;
	enum tac_lookup st;
	bool dirty, aligned;
	u64 b;
	u32 cb;

retry:
	spin_lock_irq(&c->lock);
	if (classify)
		c->policy->ops->request(c->policy, to_oblock(b0), bl - b0 + 1,
					true);
	classify = false;
	st = __lookup(c, b0, &cb);
	dirty = st == LK_VALID && __is_dirty(c, cb);
	aligned = tac_units_aligned(c, start,
				    min_t(sector_t, end, (b0 + 1) << c->block_shift));
	if (dirty && !__tac_pinnable(c, cb)) {
		spin_unlock_irq(&c->lock);
		usleep_range(1000, 2000);
		goto retry;
	}

	if (dirty || (st == LK_VALID && c->mode == TAC_MODE_WRITEBACK &&
		      aligned && __tac_pinnable(c, cb))) {
		if (bl > b0)
			tac_split(ti, bio, split);
		c->n.write_hits++;
		__wtrack(c, b0, 1, 1);
		pb->cblock = cb;
		r = __map_write_back(c, bio, pb, b0, false);
		goto out_cache;
	}

	if (c->mode == TAC_MODE_WRITEBACK && st == LK_NONE &&
	    tac_whole_block(c, b0, start, end)) {
		__wtrack(c, b0, 1, 1);
		if (__reserve(c, b0, 1, &pb->cblock, &pb->gen)) {
			if (bl > b0)
				tac_split(ti, bio, split);
			c->n.write_misses++;
			r = __map_write_back(c, bio, pb, b0, true);
			goto out_cache;
		}
		__wtrack(c, b0, 1, -1);
	}

	if (c->mode == TAC_MODE_WRITETHROUGH) {
		r = __map_write_through(ti, c, bio, pb, &bl);
	} else {
		/*
		 * Write-around, pass-through, and write-back blocks not
		 * admitted: the origin, invalidating clean cached copies, up
		 * to the next dirty block (which must take the write itself).
		 */
		for (b = b0; b <= bl; b++) {
			if (__lookup(c, b, &cb) != LK_VALID) {
				c->n.write_misses++;
				continue;
			}
			if (__is_dirty(c, cb) ||
			    (c->mode == TAC_MODE_WRITEBACK && b > b0)) {
				tac_split(ti, bio, (b << c->block_shift) - start);
				bl = b - 1;
				break;
			}
			__invalidate(c, cb);
			c->n.write_hits++;
		}
	}
	if (r == DM_MAPIO_REMAPPED && !pb->wcount) {
		__wtrack(c, b0, bl - b0 + 1, 1);
		pb->wfirst = b0;
		pb->wcount = bl - b0 + 1;
	}
	c->last_io = jiffies;
	spin_unlock_irq(&c->lock);

	if (r == DM_MAPIO_SUBMITTED)
		return tac_fanout(c, bio, pb);
	bio_set_dev(bio, c->origin);
	return r;

out_cache:
	c->last_io = jiffies;
	spin_unlock_irq(&c->lock);
	bio_set_dev(bio, c->cache);
	bio->bi_iter.bi_sector = tac_cblock_sector(c, pb->cblock) +
				 (start & (c->block_sectors - 1));
	return r;
}

/* Invalidate the cached blocks a discard touches, in bounded steps. */
static void tac_discard_invalidate(struct tac_cache *c, u64 first, u64 last)
{
	tac_oblock_t ob;
	bool dirty;
	u64 b, n = last - first + 1;
	u32 cb;

	if (n <= c->nr_cblocks) {
		for (b = first; b <= last; b++) {
			spin_lock_irq(&c->lock);
			if (__lookup(c, b, &cb) == LK_VALID)
				__invalidate(c, cb);
			spin_unlock_irq(&c->lock);
			if (!(b & 1023))
				cond_resched();
		}
		return;
	}
	for (cb = 0; cb < c->nr_cblocks; cb++) {
		spin_lock_irq(&c->lock);
		if (!(c->cb_state[cb] & (CB_PENDING | CB_DOOMED)) &&
		    c->policy->ops->mapping(c->policy, to_cblock(cb), &ob,
					    &dirty) &&
		    from_oblock(ob) >= first && from_oblock(ob) <= last)
			__invalidate(c, cb);
		spin_unlock_irq(&c->lock);
		if (!(cb & 1023))
			cond_resched();
	}
}

static int tac_discard_finish(struct tac_cache *c, struct bio *bio)
{
	if (c->tun.no_discard_passdown ||
	    !bdev_max_discard_sectors(c->origin)) {
		bio_endio(bio);
		return DM_MAPIO_SUBMITTED;
	}
	bio_set_dev(bio, c->origin);
	return DM_MAPIO_REMAPPED;
}

/*
 * A discard invalidates every block it touches, even partly (what the
 * origin returns for a partly discarded block is up to the origin), and
 * counts as a write for fills in flight.  Large ones are left to the
 * worker, which never holds the lock for long.
 */
static int tac_map_discard(struct tac_c *tc, struct bio *bio,
			   struct tac_bio *pb)
{
	struct tac_cache *c = tc->cache;
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	u64 b0 = start >> c->block_shift, bl = (end - 1) >> c->block_shift;
	u64 b, n = bl - b0 + 1;
	u32 cb;

	pb->route = ROUTE_DISCARD;
	spin_lock_irq(&c->lock);
	__wtrack(c, b0, n, 1);
	pb->wfirst = b0;
	pb->wcount = n;
	if (n > 256) {
		bio_list_add(&c->deferred, bio);
		spin_unlock_irq(&c->lock);
		queue_work(c->wq, &c->worker);
		return DM_MAPIO_SUBMITTED;
	}
	for (b = b0; b <= bl; b++)
		if (__lookup(c, b, &cb) == LK_VALID)
			__invalidate(c, cb);
	spin_unlock_irq(&c->lock);
	return tac_discard_finish(c, bio);
}

static int tac_map(struct dm_target *ti, struct bio *bio)
{
	struct tac_c *tc = ti->private;
	struct tac_cache *c = tc->cache;
	struct tac_bio *pb = tac_pb(bio);

	pb->c = c;
	pb->route = ROUTE_ORIGIN;
	pb->wcount = 0;
	pb->fills = NULL;

	if (unlikely(bio->bi_opf & REQ_PREFLUSH)) {
		/* dm core sends data-less flushes here, one per device. */
		if (dm_bio_get_target_bio_nr(bio)) {
			spin_lock_irq(&c->lock);
			if (__tac_wb_active(c)) {
				/* Write-back: a flush is a metadata commit. */
				pb->route = ROUTE_COMMIT;
				bio_list_add(&c->commit_waiters, bio);
				spin_unlock_irq(&c->lock);
				queue_work(c->wb_wq, &c->commit_work);
				return DM_MAPIO_SUBMITTED;
			}
			spin_unlock_irq(&c->lock);
			pb->route = ROUTE_CACHE_FLUSH;
			bio_set_dev(bio, c->cache);
		} else {
			bio_set_dev(bio, c->origin);
		}
		return DM_MAPIO_REMAPPED;
	}

	bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	if (unlikely(!bio_sectors(bio))) {
		bio_set_dev(bio, c->origin);
		return DM_MAPIO_REMAPPED;
	}

	switch (bio_op(bio)) {
	case REQ_OP_READ:
		return tac_map_read(ti, c, bio, pb);
	case REQ_OP_WRITE:
		return tac_map_write(ti, c, bio, pb);
	case REQ_OP_DISCARD:
		return tac_map_discard(tc, bio, pb);
	default:
		bio_set_dev(bio, c->origin);
		return DM_MAPIO_REMAPPED;
	}
}

/* The data units a bio covers within its block, if it covers whole ones. */
static u32 tac_bio_units(struct tac_cache *c, struct tac_bio *pb, u32 *first)
{
	sector_t start = pb->iter.bi_sector;

	if (!tac_units_aligned(c, start, start + (pb->iter.bi_size >> 9)))
		return 0;
	*first = (start & (c->block_sectors - 1)) >> c->unit_shift;
	return pb->iter.bi_size >> (c->unit_shift + SECTOR_SHIFT);
}

static int tac_end_hit(struct tac_cache *c, struct bio *bio,
		       struct tac_bio *pb, blk_status_t *error)
{
	u32 cb = pb->cblock, first = 0, nr = tac_bio_units(c, pb, &first);
	bool mismatch = false, racy;
	unsigned long flags;
	u16 crc[32];

	if (!*error && nr)
		tac_bio_crcs(c, bio, pb->iter, nr, crc);
	spin_lock_irqsave(&c->lock, flags);
	if (!*error && nr && !(c->cb_state[cb] & CB_NOCRC))
		mismatch = memcmp(crc, &c->crc[(u64)cb * c->units + first],
				  nr * sizeof(u16));
	/* A write racing with this read explains a mismatch. */
	racy = pb->racy || __wt(c, pb->oblock)->gen != pb->gen;

	if (pb->dirty) {
		/* The only copy: its loss is an error, never stale data. */
		if (*error) {
			__tac_fail(c, "a dirty block could not be read");
		} else if (mismatch && !racy) {
			*error = BLK_STS_IOERR;
			__tac_fail(c, "a dirty block failed its checksum");
		}
		__tac_unpin(c, cb);
		spin_unlock_irqrestore(&c->lock, flags);
		return DM_ENDIO_DONE;
	}

	if (*error || (mismatch && !racy)) {
		/* The cache device lost or garbled it. */
		if (!(c->cb_state[cb] & CB_DOOMED))
			__invalidate(c, cb);
		__tac_cache_error(c, *error ? "read" : "checksum");
	}
	__tac_unpin(c, cb);
	if (*error || mismatch) {
		/* Read it again from the origin (see tac_retry()). */
		pb->route = ROUTE_RETRY;
		bio_list_add(&c->deferred, bio);
		spin_unlock_irqrestore(&c->lock, flags);
		queue_work(c->wq, &c->worker);
		return DM_ENDIO_INCOMPLETE;
	}
	spin_unlock_irqrestore(&c->lock, flags);
	return DM_ENDIO_DONE;
}

/* A write-back write to the cache completed. */
static int tac_end_write_back(struct tac_cache *c, struct bio *bio,
			      struct tac_bio *pb, blk_status_t *error)
{
	u32 cb = pb->cblock, first = 0, nr = tac_bio_units(c, pb, &first);
	bool ok = !*error, fua = bio->bi_opf & REQ_FUA;
	struct tac_policy_stats ps;
	unsigned long flags;
	u16 crc[32];

	if (ok && nr)
		tac_bio_crcs(c, bio, pb->iter, nr, crc);
	spin_lock_irqsave(&c->lock, flags);
	/* Concurrent writes may land in either order: checksums unknown. */
	if (pb->racy || __wt(c, pb->oblock)->inflight > 1)
		nr = 0;
	if (pb->admitted) {
		if (ok && nr == c->units)
			memcpy(&c->crc[(u64)cb * c->units], crc,
			       nr * sizeof(u16));
		else if (ok)
			c->cb_state[cb] |= CB_NOCRC;
		__fill_done(c, cb, pb->oblock, pb->gen, ok);
		if (!(c->cb_state[cb] & CB_DOOMED))
			c->policy->ops->set_dirty(c->policy, to_cblock(cb));
		if (!ok)
			__tac_cache_error(c, "write");
	} else if (ok) {
		c->policy->ops->set_dirty(c->policy, to_cblock(cb));
		if (nr) {
			memcpy(&c->crc[(u64)cb * c->units + first], crc,
			       nr * sizeof(u16));
			if (nr == c->units)
				c->cb_state[cb] &= ~CB_NOCRC;
		} else {
			c->cb_state[cb] |= CB_NOCRC;
		}
		tac_md_changed(c, cb);
		__tac_unpin(c, cb);
	} else {
		/* The write failed: the user hears of it. */
		if (__is_dirty(c, cb)) {
			c->cb_state[cb] |= CB_NOCRC;
			tac_md_changed(c, cb);
			__tac_fail(c, "a write to a dirty block failed");
		} else {
			if (!(c->cb_state[cb] & CB_DOOMED))
				__invalidate(c, cb);
			__tac_cache_error(c, "write");
		}
		__tac_unpin(c, cb);
	}
	__wtrack(c, pb->wfirst, pb->wcount, -1);
	pb->wcount = 0;

	c->policy->ops->stats(c->policy, &ps);
	if ((u64)ps.nr_dirty * 100 >
	    (u64)c->tun.dirty_threshold * c->nr_cblocks)
		tac_wb_kick(c);
	if (ok && fua) {
		/* FUA: durable on completion, metadata included. */
		pb->route = ROUTE_COMMIT;
		bio_list_add(&c->commit_waiters, bio);
		spin_unlock_irqrestore(&c->lock, flags);
		queue_work(c->wb_wq, &c->commit_work);
		return DM_ENDIO_INCOMPLETE;
	}
	spin_unlock_irqrestore(&c->lock, flags);
	return DM_ENDIO_DONE;
}

static int tac_end_io(struct dm_target *ti, struct bio *bio,
		      blk_status_t *error)
{
	struct tac_bio *pb = tac_pb(bio);
	struct tac_cache *c = pb->c;
	unsigned long flags;

	switch (pb->route) {
	case ROUTE_HIT:
		return tac_end_hit(c, bio, pb, error);

	case ROUTE_WB:
		return tac_end_write_back(c, bio, pb, error);

	case ROUTE_ORIGIN:
	case ROUTE_DISCARD:
		if (pb->fills)
			tac_fills_from_read(c, bio, pb, !*error);
		if (pb->wcount) {
			spin_lock_irqsave(&c->lock, flags);
			__wtrack(c, pb->wfirst, pb->wcount, -1);
			spin_unlock_irqrestore(&c->lock, flags);
			pb->wcount = 0;
		}
		break;

	case ROUTE_CACHE_FLUSH:
		/*
		 * Everything the cache holds is also on the origin, so a
		 * failed cache flush loses nothing: count it, don't fail it.
		 */
		if (*error) {
			spin_lock_irqsave(&c->lock, flags);
			__tac_cache_error(c, "flush");
			spin_unlock_irqrestore(&c->lock, flags);
			*error = BLK_STS_OK;
		}
		break;

	default:
		break;
	}
	return DM_ENDIO_DONE;
}

/* ------------------------------------------------------------------ */
/* The worker: fills, retries, large discards */

static void tac_retry_endio(struct bio *clone)
{
	struct bio *bio = clone->bi_private;

	bio->bi_status = clone->bi_status;
	bio_put(clone);
	bio_endio(bio);
}

/* A cache read failed: the same data comes from the origin instead. */
static void tac_retry(struct tac_cache *c, struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);
	struct bio *clone;

	bio->bi_iter = pb->iter;
	clone = bio_alloc_clone(c->origin, bio, GFP_NOIO, &c->bs);
	clone->bi_end_io = tac_retry_endio;
	clone->bi_private = bio;
	submit_bio_noacct(clone);
}

static void tac_worker(struct work_struct *work)
{
	struct tac_cache *c = container_of(work, struct tac_cache, worker);
	struct tac_fill *f, *tmp;
	struct bio_list bios;
	struct bio *bio;
	LIST_HEAD(fills);
	bool drop;

	spin_lock_irq(&c->lock);
	bio_list_init(&bios);
	bio_list_merge(&bios, &c->deferred);
	bio_list_init(&c->deferred);
	list_splice_init(&c->fills, &fills);
	drop = c->drop_all;
	c->drop_all = false;
	spin_unlock_irq(&c->lock);

	list_for_each_entry_safe(f, tmp, &fills, list) {
		list_del(&f->list);
		tac_submit_fill(c, f);
	}

	while ((bio = bio_list_pop(&bios))) {
		struct tac_bio *pb = tac_pb(bio);

		if (pb->route == ROUTE_RETRY) {
			tac_retry(c, bio);
		} else {
			tac_discard_invalidate(c, pb->wfirst,
					       pb->wfirst + pb->wcount - 1);
			if (tac_discard_finish(c, bio) ==
			    DM_MAPIO_REMAPPED)
				dm_submit_bio_remap(bio, NULL);
		}
	}

	if (drop)
		tac_invalidate_all(c);
}

/* ------------------------------------------------------------------ */
/* The shared cache object */

static struct tac_cache *__tac_cache_find(dev_t cache_dev)
{
	struct tac_cache *c;

	list_for_each_entry(c, &tac_caches, list)
		if (c->cache_dev == cache_dev)
			return c;
	return NULL;
}

static void tac_cache_free(struct tac_cache *c)
{
	if (c->wb_wq) {
		tac_wb_stop(c);
		destroy_workqueue(c->wb_wq);
	}
	if (c->commit_wq)
		destroy_workqueue(c->commit_wq);
	if (c->wq)
		destroy_workqueue(c->wq);
	bitmap_free(c->md_changed);
	bioset_exit(&c->bs);
	if (c->policy)
		c->policy->ops->destroy(c->policy);
	kvfree(c->cb_state);
	kvfree(c->crc);
	kvfree(c->wtrack);
	tac_md_close(c);
	kfree(c);
}

static void tac_cache_put(struct tac_cache *c)
{
	mutex_lock(&tac_caches_lock);
	if (!refcount_dec_and_test(&c->refs)) {
		mutex_unlock(&tac_caches_lock);
		return;
	}
	list_del(&c->list);
	mutex_unlock(&tac_caches_lock);
	tac_cache_free(c);
}

/* Everything but the superblock, for a cache of known geometry. */
static int tac_cache_build(struct tac_cache *c, struct tac_c *tc)
{
	struct dm_target *ti = tc->ti;
	const char *why;
	int r;

	c->nr_cblocks = c->md.geo.nr_cblocks;
	c->tun = tc->tun;
	if (!(c->tun.given & BIT(OPT_STATS_EXTENTS)))
		c->tun.policy.stats_extents =
			tac_default_stats_extents(c->nr_cblocks,
						  c->tun.policy.extent_blocks);
	tc->tun.policy.stats_extents = c->tun.policy.stats_extents;
	if (tac_params_check(&c->tun.policy, c->nr_cblocks, &why)) {
		DMERR("%s", why);
		ti->error = "Invalid policy parameters";
		return -EINVAL;
	}

	c->policy = tac_policy_create(c->nr_cblocks, &c->tun.policy);
	c->cb_state = kvcalloc(c->nr_cblocks, sizeof(*c->cb_state),
			       GFP_KERNEL);
	c->crc = kvcalloc((size_t)c->nr_cblocks * c->units, sizeof(*c->crc),
			  GFP_KERNEL);
	c->wtrack = kvcalloc(TAC_WTRACK_SIZE, sizeof(*c->wtrack), GFP_KERNEL);
	if (!c->policy || !c->cb_state || !c->crc || !c->wtrack) {
		ti->error = "Cannot allocate the cache's in-core state";
		return -ENOMEM;
	}
	r = bioset_init(&c->bs, BIO_POOL_SIZE, 0,
			BIOSET_NEED_BVECS | BIOSET_NEED_RESCUER);
	if (r) {
		ti->error = "Cannot allocate the bio set";
		return r;
	}
	c->md_changed = bitmap_zalloc(c->md.geo.map_pages, GFP_KERNEL);
	c->wq = alloc_workqueue("dm-tac", WQ_MEM_RECLAIM, 1);
	c->wb_wq = alloc_workqueue("dm-tac-wb", WQ_MEM_RECLAIM, 1);
	c->commit_wq = alloc_ordered_workqueue("dm-tac-commit",
					       WQ_MEM_RECLAIM);
	if (!c->md_changed || !c->wq || !c->wb_wq || !c->commit_wq) {
		ti->error = "Cannot allocate the cache's workqueues";
		return -ENOMEM;
	}
	return tac_md_load(c, tc->tun.discard_dirty, &ti->error);
}

/*
 * Find the cache object for @tc's cache device (a table reload shares the
 * live one) or build a new one from the device's superblock.
 */
static int tac_cache_get(struct tac_c *tc)
{
	struct dm_target *ti = tc->ti;
	struct mapped_device *md = dm_table_get_md(ti->table);
	struct tac_cache *c;
	int r;

	mutex_lock(&tac_caches_lock);
	c = __tac_cache_find(tc->cache_dev->bdev->bd_dev);
	if (c) {
		u32 given = tc->tun.given;

		r = -EBUSY;
		if (c->md_owner != md) {
			ti->error = "Cache device is in use by another dm-tac device";
		} else if (c->origin_dev != tc->origin_dev->bdev->bd_dev) {
			ti->error = "A reload cannot change the origin device";
		} else if (c->block_sectors != tc->block_sectors) {
			ti->error = "A reload cannot change the block size";
		} else if (c->origin_sectors != ti->len) {
			ti->error = "A reload cannot change the target length";
		} else if (c->tun.policy.extent_blocks !=
			   tc->tun.policy.extent_blocks ||
			   ((given & BIT(OPT_STATS_EXTENTS)) &&
			    c->tun.policy.stats_extents !=
			    tc->tun.policy.stats_extents)) {
			ti->error = "A reload cannot change extent_size or stats_extents";
		} else {
			tc->tun.policy.stats_extents =
				c->tun.policy.stats_extents;
			refcount_inc(&c->refs);
			tc->cache = c;
			r = 0;
		}
		mutex_unlock(&tac_caches_lock);
		return r;
	}

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		mutex_unlock(&tac_caches_lock);
		ti->error = "Cannot allocate the cache context";
		return -ENOMEM;
	}
	refcount_set(&c->refs, 1);
	spin_lock_init(&c->lock);
	bio_list_init(&c->deferred);
	INIT_LIST_HEAD(&c->fills);
	init_waitqueue_head(&c->bg_wait);
	INIT_WORK(&c->worker, tac_worker);
	tac_wb_init(c);
	c->md_owner = md;
	c->cache_dev = tc->cache_dev->bdev->bd_dev;
	c->origin_dev = tc->origin_dev->bdev->bd_dev;
	c->origin = tc->origin_dev->bdev;
	c->cache = tc->cache_dev->bdev;
	c->origin_sectors = ti->len;
	c->block_sectors = tc->block_sectors;
	c->block_shift = ilog2(tc->block_sectors);
	c->nr_oblocks = ti->len >> c->block_shift;
	c->units = tac_units(tc->block_sectors);
	c->unit_shift = ilog2(tc->block_sectors / c->units);
	c->mode = tc->mode;

	r = tac_md_open(c, tc->block_sectors, tc->format, &ti->error);
	if (!r)
		r = tac_cache_build(c, tc);
	if (r) {
		mutex_unlock(&tac_caches_lock);
		tac_cache_free(c);
		return r;
	}
	list_add(&c->list, &tac_caches);
	tc->cache = c;
	mutex_unlock(&tac_caches_lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Constructor and destructor */

static void tac_dtr(struct dm_target *ti)
{
	struct tac_c *tc = ti->private;

	if (tc->cache)
		tac_cache_put(tc->cache);
	if (tc->cache_dev)
		dm_put_device(ti, tc->cache_dev);
	if (tc->origin_dev)
		dm_put_device(ti, tc->origin_dev);
	kfree(tc);
}

static int tac_parse_u32(const char *s, u32 *v)
{
	return kstrtouint(s, 10, v);
}

static int tac_parse_opt_args(struct tac_c *tc, struct dm_arg_set *as)
{
	struct dm_target *ti = tc->ti;
	bool have_mode = false;
	unsigned int argc;
	const char *key;
	const char *why;
	int opt;
	u32 v;

	/* Not dm_read_arg_group(): its sscanf("%u") wraps 2^32 + 1 to 1. */
	if (kstrtouint(dm_shift_arg(as), 10, &argc) || argc > as->argc) {
		ti->error = "Invalid number of optional arguments";
		return -EINVAL;
	}

	while (argc--) {
		key = dm_shift_arg(as);
		if (!strcasecmp(key, "mode")) {
			if (have_mode) {
				ti->error = "Duplicate optional argument 'mode'";
				return -EINVAL;
			}
			if (!argc--) {
				ti->error = "Optional argument 'mode' needs a value";
				return -EINVAL;
			}
			if (tac_mode_parse(dm_shift_arg(as), &tc->mode)) {
				ti->error = "Invalid mode (supported: writethrough, writearound, writeback, passthrough)";
				return -EINVAL;
			}
			have_mode = true;
			continue;
		}
		if (!strcasecmp(key, "format")) {
			if (tc->format) {
				ti->error = "Duplicate optional argument 'format'";
				return -EINVAL;
			}
			tc->format = true;
			continue;
		}
		opt = tac_opt_lookup(key);
		if (opt < 0) {
			DMERR("unknown optional argument '%s'", key);
			ti->error = "Unknown optional argument";
			return -EINVAL;
		}
		if (tc->tun.given & BIT(opt)) {
			DMERR("optional argument '%s' given twice", key);
			ti->error = "Duplicate optional argument";
			return -EINVAL;
		}
		tc->tun.given |= BIT(opt);
		if (opt == OPT_NO_DISCARD_PASSDOWN) {
			tc->tun.no_discard_passdown = true;
			continue;
		}
		if (opt == OPT_DISCARD_DIRTY) {
			tc->tun.discard_dirty = true;
			continue;
		}
		if (!argc--) {
			DMERR("optional argument '%s' needs a value", key);
			ti->error = "Optional argument needs a value";
			return -EINVAL;
		}
		if (tac_parse_u32(dm_shift_arg(as), &v) ||
		    v < tac_opts[opt].min || v > tac_opts[opt].max) {
			DMERR("%s must be an integer from %u to %u",
			      tac_opts[opt].name, tac_opts[opt].min,
			      tac_opts[opt].max);
			ti->error = "Invalid optional argument value";
			return -EINVAL;
		}
		*tac_opt_field(&tc->tun, opt) = v;
	}

	if (!have_mode)
		tc->mode = TAC_MODE_WRITETHROUGH;
	/* The table's size is only known later: check the rest now. */
	if (tac_params_check(&tc->tun.policy, 1, &why)) {
		DMERR("%s", why);
		ti->error = "Invalid policy parameters";
		return -EINVAL;
	}
	return 0;
}

static int tac_check_devices(struct tac_c *tc)
{
	struct dm_target *ti = tc->ti;
	struct block_device *origin = tc->origin_dev->bdev;
	struct block_device *cache = tc->cache_dev->bdev;
	u64 origin_sectors = bdev_nr_sectors(origin);

	if (origin == cache) {
		ti->error = "Origin and cache are the same device";
		return -EINVAL;
	}
	if (!(dm_table_get_mode(ti->table) & TAC_OPEN_WRITE)) {
		ti->error = "A read-only table is not supported";
		return -EINVAL;
	}
	if (bdev_read_only(origin)) {
		ti->error = "Origin device is read-only";
		return -EACCES;
	}
	if (bdev_read_only(cache)) {
		ti->error = "Cache device is read-only";
		return -EACCES;
	}
	if (bdev_logical_block_size(cache) >
	    (tc->block_sectors << SECTOR_SHIFT)) {
		ti->error = "Cache device's logical block size exceeds block_size";
		return -EINVAL;
	}
	/* A partial last block is allowed but never cached. */
	if (ti->len != origin_sectors &&
	    ti->len != round_down(origin_sectors, tc->block_sectors)) {
		DMERR("target length %llu, origin has %llu sectors (%llu rounded down to block_size)",
		      (u64)ti->len, origin_sectors,
		      round_down(origin_sectors, (u64)tc->block_sectors));
		ti->error = "Target length must equal the origin size, or that size rounded down to block_size";
		return -EINVAL;
	}
	return 0;
}

/*
 * Construct a temperature-aware cache.
 *
 * tac <origin_dev> <cache_dev> <block_size> <#opt_args> [<opt_arg>...]
 *
 * origin_dev:  the slow device; the target's length equals its size (or
 *              that size rounded down to a multiple of block_size)
 * cache_dev:   the fast device; holds a superblock, metadata and data
 * block_size:  cache block size in 512-byte sectors: a power of two from
 *              8 (4 KiB) to 2048 (1 MiB)
 * #opt_args:   number of words that follow
 * opt_args:    mode writethrough|writearound|passthrough (default
 *                  writethrough)
 *              <tunable> <value>   (see tac_opts[]; e.g. admit_margin 1)
 *              no_discard_passdown
 *              format   (overwrite whatever the cache device holds)
 */
static int tac_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct dm_arg_set as = { .argc = argc, .argv = argv };
	struct tac_c *tc;
	unsigned int bs;
	int r;

	if (argc < 4) {
		ti->error = "Not enough arguments: <origin> <cache> <block_size> <#opt_args> [<opt_arg>...]";
		return -EINVAL;
	}

	tc = kzalloc(sizeof(*tc), GFP_KERNEL);
	if (!tc) {
		ti->error = "Cannot allocate the target context";
		return -ENOMEM;
	}
	tc->ti = ti;
	ti->private = tc;

	r = dm_get_device(ti, dm_shift_arg(&as), dm_table_get_mode(ti->table),
			  &tc->origin_dev);
	if (r) {
		ti->error = "Origin device lookup failed";
		goto bad;
	}
	r = dm_get_device(ti, dm_shift_arg(&as), dm_table_get_mode(ti->table),
			  &tc->cache_dev);
	if (r) {
		ti->error = "Cache device lookup failed";
		goto bad;
	}

	/* Not dm_read_arg(): its sscanf("%u") wraps 2^32 + 8 around to 8. */
	if (kstrtouint(dm_shift_arg(&as), 10, &bs) || bs < 8 || bs > 2048 ||
	    !is_power_of_2(bs)) {
		ti->error = "Invalid block_size: a power of two from 8 to 2048 sectors";
		r = -EINVAL;
		goto bad;
	}
	tc->block_sectors = bs;
	tac_tunables_default(&tc->tun, bs);

	r = tac_parse_opt_args(tc, &as);
	if (r)
		goto bad;
	if (as.argc) {
		ti->error = "Too many arguments";
		r = -EINVAL;
		goto bad;
	}

	r = tac_check_devices(tc);
	if (r)
		goto bad;

	r = tac_cache_get(tc);
	if (r)
		goto bad;

	ti->num_flush_bios = 2;		/* 0: origin, 1: cache */
	ti->flush_supported = true;
	ti->num_discard_bios = 1;
	ti->discards_supported = true;
	ti->per_io_data_size = sizeof(struct tac_bio);
	return 0;

bad:
	tac_dtr(ti);
	return r;
}

/* ------------------------------------------------------------------ */
/* Suspend and resume */

static void tac_postsuspend(struct dm_target *ti)
{
	struct tac_c *tc = ti->private;
	struct tac_cache *c = tc->cache;

	/*
	 * User I/O has drained; fills started by it may still run.  Dirty
	 * blocks stay dirty over a suspend: the cleaner stops, the state is
	 * saved, and a resume (or the next constructor) goes on from there.
	 */
	tac_wb_stop(c);
	wait_event(c->bg_wait, !READ_ONCE(c->bg_inflight));
	flush_workqueue(c->wq);
	if (c->running) {
		c->running = false;
		tac_md_save(c);
	}
}

static int tac_preresume(struct dm_target *ti)
{
	struct tac_c *tc = ti->private;
	struct tac_cache *c = tc->cache;
	int r;

	tac_force_stable_writes(ti);

	/* A reload applies the new table's arguments here. */
	spin_lock_irq(&c->lock);
	c->mode = tc->mode;
	if (c->health == TAC_DEGRADED)
		c->health = TAC_OK;
	c->tun.max_cache_inflight = tc->tun.max_cache_inflight;
	c->tun.error_threshold = tc->tun.error_threshold;
	c->tun.no_discard_passdown = tc->tun.no_discard_passdown;
	c->tun.dirty_threshold = tc->tun.dirty_threshold;
	c->tun.clean_batch = tc->tun.clean_batch;
	c->tun.cleaner_inflight = tc->tun.cleaner_inflight;
	c->tun.clean_idle_ms = tc->tun.clean_idle_ms;
	c->tun.commit_interval = tc->tun.commit_interval;
	c->tun.given = tc->tun.given;
	if (!c->policy->ops->set_params(c->policy, &tc->tun.policy))
		c->tun.policy = tc->tun.policy;
	spin_unlock_irq(&c->lock);

	if (!c->running) {
		r = tac_md_set_clean(c, false);
		if (r)
			return r;
		c->running = true;
	}
	tac_wb_start(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Status */

static void tac_status(struct dm_target *ti, status_type_t type,
		       unsigned int status_flags, char *result,
		       unsigned int maxlen)
{
	struct tac_c *tc = ti->private;
	struct tac_cache *c = tc->cache;
	struct tac_policy_stats ps;
	struct tac_counters n;
	struct tac_tunables tun;
	static const char * const health[] = { "ok", "degraded", "fail" };
	static const char * const cleaner[] = {
		"idle", "threshold", "idle-clean", "flush"
	};
	enum tac_cleaner_state cl;
	enum tac_health h;
	enum tac_mode mode;
	unsigned int sz = 0;
	u64 rate, seq;
	int i, nr;

	spin_lock_irq(&c->lock);
	c->policy->ops->stats(c->policy, &ps);
	n = c->n;
	tun = c->tun;
	mode = c->mode;
	h = c->health;
	cl = c->cleaner;
	rate = c->clean_rate;
	spin_unlock_irq(&c->lock);
	seq = READ_ONCE(c->md.seq);

	switch (type) {
	case STATUSTYPE_INFO:
		DMEMIT("%u %u/%u %u %llu %llu %llu %llu %llu %llu %llu %s",
		       c->block_sectors, ps.nr_mapped, ps.nr_blocks,
		       ps.nr_dirty, n.read_hits, n.read_misses, n.write_hits,
		       n.write_misses, n.promotions, ps.evictions,
		       n.writebacks, tac_mode_names[mode]);
		DMEMIT(" %llu %llu %llu %llu %llu %u %u %s",
		       ps.seq_requests, ps.random_requests, n.bypassed,
		       n.invalidations, n.cache_errors, ps.tracked_extents,
		       ps.coldest_temp, health[h]);
		DMEMIT(" %s %llu %llu %llu %llu", cleaner[cl], rate, n.commits,
		       seq, n.cleaner_writes);
		DMEMIT(" %llu %llu", n.random_read_hits, n.random_read_misses);
		break;

	case STATUSTYPE_TABLE:
		nr = 2 + tc->format;
		for (i = 0; i < OPT_NR; i++)
			nr += (tun.given & BIT(i)) ? 2 : 0;
		nr += tun.no_discard_passdown + tun.discard_dirty;
		DMEMIT("%s %s %u %d mode %s", tc->origin_dev->name,
		       tc->cache_dev->name, tc->block_sectors, nr,
		       tac_mode_names[mode]);
		for (i = 0; i < OPT_NR; i++)
			if (tun.given & BIT(i))
				DMEMIT(" %s %u", tac_opts[i].name,
				       *tac_opt_field(&tun, i));
		if (tun.no_discard_passdown)
			DMEMIT(" no_discard_passdown");
		if (tun.discard_dirty)
			DMEMIT(" discard_dirty");
		if (tc->format)
			DMEMIT(" format");
		break;

	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",origin=%s,cache=%s,block_size=%u,mode=%s,cache_uuid=%pUb;",
		       tc->origin_dev->name, tc->cache_dev->name,
		       tc->block_sectors, tac_mode_names[mode], &c->md.uuid);
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Messages */

/*
 * Leaving write-back: stop making dirty blocks at once (writes to blocks
 * still dirty keep going to the cache), then clean everything; the
 * message returns when nothing is dirty, or -EINTR if interrupted (the
 * cleaning goes on).
 */
static int tac_msg_mode(struct tac_cache *c, unsigned int argc, char **argv)
{
	enum tac_mode mode;

	if (argc != 2 || tac_mode_parse(argv[1], &mode)) {
		DMERR("usage: mode writethrough|writearound|writeback|passthrough");
		return -EINVAL;
	}
	spin_lock_irq(&c->lock);
	if (c->health == TAC_FAIL && mode == TAC_MODE_WRITEBACK) {
		spin_unlock_irq(&c->lock);
		DMERR("mode: the cache has failed; write-back stays off");
		return -EIO;
	}
	c->mode = mode;
	if (c->health == TAC_DEGRADED)
		c->health = TAC_OK;
	spin_unlock_irq(&c->lock);
	if (mode != TAC_MODE_WRITEBACK)
		return tac_wb_flush(c);
	return 0;
}

static int tac_msg_set(struct tac_cache *c, unsigned int argc, char **argv)
{
	struct tac_tunables t;
	const char *why;
	int opt, r = 0;
	u32 v;

	if (argc != 3) {
		DMERR("usage: set <name> <value>");
		return -EINVAL;
	}
	opt = tac_opt_lookup(argv[1]);
	if (opt < 0 || opt >= OPT_NR) {
		DMERR("set: unknown tunable '%s'", argv[1]);
		return -EINVAL;
	}
	if (!tac_opts[opt].online) {
		DMERR("set: %s can only change by re-creating the device",
		      tac_opts[opt].name);
		return -EINVAL;
	}
	if (tac_parse_u32(argv[2], &v) || v < tac_opts[opt].min ||
	    v > tac_opts[opt].max) {
		DMERR("set: %s must be an integer from %u to %u",
		      tac_opts[opt].name, tac_opts[opt].min,
		      tac_opts[opt].max);
		return -EINVAL;
	}

	spin_lock_irq(&c->lock);
	t = c->tun;
	*tac_opt_field(&t, opt) = v;
	t.given |= BIT(opt);
	if (tac_params_check(&t.policy, c->nr_cblocks, &why) ||
	    c->policy->ops->set_params(c->policy, &t.policy))
		r = -EINVAL;
	else
		c->tun = t;
	spin_unlock_irq(&c->lock);
	if (r)
		DMERR("set: %s", why ? why : "rejected by the policy");
	return r;
}

static int tac_msg_heat(struct tac_cache *c, unsigned int argc, char **argv,
			char *result, unsigned int maxlen)
{
	struct tac_extent_rec *recs;
	unsigned int sz = 0;
	u32 n = 10, i, got;

	if (argc > 2 || (argc == 2 && (tac_parse_u32(argv[1], &n) || !n ||
				       n > 1024))) {
		DMERR("usage: heat [N], N from 1 to 1024");
		return -EINVAL;
	}
	recs = kvmalloc_array(n, sizeof(*recs), GFP_KERNEL);
	if (!recs)
		return -ENOMEM;
	spin_lock_irq(&c->lock);
	got = c->policy->ops->hottest(c->policy, recs, n);
	spin_unlock_irq(&c->lock);
	for (i = 0; i < got; i++)
		DMEMIT("%llu %llu %u\n", from_extent(recs[i].extent),
		       from_extent(recs[i].extent) *
		       c->tun.policy.extent_blocks << c->block_shift,
		       recs[i].temp);
	kvfree(recs);
	return 1;
}

static int tac_message(struct dm_target *ti, unsigned int argc, char **argv,
		       char *result, unsigned int maxlen)
{
	struct tac_c *tc = ti->private;
	struct tac_cache *c = tc->cache;

	if (!argc)
		return -EINVAL;
	if (!strcasecmp(argv[0], "mode"))
		return tac_msg_mode(c, argc, argv);
	if (!strcasecmp(argv[0], "set"))
		return tac_msg_set(c, argc, argv);
	if (!strcasecmp(argv[0], "heat"))
		return tac_msg_heat(c, argc, argv, result, maxlen);
	if (!strcasecmp(argv[0], "flush") && argc == 1)
		return tac_wb_flush(c);
	if (!strcasecmp(argv[0], "invalidate") && argc == 1) {
		tac_invalidate_all(c);
		return 0;
	}
	if (!strcasecmp(argv[0], "reset_stats") && argc == 1) {
		spin_lock_irq(&c->lock);
		memset(&c->n, 0, sizeof(c->n));
		c->policy->ops->reset_stats(c->policy);
		spin_unlock_irq(&c->lock);
		return 0;
	}
	DMERR("unknown message '%s'", argv[0]);
	return -EINVAL;
}

static int tac_iterate_devices(struct dm_target *ti,
			       iterate_devices_callout_fn fn, void *data)
{
	struct tac_c *tc = ti->private;
	int r;

	r = fn(ti, tc->origin_dev, 0, ti->len, data);
	if (!r)
		r = fn(ti, tc->cache_dev, 0,
		       bdev_nr_sectors(tc->cache_dev->bdev), data);
	return r;
}

static void tac_io_hints(struct dm_target *ti, struct queue_limits *limits)
{
	struct tac_c *tc = ti->private;
	struct block_device *origin = tc->origin_dev->bdev;
	unsigned int block_bytes = tc->block_sectors << SECTOR_SHIFT;

	tac_hint_stable_writes(limits);

	/* Steer file systems towards whole cache blocks. */
	if (limits->io_opt < block_bytes || limits->io_opt % block_bytes) {
		limits->io_min = max(limits->io_min, block_bytes);
		limits->io_opt = block_bytes;
	}

	/*
	 * Discards always reach us (they invalidate cached blocks); they are
	 * passed down only where the origin takes them, with its limits.
	 */
	if (!tc->tun.no_discard_passdown && bdev_max_discard_sectors(origin)) {
		tac_set_max_discard(limits, bdev_max_discard_sectors(origin));
		limits->discard_granularity =
			max(bdev_discard_granularity(origin), block_bytes);
	} else {
		tac_set_max_discard(limits, UINT_MAX >> SECTOR_SHIFT);
		limits->discard_granularity = block_bytes;
	}
}

static struct target_type tac_target = {
	.name = "tac",
	.version = {1, 1, 0},
	.module = THIS_MODULE,
	.ctr = tac_ctr,
	.dtr = tac_dtr,
	.map = tac_map,
	.end_io = tac_end_io,
	.postsuspend = tac_postsuspend,
	.preresume = tac_preresume,
	.status = tac_status,
	.message = tac_message,
	.iterate_devices = tac_iterate_devices,
	.io_hints = tac_io_hints,
};

static int __init dm_tac_init(void)
{
	return dm_register_target(&tac_target);
}

static void __exit dm_tac_exit(void)
{
	dm_unregister_target(&tac_target);
}

module_init(dm_tac_init);
module_exit(dm_tac_exit);

MODULE_DESCRIPTION(DM_NAME " temperature-aware cache target");
MODULE_LICENSE("GPL");
