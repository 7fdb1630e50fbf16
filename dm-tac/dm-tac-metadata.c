// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac on-disk metadata: the superblock at the start of the cache device,
 * the decision to format, reuse or refuse a cache device, and the layout of
 * the metadata areas that follow it.  See Documentation/dm-tac.rst,
 * "On-disk format", for the byte layout.
 *
 * Two superblock slots (sectors 0-7 and 8-15) are written alternately with
 * an increasing sequence number, so a torn superblock write leaves the
 * other slot intact; the valid slot with the higher sequence wins.
 *
 * This file owns the commits: the work item that serves flushes and FUA
 * writes (__tac_md_commit_bio()) runs on its own ordered workqueue, so no
 * flush ever waits behind the cleaner, and every buffer a commit needs is
 * allocated when the cache is opened, so a commit cannot fail for memory.
 */
#include <linux/ioprio.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "dm-tac.h"
#include "dm-tac-compat.h"

#define TAC_SB_MAGIC		0x31434154204d44ULL	/* "DM TAC1" */
#define TAC_SB_VERSION		1
#define TAC_MD_BLOCK		4096
#define TAC_MD_SECTORS		(TAC_MD_BLOCK >> SECTOR_SHIFT)
#define TAC_SB_SLOTS		2
#define TAC_SB_FLAG_CLEAN	1U

/*
 * Mapping and temperature pages: a 48-byte header (struct tac_disk_page),
 * then 8-byte mapping entries or 16-byte temperature records.
 */
#define TAC_PAGE_HDR		48
#define TAC_TEMP_RECS		((TAC_MD_BLOCK - TAC_PAGE_HDR) / 16)
#define TAC_TEMP_MIN_RECS	1024U
#define TAC_TEMP_MAX_RECS	BIT(20)
/* The most tac_layout() gives: a superblock asking more is forged. */
#define TAC_TEMP_MAX_PAGES	DIV_ROUND_UP(TAC_TEMP_MAX_RECS, TAC_TEMP_RECS)
#define TAC_TEMP_MAGIC		0x504d5443415444ULL	/* "DTACTMP" */

/* Mapping entry: origin block << 3 | nocrc << 2 | dirty << 1 | valid. */
#define TAC_ENTRY_VALID		1ULL
#define TAC_ENTRY_DIRTY		2ULL
#define TAC_ENTRY_NOCRC		4ULL
#define TAC_ENTRY_SHIFT		3

/* Pages are read and written in chunks of this many. */
#define TAC_MD_CHUNK		64

struct tac_disk_sb {
	__le64 magic;
	__le32 csum;		/* crc32c of the 4 KiB block, csum = 0 */
	__le32 version;
	__le64 seq;
	__le32 flags;
	__le32 block_sectors;
	__le64 origin_sectors;
	__le64 cache_sectors;
	__le64 nr_cblocks;
	__le64 map_start;
	__le64 map_pages;
	__le64 temp_start;
	__le32 temp_pages;
	__le32 temp_records;
	__le64 data_start;
	__le32 extent_blocks;
	__le32 mode;
	__le64 nr_dirty;
	u8 uuid[16];
} __packed;

static_assert(sizeof(struct tac_disk_sb) <= TAC_MD_BLOCK);

struct tac_disk_page {
	__le64 magic;
	__le32 csum;		/* crc32c of the 4 KiB block, csum = 0 */
	__le32 count;		/* temperature pages: records used */
	__le64 seq;		/* superblock sequence it belongs to */
	__le64 index;		/* page number within its area */
	u8 uuid[16];		/* the cache's, so stale pages never match */
} __packed;

static_assert(sizeof(struct tac_disk_page) == TAC_PAGE_HDR);

struct tac_disk_temp {
	__le64 extent;
	__le32 temp;
	__le32 pad;
} __packed;

static u32 tac_md_csum(const void *block)
{
	/* The checksum field is at the same offset in every metadata block. */
	u32 crc = tac_crc32c(~0U, block, 8);

	crc = tac_crc32c(crc, "\0\0\0\0", 4);
	return ~tac_crc32c(crc, block + 12, TAC_MD_BLOCK - 12);
}

/*
 * Writes a commit has in flight at once (tac_write_changed()): each ends
 * in tac_md_batch_done(); the batch is done when the last one is.
 */
struct tac_md_batch {
	atomic_t pending;		/* writes in flight, + 1 while issuing */
	int error;
	struct completion done;
};

static void tac_md_batch_done(unsigned long error, void *context)
{
	struct tac_md_batch *b = context;

	if (error)
		WRITE_ONCE(b->error, -EIO);
	if (atomic_dec_and_test(&b->pending))
		complete(&b->done);
}

/* Synchronous I/O, or one write of @batch (its result in @batch). */
static int __tac_md_io(struct tac_cache *c, blk_opf_t opf, sector_t sector,
		       void *buf, unsigned int sectors,
		       struct tac_md_batch *batch)
{
	struct dm_io_region where = {
		.bdev = c->cache,
		.sector = sector,
		.count = sectors,
	};
	struct dm_io_request req = {
		.bi_opf = opf,
		.notify.fn = batch ? tac_md_batch_done : NULL,
		.notify.context = batch,
		.client = c->md.io_client,
	};
	int r;

	if (is_vmalloc_addr(buf)) {
		req.mem.type = DM_IO_VMA;
		req.mem.ptr.vma = buf;
	} else {
		req.mem.type = DM_IO_KMEM;
		req.mem.ptr.addr = buf;
	}
	if (batch)
		atomic_inc(&batch->pending);
	r = dm_io(&req, 1, &where, NULL, IOPRIO_DEFAULT);
	if (r && batch) {
		/*
		 * Refused before it was issued (dm-io could not describe the
		 * memory): no completion will come.  An asynchronous dm_io()
		 * that calls back and fails too is only a read of several
		 * regions.
		 */
		WRITE_ONCE(batch->error, r);
		atomic_dec(&batch->pending);
	}
	return r;
}

static int tac_md_io(struct tac_cache *c, blk_opf_t opf, sector_t sector,
		     void *buf, unsigned int sectors)
{
	return __tac_md_io(c, opf, sector, buf, sectors, NULL);
}

static bool tac_zeroed(const void *buf, size_t len)
{
	return !memchr_inv(buf, 0, len);
}

/*
 * Lay out a cache device of @cache_sectors: two superblock slots, the
 * mapping area (two slots per page), the temperature area, then data
 * blocks aligned to the block size.  Returns false if not even one data
 * block fits.
 */
static u32 tac_entries_per_sector(u32 units);

/* Data checksum units per block: 4 KiB each, at most 32 per block. */
u32 tac_units(u32 block_sectors)
{
	return block_sectors / max(8U, block_sectors / 32);
}

static u64 tac_map_pages(u64 nr_cblocks, u32 block_sectors)
{
	u32 per_page = TAC_MD_SECTORS *
		       tac_entries_per_sector(tac_units(block_sectors));

	return DIV_ROUND_UP_ULL(nr_cblocks, per_page);
}

