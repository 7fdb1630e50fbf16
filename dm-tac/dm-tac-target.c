// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac: a temperature-aware cache target.  This file is the
 * device-mapper glue: options, the constructor and destructor, the cache
 * object shared by the tables of one device, suspend and resume, status
 * and messages.  The I/O path is dm-tac-io.c, block state and coherence
 * dm-tac-blocks.c, policy decisions tac-policy.c, the on-disk format
 * dm-tac-metadata.c and the cleaner dm-tac-writeback.c.
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
	OPT_COST_CACHE_WRITE,
	OPT_MAX_CACHE_INFLIGHT,
	OPT_STATS_EXTENTS,
	OPT_ERROR_THRESHOLD,
	OPT_DIRTY_THRESHOLD,
	OPT_CLEAN_BATCH,
	OPT_CLEANER_INFLIGHT,
	OPT_CLEAN_IDLE_MS,
	OPT_COMMIT_INTERVAL,
	OPT_SEQUENTIAL_CUTOFF,
	OPT_VERIFY_READS,
	OPT_DIRTY_ADAPT,
	OPT_NR,
	OPT_NO_DISCARD_PASSDOWN = OPT_NR,	/* flags, no value */
	OPT_DISCARD_DIRTY,
};

struct tac_opt_desc {
	const char *name;
	u32 min, max;
	bool online;		/* "set" may change it */
	bool on_off;		/* on or off (1 or 0 too) */
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
	[OPT_COST_CACHE_WRITE] = { "cost_cache_write_us", 0, 10000000, true },
	[OPT_MAX_CACHE_INFLIGHT] = { "max_cache_inflight", 1, 65536, true },
	[OPT_STATS_EXTENTS] = { "stats_extents", TAC_MIN_STATS_EXTENTS,
				TAC_MAX_STATS_EXTENTS, false },
	[OPT_ERROR_THRESHOLD] = { "error_threshold", 1, 1000000, true },
	[OPT_DIRTY_THRESHOLD] = { "dirty_threshold", 1, 100, true },
	[OPT_CLEAN_BATCH] = { "clean_batch", 1, 256, true },
	[OPT_CLEANER_INFLIGHT] = { "cleaner_inflight", 1, 64, true },
	[OPT_CLEAN_IDLE_MS] = { "clean_idle_ms", 0, 3600000, true },
	[OPT_COMMIT_INTERVAL] = { "commit_interval", 10, 3600000, true },
	[OPT_SEQUENTIAL_CUTOFF] = { "sequential_cutoff_kb", 0, 1048576, true },
	[OPT_VERIFY_READS] = { "verify_reads", 0, 1, true, true },
	[OPT_DIRTY_ADAPT] = { "dirty_adapt", 0, 1, true, true },
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
	case OPT_COST_CACHE_WRITE: return &t->policy.cost_cache_write_us;
	case OPT_MAX_CACHE_INFLIGHT: return &t->max_cache_inflight;
	case OPT_STATS_EXTENTS: return &t->policy.stats_extents;
	case OPT_DIRTY_THRESHOLD: return &t->dirty_threshold;
	case OPT_CLEAN_BATCH: return &t->clean_batch;
	case OPT_CLEANER_INFLIGHT: return &t->cleaner_inflight;
	case OPT_CLEAN_IDLE_MS: return &t->clean_idle_ms;
	case OPT_COMMIT_INTERVAL: return &t->commit_interval;
	case OPT_SEQUENTIAL_CUTOFF: return &t->sequential_cutoff_kb;
	case OPT_VERIFY_READS: return &t->verify_reads;
	case OPT_DIRTY_ADAPT: return &t->dirty_adapt;
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
	/* A read's cost until told otherwise: NVMe writes near reads. */
	t->policy.cost_cache_write_us = t->policy.cost_cache_us;
	t->max_cache_inflight = 256;
	t->error_threshold = 8;
	/* Turbocharging table 2: lambda 20%, alpha 32 pages. */
	t->dirty_threshold = 20;
	t->dirty_adapt = 1;	/* FD-Buffer's split, from dirty_threshold */
	t->clean_batch = 32;
	t->cleaner_inflight = 4;
	t->clean_idle_ms = 1000;
	t->commit_interval = 1000;
	/*
	 * 1 MiB: a disk streams that in about 7 ms, near its cost for one
	 * random seek and rotation, so a stream past it is served at disk
	 * speed and gains little from a cache; database reads and writes of
	 * a page or a few stay well under it.
	 */
	t->sequential_cutoff_kb = 1024;
	t->verify_reads = 1;
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
/* The shared cache object */

static struct tac_cache *tac_cache_find(dev_t cache_dev)
{
	struct tac_cache *c;

