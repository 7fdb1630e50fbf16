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
 */
#include <linux/crc32c.h>
#include <linux/ioprio.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "dm-tac.h"

#define TAC_SB_MAGIC		0x31434154204d44ULL	/* "DM TAC1" */
#define TAC_SB_VERSION		1
#define TAC_MD_BLOCK		4096
#define TAC_MD_SECTORS		(TAC_MD_BLOCK >> SECTOR_SHIFT)
#define TAC_SB_SLOTS		2
#define TAC_SB_FLAG_CLEAN	1U

/* Mapping page: a 40-byte header, then 8-byte entries (see the docs). */
#define TAC_MAP_HDR		40
#define TAC_MAP_ENTRIES		((TAC_MD_BLOCK - TAC_MAP_HDR) / 8)
/* Temperature page: a 40-byte header, then 16-byte records. */
#define TAC_TEMP_RECS		((TAC_MD_BLOCK - TAC_MAP_HDR) / 16)
#define TAC_TEMP_MIN_RECS	65536U
#define TAC_TEMP_MAX_RECS	(16U << 20)

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

static u32 tac_md_csum(const void *block)
{
	/* The checksum field is at the same offset in every metadata block. */
	u32 crc = crc32c(~0U, block, 8);

	crc = crc32c(crc, "\0\0\0\0", 4);
	return ~crc32c(crc, block + 12, TAC_MD_BLOCK - 12);
}