static bool tac_layout(struct tac_geometry *g, u64 cache_sectors,
		       u32 block_sectors, u64 origin_sectors)
{
	u64 upper = div_u64(cache_sectors, block_sectors);
	u64 recs = clamp_t(u64, upper >> 2, TAC_TEMP_MIN_RECS,
			   TAC_TEMP_MAX_RECS);
	u64 n = upper, meta;
	int i;

	g->block_sectors = block_sectors;
	g->origin_sectors = origin_sectors;
	g->map_start = TAC_SB_SLOTS * TAC_MD_SECTORS;
	g->temp_pages = DIV_ROUND_UP_ULL(recs, TAC_TEMP_RECS);
	/* Shrinking n only shrinks the map area: two rounds converge. */
	for (i = 0; i < 3; i++) {
		g->map_pages = tac_map_pages(n, block_sectors);
		g->temp_start = g->map_start + g->map_pages * TAC_MD_SECTORS;
		meta = g->temp_start + (u64)g->temp_pages * TAC_MD_SECTORS;
		g->data_start = round_up(meta, block_sectors);
		if (g->data_start + block_sectors > cache_sectors)
			return false;
		n = div_u64(cache_sectors - g->data_start, block_sectors);
	}
	g->nr_cblocks = min_t(u64, n, U32_MAX);
	g->map_pages = tac_map_pages(g->nr_cblocks, block_sectors);
	return true;
}

static void tac_sb_fill(struct tac_cache *c, struct tac_disk_sb *sb,
			bool clean)
{
	const struct tac_geometry *g = &c->md.geo;

	memset(sb, 0, TAC_MD_BLOCK);
	sb->magic = cpu_to_le64(TAC_SB_MAGIC);
	sb->version = cpu_to_le32(TAC_SB_VERSION);
	sb->seq = cpu_to_le64(c->md.seq);
	sb->flags = cpu_to_le32(clean ? TAC_SB_FLAG_CLEAN : 0);
	sb->block_sectors = cpu_to_le32(g->block_sectors);
	sb->origin_sectors = cpu_to_le64(g->origin_sectors);
	sb->cache_sectors = cpu_to_le64(bdev_nr_sectors(c->cache));
	sb->nr_cblocks = cpu_to_le64(g->nr_cblocks);
	sb->nr_dirty = cpu_to_le64(c->md.nr_dirty);
	sb->map_start = cpu_to_le64(g->map_start);
	sb->map_pages = cpu_to_le64(g->map_pages);
	sb->temp_start = cpu_to_le64(g->temp_start);
	sb->temp_pages = cpu_to_le32(g->temp_pages);
	sb->temp_records = cpu_to_le32(c->md.temp_records);
	sb->data_start = cpu_to_le64(g->data_start);
	sb->extent_blocks = cpu_to_le32(c->md.extent_blocks);
	sb->mode = cpu_to_le32(c->mode);
	memcpy(sb->uuid, &c->md.uuid, sizeof(sb->uuid));
}

/*
 * Whether superblock @a says anything @b does not: any field but the
 * sequence, the checksum and how many dirty blocks there are (only
 * whether there are any counts: it decides what a damaged map means).
 */
static bool tac_sb_news(const struct tac_disk_sb *a,
			const struct tac_disk_sb *b)
{
	size_t flags = offsetof(struct tac_disk_sb, flags);
	size_t nr_dirty = offsetof(struct tac_disk_sb, nr_dirty);
	size_t uuid = offsetof(struct tac_disk_sb, uuid);

	return a->magic != b->magic || a->version != b->version ||
	       memcmp((const u8 *)a + flags, (const u8 *)b + flags,
		      nr_dirty - flags) ||
	       !a->nr_dirty != !b->nr_dirty ||
	       memcmp((const u8 *)a + uuid, (const u8 *)b + uuid,
		      TAC_MD_BLOCK - uuid);
}

/*
 * Write the next superblock slot (FUA: durable on return).  Holds
 * md.lock.  A failed write keeps its sequence number, so the next one
 * goes to the same slot again: the other slot holds the last superblock
 * known to be good, and only a write known to have landed may replace it.
 *
 * First a flush of its own, which makes everything written before it
 * durable (a save's temperature pages, format's and a load's empty map
 * pages, and a commit's data), not REQ_PREFLUSH on the write:
 * over a cache device that is itself a dm device (dm-linear, dm-crypt),
 * dm runs a write's REQ_PREFLUSH as an empty flush, then the write, and
 * ends the bio with the write's status alone: a failed flush would go
 * unseen and a commit would call map pages durable that are not.  An
 * empty flush's error is returned.  Same round trips to the device.
 */
static int tac_sb_write(struct tac_cache *c, bool clean)
{
	int r;

	lockdep_assert_held(&c->md.lock);
	c->md.seq++;
	tac_sb_fill(c, c->md.buf, clean);
	((struct tac_disk_sb *)c->md.buf)->csum =
		cpu_to_le32(tac_md_csum(c->md.buf));
	r = blkdev_issue_flush(c->cache);
	if (!r)
		r = tac_md_io(c, REQ_OP_WRITE | REQ_SYNC | REQ_FUA,
			      (c->md.seq % TAC_SB_SLOTS) * TAC_MD_SECTORS,
			      c->md.buf, TAC_MD_SECTORS);
	if (r) {
		DMERR("writing the superblock of the cache device failed: %d",
		      r);
		c->md.seq--;
		c->md.sb_known = false;
	} else {
		memcpy(c->md.sb_last, c->md.buf, TAC_MD_BLOCK);
		c->md.sb_known = true;
	}
	return r;
}

/*
 * Whether a commit must write the superblock: only when it would say
 * something the last one written does not (tac_sb_news()), or nothing is
 * known of that one.  Map sectors are valid on their own and carry no
 * sequence number, so a commit that only changes entries needs none.
 * The superblock's nr_dirty is then the count at its last write, 0 only
 * if there were none.  Leaves the superblock filled in md.buf.
 */
static bool tac_sb_wanted(struct tac_cache *c, bool clean)
{
	lockdep_assert_held(&c->md.lock);
	if (!c->md.sb_known)
		return true;
	tac_sb_fill(c, c->md.buf, clean);
	return tac_sb_news(c->md.buf, c->md.sb_last);
}

/*
 * Marking the cache unclean (at resume) writes both slots.  The other slot
 * still holds the clean superblock of the last save, and while the device
 * runs the map on disk falls behind the cache (clean blocks are reused
 * with no commit): should the newest slot ever fail its checksum, the
 * fallback to the other slot must not find "clean" and trust that map.
 * Only the first write decides the resume: once it has landed, the
 * newest slot says unclean, and a failed second one is retried by the
 * next superblock write (tac_sb_write() keeps its slot).
 */
