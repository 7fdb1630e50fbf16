// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac: a temperature-aware cache target.  This file is the device-mapper
 * glue: the constructor and destructor, bio routing, status, messages and
 * the suspend/resume hooks.  Policy decisions live in tac-policy.c and the
 * on-disk format in dm-tac-metadata.c.
 */
#include <linux/blkdev.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "dm-tac.h"
#include "dm-tac-compat.h"

static LIST_HEAD(tac_caches);
static DEFINE_MUTEX(tac_caches_lock);

static const char * const tac_mode_names[TAC_MODE_NR] = {
	[TAC_MODE_PASSTHROUGH] = "passthrough",
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
		r = -EBUSY;
		if (c->md_owner != md) {
			ti->error = "Cache device is in use by another dm-tac device";
		} else if (c->origin_dev != tc->origin_dev->bdev->bd_dev) {
			ti->error = "A reload cannot change the origin device";
		} else if (c->md.geo.block_sectors != tc->block_sectors) {
			ti->error = "A reload cannot change the block size";
		} else if (c->origin_sectors != ti->len) {
			ti->error = "A reload cannot change the target length";
		} else {
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
	c->md_owner = md;
	c->cache_dev = tc->cache_dev->bdev->bd_dev;
	c->origin_dev = tc->origin_dev->bdev->bd_dev;
	c->origin = tc->origin_dev->bdev;
	c->cache = tc->cache_dev->bdev;
	c->origin_sectors = ti->len;
	c->block_shift = ilog2(tc->block_sectors);
	c->nr_oblocks = ti->len >> c->block_shift;
	c->mode = tc->mode;

	r = tac_md_open(c, tc->block_sectors, tc->format, &ti->error);
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

static int tac_parse_opt_args(struct tac_c *tc, struct dm_arg_set *as)
{
	struct dm_target *ti = tc->ti;
	bool have_mode = false;
	unsigned int argc;
	const char *key;

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
				ti->error = "Invalid mode (supported: passthrough)";
				return -EINVAL;
			}
			have_mode = true;
		} else if (!strcasecmp(key, "format")) {
			if (tc->format) {
				ti->error = "Duplicate optional argument 'format'";
				return -EINVAL;
			}
			tc->format = true;
		} else {
			DMERR("unknown optional argument '%s'", key);
			ti->error = "Unknown optional argument";
			return -EINVAL;
		}
	}

	if (!have_mode) {
		/* The default will be writethrough once it exists. */
		ti->error = "The 'mode' optional argument is required";
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
 * opt_args:    mode passthrough
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
	return 0;

bad:
	tac_dtr(ti);
	return r;
}

/* ------------------------------------------------------------------ */
/* I/O */

static int tac_map(struct dm_target *ti, struct bio *bio)
{
	struct tac_c *tc = ti->private;
	struct tac_cache *c = tc->cache;

	if (unlikely(bio->bi_opf & REQ_PREFLUSH)) {
		/* dm core sends data-less flushes here, one per device. */
		bio_set_dev(bio, dm_bio_get_target_bio_nr(bio) ?
			    c->cache : c->origin);
		return DM_MAPIO_REMAPPED;
	}

	bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	bio_set_dev(bio, c->origin);

	switch (bio_op(bio)) {
	case REQ_OP_READ:
		atomic64_inc(&c->stats.read_misses);
		break;
	case REQ_OP_WRITE:
		atomic64_inc(&c->stats.write_misses);
		break;
	case REQ_OP_DISCARD:
		if (!bdev_max_discard_sectors(c->origin)) {
			bio_endio(bio);
			return DM_MAPIO_SUBMITTED;
		}
		break;
	default:
		break;
	}
	return DM_MAPIO_REMAPPED;
}

/* ------------------------------------------------------------------ */
/* Suspend and resume */

static void tac_postsuspend(struct dm_target *ti)
{
	struct tac_c *tc = ti->private;
	struct tac_cache *c = tc->cache;

	if (c->running) {
		tac_md_set_clean(c, true);
		c->running = false;
	}
}

static int tac_preresume(struct dm_target *ti)
{
	struct tac_c *tc = ti->private;
	struct tac_cache *c = tc->cache;
	int r;

	/* A reload applies the new table's arguments here. */
	c->mode = tc->mode;
	if (!c->running) {
		r = tac_md_set_clean(c, false);
		if (r)
			return r;
		c->running = true;
	}
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
	struct tac_stats *s = &c->stats;
	unsigned int sz = 0;

	switch (type) {
	case STATUSTYPE_INFO:
		DMEMIT("%u %u/%llu %u %llu %llu %llu %llu %llu %llu %llu %s",
		       c->md.geo.block_sectors, 0, c->md.geo.nr_cblocks, 0,
		       (u64)atomic64_read(&s->read_hits),
		       (u64)atomic64_read(&s->read_misses),
		       (u64)atomic64_read(&s->write_hits),
		       (u64)atomic64_read(&s->write_misses),
		       (u64)atomic64_read(&s->promotions),
		       (u64)atomic64_read(&s->demotions),
		       (u64)atomic64_read(&s->writebacks),
		       tac_mode_names[c->mode]);
		break;

	case STATUSTYPE_TABLE:
		DMEMIT("%s %s %u %u mode %s", tc->origin_dev->name,
		       tc->cache_dev->name, tc->block_sectors,
		       2 + tc->format, tac_mode_names[tc->mode]);
		if (tc->format)
			DMEMIT(" format");
		break;

	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",origin=%s,cache=%s,block_size=%u,mode=%s,cache_uuid=%pUb;",
		       tc->origin_dev->name, tc->cache_dev->name,
		       tc->block_sectors, tac_mode_names[c->mode],
		       &c->md.uuid);
		break;
	}
}

static int tac_message(struct dm_target *ti, unsigned int argc, char **argv,
		       char *result, unsigned int maxlen)
{
	DMERR("unknown message '%s'", argc ? argv[0] : "");
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

	/* Steer file systems towards whole cache blocks. */
	if (limits->io_opt < block_bytes || limits->io_opt % block_bytes) {
		limits->io_min = max(limits->io_min, block_bytes);
		limits->io_opt = block_bytes;
	}

	/*
	 * Discards always reach us (they invalidate cached blocks); they are
	 * passed down only where the origin takes them, with its limits.
	 */
	if (bdev_max_discard_sectors(origin)) {
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
	.version = {1, 0, 0},
	.module = THIS_MODULE,
	.ctr = tac_ctr,
	.dtr = tac_dtr,
	.map = tac_map,
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