static int tac_md_io(struct tac_cache *c, blk_opf_t opf, sector_t sector,
		     void *buf, unsigned int sectors)
{
	struct dm_io_region where = {
		.bdev = c->cache,
		.sector = sector,
		.count = sectors,
	};
	struct dm_io_request req = {
		.bi_opf = opf,
		.mem.type = DM_IO_KMEM,
		.mem.ptr.addr = buf,
		.notify.fn = NULL,
		.client = c->md.io_client,
	};

	return dm_io(&req, 1, &where, NULL, IOPRIO_DEFAULT);
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
static bool tac_layout(struct tac_geometry *g, u64 cache_sectors,
		       u32 block_sectors, u64 origin_sectors)
{
	u64 upper = div_u64(cache_sectors, block_sectors);
	u64 recs = clamp_t(u64, upper >> 3, TAC_TEMP_MIN_RECS,
			   TAC_TEMP_MAX_RECS);
	u64 n = upper, meta;
	int i;

	g->block_sectors = block_sectors;
	g->origin_sectors = origin_sectors;
	g->map_start = TAC_SB_SLOTS * TAC_MD_SECTORS;
	g->temp_pages = DIV_ROUND_UP_ULL(recs, TAC_TEMP_RECS);
	/* Shrinking n only shrinks the map area: two rounds converge. */
	for (i = 0; i < 3; i++) {
		g->map_pages = DIV_ROUND_UP_ULL(n, TAC_MAP_ENTRIES);
		g->temp_start = g->map_start +
				g->map_pages * 2 * TAC_MD_SECTORS;
		meta = g->temp_start + (u64)g->temp_pages * TAC_MD_SECTORS;
		g->data_start = round_up(meta, block_sectors);
		if (g->data_start + block_sectors > cache_sectors)
			return false;
		n = div_u64(cache_sectors - g->data_start, block_sectors);
	}
	g->nr_cblocks = min_t(u64, n, U32_MAX);
	g->map_pages = DIV_ROUND_UP_ULL(g->nr_cblocks, TAC_MAP_ENTRIES);
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
	sb->map_start = cpu_to_le64(g->map_start);
	sb->map_pages = cpu_to_le64(g->map_pages);
	sb->temp_start = cpu_to_le64(g->temp_start);
	sb->temp_pages = cpu_to_le32(g->temp_pages);
	sb->data_start = cpu_to_le64(g->data_start);
	sb->mode = cpu_to_le32(c->mode);
	memcpy(sb->uuid, &c->md.uuid, sizeof(sb->uuid));
	sb->csum = cpu_to_le32(tac_md_csum(sb));
}

/* Write the next superblock slot (FUA: durable on return). */
static int __tac_sb_write(struct tac_cache *c, bool clean)
{
	int r;

	c->md.seq++;
	tac_sb_fill(c, c->md.buf, clean);
	r = tac_md_io(c, REQ_OP_WRITE | REQ_SYNC | REQ_FUA,
		      (c->md.seq % TAC_SB_SLOTS) * TAC_MD_SECTORS,
		      c->md.buf, TAC_MD_SECTORS);
	if (r)
		DMERR("writing the superblock of the cache device failed: %d",
		      r);
	return r;
}

int tac_md_set_clean(struct tac_cache *c, bool clean)
{
	int r;

	mutex_lock(&c->md.lock);
	r = __tac_sb_write(c, clean);
	mutex_unlock(&c->md.lock);
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

/* A checksummed superblock can still describe an impossible geometry. */
static bool tac_sb_sane(const struct tac_disk_sb *sb, u64 cache_sectors)
{
	u32 bs = le32_to_cpu(sb->block_sectors);
	u64 n = le64_to_cpu(sb->nr_cblocks);
	u64 data = le64_to_cpu(sb->data_start);

	if (bs < 8 || bs > 2048 || !is_power_of_2(bs) || !n || n > U32_MAX)
		return false;
	if (le64_to_cpu(sb->map_start) != TAC_SB_SLOTS * TAC_MD_SECTORS ||
	    le64_to_cpu(sb->map_pages) != DIV_ROUND_UP_ULL(n, TAC_MAP_ENTRIES))
		return false;
	if (le64_to_cpu(sb->temp_start) <
	    le64_to_cpu(sb->map_start) +
	    le64_to_cpu(sb->map_pages) * 2 * TAC_MD_SECTORS)
		return false;
	if (data < le64_to_cpu(sb->temp_start) +
		   (u64)le32_to_cpu(sb->temp_pages) * TAC_MD_SECTORS ||
	    data % bs)
		return false;
	return data + n * bs <= cache_sectors;
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
	c->md.was_clean = le32_to_cpu(sb->flags) & TAC_SB_FLAG_CLEAN;
}

/*
 * Decide what the cache device holds and either adopt its superblock or
 * format it.  Nothing is written unless every check has passed.
 */
static int __tac_md_open(struct tac_cache *c, u32 block_sectors,
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

	if (format || v[0] == SB_EMPTY)
		goto do_format;

	if (best < 0) {
		if (v[0] == SB_BAD_CSUM || v[1] == SB_BAD_CSUM) {
			DMERR("both superblock slots fail their checksum; 'format' discards the cache");
			*error = "Cache superblock checksum mismatch";
			return -EINVAL;
		}
		if (v[0] == SB_BAD_VERSION) {
			DMERR("superblock format version %u, this module reads %u",
			      le32_to_cpu(sb[0]->version), TAC_SB_VERSION);
			*error = "Cache superblock has an unsupported format version";
			return -EINVAL;
		}
		DMERR("cache device holds data that is not dm-tac's (first 4 KiB not zero); 'format' overwrites it");
		*error = "Cache device is not empty and not a dm-tac cache; use 'format' to overwrite it";
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
	DMINFO("cache %pUb: reusing, %llu blocks, last shutdown %s",
	       &c->md.uuid, c->md.geo.nr_cblocks,
	       c->md.was_clean ? "clean" : "unclean");
	return 0;

do_format:
	uuid_gen(&c->md.uuid);
	/* The first write (seq 2) goes to slot 0, after slot 1 is wiped. */
	c->md.seq = 1;
	c->md.was_clean = true;
	c->md.formatted = true;
	memset(c->md.buf, 0, TAC_MD_BLOCK);
	r = tac_md_io(c, REQ_OP_WRITE | REQ_SYNC, TAC_MD_SECTORS, c->md.buf,
		      TAC_MD_SECTORS);
	if (!r)
		r = __tac_sb_write(c, true);
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
	c->md.buf = kzalloc(TAC_SB_SLOTS * TAC_MD_BLOCK, GFP_KERNEL);
	if (!c->md.buf) {
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
	r = __tac_md_open(c, block_sectors, format, error);
	mutex_unlock(&c->md.lock);
	return r;
}

void tac_md_close(struct tac_cache *c)
{
	if (c->md.io_client)
		dm_io_client_destroy(c->md.io_client);
	kfree(c->md.buf);
}