int tac_md_set_clean(struct tac_cache *c, bool clean)
{
	int r;

	mutex_lock(&c->md.lock);
	c->md.saved = clean;
	r = tac_sb_write(c, clean);
	if (!r && !clean && tac_sb_write(c, clean))
		DMWARN("marking the older superblock slot unclean too failed: the next superblock write retries it");
	/*
	 * commit_interval counts from the start too: with last_commit still
	 * 0, the first change after a create was committed at the next tick.
	 */
	c->md.last_commit = jiffies;
	mutex_unlock(&c->md.lock);
	return r;
}

/* ------------------------------------------------------------------ */
/* Mapping sectors and temperature pages */

/*
 * The mapping area is one copy, written in place, in 512-byte sectors that
 * are each valid on their own: a header (crc32c seeded per cache, sector
 * index) and entries of an origin block with flags and the 16-bit
 * checksums of the block's data units.  A sector is written only after the
 * data its entries describe is durable, so whichever mix of old and new
 * sectors a power cut leaves describes data that is on the device.
 */
#define TAC_SECTOR_HDR		8
/* Entries of a sector at most: one data unit per block. */
#define TAC_SECTOR_MAX_ENTRIES	((SECTOR_SIZE - TAC_SECTOR_HDR) / 10)

static u32 tac_entry_bytes(struct tac_cache *c)
{
	return 8 + 2 * c->units;
}

static u32 tac_entries_per_sector(u32 units)
{
	return (SECTOR_SIZE - TAC_SECTOR_HDR) / (8 + 2 * units);
}

static u32 tac_sector_csum(struct tac_cache *c, const void *sector)
{
	return tac_crc32c(c->md.seed, sector + 4, SECTOR_SIZE - 4);
}

static u32 tac_blocks_per_page(struct tac_cache *c)
{
	return TAC_MD_SECTORS * tac_entries_per_sector(c->units);
}

/* After a durable commit of page @pgno: release what it made free. */
static void __tac_page_committed(struct tac_cache *c, u64 pgno)
{
	u32 per = c->md.page_blocks, cb;
	u64 last = min_t(u64, (pgno + 1) * per, c->nr_cblocks);

	for (cb = pgno * per; cb < last; cb++)
		__tac_entry_committed(c, cb);
}

/*
 * Fill one map page (8 sectors) from the in-core state; true if an entry
 * of it waits for this commit to release its block (CB_CLEAN_WRITTEN:
 * tac_commit_done() walks only such pages).  c->lock is taken per sector,
 * not for the page: each sector is valid on its own, as each page already
 * was (a commit captures its pages one after another, and load keeps the
 * first of two entries of one origin block), so a sector captured a
 * moment after the one before it is no different from the next page.
 * The sector's checksum is taken after the lock is dropped: the page is
 * ours (md.lock).  A commit's CPU time is mostly this loop, once per
 * entry of every page it writes: the policy is asked for a sector's
 * mappings in one call, and a block state that already says what the
 * entry says (most of them) is left alone.
 */
static bool tac_map_page_fill(struct tac_cache *c, void *page, u64 pgno)
{
	u32 per = tac_entries_per_sector(c->units), eb = tac_entry_bytes(c);
	u64 sector0 = pgno * TAC_MD_SECTORS;
	tac_oblock_t obs[TAC_SECTOR_MAX_ENTRIES];
	u8 state[TAC_SECTOR_MAX_ENTRIES];
	bool release = false, dirty;
	u32 s, i, u, n;

	memset(page, 0, TAC_MD_BLOCK);
	for (s = 0; s < TAC_MD_SECTORS; s++) {
		void *sec = page + s * SECTOR_SIZE;
		u64 first = (sector0 + s) * per;

		n = first < c->nr_cblocks ?
		    min_t(u64, per, c->nr_cblocks - first) : 0;
		spin_lock_irq(&c->lock);
		if (n)
			tac_policy_mappings(c->policy, to_cblock(first), n,
					    obs, state);
		for (i = 0; i < n; i++) {
			u32 cb = first + i;
			u16 st = tac_cb(c, cb);
			void *e = sec + TAC_SECTOR_HDR + i * eb;
			__le16 *crc = e + 8;
			u64 v;

			if (state[i] == TAC_MAP_NONE || (st & CB_PENDING)) {
				if (!tac_entry_current(st, false))
					release |= __tac_entry_written(c, cb,
								       false);
				continue;
			}
			dirty = tac_entry_dirty(st, state[i] == TAC_MAP_DIRTY);
			v = from_oblock(obs[i]) << TAC_ENTRY_SHIFT |
			    TAC_ENTRY_VALID | (dirty ? TAC_ENTRY_DIRTY : 0);
			for (u = 0; u < c->units; u++) {
				u32 x = c->crc[(u64)cb * c->units + u];

				/* Readers before per-unit "unknown": nocrc. */
				if (x == TAC_CRC_UNKNOWN)
					v |= TAC_ENTRY_NOCRC;
				put_unaligned_le16(x == TAC_CRC_UNKNOWN ? 0 :
						   tac_crc16(x), &crc[u]);
			}
			put_unaligned_le64(v, e);
			if (!tac_entry_current(st, dirty))
				release |= __tac_entry_written(c, cb, dirty);
		}
		spin_unlock_irq(&c->lock);
		*(__le32 *)(sec + 4) = cpu_to_le32(sector0 + s);
		*(__le32 *)sec = cpu_to_le32(tac_sector_csum(c, sec));
	}
	return release;
}

