/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Definitions shared by the dm-tac target (dm-tac-target.c) and its
 * on-disk metadata code (dm-tac-metadata.c).
 *
 * One struct tac_cache exists per cache device in use.  A table reload
 * (new table loaded, old one suspended, new one resumed, old one destroyed)
 * must not lose the cache's contents, so the cache object is shared between
 * the old and the new table's targets and reference counted, as dm-cache
 * and dm-thin share their metadata objects.  struct tac_c is one table's
 * target: its constructor arguments, applied to the shared cache at resume.
 */
#ifndef DM_TAC_H
#define DM_TAC_H

#include <linux/device-mapper.h>
#include <linux/dm-io.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uuid.h>

#define DM_MSG_PREFIX "tac"

enum tac_mode {
	TAC_MODE_PASSTHROUGH,
	TAC_MODE_NR,
};

/* Where things are on the cache device (all in 512-byte sectors). */
struct tac_geometry {
	u32 block_sectors;
	u64 origin_sectors;	/* origin size bound at format time */
	u64 nr_cblocks;
	u64 map_start;
	u64 map_pages;		/* logical mapping pages (two slots each) */
	u64 temp_start;
	u32 temp_pages;
	u64 data_start;
};

/* In-core view of the superblock. */
struct tac_md {
	struct dm_io_client *io_client;
	void *buf;			/* one 4 KiB I/O buffer, under md_lock */
	struct mutex lock;
	struct tac_geometry geo;
	uuid_t uuid;
	u64 seq;			/* last superblock sequence written */
	bool was_clean;			/* last shutdown was clean */
	bool formatted;			/* formatted by this constructor */
};

struct tac_stats {
	atomic64_t read_hits;
	atomic64_t read_misses;
	atomic64_t write_hits;
	atomic64_t write_misses;
	atomic64_t promotions;
	atomic64_t demotions;
	atomic64_t writebacks;
};

struct tac_cache {
	struct list_head list;		/* on tac_caches, tac_caches_lock */
	refcount_t refs;
	struct mapped_device *md_owner;	/* the dm device using it */
	bool running;			/* resumed: superblock says unclean */
	dev_t cache_dev;
	dev_t origin_dev;
	struct block_device *origin;	/* held open by every sharing table */
	struct block_device *cache;

	u32 block_shift;		/* log2(block size in sectors) */
	u64 origin_sectors;		/* the target's length */
	u64 nr_oblocks;			/* whole blocks within it */

	enum tac_mode mode;
	struct tac_md md;
	struct tac_stats stats;
};

/* One table's target.  Table arguments, kept to reproduce the line. */
struct tac_c {
	struct dm_target *ti;
	struct dm_dev *origin_dev;
	struct dm_dev *cache_dev;
	struct tac_cache *cache;

	u32 block_sectors;
	enum tac_mode mode;
	bool format;			/* 'format' was given */
};

/* dm-tac-metadata.c */
int tac_md_open(struct tac_cache *c, u32 block_sectors, bool format,
		char **error);
void tac_md_close(struct tac_cache *c);
int tac_md_set_clean(struct tac_cache *c, bool clean);

#endif /* DM_TAC_H */