	list_for_each_entry(c, &tac_caches, list)
		if (c->cache_dev == cache_dev)
			return c;
	return NULL;
}

/*
 * A live cache of @origin_dev on another cache device, if any.  An origin
 * has one cache at most: its dirty blocks are the only copy of their
 * data, and a second cache (or this device's own table reloaded onto an
 * empty cache device) would read the origin's older data for them, and
 * later be overwritten by them when the first cache is cleaned.
 */
static struct tac_cache *tac_cache_of_origin(dev_t origin_dev)
{
	struct tac_cache *c;

	list_for_each_entry(c, &tac_caches, list)
		if (c->origin_dev == origin_dev)
			return c;
	return NULL;
}

/*
 * Each part takes down what its init made, whatever got made: the
 * cleaner first, then the I/O path's worker, then the commits (which use
 * the block state and the policy), then the state itself.
 */
static void tac_cache_free(struct tac_cache *c)
{
	tac_wb_exit(c);
	tac_io_exit(c);
	tac_md_close(c);
	if (c->policy)
		tac_policy_destroy(c->policy);
	tac_blocks_exit(c);
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
	if (!c->policy || tac_blocks_init(c) || tac_wb_init(c) ||
	    tac_io_init(c)) {
		ti->error = "Cannot allocate the cache's in-core state";
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
	c = tac_cache_find(tc->cache_dev->bdev->bd_dev);
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

	c = tac_cache_of_origin(tc->origin_dev->bdev->bd_dev);
	if (c) {
		ti->error = c->md_owner == md ?
			"A reload cannot change the cache device" :
			"Origin device is cached by another dm-tac device";
		mutex_unlock(&tac_caches_lock);
		return -EBUSY;
	}

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		mutex_unlock(&tac_caches_lock);
		ti->error = "Cannot allocate the cache context";
		return -ENOMEM;
	}
	refcount_set(&c->refs, 1);
	spin_lock_init(&c->lock);
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

/*
 * A tunable's value: a number in its range; verify_reads and dirty_adapt:
 * on or off too.
 * @who prefixes the error ("" for the table line, "set: ").
 */
static int tac_parse_opt(int opt, const char *s, u32 *v, const char *who)
{
	if (tac_opts[opt].on_off && !strcasecmp(s, "on"))
		*v = 1;
	else if (tac_opts[opt].on_off && !strcasecmp(s, "off"))
		*v = 0;
	else if (tac_parse_u32(s, v))
		goto bad;
	if (*v >= tac_opts[opt].min && *v <= tac_opts[opt].max)
		return 0;
bad:
	if (tac_opts[opt].on_off)
		DMERR("%s%s must be on or off", who, tac_opts[opt].name);
	else
		DMERR("%s%s must be an integer from %u to %u", who,
		      tac_opts[opt].name, tac_opts[opt].min, tac_opts[opt].max);
	return -EINVAL;
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
		if (tac_parse_opt(opt, dm_shift_arg(as), &v, "")) {
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
	if ((ti->len >> ilog2(tc->block_sectors)) >= TAC_MAX_ORIGIN_BLOCKS) {
		ti->error = "Origin too large: fewer than 2^40 blocks (4 PiB of 4 KiB blocks)";
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
 * opt_args:    mode writethrough|writearound|writeback|passthrough
 *                  (default writethrough)
 *              <tunable> <value>   (see tac_opts[]; e.g. admit_margin 1)
 *              no_discard_passdown
 *              discard_dirty   (start without the cache's dirty data)
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
	tac_io_drain(c);
	/* The hits served without the lock warm what is saved. */
	spin_lock_irq(&c->lock);
	__tac_fold_all(c);
	spin_unlock_irq(&c->lock);
	if (c->running) {
		WRITE_ONCE(c->running, false);
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
	if (c->health == TAC_DEGRADED) {
		c->health = TAC_OK;
		c->errors = 0;	/* error_threshold counts afresh */
	}
	/* A failed cache makes no new dirty data until it is re-created. */
	if (c->health == TAC_FAIL && c->mode == TAC_MODE_WRITEBACK) {
		DMERR("resume: the cache has failed; write-back stays off");
		c->mode = TAC_MODE_PASSTHROUGH;
	}
	c->tun.max_cache_inflight = tc->tun.max_cache_inflight;
	c->tun.error_threshold = tc->tun.error_threshold;
	c->tun.no_discard_passdown = tc->tun.no_discard_passdown;
	__tac_wb_tunables(c, &tc->tun);
	c->tun.dirty_threshold = tc->tun.dirty_threshold;
	c->tun.dirty_adapt = tc->tun.dirty_adapt;
	c->tun.clean_batch = tc->tun.clean_batch;
	c->tun.cleaner_inflight = tc->tun.cleaner_inflight;
	c->tun.clean_idle_ms = tc->tun.clean_idle_ms;
	c->tun.commit_interval = tc->tun.commit_interval;
	c->tun.sequential_cutoff_kb = tc->tun.sequential_cutoff_kb;
	c->tun.verify_reads = tc->tun.verify_reads;
	c->tun.given = tc->tun.given;
	if (!tac_policy_set_params(c->policy, &tc->tun.policy))
		c->tun.policy = tc->tun.policy;
	spin_unlock_irq(&c->lock);

	if (!c->running) {
		r = tac_md_set_clean(c, false);
		if (r)
			return r;
		WRITE_ONCE(c->running, true);
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
	u32 split_target;
	int i, nr;

	spin_lock_irq(&c->lock);
	/* Hits served without the lock count from here on. */
	__tac_fold_all(c);
	tac_policy_stats(c->policy, &ps);
	n = c->n;
	/*
	 * TABLE is this table's line (what its next resume applies): an
	 * inactive table shows its own, and a switch to passthrough after
	 * cache errors shows in the status (field 11), not here.
	 */
	tun = type == STATUSTYPE_TABLE ? tc->tun : c->tun;
	mode = type == STATUSTYPE_TABLE ? tc->mode : c->mode;
	h = c->health;
	cl = c->cleaner;
	rate = c->clean_rate;
	split_target = c->split.target;
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
		DMEMIT(" %llu %llu %llu %u %llu", n.random_read_hits,
		       n.random_read_misses, n.deferred_checks, split_target,
		       n.lockless_hits);
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
			if (tac_opts[i].on_off && (tun.given & BIT(i)))
				DMEMIT(" %s %s", tac_opts[i].name,
				       *tac_opt_field(&tun, i) ? "on" : "off");
			else if (tun.given & BIT(i))
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
 * mode and set change the table's own copy too (tc), which every resume
 * applies: a suspend and resume (LVM, a snapshot) keeps what a message
 * set; a reload's new table line replaces it.
 */

/*
 * Leaving write-back: stop making dirty blocks at once (writes to blocks
 * still dirty keep going to the cache), then clean everything; the
 * message returns when nothing is dirty, or -EINTR if interrupted (the
 * cleaning goes on).
 */
static int tac_msg_mode(struct tac_c *tc, unsigned int argc, char **argv)
{
	struct tac_cache *c = tc->cache;
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
	tc->mode = mode;
	if (mode == TAC_MODE_WRITEBACK)
		__tac_wake_all(c);	/* writes no longer wait for the cleaner */
	if (c->health == TAC_DEGRADED) {
		c->health = TAC_OK;
		c->errors = 0;	/* error_threshold counts afresh */
	}
	spin_unlock_irq(&c->lock);
	if (mode != TAC_MODE_WRITEBACK)
		return tac_wb_flush(c);
	return 0;
}

static int tac_msg_set(struct tac_c *tc, unsigned int argc, char **argv)
{
	struct tac_cache *c = tc->cache;
	struct tac_tunables t;
	const char *why = NULL;
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
	if (tac_parse_opt(opt, argv[2], &v, "set: "))
		return -EINVAL;

	spin_lock_irq(&c->lock);
	t = c->tun;
	*tac_opt_field(&t, opt) = v;
	t.given |= BIT(opt);
	if (tac_params_check(&t.policy, c->nr_cblocks, &why) ||
	    tac_policy_set_params(c->policy, &t.policy))
		r = -EINVAL;
	if (!r) {
		__tac_wb_tunables(c, &t);
		c->tun = t;
		*tac_opt_field(&tc->tun, opt) = v;
		tc->tun.given |= BIT(opt);
	}
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
	__tac_fold_all(c);
	got = tac_policy_hottest(c->policy, recs, n);
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
		return tac_msg_mode(tc, argc, argv);
	if (!strcasecmp(argv[0], "set"))
		return tac_msg_set(tc, argc, argv);
	if (!strcasecmp(argv[0], "heat"))
		return tac_msg_heat(c, argc, argv, result, maxlen);
	if (!strcasecmp(argv[0], "flush") && argc == 1)
		return tac_wb_flush(c);
	if (!strcasecmp(argv[0], "invalidate") && argc == 1) {
		tac_invalidate_all(c);
		/*
		 * Suspended, the state was saved already and nothing else
		 * writes it before the device goes: the dropped blocks would
		 * be loaded again by the next constructor.
		 */
		return READ_ONCE(c->running) ? 0 : tac_md_commit(c);
	}
	if (!strcasecmp(argv[0], "reset_stats") && argc == 1) {
		spin_lock_irq(&c->lock);
		__tac_fold_all(c);	/* hits before, counted before */
		memset(&c->n, 0, sizeof(c->n));
		tac_policy_reset_stats(c->policy);
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
	.version = {1, 2, 0},
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
	tac_crc_select();
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