/* Format: write every map page with no entries. */
static int tac_md_write_empty_maps(struct tac_cache *c)
{
	u64 p, k, pages = c->md.geo.map_pages;
	void *buf;
	int r = 0;
	u32 i, sct;

	buf = kvzalloc(TAC_MD_CHUNK * TAC_MD_BLOCK, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (p = 0; p < pages && !r; p += k) {
		k = min_t(u64, TAC_MD_CHUNK, pages - p);
		for (i = 0; i < k; i++) {
			for (sct = 0; sct < TAC_MD_SECTORS; sct++) {
				void *sec = buf + i * TAC_MD_BLOCK +
					    sct * SECTOR_SIZE;
				u32 index = (p + i) * TAC_MD_SECTORS + sct;

				*(__le32 *)(sec + 4) = cpu_to_le32(index);
				*(__le32 *)sec =
					cpu_to_le32(tac_sector_csum(c, sec));
			}
		}
		r = tac_md_io(c, REQ_OP_WRITE | REQ_SYNC,
			      c->md.geo.map_start + p * TAC_MD_SECTORS, buf,
			      k * TAC_MD_SECTORS);
	}
	kvfree(buf);
	return r;
}

/* Check one map page's sectors; -EILSEQ with *@bad on damage. */
static int tac_map_page_check(struct tac_cache *c, const void *page,
			      u64 pgno, u64 *bad)
{
	u64 sector0 = pgno * TAC_MD_SECTORS;
	u32 s;

	for (s = 0; s < TAC_MD_SECTORS; s++) {
		const void *sec = page + s * SECTOR_SIZE;

		if (le32_to_cpu(*(__le32 *)sec) != tac_sector_csum(c, sec) ||
		    le32_to_cpu(*(__le32 *)(sec + 4)) != (u32)(sector0 + s)) {
			*bad = sector0 + s;
			return -EILSEQ;
		}
	}
	return 0;
}

/*
 * Load one checked map page: dirty entries always (their data exists
 * nowhere else), clean ones with @load_clean.  A dirty block recovered
 * after an unclean stop may have had a write in flight: its checksums
 * are not trusted until it is read or rewritten whole.
 */
static int tac_map_page_load(struct tac_cache *c, const void *page,
			     u64 pgno, bool load_clean, u64 *bad)
{
	u32 per = tac_entries_per_sector(c->units), eb = tac_entry_bytes(c);
	u64 sector0 = pgno * TAC_MD_SECTORS;
	u32 s, i, u;
	int r = 0;

	spin_lock_irq(&c->lock);
	for (s = 0; s < TAC_MD_SECTORS && !r; s++) {
		const void *sec = page + s * SECTOR_SIZE;
		u64 first = (sector0 + s) * per;

		for (i = 0; i < per && first + i < c->nr_cblocks && !r; i++) {
			const void *e = sec + TAC_SECTOR_HDR + i * eb;
			const __le16 *crc = e + 8;
			u64 v = get_unaligned_le64(e);
			u64 ob = v >> TAC_ENTRY_SHIFT;
			bool dirty = v & TAC_ENTRY_DIRTY;
			u32 cb = first + i;
			tac_cblock_t other;

			if (!(v & TAC_ENTRY_VALID) || (!load_clean && !dirty))
				continue;
			if (ob < c->nr_oblocks && !c->md.was_clean &&
			    !tac_policy_lookup(c->policy, to_oblock(ob),
					       &other, TAC_PROBE)) {
				/*
				 * A crash in a commit can leave the entry of a
				 * discarded dirty block beside that of its new
				 * copy, not yet flushed: either is data the
				 * block may hold after a crash.
				 */
				DMWARN_LIMIT("cache %pUb: origin block %llu has two dirty entries (cache blocks %u and %u): keeping the first",
					     &c->md.uuid, ob, from_cblock(other),
					     cb);
				c->md.rewrite = true;
				continue;
			}
			if (ob >= c->nr_oblocks ||
			    tac_policy_load_mapping(c->policy, to_cblock(cb),
						    to_oblock(ob), dirty)) {
				*bad = sector0 + s;
				r = -EILSEQ;
				break;
			}
			for (u = 0; u < c->units; u++)
				c->crc[(u64)cb * c->units + u] =
					(v & TAC_ENTRY_NOCRC) ||
					(dirty && !c->md.was_clean) ?
					TAC_CRC_UNKNOWN :
					get_unaligned_le16(&crc[u]);
			if (dirty)
				__tac_entry_written(c, cb, true);
		}
	}
	spin_unlock_irq(&c->lock);
	return r;
}

/* Read every map page: check all (@load false) or load all. */
static int tac_md_read_maps(struct tac_cache *c, bool load, bool load_clean,
			    u64 *bad)
{
	u64 p, k, pages = c->md.geo.map_pages;
	void *buf;
	int r = 0;

	buf = kvmalloc(TAC_MD_CHUNK * TAC_MD_BLOCK, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (p = 0; p < pages && !r; p += k) {
		k = min_t(u64, TAC_MD_CHUNK, pages - p);
		r = tac_md_io(c, REQ_OP_READ | REQ_SYNC,
			      c->md.geo.map_start + p * TAC_MD_SECTORS, buf,
			      k * TAC_MD_SECTORS);
		for (u64 i = 0; i < k && !r; i++) {
			const void *page = buf + i * TAC_MD_BLOCK;

			r = load ? tac_map_page_load(c, page, p + i,
						     load_clean, bad) :
				   tac_map_page_check(c, page, p + i, bad);
		}
	}
	kvfree(buf);
	return r;
}

/* Temperature pages: a struct tac_disk_page header, then records. */
static void tac_page_seal(struct tac_cache *c, void *block, u64 magic,
			  u64 index, u64 seq, u32 count)
{
	struct tac_disk_page *h = block;

	h->magic = cpu_to_le64(magic);
	h->count = cpu_to_le32(count);
	h->seq = cpu_to_le64(seq);
	h->index = cpu_to_le64(index);
	memcpy(h->uuid, &c->md.uuid, sizeof(h->uuid));
	h->csum = cpu_to_le32(tac_md_csum(block));
}

/* A page of this cache, at this place, of a committed sequence. */
static bool tac_page_ok(struct tac_cache *c, const void *block, u64 magic,
			u64 index, u64 max_seq)
{
	const struct tac_disk_page *h = block;

	return le64_to_cpu(h->magic) == magic &&
	       le32_to_cpu(h->csum) == tac_md_csum(block) &&
	       le64_to_cpu(h->index) == index &&
	       le64_to_cpu(h->seq) <= max_seq &&
	       !memcmp(h->uuid, &c->md.uuid, sizeof(h->uuid));
}

struct tac_temp_ctx {
	struct tac_disk_temp *rec;
	void *buf;
	u32 max, n;
};

static int tac_temp_collect(void *ctx, const struct tac_extent_rec *r)
{
	struct tac_temp_ctx *t = ctx;
	u32 page = t->n / TAC_TEMP_RECS, i = t->n % TAC_TEMP_RECS;
	struct tac_disk_temp *rec;

	if (t->n == t->max)
		return 1;
	if (!r->temp)
		return 0;
	rec = t->buf + (u64)page * TAC_MD_BLOCK + TAC_PAGE_HDR;
	rec[i].extent = cpu_to_le64(from_extent(r->extent));
	rec[i].temp = cpu_to_le32(r->temp);
	t->n++;
	return 0;
}

/* Save the extent temperatures; returns how many, or a -errno. */
static int tac_md_write_temps(struct tac_cache *c, u64 seq)
{
	u32 pages = c->md.geo.temp_pages, p, used;
	struct tac_temp_ctx t = {};
	int r;

	unsigned int noio;

	if (!tac_policy_has_extents(c->policy))
		return 0;
	/* Suspended: reclaim must not write to this device to find memory. */
	noio = memalloc_noio_save();
	t.buf = vzalloc((size_t)pages * TAC_MD_BLOCK);
	memalloc_noio_restore(noio);
	if (!t.buf)
		return -ENOMEM;
	t.max = pages * TAC_TEMP_RECS;

	spin_lock_irq(&c->lock);
	tac_policy_walk_extents(c->policy, tac_temp_collect, &t);
	spin_unlock_irq(&c->lock);

	used = DIV_ROUND_UP(t.n, TAC_TEMP_RECS);
	for (p = 0; p < used; p++) {
		u32 count = min_t(u32, TAC_TEMP_RECS, t.n - p * TAC_TEMP_RECS);

		tac_page_seal(c, t.buf + (u64)p * TAC_MD_BLOCK, TAC_TEMP_MAGIC,
			      p, seq, count);
	}
	r = used ? tac_md_io(c, REQ_OP_WRITE | REQ_SYNC, c->md.geo.temp_start,
			     t.buf, used * TAC_MD_SECTORS) : 0;
	vfree(t.buf);
	return r ? r : t.n;
}

/*
 * Write the map pages set in @pages (all of them with @all), in chunks:
 * each chunk's entries are captured first, then the cache is flushed so
 * that every write those entries describe is durable, then the chunk is
 * written, every page with FUA and all at once.  When it returns 0 the
 * pages are durable.  Entries changed after their capture wait for the
 * next commit.  Caller holds md.lock (the chunk buffer is c->md.chunk).
 */
static int tac_write_changed(struct tac_cache *c, unsigned long *pages,
			     bool all)
{
	u64 n = c->md.geo.map_pages, pg = 0, list[TAC_MD_CHUNK];
	struct tac_md_batch b;
	void *buf = c->md.chunk;
	u32 k, i;
	int r = 0;

	init_completion(&b.done);
	bitmap_zero(c->md.release, n);

	for (;;) {
		for (k = 0; k < TAC_MD_CHUNK; k++, pg++) {
			if (!all)
				pg = find_next_bit(pages, n, pg);
			if (pg >= n)
				break;
			list[k] = pg;
			if (tac_map_page_fill(c, buf + k * TAC_MD_BLOCK, pg))
				__set_bit(pg, c->md.release);
		}
		if (!k)
			break;
		/*
		 * The data the entries describe first (filled above, so
		 * every write they count has completed: it is under this
		 * flush).  Then the runs of pages all at once, each with
		 * FUA: durable when it completes, so no flush after them.
		 */
		r = blkdev_issue_flush(c->cache);
		if (r)
			break;
		atomic_set(&b.pending, 1);
		b.error = 0;
		reinit_completion(&b.done);
		for (i = 0; i < k; ) {
			u32 run = 1;

			while (i + run < k && list[i + run] == list[i] + run)
				run++;
			if (__tac_md_io(c, REQ_OP_WRITE | REQ_SYNC | REQ_FUA,
					c->md.geo.map_start +
					list[i] * TAC_MD_SECTORS,
					buf + i * TAC_MD_BLOCK,
					run * TAC_MD_SECTORS, &b))
				break;
			i += run;
		}
		if (!atomic_dec_and_test(&b.pending))
			wait_for_completion_io(&b.done);
		r = READ_ONCE(b.error);
		if (r)
			break;
		if (k < TAC_MD_CHUNK)
			break;
	}
	return r;
}

/*
 * The pages the last tac_write_changed() wrote are durable: release the
 * blocks their entries freed, in the pages that have any (md.release; a
 * commit that only rewrote dirty entries walks none).  One page at a time
 * under c->lock.  Caller holds md.lock.
 */
static void tac_commit_done(struct tac_cache *c)
{
	u64 pg;

	for_each_set_bit(pg, c->md.release, c->md.geo.map_pages) {
		spin_lock_irq(&c->lock);
		__tac_page_committed(c, pg);
		spin_unlock_irq(&c->lock);
	}
}

/*
 * A metadata commit: the superblock if it has news (tac_sb_wanted()),
 * then a flush and the map pages changed since the last one (FUA).  Two
 * round trips to the cache device when the superblock has nothing new
 * to say.  When it returns 0,
 * every write completed before it started is durable, with the metadata
 * that finds it.  A failure is latched: write-back can no longer promise
 * durability.  May sleep; never allocates.
 *
 * Its superblock says clean only if tac_md_save() has flushed the origin
 * and the device has not been resumed since (c->md.saved, under md.lock).  A suspend stops
 * the device before it saves: a commit queued before then (the interval
 * commit, a flush message) runs inside or after the suspend, and must not
 * call clean entries trustworthy while the origin's copies of them may
 * still be in its volatile cache, nor after a save whose origin flush
 * failed.
 */
int tac_md_commit(struct tac_cache *c)
{
	unsigned long *pages = c->md.pages;
	u64 n = c->md.geo.map_pages;
	bool any, sb;
	int r;

	mutex_lock(&c->md.lock);
	spin_lock_irq(&c->lock);
	bitmap_copy(pages, c->md_changed, n);
	bitmap_zero(c->md_changed, n);
	c->md.nr_dirty = __tac_nr_dirty(c);
	spin_unlock_irq(&c->lock);

	/*
	 * The superblock first, when it has news: once dirty blocks may
	 * exist, it says so before any entry that calls a block dirty is
	 * durable, so a damaged map is never taken for one without dirty
	 * data.  (The other way, an entry may still call a block dirty
	 * under a superblock that says there are none: the cleaner has
	 * flushed that block's data to the origin, so a cold start loses
	 * nothing.)  Its flush also stands for the commit's own when no
	 * page changed.
	 */
	any = !bitmap_empty(pages, n);
	sb = tac_sb_wanted(c, c->md.saved);
	r = sb ? tac_sb_write(c, c->md.saved) : 0;
	if (!r && any)
		r = tac_write_changed(c, pages, false);
	else if (!r && !sb)
		r = blkdev_issue_flush(c->cache);
	c->md.last_commit = jiffies;
	if (!r && any)
		tac_commit_done(c);
	spin_lock_irq(&c->lock);
	if (r) {
		bitmap_or(c->md_changed, c->md_changed, pages, n);
		__tac_fail(c, "a metadata commit failed");
	} else {
		c->n.commits++;
	}
	spin_unlock_irq(&c->lock);
	mutex_unlock(&c->md.lock);
	return r;
}

/*
 * The commit worker: one commit serves every flush and FUA write queued
 * before it started (group commit); later ones wait for the next.
 */
static void tac_commit_worker(struct work_struct *work)
{
	struct tac_cache *c = container_of(work, struct tac_cache, commit_work);
	struct bio_list waiters;
	struct bio *bio;
	int r;

	spin_lock_irq(&c->lock);
	waiters = c->commit_waiters;
	bio_list_init(&c->commit_waiters);
	spin_unlock_irq(&c->lock);

	r = tac_md_commit(c);
	while ((bio = bio_list_pop(&waiters))) {
		tac_pb(bio)->route = ROUTE_DONE;
		bio->bi_status = errno_to_blk_status(r);
		bio_endio(bio);
	}
}

/* @bio completes after a commit that starts after now.  Holds c->lock. */
void __tac_md_commit_bio(struct tac_cache *c, struct bio *bio)
{
	bio_list_add(&c->commit_waiters, bio);
	queue_work(c->commit_wq, &c->commit_work);
}

/* A commit soon, with no one waiting for it (the commit interval). */
void tac_md_commit_kick(struct tac_cache *c)
{
	queue_work(c->commit_wq, &c->commit_work);
}

/*
 * Clean shutdown: every map page (entries captured after all I/O has
 * drained, the data flushed first) and the temperatures, then a clean
 * superblock (whose own flush makes them durable before it).
 * Temperatures are a hint: without memory for them they are not saved.
 *
 * After a clean shutdown the clean entries are trusted: each says the
 * origin holds what the cache block holds.  Fills and write-through
 * writes since the origin's last flush may still be in the origin's
 * volatile cache, so the origin is flushed before any entry is written;
 * if that fails the superblock stays unclean and the next start drops
 * the clean entries.
 */
int tac_md_save(struct tac_cache *c)
{
	unsigned long *pages = c->md.pages;
	u64 n = c->md.geo.map_pages;
	u64 seq;
	int r;

	flush_work(&c->commit_work);
	r = blkdev_issue_flush(c->origin);
	if (r) {
		DMERR("flushing the origin device failed (%d): the cache is not saved as clean",
		      r);
		return r;
	}
	mutex_lock(&c->md.lock);
	bitmap_fill(pages, n);
	spin_lock_irq(&c->lock);
	bitmap_zero(c->md_changed, n);
	c->md.nr_dirty = __tac_nr_dirty(c);
	spin_unlock_irq(&c->lock);
	/* As a commit does (tac_md_commit()): news first, unclean. */
	r = tac_sb_wanted(c, false) ? tac_sb_write(c, false) : 0;
	seq = c->md.seq + 1;
	if (!r)
		r = tac_write_changed(c, pages, true);
	if (!r) {
		r = tac_md_write_temps(c, seq);
		if (r == -ENOMEM) {
			DMWARN("no memory to save the extent temperatures: the next start is cooler");
			r = 0;
		}
		c->md.temp_records = r > 0 ? r : 0;
		c->md.extent_blocks = c->tun.policy.extent_blocks;
		r = r < 0 ? r : 0;
	}
	if (!r)
		r = tac_sb_write(c, true);
	if (!r) {
		tac_commit_done(c);
		c->md.saved = true;
	} else {
		/*
		 * Not one page of it can be counted on: the next commit (a
		 * flush after resume) writes them all, or a dirty entry
		 * changed before the suspend would never reach the disk.
		 */
		spin_lock_irq(&c->lock);
		bitmap_or(c->md_changed, c->md_changed, pages, n);
		spin_unlock_irq(&c->lock);
	}
	mutex_unlock(&c->md.lock);
	if (r)
		DMERR("saving the cache state failed (%d)", r);
	return r;
}

static void tac_md_load_temps(struct tac_cache *c)
{
	u64 need = DIV_ROUND_UP_ULL((u64)c->md.temp_records, TAC_TEMP_RECS);
	u32 pages = need, p, i;
	u32 loaded = 0;
	void *buf;

	if (!need || !tac_policy_has_extents(c->policy))
		return;
	if (need > c->md.geo.temp_pages) {
		DMWARN("superblock counts %u saved temperatures, more than the area holds: temperatures start cold",
		       c->md.temp_records);
		return;
	}
	if (c->md.extent_blocks != c->tun.policy.extent_blocks) {
		DMINFO("saved temperatures are for %u-block extents, not %u: not loaded",
		       c->md.extent_blocks, c->tun.policy.extent_blocks);
		return;
	}
	buf = vmalloc((size_t)pages * TAC_MD_BLOCK);
	if (!buf)
		return;
	if (tac_md_io(c, REQ_OP_READ | REQ_SYNC, c->md.geo.temp_start, buf,
		      pages * TAC_MD_SECTORS))
		goto out;
	for (p = 0; p < pages; p++) {
		void *block = buf + (u64)p * TAC_MD_BLOCK;
		u32 count = le32_to_cpu(((struct tac_disk_page *)block)->count);

		if (!tac_page_ok(c, block, TAC_TEMP_MAGIC, p, c->md.seq) ||
		    le64_to_cpu(((struct tac_disk_page *)block)->seq) !=
		    c->md.seq || count > TAC_TEMP_RECS) {
			DMWARN("saved temperature page %u is damaged: temperatures start cold",
			       p);
			goto out;
		}
	}
	spin_lock_irq(&c->lock);
	for (p = 0; p < pages; p++) {
		void *block = buf + (u64)p * TAC_MD_BLOCK;
		struct tac_disk_temp *rec = block + TAC_PAGE_HDR;
		u32 count = le32_to_cpu(((struct tac_disk_page *)block)->count);

		for (i = 0; i < count; i++) {
			tac_extent_t e = to_extent(le64_to_cpu(rec[i].extent));

			if (!tac_policy_load_extent(c->policy, e,
						    le32_to_cpu(rec[i].temp)))
				loaded++;
		}
	}
	spin_unlock_irq(&c->lock);
out:
	vfree(buf);
	if (loaded)
		DMINFO("cache %pUb: %u extent temperatures restored", &c->md.uuid,
		       loaded);
}

/*
 * Warm restart.  After a clean shutdown the saved mappings and
 * temperatures are loaded; after an unclean one the cache's contents may
 * not match the origin (write-through writes both devices at once) and
 * are dropped.  A damaged page also means a cold start, never a guess.
 * A cold start over old entries first writes the whole map empty: commits
 * rewrite only the pages that change, so an old dirty entry left in
 * another page would come back after the next crash.
 */
int tac_md_load(struct tac_cache *c, bool discard_dirty, char **error)
{
	bool dirty_possible = c->md.last_mode == TAC_MODE_WRITEBACK ||
			      c->md.nr_dirty;
	bool wipe = true;
	u64 bad = 0;
	int r;

	mutex_lock(&c->md.lock);
	if (c->md.formatted) {
		wipe = false;
		goto out;
	}
	r = tac_md_read_maps(c, false, false, &bad);
	if (r == -EILSEQ && dirty_possible && !discard_dirty) {
		DMERR("cache %pUb: map sector %llu (cache device sector %llu) fails its checksum, and the cache may hold dirty data",
		      &c->md.uuid, bad, c->md.geo.map_start + bad);
		DMERR("to recover it: 'tacmeta writeback <cache_dev> <origin_dev>' copies what it can to the origin; to drop it: add 'discard_dirty' to the table line");
		*error = "Cache metadata is damaged and may hold dirty data (see the kernel log)";
		mutex_unlock(&c->md.lock);
		return r;
	}
	if (r == -EILSEQ) {
		DMWARN("cache %pUb: map sector %llu (cache device sector %llu) is damaged: starting cold",
		       &c->md.uuid, bad, c->md.geo.map_start + bad);
		goto out;
	}
	if (r) {
		*error = "Cannot read the cache's metadata";
		mutex_unlock(&c->md.lock);
		return r;
	}
	if (discard_dirty && dirty_possible) {
		DMWARN("cache %pUb: discard_dirty: the cache's dirty data is dropped, starting cold",
		       &c->md.uuid);
		goto out;
	}
	/*
	 * Temperatures first: the policy keys each restored clean block by
	 * its extent's temperature as it loads it, and would otherwise key
	 * them all at 0 and evict the hot ones as readily as the cold.
	 */
	if (c->md.was_clean)
		tac_md_load_temps(c);
	r = tac_md_read_maps(c, true, c->md.was_clean, &bad);
	if (r) {
		DMERR("cache %pUb: map sector %llu holds an impossible entry",
		      &c->md.uuid, bad);
		*error = "Cache metadata is inconsistent (see the kernel log)";
		mutex_unlock(&c->md.lock);
		return r;
	}
	wipe = false;
	/* What the map holds, not what the last superblock counted. */
	spin_lock_irq(&c->lock);
	c->md.nr_dirty = __tac_nr_dirty(c);
	spin_unlock_irq(&c->lock);
	if (c->md.rewrite) {
		/* The entry skipped must not come back after another crash. */
		bitmap_fill(c->md.pages, c->md.geo.map_pages);
		r = tac_write_changed(c, c->md.pages, true);
		if (!r)
			r = tac_sb_write(c, false);
		if (r) {
			*error = "Cannot write the cache's metadata";
			mutex_unlock(&c->md.lock);
			return r;
		}
		tac_commit_done(c);
	}
	if (!c->md.was_clean)
		DMINFO("cache %pUb: unclean shutdown: clean blocks dropped (they may not match the origin), %u dirty blocks recovered",
		       &c->md.uuid, c->disk_dirty);
out:
	r = wipe ? tac_md_write_empty_maps(c) : 0;
	if (!r && wipe) {
		c->md.nr_dirty = 0;
		c->md.temp_records = 0;
		r = tac_sb_write(c, c->md.was_clean);
	}
	mutex_unlock(&c->md.lock);
	if (r)
		*error = "Cannot write the cache's metadata";
	return r;
}

enum tac_sb_verdict {
	SB_EMPTY,		/* all zero */
	SB_VALID,
	SB_BAD_CSUM,		/* our magic, wrong checksum */
	SB_BAD_VERSION,		/* our magic, unknown format version */
	SB_FOREIGN,		/* something else */
};

static enum tac_sb_verdict tac_sb_check(const struct tac_disk_sb *sb)
{
	if (tac_zeroed(sb, TAC_MD_BLOCK))
		return SB_EMPTY;
	if (le64_to_cpu(sb->magic) != TAC_SB_MAGIC)
		return SB_FOREIGN;
	if (le32_to_cpu(sb->csum) != tac_md_csum(sb))
		return SB_BAD_CSUM;
	if (le32_to_cpu(sb->version) != TAC_SB_VERSION)
		return SB_BAD_VERSION;
	return SB_VALID;
}

/*
 * A checksummed superblock can still describe an impossible geometry.
 * Each area is checked against what is left of the device after the one
 * before it, so that no sum can wrap (a start near 2^64 would make the
 * data area wrap to sector 0, over the superblock).  @n < 2^32 and @bs <=
 * 2048, so the map area's and the data area's sizes cannot wrap.
 */
static bool tac_sb_sane(const struct tac_disk_sb *sb, u64 cache_sectors)
{
	u32 bs = le32_to_cpu(sb->block_sectors);
	u64 n = le64_to_cpu(sb->nr_cblocks);
	u64 temp = le64_to_cpu(sb->temp_start);
	u64 data = le64_to_cpu(sb->data_start);
	u32 temp_pages = le32_to_cpu(sb->temp_pages);
	u64 map_end;

	if (bs < 8 || bs > 2048 || !is_power_of_2(bs) || !n || n > U32_MAX)
		return false;
	if (le64_to_cpu(sb->map_start) != TAC_SB_SLOTS * TAC_MD_SECTORS ||
	    le64_to_cpu(sb->map_pages) != tac_map_pages(n, bs))
		return false;
	map_end = TAC_SB_SLOTS * TAC_MD_SECTORS +
		  tac_map_pages(n, bs) * TAC_MD_SECTORS;
	/* It sizes a vmalloc at load and at every save. */
	if (!temp_pages || temp_pages > TAC_TEMP_MAX_PAGES)
		return false;
	if (temp < map_end || temp > cache_sectors ||
	    (u64)temp_pages * TAC_MD_SECTORS > cache_sectors - temp)
		return false;
	if (data < temp + (u64)temp_pages * TAC_MD_SECTORS ||
	    data % bs || data > cache_sectors)
		return false;
	return n * bs <= cache_sectors - data;
}

static void tac_sb_load(struct tac_cache *c, const struct tac_disk_sb *sb)
{
	struct tac_geometry *g = &c->md.geo;

	g->block_sectors = le32_to_cpu(sb->block_sectors);
	g->origin_sectors = le64_to_cpu(sb->origin_sectors);
	g->nr_cblocks = le64_to_cpu(sb->nr_cblocks);
	g->map_start = le64_to_cpu(sb->map_start);
	g->map_pages = le64_to_cpu(sb->map_pages);
	g->temp_start = le64_to_cpu(sb->temp_start);
	g->temp_pages = le32_to_cpu(sb->temp_pages);
	g->data_start = le64_to_cpu(sb->data_start);
	memcpy(&c->md.uuid, sb->uuid, sizeof(c->md.uuid));
	c->md.seq = le64_to_cpu(sb->seq);
	c->md.temp_records = le32_to_cpu(sb->temp_records);
	c->md.last_mode = le32_to_cpu(sb->mode);
	c->md.nr_dirty = le64_to_cpu(sb->nr_dirty);
	c->md.extent_blocks = le32_to_cpu(sb->extent_blocks);
	c->md.was_clean = le32_to_cpu(sb->flags) & TAC_SB_FLAG_CLEAN;
}

/*
 * Decide what the cache device holds and either adopt its superblock or
 * format it.  Nothing is written unless every check has passed.
 */
static int tac_md_do_open(struct tac_cache *c, u32 block_sectors,
			  bool format, char **error)
{
	u64 cache_sectors = bdev_nr_sectors(c->cache);
	enum tac_sb_verdict v[TAC_SB_SLOTS];
	struct tac_disk_sb *sb[TAC_SB_SLOTS];
	int r, i, best = -1;

	if (!tac_layout(&c->md.geo, cache_sectors, block_sectors,
			c->origin_sectors)) {
		*error = "Cache device too small for the superblock, metadata and one block";
		return -EINVAL;
	}

	for (i = 0; i < TAC_SB_SLOTS; i++) {
		sb[i] = c->md.buf + i * TAC_MD_BLOCK;
		r = tac_md_io(c, REQ_OP_READ | REQ_SYNC, i * TAC_MD_SECTORS,
			      sb[i], TAC_MD_SECTORS);
		if (r) {
			*error = "Cannot read the cache device's superblock";
			return r;
		}
		v[i] = tac_sb_check(sb[i]);
		if (v[i] == SB_VALID &&
		    (best < 0 || le64_to_cpu(sb[i]->seq) >
				 le64_to_cpu(sb[best]->seq)))
			best = i;
	}

	/*
	 * Two empty slots mean a new device.  An empty first slot beside a
	 * superblock of ours in the second means the first was lost, not
	 * unused.  Our writes never leave a slot that is neither empty nor
	 * ours (a torn one still starts with our magic): such a slot is
	 * another program's, written after ours or before we were ever
	 * there (mkswap over the first 4 KiB, an md 1.2 or bcache superblock
	 * at 4 KiB), and the data area may be its data now, not cache blocks
	 * the other slot's map describes.
	 */
	if (format || (v[0] == SB_EMPTY && v[1] == SB_EMPTY))
		goto do_format;
	for (i = 0; i < TAC_SB_SLOTS; i++) {
		if (v[i] != SB_FOREIGN)
			continue;
		DMERR("superblock slot %d (at %u KiB) holds data that is not dm-tac's: another program wrote to this cache device; 'format' overwrites it",
		      i, i * 4);
		*error = "Cache device is not empty and not a dm-tac cache; use 'format' to overwrite it";
		return -EINVAL;
	}

	if (best < 0) {
		if (v[0] == SB_BAD_CSUM || v[1] == SB_BAD_CSUM) {
			DMERR("no superblock slot passes its checksum; 'format' discards the cache");
			*error = "Cache superblock checksum mismatch";
			return -EINVAL;
		}
		/* What is left: a slot of another format version. */
		i = v[0] == SB_BAD_VERSION ? 0 : 1;
		DMERR("superblock format version %u, this module reads %u",
		      le32_to_cpu(sb[i]->version), TAC_SB_VERSION);
		*error = "Cache superblock has an unsupported format version";
		return -EINVAL;
	}

	if (!tac_sb_sane(sb[best], cache_sectors)) {
		DMERR("superblock slot %d: impossible geometry (cache device shrunk?)",
		      best);
		*error = "Cache superblock geometry does not fit the cache device";
		return -EINVAL;
	}
	if (le32_to_cpu(sb[best]->block_sectors) != block_sectors) {
		DMERR("cache formatted with block_size %u, table says %u",
		      le32_to_cpu(sb[best]->block_sectors), block_sectors);
		*error = "Cache device was formatted with a different block size";
		return -EINVAL;
	}
	if (le64_to_cpu(sb[best]->origin_sectors) != c->origin_sectors) {
		DMERR("cache bound to an origin of %llu sectors, this one has %llu",
		      le64_to_cpu(sb[best]->origin_sectors),
		      c->origin_sectors);
		*error = "Cache device belongs to an origin of a different size";
		return -EINVAL;
	}
	tac_sb_load(c, sb[best]);
	c->md.seed = tac_crc32c(~0U, &c->md.uuid, sizeof(c->md.uuid));
	DMINFO("cache %pUb: reusing, %llu blocks, last shutdown %s",
	       &c->md.uuid, c->md.geo.nr_cblocks,
	       c->md.was_clean ? "clean" : "unclean");
	return 0;

do_format:
	uuid_gen(&c->md.uuid);
	c->md.seed = tac_crc32c(~0U, &c->md.uuid, sizeof(c->md.uuid));
	/*
	 * Slot 1 is wiped first, then every map sector is written empty (so
	 * a sector failing its checksum later means damage), then the
	 * superblock of sequence 2 goes to slot 0.
	 */
	c->md.seq = 1;
	c->md.was_clean = true;
	c->md.formatted = true;
	c->md.temp_records = 0;
	memset(c->md.buf, 0, TAC_MD_BLOCK);
	r = tac_md_io(c, REQ_OP_WRITE | REQ_SYNC, TAC_MD_SECTORS, c->md.buf,
		      TAC_MD_SECTORS);
	if (!r)
		r = tac_md_write_empty_maps(c);
	if (!r)
		r = tac_sb_write(c, true);
	if (r) {
		*error = "Cannot write the cache device's superblock";
		return r;
	}
	DMINFO("cache %pUb: formatted, %llu blocks of %u sectors, data at sector %llu",
	       &c->md.uuid, c->md.geo.nr_cblocks, block_sectors,
	       c->md.geo.data_start);
	return 0;
}

int tac_md_open(struct tac_cache *c, u32 block_sectors, bool format,
		char **error)
{
	int r;

	mutex_init(&c->md.lock);
	bio_list_init(&c->commit_waiters);
	/* The format path sets the same; __tac_md_changed() divides by it. */
	c->units = tac_units(block_sectors);
	/* The capture's arrays (tac_map_page_fill()): a unit per block. */
	if (WARN_ON(tac_entries_per_sector(c->units) >
		    TAC_SECTOR_MAX_ENTRIES)) {
		*error = "Internal error: no data checksum unit per block";
		return -EINVAL;
	}
	c->md.page_blocks = tac_blocks_per_page(c);
	c->md.buf = kzalloc(TAC_SB_SLOTS * TAC_MD_BLOCK, GFP_KERNEL);
	c->md.sb_last = kzalloc(TAC_MD_BLOCK, GFP_KERNEL);
	if (!c->md.buf || !c->md.sb_last) {
		*error = "Cannot allocate the metadata buffer";
		return -ENOMEM;
	}
	c->md.io_client = dm_io_client_create();
	if (IS_ERR(c->md.io_client)) {
		r = PTR_ERR(c->md.io_client);
		c->md.io_client = NULL;
		*error = "Cannot create the metadata I/O client";
		return r;
	}
	mutex_lock(&c->md.lock);
	r = tac_md_do_open(c, block_sectors, format, error);
	mutex_unlock(&c->md.lock);
	if (r)
		return r;

	/* Everything a commit needs, so that a commit never allocates. */
	INIT_WORK(&c->commit_work, tac_commit_worker);
	c->md.chunk = kvmalloc(TAC_MD_CHUNK * TAC_MD_BLOCK, GFP_KERNEL);
	c->md.pages = bitmap_zalloc(c->md.geo.map_pages, GFP_KERNEL);
	c->md.release = bitmap_zalloc(c->md.geo.map_pages, GFP_KERNEL);
	c->md_changed = bitmap_zalloc(c->md.geo.map_pages, GFP_KERNEL);
	c->commit_wq = alloc_ordered_workqueue("dm-tac-commit",
					       WQ_MEM_RECLAIM);
	if (!c->md.chunk || !c->md.pages || !c->md.release || !c->md_changed ||
	    !c->commit_wq) {
		*error = "Cannot allocate the metadata commit buffers";
		return -ENOMEM;
	}
	return 0;
}

void tac_md_close(struct tac_cache *c)
{
	if (c->commit_wq)
		destroy_workqueue(c->commit_wq);
	kvfree(c->md.chunk);
	bitmap_free(c->md.pages);
	bitmap_free(c->md.release);
	bitmap_free(c->md_changed);
	if (c->md.io_client)
		dm_io_client_destroy(c->md.io_client);
	kfree(c->md.buf);
	kfree(c->md.sb_last);
}
