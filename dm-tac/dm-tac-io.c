// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac I/O path: how each bio is routed (map), what happens when it
 * completes (end_io), fills, the copies written to the cache, discards and
 * the worker.  Who may touch a block and when is the contract at the top
 * of dm-tac-blocks.c; this file applies it.
 *
 * Data that reaches the cache always goes through pages of our own: a
 * write is copied before it is written to the cache (and, in
 * write-through, the same copy goes to the origin), and a read miss that
 * promotes blocks reads the origin into our pages and copies the user's
 * part out.  So the checksums we store describe exactly what the cache
 * holds, whatever a user does to its buffers while the I/O is in flight.
 * Read hits go straight to the user's pages; a checksum mismatch there is
 * checked again on our own copy before anything is blamed on the cache.
 * The dirty blocks of a stream read (Overlays) come through our pages.
 *
 * Nothing here sleeps in map: memory for copies is taken without waiting,
 * and if there is none the bio goes to the worker, which may wait on a
 * mempool (one user of its reserve at a time, so it always progresses).
 */
#include <linux/blkdev.h>
#include <linux/kernel.h>
#include <linux/slab.h>

#include "dm-tac.h"

/* What a woken PARKED bio is (tac_bio.next). */
enum { PARKED_READ, PARKED_WRITE, PARKED_DISCARD };

/* Largest read miss copied through our pages to fill the cache. */
#define TAC_FILL_MAX_SECTORS	256
#define TAC_FILL_MAX_BLOCKS	(TAC_FILL_MAX_SECTORS >> 3)
/* A write or read run's checksum units at most (Write runs below). */
#define TAC_RUN_UNITS		32
/* A read run's blocks at most (Read runs below). */
#define TAC_READ_RUN		8

/* Discards of more blocks than this leave their work to the worker. */
#define TAC_DISCARD_INLINE	256

/* ------------------------------------------------------------------ */
/* Splits */

/*
 * A split's remainder comes back to map(): it is the same request, so it
 * is not classified again and keeps the request's verdicts (stream,
 * around, random).  dm core submits it after the pieces already mapped
 * have been submitted below, which may sleep (a full tag set, a throttle)
 * while other tasks map and split, and the task may wake on another CPU;
 * in a suspend, dm's own worker submits it.  So a split records its
 * remainder's exact range and direction in c->rests, with no time limit,
 * and the remainder takes its record by that range.  The table keeps the
 * last TAC_RESTS splits whose remainder has not come back; a remainder
 * whose record was pushed out (that many splits in flight) is classified
 * again.  A read split without the lock (tac_read_hit_fast()) gets its
 * record only when its CPU's log is folded (a remainder mapped the locked
 * way on another CPU folds it first: __tac_fold_owner()), and its
 * remainder may have hit without the lock on another CPU before that:
 * such a record is dropped after a second, so that none is kept for ever
 * (each would cost every hit a look through the table).  Verdicts only
 * choose where clean data is read from, what is promoted and how it is
 * counted: a wrong match costs speed, never data.  Callers hold c->lock.
 */

/* Free @r if it is past its time; true if so (or free already). */
static bool __tac_rest_expired(struct tac_cache *c, struct tac_rest *r)
{
	if (!r->start)
		return true;
	if (!r->expires || time_before_eq(jiffies, r->expires))
		return false;
	WRITE_ONCE(r->start, 0);
	WRITE_ONCE(c->nr_rests, c->nr_rests - 1);
	return true;
}

/*
 * A record for a new remainder ending at @end, kept until taken, or until
 * @expires (jiffies) if not 0: a free record (or one past its time), or
 * else one of a fold's, whose remainder may never come, or else the next
 * in turn.  The caller sets its start.
 */
static int __tac_new_rest(struct tac_cache *c, sector_t end, bool write,
			  bool stream, bool around, bool random,
			  unsigned long expires)
{
	struct tac_rest *r;
	int i, spare = -1;

	for (i = 0; i < TAC_RESTS; i++) {
		if (__tac_rest_expired(c, &c->rests[i]))
			break;
		if (spare < 0 && c->rests[i].expires)
			spare = i;
	}
	if (i < TAC_RESTS)
		WRITE_ONCE(c->nr_rests, c->nr_rests + 1);
	else if (spare >= 0)
		i = spare;
	else
		i = c->rest_next++ % TAC_RESTS;
	r = &c->rests[i];
	r->end = end;
	r->expires = expires;
	r->write = write;
	r->stream = stream;
	r->around = around;
	r->random = random;
	return i;
}

/*
 * Only map() may split (@ti); the worker routes only bios within a block
 * (a write run it only copies, in tac_copy_start()).
 */
static void __tac_split(struct dm_target *ti, struct tac_cache *c,
			struct bio *bio, sector_t sectors)
{
	struct tac_bio *pb = tac_pb(bio);

	lockdep_assert_held(&c->lock);
	if (WARN_ON_ONCE(!ti))
		return;
	/*
	 * Cut again in this map (a miss run, then the promotion cap): dm
	 * core's remainder starts at the new cut and still ends where the
	 * bio did.
	 */
	if (!pb->rest)
		pb->rest = __tac_new_rest(c, bio_end_sector(bio),
					  op_is_write(bio_op(bio)), pb->stream,
					  pb->around, pb->random, 0) + 1;
	WRITE_ONCE(c->rests[pb->rest - 1].start,
		   bio->bi_iter.bi_sector + sectors);
	dm_accept_partial_bio(bio, sectors);
}

/* Records past their time are dropped (Splits above). */
static void __tac_expire_rests(struct tac_cache *c)
{
	int i;

	for (i = 0; c->nr_rests && i < TAC_RESTS; i++)
		__tac_rest_expired(c, &c->rests[i]);
}

/*
 * Is @bio a split's remainder?  Then it takes the request's verdicts.
 * Of several records of its range, one kept until taken first: another
 * remainder of that range may take a fold's record, whose own remainder
 * may never come (it is dropped in time), but every split under the lock
 * has its remainder come back.
 */
static bool __tac_take_rest(struct tac_cache *c, struct bio *bio, bool write)
{
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	struct tac_bio *pb = tac_pb(bio);
	struct tac_rest *r, *found = NULL;
	int i;

	/* Most bios were never split: no record to look through. */
	if (!c->nr_rests)
		return false;
	for (i = 0; i < TAC_RESTS; i++) {
		r = &c->rests[i];
		if (__tac_rest_expired(c, r) || r->start != start ||
		    r->end != end || r->write != write)
			continue;
		if (!found || !r->expires)
			found = r;
		if (!r->expires)
			break;
	}
	if (!found)
		return false;
	WRITE_ONCE(found->start, 0);
	WRITE_ONCE(c->nr_rests, c->nr_rests - 1);
	pb->stream = found->stream;
	pb->around = found->around;
	pb->random = found->random;
	return true;
}

/*
 * Requests shorter than this (64 KiB or three blocks) are never part of a
 * stream (__tac_stream()), so a read hit without the lock may be one.
 */
static sector_t tac_stream_min(struct tac_cache *c)
{
	return max_t(sector_t, TAC_STREAM_MIN_SECTORS, 3 * c->block_sectors);
}

/*
 * Sequential streams (TAC's premise: a disk serves them cheaply, so
 * caching them gains little, and splitting them around cached blocks
 * costs a rotation per piece).  A request continuing a recent request's
 * end extends that stream; one that continues none starts a new one in
 * place of the oldest.  Returns the request's stream, NULL for a request
 * too small to be part of one.  Reads and writes are tracked apart.
 * Caller holds c->lock.
 */
static struct tac_stream *__tac_stream(struct tac_cache *c, struct bio *bio,
				       bool write)
{
	struct tac_stream *st = c->streams[write], *s = NULL;
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	int i, oldest = 0;

	/*
	 * Small requests (under 64 KiB or three blocks) are never part of a
	 * stream and leave the table alone: random database I/O would
	 * otherwise push real streams out of it, and a request of a block or
	 * two gains nothing from being read around the cache (with large
	 * blocks, it would never be cached at all).
	 */
	if (end - start < tac_stream_min(c))
		return NULL;

	for (i = 0; i < TAC_STREAMS; i++) {
		if (st[i].end == start && st[i].sectors) {
			s = &st[i];
			break;
		}
		if (time_before(st[i].last, st[oldest].last))
			oldest = i;
	}
	if (!s) {
		s = &st[oldest];
		s->sectors = 0;
	}
	s->end = end;
	s->sectors += end - start;
	s->last = jiffies;
	return s;
}

/* Runs of blocks of [b0, bl] not readable from the cache (0, 1 or 2). */
static u32 __tac_uncached_runs(struct tac_cache *c, u64 b0, u64 bl)
{
	bool in_run = false;
	u32 runs = 0, cb;
	u64 b;

	for (b = b0; b <= bl && runs < 2; b++) {
		bool cached = __tac_lookup(c, b, &cb, TAC_PROBE) == LK_VALID;

		if (!cached && !in_run)
			runs++;
		in_run = !cached;
	}
	return runs;
}

/*
 * Classify @bio once per request (map only).  pb->stream: part of a
 * stream, which promotes nothing.  pb->around: a stream read that reads
 * clean cached blocks from the origin with the rest, because through the
 * cache the origin would see it in two pieces or more.
 */
static void __tac_classify(struct dm_target *ti, struct tac_cache *c,
			   struct bio *bio, bool write)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t start = bio->bi_iter.bi_sector;
	u64 b0 = start >> c->block_shift;
	u64 bl = (bio_end_sector(bio) - 1) >> c->block_shift;
	u64 cutoff = (u64)c->tun.sequential_cutoff_kb << 1;
	struct tac_stream *s;
	enum tac_class class;

	/* A remainder was counted with its request already. */
	if (!ti || __tac_take_rest(c, bio, write))
		return;
	class = tac_policy_request(c->policy, to_oblock(b0),
				   bl - b0 + 1, write);
	pb->random = class == TAC_RANDOM;
	s = __tac_stream(c, bio, write);
	pb->stream = s && cutoff && s->sectors >= cutoff;
	/*
	 * In write-back, a stream of small writes (a log) is what the cache
	 * is for; only requests as large as the cutoff by themselves, and
	 * not FUA, go around it.
	 */
	if (write && c->mode == TAC_MODE_WRITEBACK &&
	    ((u64)bio_sectors(bio) < (u64)c->tun.sequential_cutoff_kb << 1 ||
	     (bio->bi_opf & REQ_FUA)))
		pb->stream = false;
	/*
	 * A read whose blocks are cached but for one run at most costs the
	 * origin one request through the cache too, and the cache serves
	 * the rest faster (a file read again, a cached range scanned).
	 */
	pb->around = pb->stream && !write &&
		     __tac_uncached_runs(c, b0, bl) >= 2;
}

/* Keep @bio to its first block (it may wait for that one alone). */
static void __tac_first_block_only(struct dm_target *ti,
				   struct tac_cache *c, struct bio *bio)
{
	sector_t start = bio->bi_iter.bi_sector;
	sector_t first_end = round_down(start, c->block_sectors) +
			     c->block_sectors;

	if (bio_end_sector(bio) > first_end)
		__tac_split(ti, c, bio, first_end - start);
}

/* ------------------------------------------------------------------ */
/* Checksums and our pages */

/*
 * Checksums of @nr data units of @bio from @iter (at a unit boundary),
 * as stored in c->crc.
 */
static void tac_bio_crcs(struct tac_cache *c, struct bio *bio,
			 struct bvec_iter iter, u32 nr, u32 *out)
{
	u32 unit = tac_unit_sectors(c) << SECTOR_SHIFT, left = unit;
	u32 crc = ~0U;
	struct bio_vec bv;

	while (nr && iter.bi_size) {
		void *p;
		u32 len;

		bv = bio_iter_iovec(bio, iter);
		len = min(bv.bv_len, left);
		p = bvec_kmap_local(&bv);
		crc = tac_crc32c(crc, p, len);
		kunmap_local(p);
		bio_advance_iter_single(bio, &iter, len);
		left -= len;
		if (!left) {
			*out++ = tac_crc_full(crc);
			nr--;
			left = unit;
			crc = ~0U;
		}
	}
}

/* An iterator over all of a bio of ours, whatever it did to bi_iter. */
static struct bvec_iter tac_all(struct bio *bio, u32 skip)
{
	struct bvec_iter it = {
		.bi_size = 0,
	};
	struct bio_vec *bv;
	struct bvec_iter_all all;

	bio_for_each_segment_all(bv, bio, all)
		it.bi_size += bv->bv_len;
	bio_advance_iter(bio, &it, skip);
	return it;
}

/*
 * Our bios.  Without @can_wait (map) nothing sleeps and nothing comes
 * from the reserves: a bio from kmalloc, pages from the page allocator,
 * NULL meaning "try again in the worker".  With it (the worker, the
 * cleaner) the bio set and the page pool's reserve are used.  So the
 * reserves only ever hold bios and pages whose I/O completes without the
 * worker's help, and whoever waits for them always gets them back.
 */
static struct bio *tac_bio_alloc(struct tac_cache *c, struct block_device *bdev,
				 unsigned short nr, blk_opf_t opf,
				 bool can_wait)
{
	struct bio *bio;

	if (can_wait)
		return bio_alloc_bioset(bdev, nr, opf, GFP_NOIO, &c->bs);
	bio = bio_kmalloc(nr, GFP_NOWAIT | __GFP_NOWARN);
	if (bio)
		bio_init(bio, bdev, bio->bi_inline_vecs, nr, opf);
	return bio;
}

static void tac_bio_free(struct bio *bio)
{
	if (bio->bi_pool) {
		bio_put(bio);
	} else {
		bio_uninit(bio);
		kfree(bio);
	}
}

/*
 * Pages of copies, kept per CPU once freed: every write the cache takes
 * and every fill copies through pages of ours, and the page allocator is
 * the larger part of what a copy costs.  A CPU keeps up to
 * TAC_STASH_PAGES, until the device is removed; a page freed while the
 * reserve (page_pool) is short goes to the reserve first, so the worker's
 * waits are as before.  Taken before the allocator or the reserve, in
 * map() and by the worker; put back in any context.
 */
#define TAC_STASH_PAGES	16

struct tac_page_stash {
	local_lock_t lock;
	u32 nr;
	struct page *page[TAC_STASH_PAGES];
};

/* A page for a copy: without @can_wait, NULL rather than a wait. */
static struct page *tac_page_get(struct tac_cache *c, bool can_wait)
{
	struct tac_page_stash *s;
	struct page *p = NULL;
	unsigned long flags;

	local_lock_irqsave(&c->stash->lock, flags);
	s = this_cpu_ptr(c->stash);
	if (s->nr)
		p = s->page[--s->nr];
	local_unlock_irqrestore(&c->stash->lock, flags);
	if (p)
		return p;
	return can_wait ? mempool_alloc(&c->page_pool, GFP_NOIO) :
			  alloc_page(GFP_NOWAIT | __GFP_NOWARN);
}

static void tac_page_put(struct tac_cache *c, struct page *p)
{
	struct tac_page_stash *s;
	unsigned long flags;

	/*
	 * As mempool_free() looks, with its barrier: paired with the one in
	 * mempool_alloc(), so that the free of a page taken from the
	 * reserve sees the reserve short and refills it (a page stashed
	 * instead would never return to a worker waiting on it).
	 */
	smp_rmb();
	if (READ_ONCE(c->page_pool.curr_nr) >= c->page_pool.min_nr) {
		local_lock_irqsave(&c->stash->lock, flags);
		s = this_cpu_ptr(c->stash);
		if (s->nr < TAC_STASH_PAGES) {
			s->page[s->nr++] = p;
			p = NULL;
		}
		local_unlock_irqrestore(&c->stash->lock, flags);
		if (!p)
			return;
	}
	mempool_free(p, &c->page_pool);
}

/* A bio of @bytes in pages of our own (see tac_bio_alloc()). */
static struct bio *tac_copy_alloc(struct tac_cache *c,
				  struct block_device *bdev, blk_opf_t opf,
				  u32 bytes, bool can_wait)
{
	unsigned int nr = DIV_ROUND_UP(bytes, PAGE_SIZE), i;
	struct bio *bio;

	bio = tac_bio_alloc(c, bdev, nr, opf, can_wait);
	if (!bio)
		return NULL;
	if (can_wait)
		mutex_lock(&c->page_pool_lock);
	for (i = 0; i < nr; i++) {
		struct page *p = tac_page_get(c, can_wait);
		u32 len = min_t(u32, PAGE_SIZE, bytes - i * PAGE_SIZE);

		if (!p)
			break;
		__bio_add_page(bio, p, len, 0);
	}
	if (can_wait)
		mutex_unlock(&c->page_pool_lock);
	if (i < nr) {
		struct bio_vec *bv;
		struct bvec_iter_all it;

		bio_for_each_segment_all(bv, bio, it)
			tac_page_put(c, bv->bv_page);
		tac_bio_free(bio);
		return NULL;
	}
	return bio;
}

static void tac_copy_free(struct tac_cache *c, struct bio *bio)
{
	struct bio_vec *bv;
	struct bvec_iter_all it;

	bio_for_each_segment_all(bv, bio, it)
		tac_page_put(c, bv->bv_page);
	tac_bio_free(bio);
}

/* Add @bytes of @src's pages, from @off bytes into them, to @dst. */
static void tac_add_range(struct bio *dst, struct bio *src, u32 off,
			  u32 bytes)
{
	struct bio_vec *bv;
	struct bvec_iter_all it;

	bio_for_each_segment_all(bv, src, it) {
		u32 len;

		if (off >= bv->bv_len) {
			off -= bv->bv_len;
			continue;
		}
		len = min(bv->bv_len - off, bytes);
		__bio_add_page(dst, bv->bv_page, len, bv->bv_offset + off);
		off = 0;
		bytes -= len;
		if (!bytes)
			break;
	}
}

/* The request flags a copy keeps (FUA makes it durable on completion). */
static blk_opf_t tac_copy_flags(struct bio *bio)
{
	return bio->bi_opf & (REQ_FUA | REQ_SYNC | REQ_META | REQ_PRIO |
			      REQ_IDLE);
}

/* ------------------------------------------------------------------ */
/* Units: only whole ones have checksums */

static bool tac_units_aligned(struct tac_cache *c, sector_t start,
			      sector_t end)
{
	sector_t mask = tac_unit_sectors(c) - 1;

	return !(start & mask) && !(end & mask);
}

static bool tac_whole_block(struct tac_cache *c, u64 b, sector_t start,
			    sector_t end)
{
	sector_t bs = b << c->block_shift;

	return bs >= start && bs + c->block_sectors <= end;
}

/* The units [*first, *first + return) that [start, end) covers wholly. */
static u32 tac_whole_units(struct tac_cache *c, sector_t start, sector_t end,
			   u32 *first)
{
	sector_t us = tac_unit_sectors(c);
	sector_t in = start & (c->block_sectors - 1);
	sector_t a = round_up(in, us), e = in + (end - start);

	*first = a >> c->unit_shift;
	e = round_down(e, us);
	return e > a ? (e - a) >> c->unit_shift : 0;
}

/* The blocks of pb->iter: more than one for a write or read run. */
static u32 tac_run_blocks(struct tac_cache *c, struct tac_bio *pb)
{
	sector_t start = pb->iter.bi_sector;
	sector_t end = start + (pb->iter.bi_size >> SECTOR_SHIFT);

	return ((end - 1) >> c->block_shift) - (start >> c->block_shift) + 1;
}

/* Is one of a read run's @n blocks from @cb dirty?  Under c->lock. */
static bool __tac_run_dirty(struct tac_cache *c, u32 cb, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (__tac_is_dirty(c, cb + i))
			return true;
	return false;
}

/* Let go of a read run's @n blocks from @cb.  Caller holds c->lock. */
static void __tac_unshare_run(struct tac_cache *c, u32 cb, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		__tac_unshare(c, cb + i);
}

/* The part of pb->iter within its @i-th block. */
static void tac_run_part(struct tac_cache *c, struct tac_bio *pb, u32 i,
			 sector_t *start, sector_t *end)
{
	sector_t s = pb->iter.bi_sector;
	sector_t e = s + (pb->iter.bi_size >> SECTOR_SHIFT);
	sector_t bs = (pb->oblock + i) << c->block_shift;

	*start = max(s, bs);
	*end = min(e, bs + c->block_sectors);
}

/*
 * After a write of [start, end) within block @cb (or a write run from it,
 * whose blocks' checksums follow @cb's in c->crc): units written whole
 * get @crc (their checksums, in order, from the first whole one), units
 * written in part become unknown.  Caller holds c->lock.
 */
static void __tac_written_crcs(struct tac_cache *c, u32 cb, sector_t start,
			       sector_t end, const u32 *crc, u32 nr)
{
	sector_t in = start & (c->block_sectors - 1);
	u32 u0 = in >> c->unit_shift;
	u32 ul = (in + (end - start) - 1) >> c->unit_shift;
	u32 *out = &c->crc[(u64)cb * c->units];
	u32 first, n = tac_whole_units(c, start, end, &first), u;

	for (u = u0; u <= ul; u++)
		out[u] = TAC_CRC_UNKNOWN;
	if (crc && n == nr)
		memcpy(&out[first], crc, n * sizeof(*crc));
}

/* Bytes from @start to the first unit boundary at or after it. */
static u32 tac_unit_skip(struct tac_cache *c, sector_t start)
{
	sector_t us = tac_unit_sectors(c);

	return ((us - (start & (us - 1))) & (us - 1)) << SECTOR_SHIFT;
}

/* Are the units [start, end) touches in @cb all of unknown checksum? */
static bool __tac_crcs_unknown(struct tac_cache *c, u32 cb, sector_t start,
			       sector_t end)
{
	sector_t in = start & (c->block_sectors - 1);
	u32 u0 = in >> c->unit_shift;
	u32 ul = (in + (end - start) - 1) >> c->unit_shift;
	const u32 *crc = &c->crc[(u64)cb * c->units];
	u32 u;

	for (u = u0; u <= ul; u++)
		if (crc[u] != TAC_CRC_UNKNOWN)
			return false;
	return true;
}

/*
 * Do the known checksums of @nr units from @first match @crc?  No lock
 * needed while @cb is held shared: they change only under WRITER or
 * PENDING (rule 6), apart from the cleaner filling in unknown ones with
 * those of the very data held (__tac_clean_finish()).
 */
static bool tac_crcs_match(struct tac_cache *c, u32 cb, u32 first, u32 nr,
			   const u32 *crc)
{
	const u32 *want = &c->crc[(u64)cb * c->units + first];
	u32 i;

	for (i = 0; i < nr; i++)
		if (!tac_crc_ok(READ_ONCE(want[i]), crc[i]))
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* Completing user bios ourselves */

static void tac_complete(struct bio *bio, blk_status_t status)
{
	tac_pb(bio)->route = ROUTE_DONE;
	bio->bi_status = status;
	bio_endio(bio);
}

/*
 * A write that completed: FUA makes it durable with the metadata that
 * finds it.  While write-back state exists on disk, that is a commit: an
 * on-disk entry may still say an older copy of the block is dirty, and
 * recovery would write that copy over this one (rule in
 * dm-tac-metadata.c).  FUA is what the user asked for at map time: a
 * bio remapped to a device with no write cache comes back without the
 * flag, yet our metadata still needs the commit.  Caller holds c->lock;
 * true if the bio now waits for the commit.
 */
static bool __tac_fua_commit(struct tac_cache *c, struct bio *bio,
			     blk_status_t status)
{
	if (status || !tac_pb(bio)->fua || !__tac_wb_active(c))
		return false;
	tac_pb(bio)->route = ROUTE_COMMIT;
	__tac_md_commit_bio(c, bio);
	return true;
}

static void tac_complete_write(struct tac_cache *c, struct bio *bio,
			       blk_status_t status)
{
	unsigned long flags;
	bool wait;

	spin_lock_irqsave(&c->lock, flags);
	wait = __tac_fua_commit(c, bio, status);
	spin_unlock_irqrestore(&c->lock, flags);
	if (!wait)
		tac_complete(bio, status);
}

/* ------------------------------------------------------------------ */
/* Fills: a read miss through our pages, then written to the cache */

struct tac_fill {
	struct tac_fill_read *fr;
	u64 oblock;
	u32 cblock;
	u32 run;			/* fills in its write, from this one */
	u32 *crc;			/* c->units checksums */
};

/* One origin read that serves a user read and fills some of its blocks. */
struct tac_fill_read {
	struct tac_cache *c;
	struct bio *user;
	struct bio *bio;		/* our pages: the origin read */
	sector_t sector;		/* origin sector of our first byte */
	struct list_head list;		/* on c->fills for the worker */
	atomic_t refs;			/* the read, and each fill's write */
	u32 nr;
	struct tac_fill fill[];
};

static void tac_fr_put(struct tac_fill_read *fr)
{
	struct tac_cache *c = fr->c;
	unsigned long flags;

	if (!atomic_dec_and_test(&fr->refs))
		return;
	tac_copy_free(c, fr->bio);
	kfree(fr);
	/* Only now is every bio of this fill back in the pool. */
	spin_lock_irqsave(&c->lock, flags);
	if (!--c->bg_inflight)
		wake_up(&c->bg_wait);
	spin_unlock_irqrestore(&c->lock, flags);
}

/* A fill's write is done: it and the fills after it in the same bio. */
static void tac_fill_write_endio(struct bio *bio)
{
	struct tac_fill *f = bio->bi_private, *g;
	struct tac_cache *c = f->fr->c;
	bool ok = !bio->bi_status;
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	for (g = f; g < f + f->run; g++) {
		if (ok && !(tac_cb(c, g->cblock) & CB_DOOMED))
			memcpy(&c->crc[(u64)g->cblock * c->units], g->crc,
			       c->units * sizeof(*c->crc));
		__tac_fill_done(c, g->cblock, ok);
	}
	/* One error per failed write, as a read run's read counts one. */
	if (!ok)
		__tac_cache_error(c, "fill write");
	spin_unlock_irqrestore(&c->lock, flags);
	bio_put(bio);
	tac_fr_put(f->fr);
}

static void tac_fill_read_endio(struct bio *bio)
{
	struct tac_fill_read *fr = bio->bi_private;
	struct tac_cache *c = fr->c;
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	list_add_tail(&fr->list, &c->fills);
	spin_unlock_irqrestore(&c->lock, flags);
	tac_io_kick(c);
}

/*
 * Worker: the origin read of @fr is done.  The user gets its part from
 * our pages; then each fill's checksums are taken from the same pages and
 * the block written to the cache.  If the read failed (perhaps only
 * outside what the user asked for), the user's bio goes to the origin as
 * it is and the fills are dropped.
 */
static void tac_fill_read_done(struct tac_fill_read *fr)
{
	struct tac_cache *c = fr->c;
	struct bio *user = fr->user;
	struct tac_bio *pb = tac_pb(user);
	u32 bytes = c->block_sectors << SECTOR_SHIFT, i, run;

	if (fr->bio->bi_status) {
		spin_lock_irq(&c->lock);
		for (i = 0; i < fr->nr; i++)
			__tac_fill_done(c, fr->fill[i].cblock, false);
		spin_unlock_irq(&c->lock);
		pb->route = ROUTE_ORIGIN;
		user->bi_iter = pb->iter;
		bio_set_dev(user, c->origin);
		dm_submit_bio_remap(user, NULL);
		tac_fr_put(fr);
		return;
	}

	{
		struct bvec_iter src = tac_all(fr->bio,
			(pb->iter.bi_sector - fr->sector) << SECTOR_SHIFT);
		struct bvec_iter dst = pb->iter;

		bio_copy_data_iter(user, &dst, fr->bio, &src);
		tac_complete(user, BLK_STS_OK);
	}

	/*
	 * Fills of blocks that follow each other in the origin and on the
	 * cache (a page placed whole, tac-policy.c) are one write, of up to
	 * TAC_RUN_UNITS units, as a read run is one read.
	 */
	for (i = 0; i < fr->nr; i += run) {
		struct tac_fill *f = &fr->fill[i];
		u32 off = ((f->oblock << c->block_shift) - fr->sector) <<
			  SECTOR_SHIFT;
		struct bio *bio;

		for (run = 0; i + run < fr->nr &&
		     (run + 1) * c->units <= TAC_RUN_UNITS; run++) {
			struct tac_fill *g = f + run;

			if (g->oblock != f->oblock + run ||
			    g->cblock != f->cblock + run)
				break;
			tac_bio_crcs(c, fr->bio, tac_all(fr->bio,
							 off + run * bytes),
				     c->units, g->crc);
		}
		f->run = run;	/* at least 1: c->units <= TAC_RUN_UNITS */
		bio = bio_alloc_bioset(c->cache,
				       DIV_ROUND_UP(offset_in_page(off) +
						    bytes * run, PAGE_SIZE),
				       REQ_OP_WRITE, GFP_NOIO, &c->bs);
		tac_add_range(bio, fr->bio, off, bytes * run);
		bio->bi_iter.bi_sector = tac_cblock_sector(c, f->cblock);
		bio->bi_end_io = tac_fill_write_endio;
		bio->bi_private = f;
		atomic_inc(&fr->refs);
		submit_bio_noacct(bio);
	}
	tac_fr_put(fr);
}

/*
 * A read miss [start, end) over blocks that include the PENDING blocks
 * @cbs[0..nr) (reserved for blocks @b0 + @off[]): read the origin into
 * our pages,
 * whole blocks from the first to the last block of the range.  Caller
 * holds no lock.  Returns DM_MAPIO_SUBMITTED, or REMAPPED after dropping
 * the fills when memory is short (the bio then goes to the origin).
 */
static int tac_fill_start(struct tac_cache *c, struct bio *bio, u64 b0,
			  const u8 *off, const u32 *cbs, u32 nr)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	sector_t fs = round_down(start, c->block_sectors);
	sector_t fe = round_up(end, c->block_sectors);
	struct tac_fill_read *fr;
	u32 *crc;
	u32 i;

	/* The device's partial last block is never cached: don't pass it. */
	if (fe > c->nr_oblocks << c->block_shift)
		fe = end;
	fr = kzalloc(struct_size(fr, fill, nr) +
		     (size_t)nr * c->units * sizeof(u32),
		     GFP_NOWAIT | __GFP_NOWARN);
	if (fr)
		fr->bio = tac_copy_alloc(c, c->origin, REQ_OP_READ,
					 (fe - fs) << SECTOR_SHIFT, false);
	if (!fr || !fr->bio) {
		kfree(fr);
		spin_lock_irq(&c->lock);
		for (i = 0; i < nr; i++)
			__tac_fill_done(c, cbs[i], false);
		spin_unlock_irq(&c->lock);
		bio_set_dev(bio, c->origin);
		return DM_MAPIO_REMAPPED;
	}
	crc = (u32 *)&fr->fill[nr];
	fr->c = c;
	fr->user = bio;
	fr->sector = fs;
	fr->nr = nr;
	atomic_set(&fr->refs, 1);
	for (i = 0; i < nr; i++) {
		fr->fill[i].fr = fr;
		fr->fill[i].oblock = b0 + off[i];
		fr->fill[i].cblock = cbs[i];
		fr->fill[i].crc = crc + i * c->units;
	}
	spin_lock_irq(&c->lock);
	c->bg_inflight++;
	spin_unlock_irq(&c->lock);

	pb->route = ROUTE_FILL;
	pb->iter = bio->bi_iter;
	pb->fr = fr;
	fr->bio->bi_iter.bi_sector = fs;
	fr->bio->bi_end_io = tac_fill_read_endio;
	fr->bio->bi_private = fr;
	submit_bio_noacct(fr->bio);
	return DM_MAPIO_SUBMITTED;
}

/* ------------------------------------------------------------------ */
/* Reads */

static void tac_overlay_step(struct tac_cache *c, struct bio *bio,
			     blk_status_t status);

/*
 * The blocks of a read run in @keep, from @copy, our checked copy of the
 * run's units (tac_verify_read(): from the first unit the read touches),
 * into the user's pages.
 */
static void tac_keep_run(struct tac_cache *c, struct bio *bio,
			 struct bio *copy, u32 keep)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t start = pb->iter.bi_sector, base, s, e;
	struct bvec_iter src, dst;
	u32 i;

	base = round_down(start, tac_unit_sectors(c));
	for (i = 0; i < TAC_READ_RUN; i++) {
		if (!(keep & BIT(i)))
			continue;
		tac_run_part(c, pb, i, &s, &e);
		src = tac_all(copy, (s - base) << SECTOR_SHIFT);
		src.bi_size = (e - s) << SECTOR_SHIFT;
		dst = pb->iter;
		bio_advance_iter(bio, &dst, (s - start) << SECTOR_SHIFT);
		dst.bi_size = src.bi_size;
		bio_copy_data_iter(bio, &dst, copy, &src);
	}
}

static void tac_retry_put(struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);

	if (!atomic_dec_and_test(&pb->pending))
		return;
	bio->bi_status = pb->status;
	bio_endio(bio);
}

/* A hit went wrong: the same data comes from the origin instead. */
static void tac_retry_endio(struct bio *clone)
{
	struct bio *bio = clone->bi_private;
	struct tac_bio *pb = tac_pb(bio);
	blk_status_t status = clone->bi_status;

	bio_put(clone);
	if (pb->ovl) {
		tac_overlay_step(pb->c, bio, status);
		return;
	}
	if (status)
		WRITE_ONCE(pb->status, status);
	tac_retry_put(bio);
}

/*
 * Worker (ROUTE_RETRY): the hit from the origin; if pb->keep, only the
 * blocks not in it (the others are in the user's pages already, see
 * tac_verify_endio()): one clone per range of them.  The clones come from
 * c->bs and complete without the worker (the reserves' rule).  A clone
 * may end the bio as soon as it is submitted: nothing of the bio is
 * touched after the last submit but through its own count.
 */
static void tac_retry(struct tac_cache *c, struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t start = pb->iter.bi_sector, s, e, x;
	u32 n = tac_run_blocks(c, pb), i, j;
	struct bio *clone;

	pb->route = ROUTE_RETRY;
	bio->bi_iter = pb->iter;
	pb->status = BLK_STS_OK;
	atomic_set(&pb->pending, 1);
	/* A hit's blocks from pb->oblock: not an overlay's (never kept). */
	if (!pb->keep || WARN_ON_ONCE(pb->ovl)) {
		clone = bio_alloc_clone(c->origin, bio, GFP_NOIO, &c->bs);
		clone->bi_end_io = tac_retry_endio;
		clone->bi_private = bio;
		submit_bio_noacct(clone);
		return;
	}
	for (i = 0; i < n; i = j) {
		if (pb->keep & BIT(i)) {
			j = i + 1;
			continue;
		}
		for (j = i + 1; j < n && !(pb->keep & BIT(j)); j++)
			;
		tac_run_part(c, pb, i, &s, &x);
		tac_run_part(c, pb, j - 1, &x, &e);
		clone = bio_alloc_clone(c->origin, bio, GFP_NOIO, &c->bs);
		if (s > start || e < bio_end_sector(bio))
			bio_trim(clone, s - start, e - s);
		clone->bi_end_io = tac_retry_endio;
		clone->bi_private = bio;
		atomic_inc(&pb->pending);
		submit_bio_noacct(clone);
	}
	tac_retry_put(bio);
}

/*
 * Worker (ROUTE_VERIFY): read the units a hit covers into our pages; the
 * check is made when that read completes (tac_verify_check()), so the
 * copy never waits for the worker to be freed.
 */
static void tac_verify_endio(struct bio *copy);

static void tac_verify_read(struct tac_cache *c, struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t start = pb->iter.bi_sector;
	sector_t end = start + (pb->iter.bi_size >> SECTOR_SHIFT);
	sector_t us = tac_unit_sectors(c);
	sector_t in = start & (c->block_sectors - 1);
	sector_t a = round_down(in, us);
	sector_t e = round_up(in + (end - start), us);
	struct bio *copy;

	copy = tac_copy_alloc(c, c->cache, REQ_OP_READ,
			      (e - a) << SECTOR_SHIFT, true);
	copy->bi_iter.bi_sector = tac_cblock_sector(c, pb->cblock) + a;
	copy->bi_end_io = tac_verify_endio;
	copy->bi_private = bio;
	pb->copy = copy;
	submit_bio_noacct(copy);
}

/*
 * Our copy of the units is in.  If it matches its checksums, the user's
 * part comes from it: a mismatch seen in the user's pages was the user's
 * doing (a buffer changed during the read); units whose checksum was not
 * known learn it from the copy (the block is held shared: no write
 * changed it).  If not, the cache has lost the data: a clean block is
 * read from the origin, a dirty one is an error.  Per block of a read
 * run, each as it is now (a dirty block may have been cleaned since, and
 * the origin then holds its data; a clean one never becomes dirty while
 * shared): a dirty block that failed fails the read; else the blocks
 * that passed come from this copy, at once, and those that failed go and
 * are read from the origin (ROUTE_RETRY, pb->keep).  The copy is freed
 * here: our reserves must not wait for the worker (tac_copy_alloc()).
 */
static void tac_verify_endio(struct bio *copy)
{
	struct bio *bio = copy->bi_private;
	struct tac_bio *pb = tac_pb(bio);
	struct tac_cache *c = pb->c;
	sector_t start = pb->iter.bi_sector;
	sector_t in = start & (c->block_sectors - 1);
	u32 first = in >> c->unit_shift;
	u32 nr = tac_all(copy, 0).bi_size >> (c->unit_shift + SECTOR_SHIFT);
	blk_status_t status = copy->bi_status;
	bool good = false, retry = false;
	u32 cb = pb->cblock, n = tac_run_blocks(c, pb), keep = 0;
	unsigned long flags;
	u32 crc[TAC_RUN_UNITS];
	u32 i, u, k;

	if (!status)
		tac_bio_crcs(c, copy, tac_all(copy, 0), nr, crc);
	spin_lock_irqsave(&c->lock, flags);
	if (!status)
		good = tac_crcs_match(c, cb, first, nr, crc);
	if (good) {
		u32 *have = &c->crc[(u64)cb * c->units + first];

		/* Hits compare them without the lock (tac_crcs_match()). */
		for (i = 0; i < nr; i++)
			if (have[i] < TAC_CRC_FULL)
				WRITE_ONCE(have[i], crc[i]);
	} else {
		/* Which blocks passed: none if the read failed. */
		for (i = 0; i < n && !status; i++) {
			u = max(first, i * c->units);
			k = min(first + nr, (i + 1) * c->units) - u;
			if (tac_crcs_match(c, cb, u, k, &crc[u - first]))
				keep |= BIT(i);
		}
		for (i = 0; i < n; i++)
			if (!(keep & BIT(i)) && __tac_is_dirty(c, cb + i))
				break;
		if (i < n) {
			/* A dirty block's only copy is lost. */
			__tac_fail(c, status ?
				   "a dirty block could not be read" :
				   "a dirty block failed its checksum");
			status = BLK_STS_IOERR;
		} else {
			/*
			 * The blocks that failed are clean: they go (one
			 * error each; one if the read failed) and are read
			 * from the origin, which has them.
			 */
			for (i = 0; i < n; i++) {
				if (keep & BIT(i))
					continue;
				if (!(tac_cb(c, cb + i) & CB_DOOMED))
					__tac_invalidate(c, cb + i);
				if (!status)
					__tac_cache_error(c, "checksum");
			}
			if (status)
				__tac_cache_error(c, "read");
			retry = true;
		}
	}
	__tac_unshare_run(c, cb, n);
	pb->copy = NULL;
	spin_unlock_irqrestore(&c->lock, flags);

	if (good) {
		struct bvec_iter src = tac_all(copy,
			(in - ((sector_t)first << c->unit_shift)) <<
			SECTOR_SHIFT);
		struct bvec_iter dst = pb->iter;

		bio_copy_data_iter(bio, &dst, copy, &src);
	} else if (keep) {
		tac_keep_run(c, bio, copy, keep);
	}
	tac_copy_free(c, copy);
	if (retry) {
		/* Once deferred the bio is the worker's: nothing after. */
		pb->keep = keep;
		pb->route = ROUTE_RETRY;
		spin_lock_irqsave(&c->lock, flags);
		__tac_defer(c, bio);
		spin_unlock_irqrestore(&c->lock, flags);
		return;
	}
	if (pb->ovl)
		tac_overlay_step(c, bio, good ? BLK_STS_OK : status);
	else
		tac_complete(bio, good ? BLK_STS_OK : status);
}

/* ------------------------------------------------------------------ */
/* Overlays */

/*
 * A stream read reads its range from the origin in one piece, so the disk
 * streams; a clean cached block in it holds what the origin holds (rule
 * 1).  A dirty block is the only current copy.  Rather than cut the
 * origin read around it (a hole costs the disk a rotation), the request
 * takes the dirty block shared in map, reads the whole range from the
 * origin, and then, one block at a time in the worker, reads each dirty
 * block from the cache into our pages (tac_verify_read()), checks it and
 * copies it over the stale part of the user's pages.
 *
 * Who may touch such a block X meanwhile:
 * - Writes of X park until the overlay lets X go: held shared, X's cache
 *   data cannot change (rule 2), so what is copied is what X held when
 *   the read was mapped, or later, never older.
 * - The cleaner may write X back and mark it clean: the cache copy is
 *   still X's data, and the origin now holds the same.  A clean X may be
 *   unmapped (invalidate, write-around); its space stays ours until the
 *   share is dropped, so the record keeps the cache block, not a lookup.
 * - The origin read runs before any cache read and completes before it
 *   starts, so the user's pages end with the cache's copy of X.
 * A cache read or checksum failure of X is handled as for a hit: dirty,
 * the request fails; cleaned since, X is read again from the origin into
 * the user's part (ROUTE_RETRY), which then holds the written-back data.
 * Records are per cache (c->ovl) under c->lock; with none free, or more
 * dirty blocks than a record holds, the read is cut there, as before.
 */

/* Hold dirty block @cb, @off blocks into the request, for its overlay. */
static bool __tac_overlay_add(struct tac_cache *c, struct tac_bio *pb,
			      u32 off, u32 cb)
{
	struct tac_overlay *o;
	u32 i = 0;

	if (!pb->ovl)
		while (i < TAC_OVERLAYS && c->ovl[i].busy)
			i++;
	else
		i = pb->ovl - 1;
	if (i == TAC_OVERLAYS)
		return false;
	o = &c->ovl[i];
	if ((pb->ovl && o->nr == TAC_OVERLAY_BLOCKS) ||
	    !__tac_try_share(c, cb))
		return false;
	if (!pb->ovl) {
		o->busy = true;
		o->nr = 0;
		o->next = 0;
		pb->ovl = i + 1;
	}
	o->cb[o->nr] = cb;
	o->off[o->nr++] = off;
	return true;
}

/* Let go of the blocks not read yet, and of the record. */
static void __tac_overlay_end(struct tac_cache *c, struct tac_bio *pb)
{
	struct tac_overlay *o = &c->ovl[pb->ovl - 1];

	while (o->next < o->nr)
		__tac_unshare(c, o->cb[o->next++]);
	o->busy = false;
	pb->ovl = 0;
}

/* A step is over (the origin read, or one block): on to the next. */
static void tac_overlay_step(struct tac_cache *c, struct bio *bio,
			     blk_status_t status)
{
	struct tac_bio *pb = tac_pb(bio);
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	if (!status) {
		pb->route = ROUTE_OVERLAY;
		__tac_defer(c, bio);
	} else {
		__tac_overlay_end(c, pb);
	}
	spin_unlock_irqrestore(&c->lock, flags);
	if (status)
		tac_complete(bio, status);
}

/* Worker (ROUTE_OVERLAY): read the next dirty block, or complete. */
static void tac_overlay_next(struct tac_cache *c, struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);
	struct tac_overlay *o;
	struct bvec_iter it;
	sector_t s, e;
	u64 b;

	spin_lock_irq(&c->lock);
	o = &c->ovl[pb->ovl - 1];
	if (o->next == o->nr) {
		__tac_overlay_end(c, pb);
		spin_unlock_irq(&c->lock);
		tac_complete(bio, BLK_STS_OK);
		return;
	}
	/* The block's share is now the verify step's to drop. */
	pb->cblock = o->cb[o->next];
	b = pb->oblock + o->off[o->next++];
	it = o->whole;
	s = max_t(sector_t, b << c->block_shift, it.bi_sector);
	e = min_t(sector_t, (b + 1) << c->block_shift,
		  bvec_iter_end_sector(it));
	spin_unlock_irq(&c->lock);

	/* bvec_iter_advance() moves through the pages, not the sector. */
	bvec_iter_advance(bio->bi_io_vec, &it, (s - it.bi_sector) <<
			  SECTOR_SHIFT);
	it.bi_sector = s;
	it.bi_size = (e - s) << SECTOR_SHIFT;
	pb->iter = it;
	pb->route = ROUTE_VERIFY;
	tac_verify_read(c, bio);
}

/* A hit goes to its place on the cache device, from any CPU. */
static int tac_remap_hit(struct tac_cache *c, struct bio *bio, u32 cb)
{
	sector_t start = bio->bi_iter.bi_sector;

	bio_set_dev(bio, c->cache);
	bio->bi_iter.bi_sector = tac_cblock_sector(c, cb) +
				 (start & (c->block_sectors - 1));
	/*
	 * A read-ahead or fail-fast error of the cache would count as the
	 * cache failing: the cache is read in earnest.
	 */
	bio->bi_opf &= ~(REQ_RAHEAD | REQ_FAILFAST_MASK);
	return DM_MAPIO_REMAPPED;
}

/*
 * Free the DOOMED blocks whose last reader let go without the lock on
 * @log's CPU (tac_log_doomed()): by any fold of the log, and by the
 * worker, kicked for them.
 */
static void __tac_free_doomed(struct tac_cache *c, struct tac_hit_log *log)
{
	u32 cbs[TAC_DOOMED_LOG], i, n;

	lockdep_assert_held(&c->lock);
	spin_lock(&log->lock);
	n = log->nr_doomed;
	memcpy(cbs, log->doomed, n * sizeof(*cbs));
	log->nr_doomed = 0;
	spin_unlock(&log->lock);
	for (i = 0; i < n; i++)
		__tac_unshared_doomed(c, cbs[i]);
}

/*
 * Fold @log, the hits one CPU served without the lock, into the policy
 * (its request() and lookup() of each, in order) and the counters.
 */
static void __tac_fold_hits(struct tac_cache *c, struct tac_hit_log *log)
{
	bool random, multi_random = false;
	u32 i, folded;

	lockdep_assert_held(&c->lock);
	spin_lock(&log->lock);
	for (i = 0; i < log->nr; i++) {
		u32 nr = log->hit[i].nr;
		enum tac_class class;

		class = tac_policy_hit(c->policy,
				       to_oblock(log->hit[i].oblock), nr,
				       to_cblock(log->hit[i].cblock));
		/*
		 * A later block of a read takes its first block's class: the
		 * last read of several blocks in this log, since a log has at
		 * most one whose remainder is still to come.
		 */
		random = nr ? class == TAC_RANDOM : multi_random;
		if (nr > 1)
			multi_random = random;
		c->n.read_hits++;
		c->n.lockless_hits++;
		if (random)
			c->n.random_read_hits++;
	}
	folded = log->nr;
	log->nr = 0;
	/*
	 * The remainder still to come of the last of them takes the locked
	 * way now, with its read's verdicts: not a stream (too small), and
	 * the class just folded.  The record is made before the log forgets
	 * the remainder, under log->lock, which tac_read_hit_fast() takes
	 * before it looks for either.
	 */
	if (log->rest_start) {
		i = __tac_new_rest(c, log->rest_end, false, false, false,
				   multi_random, (jiffies + HZ) | 1);
		WRITE_ONCE(c->rests[i].start, log->rest_start);
		log->rest_start = 0;
	}
	spin_unlock(&log->lock);
	if (READ_ONCE(log->nr_doomed))
		__tac_free_doomed(c, log);
	/*
	 * Records past their time cost every lockless hit a look
	 * (tac_maybe_rest()): dropped by a fold that had hits to fold, and
	 * by __tac_fold_all(), not on every locked map.
	 */
	if (folded)
		__tac_expire_rests(c);
}

/* In map(), before this CPU's next request counts: keeps their order. */
static void __tac_fold_mine(struct tac_cache *c)
{
	__tac_fold_hits(c, this_cpu_ptr(c->hit_log));
}

/*
 * In the locked way of a read from map(), after __tac_fold_mine(): is
 * @bio the remainder of a read split without the lock on another CPU,
 * whose task slept below (for a tag) and woke here before that CPU's log
 * was folded?  Then fold that log now: its fold records the remainder
 * (c->rests), which __tac_classify() takes, so the request is classified
 * once, with its first block's class.  Without it the remainder was a
 * request of its own, entered the policy's window before its own first
 * block, and made that block's request look sequential.  Only a read
 * that could be such a remainder looks: it starts on a block, and is too
 * small for a stream.  Cost: one read of each other online CPU's log.
 * A remainder that moves to another CPU and hits there without the lock
 * is still counted as a request of its own (a look per CPU on every such
 * hit would cost more than the verdict is worth).
 */
static void __tac_fold_owner(struct tac_cache *c, struct bio *bio)
{
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	int cpu, me = smp_processor_id();
	struct tac_hit_log *log;

	if (start & (c->block_sectors - 1) || end - start >= tac_stream_min(c))
		return;
	for_each_online_cpu(cpu) {
		if (cpu == me)
			continue;
		log = per_cpu_ptr(c->hit_log, cpu);
		if (READ_ONCE(log->rest_start) == start &&
		    READ_ONCE(log->rest_end) == end) {
			__tac_fold_hits(c, log);
			return;
		}
	}
}

/* Every CPU's hits, for whoever reads the counters. */
void __tac_fold_all(struct tac_cache *c)
{
	int cpu;

	for_each_possible_cpu(cpu)
		__tac_fold_hits(c, per_cpu_ptr(c->hit_log, cpu));
	__tac_expire_rests(c);
}

/*
 * Might @bio, a read, be a split's remainder (__tac_take_rest())?  Looked
 * up without the lock: a split records its remainder under the lock
 * before dm core submits it, so the remainder's map() sees its record;
 * a record changing meanwhile (another split's) may only make this say
 * yes for nothing.
 */
static bool tac_maybe_rest(struct tac_cache *c, struct bio *bio)
{
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	int i;

	if (!READ_ONCE(c->nr_rests))
		return false;
	for (i = 0; i < TAC_RESTS; i++)
		if (READ_ONCE(c->rests[i].start) == start &&
		    READ_ONCE(c->rests[i].end) == end)
			return true;
	return false;
}

/*
 * A read hit without c->lock (the contract at the top of dm-tac-blocks.c,
 * "A hit without the lock"): a read from map() too small to be part of a
 * stream (__tac_stream()), which leaves it no verdict but its class;
 * its first block cached and readable, outside passthrough, and whose
 * checksums, if checked, cover whole units.  A read of several blocks is
 * served here as far as its blocks make a read run, and split there: dm
 * core brings the remainder back to map(), which serves it the same way
 * if it finds the same log before that log is folded, and the locked way
 * otherwise (the fold made it a
 * record of c->rests; a remainder that moved to another CPU before that
 * folds this log if it goes the locked way there (__tac_fold_owner()),
 * and is counted as a request of its own if it hits there without the
 * lock: a verdict wrong, never data).
 * Anything else, and a hit whose block moved while it was taken, goes
 * the locked way (-EAGAIN), as does a hit finding its CPU's log full and
 * not yet folded.  What the locked way does for a hit under the lock,
 * the policy's request() and lookup() and the counters, is logged for
 * this CPU and folded later, in order (__tac_fold_hits()).
 *
 * Read runs: the blocks that follow the first block, each cached right
 * after the one before (up to TAC_READ_RUN blocks and TAC_RUN_UNITS
 * checksum units), are read in the same bio, one cache read where there
 * were as many as blocks.  Each is taken as the first (shared, at once,
 * or the run ends before it) and logged as a hit of its own, as the
 * pieces would have been.  All clean, or all dirty (a database page
 * written since it was cached is dirty whole; a dirty run is checked,
 * as a dirty block is).  Who may change a block of the run while it is
 * shared: no writer (rule 2), so a clean block stays clean; the cleaner
 * may write a dirty one back and make it clean, and the origin then
 * holds its data.  So a run's completion judges each block as it is
 * then.  A failed read: if a block is still dirty, the read fails (as
 * a dirty block's read alone does, and which block failed is unknown),
 * else every block goes (one error) and is read from the origin.  A
 * checksum mismatch (checked again through our pages): a dirty block
 * that failed fails the read; else those that passed come from our
 * checked copy and those that failed go (one error each) and are read
 * from the origin (tac_verify_endio(), tac_retry()).  Runs are never
 * mixed so that one unreadable clean block cannot fail a read, and the
 * cache, over dirty blocks that are readable.  A log keeps room for a
 * whole run: it is folded once it has less, and no remainder is to come.
 *
 * Cost per block: no lock of the cache's; one cmpxchg to take the block
 * and one to let go of it (tac_unshare_fast()), the cache's inflight
 * count up and down, and this CPU's log lock; one hash walk; and while
 * records of remainders exist, two looks through them (tac_maybe_rest()).
 */
static int tac_read_hit_fast(struct tac_cache *c, struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	u64 b0 = start >> c->block_shift, bl = (end - 1) >> c->block_shift;
	u32 max = min_t(u64, bl - b0 + 1,
			min_t(u32, TAC_READ_RUN, TAC_RUN_UNITS / c->units));
	sector_t first_end;
	struct tac_hit_log *log;
	tac_cblock_t cblock;
	unsigned long flags;
	unsigned int seq;
	bool verify, dirty, cont, logged = false, full = false;
	u32 cb, n, i;

	if (READ_ONCE(c->mode) == TAC_MODE_PASSTHROUGH ||
	    end - start >= tac_stream_min(c) ||
	    bl >= c->nr_oblocks || tac_maybe_rest(c, bio))
		return -EAGAIN;
	seq = raw_read_seqcount(&c->map_seq);
	if ((seq & 1) || tac_policy_peek(c->policy, to_oblock(b0), &cblock))
		return -EAGAIN;
	cb = from_cblock(cblock);
	if (!tac_try_share_fast(c, cb))
		return -EAGAIN;
	/* Read once taken: no write can make it dirty now (rule 3). */
	dirty = tac_policy_peek_dirty(c->policy, cblock);
	verify = dirty || READ_ONCE(c->tun.verify_reads);
	/*
	 * A read run: the blocks after b0 cached right after cb, each taken
	 * the same way, and dirty if b0 is, clean if not; the map_seq check
	 * below covers their mappings too.
	 */
	for (n = 1; n < max; n++) {
		if (tac_policy_peek(c->policy, to_oblock(b0 + n), &cblock) ||
		    from_cblock(cblock) != cb + n ||
		    !tac_try_share_fast(c, cb + n))
			break;
		if (tac_policy_peek_dirty(c->policy, cblock) != dirty) {
			tac_unshare(c, cb + n);
			break;
		}
	}
	first_end = min_t(sector_t, end, (b0 + n) << c->block_shift);
	/* A read ending within a unit, checked: the run stops before it. */
	if (verify && n > 1 && !tac_units_aligned(c, start, first_end)) {
		tac_unshare(c, cb + --n);
		first_end = (b0 + n) << c->block_shift;
	}
	if (!read_seqcount_retry(&c->map_seq, seq) &&
	    (!verify || tac_units_aligned(c, start, first_end))) {
		log = raw_cpu_ptr(c->hit_log);
		spin_lock_irqsave(&log->lock, flags);
		cont = log->rest_start && log->rest_start == start &&
		       log->rest_end == end;
		/*
		 * Not this CPU's remainder: a new read, unless it is one
		 * whose record a fold just made; of several blocks (a run
		 * too) only while no other read's remainder is to come
		 * here, whose later blocks take the class of the last read
		 * of several blocks logged (__tac_fold_hits()).
		 */
		if (log->nr + n <= TAC_HIT_LOG &&
		    (cont || (!tac_maybe_rest(c, bio) &&
			      (bl == b0 || !log->rest_start)))) {
			for (i = 0; i < n; i++) {
				log->hit[log->nr].oblock = b0 + i;
				log->hit[log->nr].cblock = cb + i;
				log->hit[log->nr].nr = cont || i ? 0 :
						       bl - b0 + 1;
				log->nr++;
			}
			if (end > first_end) {
				log->rest_start = first_end;
				log->rest_end = end;
			} else if (cont) {
				log->rest_start = 0;
			}
			/*
			 * Room for the next run, or folded now; but not
			 * while a remainder is to come, which would then go
			 * the locked way, unless the log has no room left.
			 */
			full = log->nr == TAC_HIT_LOG ||
			       (log->nr + TAC_READ_RUN > TAC_HIT_LOG &&
				!log->rest_start);
			logged = true;
		}
		spin_unlock_irqrestore(&log->lock, flags);
	}
	if (!logged) {
		for (i = 0; i < n; i++)
			tac_unshare(c, cb + i);
		return -EAGAIN;
	}
	if (end > first_end)
		dm_accept_partial_bio(bio, first_end - start);
	if (full) {
		spin_lock_irqsave(&c->lock, flags);
		__tac_fold_hits(c, log);
		spin_unlock_irqrestore(&c->lock, flags);
	}
	if (READ_ONCE(c->last_io) != jiffies)
		WRITE_ONCE(c->last_io, jiffies);
	pb->route = ROUTE_HIT;
	pb->oblock = b0;
	pb->cblock = cb;
	pb->iter = bio->bi_iter;
	pb->verify = verify;
	return tac_remap_hit(c, bio, cb);
}

/* A read uses the cache's blocks unless it goes around it. */
static enum tac_use tac_read_use(struct tac_cache *c, struct tac_bio *pb)
{
	return !pb->around && c->mode != TAC_MODE_PASSTHROUGH ?
	       TAC_USE_READ : TAC_PROBE;
}

/*
 * Route a read.  @ti is set in map() (which may split the bio), NULL in
 * the worker (the bio is within one block).  Returns DM_MAPIO_*.
 */
static int tac_route_read(struct dm_target *ti, struct tac_cache *c,
			  struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	u64 b0 = start >> c->block_shift, bl = (end - 1) >> c->block_shift;
	u32 cap = max_t(u32, TAC_FILL_MAX_SECTORS >> c->block_shift, 1);
	u32 cbs[TAC_FILL_MAX_BLOCKS];
	u8 off[TAC_FILL_MAX_BLOCKS];
	u32 nr = 0, around, cb;
	enum tac_lookup st;
	bool dirty = false;
	u64 b;
	int r;

	if (ti) {
		r = tac_read_hit_fast(c, bio);
		if (r >= 0)
			return r;
	}
	spin_lock_irq(&c->lock);
	if (ti) {
		__tac_fold_mine(c);
		__tac_fold_owner(c, bio);
	}
	__tac_classify(ti, c, bio, false);
	WRITE_ONCE(c->last_io, jiffies);
	/* A use of the cache: a read it may serve (not one read around it). */
	st = __tac_lookup(c, b0, &cb, tac_read_use(c, pb));
	if (st == LK_VALID)
		dirty = __tac_is_dirty(c, cb);
	/*
	 * A stream reads clean blocks from the origin with the rest: the
	 * disk serves it in one piece.  Only dirty blocks must come from the
	 * cache, laid over the origin's data (Overlays).
	 */
	if (st == LK_VALID && dirty && pb->around && bl > b0 &&
	    __tac_overlay_add(c, pb, 0, cb))
		goto miss;
	if (st == LK_VALID &&
	    (dirty || (c->mode != TAC_MODE_PASSTHROUGH && !pb->around))) {
		if (!__tac_try_share(c, cb)) {
			if (dirty) {
				/* The only copy is being written: wait. */
				__tac_first_block_only(ti, c, bio);
				pb->next = PARKED_READ;
				__tac_park(c, cb, bio, __tac_readers_only(c,
						cb, CB_SHARE_BLOCKERS));
				spin_unlock_irq(&c->lock);
				return DM_MAPIO_SUBMITTED;
			}
			/* A clean block busy being written: the origin. */
			goto miss;
		}
		/* A hit: one block, to its place on the cache device. */
		__tac_first_block_only(ti, c, bio);
		end = bio_end_sector(bio);
		c->n.read_hits++;
		if (pb->random)
			c->n.random_read_hits++;
		pb->route = ROUTE_HIT;
		pb->oblock = b0;
		pb->cblock = cb;
		pb->iter = bio->bi_iter;
		/* A dirty block is the only copy: always checked. */
		pb->verify = dirty || c->tun.verify_reads;
		if (pb->verify && !tac_units_aligned(c, start, end) &&
		    !__tac_crcs_unknown(c, cb, start, end)) {
			/* Part of a unit: checked through our pages. */
			pb->route = ROUTE_VERIFY;
			__tac_defer(c, bio);
			spin_unlock_irq(&c->lock);
			return DM_MAPIO_SUBMITTED;
		}
		spin_unlock_irq(&c->lock);
		return tac_remap_hit(c, bio, cb);
	}

miss:
	/*
	 * The run of blocks to read from the origin: one origin bio.  Clean
	 * cached blocks in it (read around) are not bypassed: they are
	 * cached already.
	 */
	around = st == LK_VALID;
	for (b = b0 + 1; b <= bl; b++) {
		if (__tac_lookup(c, b, &cb, tac_read_use(c, pb)) != LK_VALID)
			continue;
		if (__tac_is_dirty(c, cb) ?
		    !pb->around || !__tac_overlay_add(c, pb, b - b0, cb) :
		    c->mode != TAC_MODE_PASSTHROUGH && !pb->around)
			break;
		around++;
	}
	if (b <= bl) {
		__tac_split(ti, c, bio, (b << c->block_shift) - start);
		end = b << c->block_shift;
	}
	if (pb->stream && c->mode != TAC_MODE_PASSTHROUGH)
		c->n.bypassed += b - b0 - around;

	/*
	 * Promotions, for at most cap blocks from the start of the run; a
	 * stream promotes nothing (TAC: what a scan reads is not worth a
	 * place; it must not take the free space a hot set is about to need).
	 */
	if (c->mode != TAC_MODE_PASSTHROUGH && !pb->stream && !pb->ovl) {
		u64 last = min(b, b0 + cap);

		for (b = b0; b < last; b++) {
			if (__tac_lookup(c, b, &cb, TAC_USE_READ) != LK_NONE)
				continue;
			/* Before a reservation evicts over its ghost. */
			__tac_ghost_read(c, b, pb->random);
			if (__tac_reserve(c, b, &cb)) {
				off[nr] = b - b0;
				cbs[nr++] = cb;
			}
		}
		if (nr && end > last << c->block_shift) {
			__tac_split(ti, c, bio, (last << c->block_shift) - start);
			end = last << c->block_shift;
		}
	}
	/*
	 * The blocks of this piece only: a remainder counts its own.  Dirty
	 * blocks laid over it are hits.
	 */
	b = ((end - 1) >> c->block_shift) - b0 + 1;
	pb->route = ROUTE_ORIGIN;
	if (pb->ovl) {
		struct tac_overlay *o = &c->ovl[pb->ovl - 1];

		o->whole = bio->bi_iter;
		pb->oblock = b0;
		pb->route = ROUTE_OVERLAY;
		b -= o->nr;
		c->n.read_hits += o->nr;
		if (pb->random)
			c->n.random_read_hits += o->nr;
	}
	c->n.read_misses += b;
	if (pb->random)
		c->n.random_read_misses += b;
	spin_unlock_irq(&c->lock);

	pb->iter = bio->bi_iter;
	if (nr)
		return tac_fill_start(c, bio, b0, off, cbs, nr);
	bio_set_dev(bio, c->origin);
	return DM_MAPIO_REMAPPED;
}

/* ------------------------------------------------------------------ */
/* Writes through a copy: write-back, and write-through of cached blocks */

static void tac_wb_endio(struct bio *copy)
{
	struct bio *bio = copy->bi_private;
	struct tac_bio *pb = tac_pb(bio);
	struct tac_cache *c = pb->c;
	sector_t start = pb->iter.bi_sector;
	sector_t end = start + (pb->iter.bi_size >> SECTOR_SHIFT);
	blk_status_t status = copy->bi_status;
	u32 cb = pb->cblock, first, nr, dirty, high, i, n;
	u32 crc[TAC_RUN_UNITS];
	unsigned long flags;
	sector_t s, e;
	bool kick;

	nr = tac_whole_units(c, start, end, &first);
	if (!status && nr)
		tac_bio_crcs(c, copy, tac_all(copy, tac_unit_skip(c, start)),
			     nr, crc);

	spin_lock_irqsave(&c->lock, flags);
	n = tac_run_blocks(c, pb);
	if (pb->admitted) {
		if (!status)
			__tac_written_crcs(c, cb, start, end, crc, nr);
		__tac_fill_done(c, cb, !status);
		if (status)
			__tac_cache_error(c, "write");
	} else if (!status) {
		/* A run's checksums follow @cb's (Write runs). */
		__tac_written_crcs(c, cb, start, end, crc, nr);
		for (i = 0; i < n; i++) {
			__tac_write_done(c, cb + i);
			__tac_disown(c, cb + i);
		}
	} else {
		for (i = 0; i < n; i++) {
			if (pb->was_clean & (1U << i)) {
				/* The origin still has it as it was: drop ours. */
				__tac_set_clean(c, cb + i);
				__tac_invalidate(c, cb + i);
			} else {
				tac_run_part(c, pb, i, &s, &e);
				__tac_written_crcs(c, cb + i, s, e, NULL, 0);
				__tac_write_done(c, cb + i);
			}
		}
		/* Counted per block, as when each block was written alone. */
		for (i = 0; i < n; i++)
			if (pb->was_clean & (1U << i))
				__tac_cache_error(c, "write");
		if (pb->was_clean != GENMASK(n - 1, 0))
			__tac_fail(c, "a write to a dirty block failed");
		for (i = 0; i < n; i++)
			__tac_disown(c, cb + i);
	}
	__tac_dirty_high(c, &dirty, &high);
	kick = dirty > high;
	spin_unlock_irqrestore(&c->lock, flags);
	pb->copy = NULL;
	tac_copy_free(c, copy);
	if (kick)
		tac_wb_kick(c);
	tac_complete_write(c, bio, status);
}

static void tac_fanout_done(struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);
	struct tac_cache *c = pb->c;
	struct bio *copy = pb->copy;
	sector_t start = pb->iter.bi_sector;
	sector_t end = start + (pb->iter.bi_size >> SECTOR_SHIFT);
	bool ok = !pb->status && !pb->cache_failed;
	u32 cb = pb->cblock, first, nr, i, n;
	u32 crc[TAC_RUN_UNITS];
	unsigned long flags;

	nr = tac_whole_units(c, start, end, &first);
	if (ok && nr)
		tac_bio_crcs(c, copy, tac_all(copy, tac_unit_skip(c, start)),
			     nr, crc);

	spin_lock_irqsave(&c->lock, flags);
	n = tac_run_blocks(c, pb);
	if (pb->admitted) {
		if (ok)
			__tac_written_crcs(c, cb, start, end, crc, nr);
		__tac_fill_done(c, cb, ok);
	} else {
		/* A run's checksums follow @cb's (Write runs). */
		if (ok)
			__tac_written_crcs(c, cb, start, end, crc, nr);
		for (i = 0; i < n; i++) {
			/* Either copy failed: the two may differ. */
			if (!ok && !(tac_cb(c, cb + i) & CB_DOOMED))
				__tac_invalidate(c, cb + i);
			__tac_disown(c, cb + i);
		}
	}
	/* Counted per block, as when each block was written alone. */
	for (i = 0; pb->cache_failed && i < n; i++)
		__tac_cache_error(c, "write");
	__tac_wtrack(c, pb->wfirst, pb->wcount, -1);
	pb->wcount = 0;
	spin_unlock_irqrestore(&c->lock, flags);
	pb->copy = NULL;
	tac_copy_free(c, copy);
	tac_complete_write(c, bio, pb->status);
}

static void tac_fanout_endio(struct bio *b)
{
	struct bio *bio = b->bi_private;
	struct tac_bio *pb = tac_pb(bio);

	if (b == pb->copy) {
		if (b->bi_status)
			pb->cache_failed = true;
	} else {
		pb->status = b->bi_status;
		tac_bio_free(b);
	}
	if (atomic_dec_and_test(&pb->pending))
		tac_fanout_done(bio);
}

/*
 * Copy @bio (within block pb->cblock, or a write run from it) into our
 * pages and write the copy to the cache, and for write-through to the
 * origin too.  Without @can_wait (map) nothing sleeps: short of memory,
 * the worker does it.
 */
static int tac_copy_start(struct tac_cache *c, struct bio *bio, bool can_wait)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t in = pb->iter.bi_sector & (c->block_sectors - 1);
	struct bio *copy, *o = NULL;
	struct bvec_iter src = pb->iter, dst;

	copy = tac_copy_alloc(c, c->cache,
			      REQ_OP_WRITE | tac_copy_flags(bio),
			      pb->iter.bi_size, can_wait);
	if (copy && pb->route == ROUTE_FANOUT) {
		/* The origin's bio shares the copy's pages. */
		o = tac_bio_alloc(c, c->origin, copy->bi_vcnt,
				  copy->bi_opf, can_wait);
		if (o) {
			tac_add_range(o, copy, 0, pb->iter.bi_size);
		} else {
			tac_copy_free(c, copy);
			copy = NULL;
		}
	}
	if (!copy) {
		spin_lock_irq(&c->lock);
		__tac_defer(c, bio);
		spin_unlock_irq(&c->lock);
		return DM_MAPIO_SUBMITTED;
	}
	dst = tac_all(copy, 0);
	bio_copy_data_iter(copy, &dst, bio, &src);
	copy->bi_iter.bi_sector = tac_cblock_sector(c, pb->cblock) + in;
	copy->bi_private = bio;
	pb->copy = copy;
	if (!o) {
		copy->bi_end_io = tac_wb_endio;
		submit_bio_noacct(copy);
		return DM_MAPIO_SUBMITTED;
	}
	o->bi_iter.bi_sector = pb->iter.bi_sector;
	o->bi_end_io = tac_fanout_endio;
	o->bi_private = bio;
	copy->bi_end_io = tac_fanout_endio;
	pb->status = BLK_STS_OK;
	pb->cache_failed = false;
	atomic_set(&pb->pending, 2);
	submit_bio_noacct(o);
	submit_bio_noacct(copy);
	return DM_MAPIO_SUBMITTED;
}

/* ------------------------------------------------------------------ */
/* Write routing */

/*
 * May this write use the cache's blocks?  In write-back and write-through,
 * unless it is part of a stream, which drops the cached copies it writes
 * over and goes to the origin in one piece.
 */
static bool tac_write_caches(struct tac_cache *c, struct tac_bio *pb)
{
	return (c->mode == TAC_MODE_WRITEBACK ||
		c->mode == TAC_MODE_WRITETHROUGH) && !pb->stream;
}

/*
 * Writes that go to the origin alone, from @b0 up to the next block that
 * needs the cache (a dirty one; in write-back and write-through a clean
 * cached one or one to admit).  Clean cached copies on the way are
 * unmapped first (rule 1), fills in flight dropped (rule 4).
 */
static u64 __tac_origin_run(struct dm_target *ti, struct tac_cache *c,
			    struct bio *bio, u64 b0, u64 bl)
{
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	bool caching = tac_write_caches(c, tac_pb(bio));
	enum tac_lookup st;
	u64 b;
	u32 cb;

	for (b = b0; b <= bl; b++) {
		if (b > b0)	/* b0's vote: tac_route_write() */
			__tac_ghost_write(c, b);
		st = __tac_lookup(c, b, &cb,
				  caching ? TAC_USE_WRITE : TAC_PROBE);
		if (st == LK_NONE) {
			if (b > b0 && caching && tac_whole_block(c, b, start, end) &&
			    __tac_may_fill(c, b) &&
			    tac_policy_would_admit(c->policy,
						   to_oblock(b)))
				break;
			c->n.write_misses++;
			continue;
		}
		if (__tac_is_dirty(c, cb) ||
		    (b > b0 && st == LK_VALID && caching &&
		     __tac_cache_writable(c, cb, false)))
			break;
		__tac_invalidate(c, cb);
		c->n.write_hits++;
	}
	if (b <= bl) {
		__tac_split(ti, c, bio, (b << c->block_shift) - start);
		bl = b - 1;
	}
	return bl;
}

/*
 * Write runs: the blocks after b0 that a write to cached blocks takes
 * with it, in one copy and one bio to the cache (a database page over
 * several blocks), in place of one split piece, copy, bio and completion
 * per block.  Block b0 + n joins the run if it is mapped to the cache
 * block right after the run's last (so the run is one range on the
 * cache device, and its checksums one range of c->crc), would take the
 * write the same way (pb->route: WB or FANOUT), and is owned at once:
 * the run ends at the first block that is not, and the rest of the
 * write is split off and routed by itself (it parks there if it must).
 * So a write never holds one block while it waits for another (rule 2),
 * and what each block of the run sees is what it would see as a piece of
 * its own: it is taken, made dirty (write-back) and counted (the policy's
 * lookup, the split's vote, write_hits) as that piece's map() would,
 * under the same lock hold as the first.  A run's checksums fit the
 * completions' buffer: TAC_RUN_UNITS units at most, as many as one block
 * of the largest size has, so a completion (perhaps in hard-irq context)
 * checksums no more than one such block's write did.  Returns the number
 * of blocks taken, b0's included.  Caller holds c->lock and owns @cb,
 * b0's block, with pb->route set.
 */
static u32 __tac_write_run(struct tac_cache *c, struct tac_bio *pb, u64 b0,
			   u64 bl, u32 cb)
{
	u32 max = min_t(u64, bl - b0 + 1, TAC_RUN_UNITS / c->units);
	bool wb = pb->route == ROUTE_WB, dirty, caching;
	u32 n, cbn;

	caching = tac_write_caches(c, pb);
	for (n = 1; n < max; n++) {
		if (__tac_lookup(c, b0 + n, &cbn, TAC_PROBE) != LK_VALID ||
		    cbn != cb + n)
			break;
		dirty = __tac_is_dirty(c, cbn);
		if (!dirty && !(caching && __tac_cache_writable(c, cbn, false)))
			break;
		if ((dirty || c->mode == TAC_MODE_WRITEBACK) != wb)
			break;
		if ((dirty && __tac_wait_cleaner(c, cbn)) ||
		    !__tac_try_own(c, cbn))
			break;
		__tac_lookup(c, b0 + n, &cbn,
			     caching ? TAC_USE_WRITE : TAC_PROBE);
		__tac_ghost_write(c, b0 + n);
		c->n.write_hits++;
		if (!dirty && wb) {
			__tac_make_dirty(c, cbn);
			pb->was_clean |= 1U << n;
		}
	}
	return n;
}

static int tac_route_write(struct dm_target *ti, struct tac_cache *c,
			   struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	u64 b0 = start >> c->block_shift, bl = (end - 1) >> c->block_shift;
	enum tac_lookup st;
	bool dirty = false;
	u32 cb;

	spin_lock_irq(&c->lock);
	if (ti)
		__tac_fold_mine(c);
	__tac_classify(ti, c, bio, true);
	WRITE_ONCE(c->last_io, jiffies);
	/* A use of the cache: a write it may take (not a stream's). */
	st = __tac_lookup(c, b0, &cb, tac_write_caches(c, pb) ?
				      TAC_USE_WRITE : TAC_PROBE);
	if (st != LK_NONE)
		dirty = __tac_is_dirty(c, cb);
	/* A block written back lately, written again: a vote (tac-split.c). */
	__tac_ghost_write(c, b0);

	if (dirty || (st == LK_VALID && tac_write_caches(c, pb) &&
		      __tac_cache_writable(c, cb, false))) {
		/* A cached block takes the write: it must be ours alone. */
		bool cleaner;
		u32 n = 1;

		cleaner = dirty && __tac_wait_cleaner(c, cb);
		if (cleaner || !__tac_try_own(c, cb)) {
			__tac_first_block_only(ti, c, bio);
			pb->next = PARKED_WRITE;
			__tac_park(c, cb, bio, !cleaner &&
				   __tac_readers_only(c, cb, CB_OWN_BLOCKERS));
			spin_unlock_irq(&c->lock);
			return DM_MAPIO_SUBMITTED;
		}
		c->n.write_hits++;
		pb->cblock = cb;
		pb->oblock = b0;
		pb->was_clean = 0;
		pb->route = dirty || c->mode == TAC_MODE_WRITEBACK ?
			    ROUTE_WB : ROUTE_FANOUT;
		if (!dirty && c->mode == TAC_MODE_WRITEBACK) {
			/* Dirty from now on (rule 3). */
			__tac_make_dirty(c, cb);
			pb->was_clean = 1;
		}
		if (ti && bl > b0)
			n = __tac_write_run(c, pb, b0, bl, cb);
		if (bio_end_sector(bio) > (b0 + n) << c->block_shift)
			__tac_split(ti, c, bio,
				    ((b0 + n) << c->block_shift) - start);
		pb->iter = bio->bi_iter;
		if (pb->route == ROUTE_FANOUT) {
			__tac_wtrack(c, b0, n, 1);
			pb->wfirst = b0;
			pb->wcount = n;
		}
		spin_unlock_irq(&c->lock);
		return tac_copy_start(c, bio, false);
	}

	if (st == LK_NONE && tac_write_caches(c, pb) &&
	    tac_whole_block(c, b0, start, end) &&
	    __tac_reserve(c, b0, &cb)) {
		/* A whole block of a warm extent is admitted by its write. */
		__tac_first_block_only(ti, c, bio);
		c->n.write_misses++;
		pb->cblock = cb;
		pb->oblock = b0;
		pb->iter = bio->bi_iter;
		pb->admitted = true;
		if (c->mode == TAC_MODE_WRITEBACK) {
			__tac_admit_write(c, cb);
			pb->route = ROUTE_WB;
		} else {
			pb->route = ROUTE_FANOUT;
			__tac_wtrack(c, b0, 1, 1);
			pb->wfirst = b0;
			pb->wcount = 1;
		}
		spin_unlock_irq(&c->lock);
		return tac_copy_start(c, bio, false);
	}

	bl = __tac_origin_run(ti, c, bio, b0, bl);
	__tac_wtrack(c, b0, bl - b0 + 1, 1);
	pb->wfirst = b0;
	pb->wcount = bl - b0 + 1;
	pb->route = ROUTE_ORIGIN;
	pb->iter = bio->bi_iter;
	spin_unlock_irq(&c->lock);
	bio_set_dev(bio, c->origin);
	return DM_MAPIO_REMAPPED;
}

/* ------------------------------------------------------------------ */
/* Discards */

/* What keeps a discard from unmapping a dirty block: it waits. */
#define CB_DISCARD_BLOCKERS (CB_READERS | CB_WRITER | CB_PENDING | \
			     CB_CLEANER_IO | CB_WAITERS)

/*
 * What a discard does to cached block @cb; false: it must wait.  A reader
 * without the lock may take a clean block between the test and the
 * unmapping: it was in flight with the discard, and keeps the old data
 * until it is done (DOOMED).
 */
static bool __tac_discard_block(struct tac_cache *c, u32 cb)
{
	u16 st = tac_cb(c, cb);

	if (st & CB_DOOMED)
		return true;
	if (__tac_is_dirty(c, cb) && (st & CB_DISCARD_BLOCKERS))
		return false;
	__tac_invalidate(c, cb);
	return true;
}

/*
 * Pass down the whole blocks of [start, end), and any part beyond the
 * last whole block of the origin (never cached), or finish here.
 */
static int tac_discard_finish(struct tac_cache *c, struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	sector_t ce = c->nr_oblocks << c->block_shift;
	sector_t ps = start >= ce ? start : round_up(start, c->block_sectors);
	sector_t pe = end > ce ? end : round_down(end, c->block_sectors);

	if (pe <= ps || c->tun.no_discard_passdown ||
	    !bdev_max_discard_sectors(c->origin)) {
		spin_lock_irq(&c->lock);
		__tac_wtrack(c, pb->wfirst, pb->wcount, -1);
		pb->wcount = 0;
		spin_unlock_irq(&c->lock);
		tac_complete(bio, BLK_STS_OK);
		return DM_MAPIO_SUBMITTED;
	}
	pb->route = ROUTE_DISCARD;
	bio->bi_iter.bi_sector = ps;
	bio->bi_iter.bi_size = (pe - ps) << SECTOR_SHIFT;
	bio_set_dev(bio, c->origin);
	return DM_MAPIO_REMAPPED;
}

/*
 * A discard unmaps the cached blocks it covers whole (rule 3; a dirty one
 * once nothing holds it) and is passed down for those blocks only: a
 * block covered in part keeps its cached copy and its origin data.  It
 * counts as an origin write for fills while in flight.  In map it does at
 * most TAC_DISCARD_INLINE blocks; larger ones, and ones that had to wait,
 * go on in the worker (@resume) from pb->cursor.
 */
static int tac_route_discard(struct tac_cache *c, struct bio *bio,
			     bool resume)
{
	struct tac_bio *pb = tac_pb(bio);
	sector_t start = bio->bi_iter.bi_sector, end = bio_end_sector(bio);
	u64 b0 = start >> c->block_shift, bl = (end - 1) >> c->block_shift;
	u64 w0 = (start + c->block_sectors - 1) >> c->block_shift;
	u64 w1 = min_t(u64, end >> c->block_shift, c->nr_oblocks);
	bool by_cblock = w1 > w0 && w1 - w0 > c->nr_cblocks;
	tac_oblock_t ob;
	bool dirty;
	u32 cb;

	spin_lock_irq(&c->lock);
	if (!resume) {
		__tac_fold_mine(c);
		__tac_wtrack(c, b0, bl - b0 + 1, 1);
		pb->wfirst = b0;
		pb->wcount = bl - b0 + 1;
		pb->cursor = by_cblock ? 0 : w0;
		pb->route = ROUTE_DISCARD;
		if (w1 > w0 && w1 - w0 > TAC_DISCARD_INLINE) {
			__tac_defer(c, bio);
			spin_unlock_irq(&c->lock);
			return DM_MAPIO_SUBMITTED;
		}
	}
	for (; pb->cursor < (by_cblock ? c->nr_cblocks : w1); pb->cursor++) {
		if (by_cblock) {
			cb = pb->cursor;
			if (!tac_policy_mapping(c->policy, to_cblock(cb),
						&ob, &dirty) ||
			    from_oblock(ob) < w0 || from_oblock(ob) >= w1)
				goto next;
		} else if (__tac_lookup(c, pb->cursor, &cb, TAC_PROBE) == LK_NONE) {
			goto next;
		}
		if (!__tac_discard_block(c, cb)) {
			pb->next = PARKED_DISCARD;
			__tac_park(c, cb, bio, __tac_readers_only(c, cb,
					CB_DISCARD_BLOCKERS));
			spin_unlock_irq(&c->lock);
			return DM_MAPIO_SUBMITTED;
		}
next:
		if (resume && !(pb->cursor & 1023)) {
			spin_unlock_irq(&c->lock);
			cond_resched();
			spin_lock_irq(&c->lock);
		}
	}
	spin_unlock_irq(&c->lock);
	return tac_discard_finish(c, bio);
}

/* ------------------------------------------------------------------ */
/* map and end_io */

int tac_map(struct dm_target *ti, struct bio *bio)
{
	struct tac_c *tc = ti->private;
	struct tac_cache *c = tc->cache;
	struct tac_bio *pb = tac_pb(bio);

	memset(pb, 0, sizeof(*pb));
	pb->c = c;
	pb->route = ROUTE_ORIGIN;
	pb->fua = bio->bi_opf & REQ_FUA;

	if (unlikely(bio->bi_opf & REQ_PREFLUSH)) {
		/* dm core sends data-less flushes here, one per device. */
		if (dm_bio_get_target_bio_nr(bio)) {
			spin_lock_irq(&c->lock);
			if (__tac_wb_active(c)) {
				/* Write-back: a flush is a metadata commit. */
				pb->route = ROUTE_COMMIT;
				__tac_md_commit_bio(c, bio);
				spin_unlock_irq(&c->lock);
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
		return tac_route_read(ti, c, bio);
	case REQ_OP_WRITE:
		return tac_route_write(ti, c, bio);
	case REQ_OP_DISCARD:
		return tac_route_discard(c, bio, false);
	default:
		bio_set_dev(bio, c->origin);
		return DM_MAPIO_REMAPPED;
	}
}

static void tac_hit_check_work(struct work_struct *work);

/*
 * The last reader of a DOOMED block lets go without c->lock
 * (tac_unshare_doomed()), and leaves freeing the block to the next fold
 * of this CPU's hit log or the worker, kicked here: a hit's
 * completion, often in the disk's interrupt, never waits for the lock.
 * False if the log has no room (the caller takes the lock).
 */
static bool tac_log_doomed(struct tac_cache *c, u32 cb)
{
	struct tac_hit_log *log = raw_cpu_ptr(c->hit_log);
	unsigned long flags;
	bool done = false;

	if (!(READ_ONCE(c->cb_state[cb]) & CB_DOOMED))
		return false;
	spin_lock_irqsave(&log->lock, flags);
	if (log->nr_doomed < TAC_DOOMED_LOG && tac_unshare_doomed(c, cb)) {
		log->doomed[log->nr_doomed++] = cb;
		done = true;
	}
	spin_unlock_irqrestore(&log->lock, flags);
	if (done) {
		WRITE_ONCE(c->doomed_logged, true);
		queue_work(c->wq, &c->worker);
	}
	return done;
}

/*
 * A hit completed in the user's pages.  A checksum mismatch there may be
 * the user's doing (a buffer changed while the read was in flight), so it
 * is checked again through our own pages (tac_verify_check()) before
 * anything is blamed on the cache.
 *
 * A hit of more than 16 KiB completing in hard-irq context (as a disk's
 * interrupt completes it) is checked in process context instead
 * (ROUTE_HIT_CHECK): a 64 KiB block's crc32c would hold the CPU with
 * interrupts off for 16 times a 4 KiB one's.  Up to 16 KiB (a database
 * page: a read run of up to four 4 KiB blocks) the check costs less than
 * the trip through a workqueue it would take, as each of those blocks'
 * checks did when each was a hit of its own.  Each such hit is a work
 * item of its own on an unbound workqueue, so hits are checked in
 * parallel, on any CPU, and never wait behind the worker.  The block
 * stays shared until then.  The work item allocates nothing and never
 * sleeps: a mismatch goes to the worker (ROUTE_VERIFY), the one user of
 * the I/O path's reserves (tac_bio_alloc()).
 */
static int tac_end_hit(struct tac_cache *c, struct bio *bio,
		       struct tac_bio *pb, blk_status_t *error)
{
	sector_t start = pb->iter.bi_sector;
	sector_t end = start + (pb->iter.bi_size >> SECTOR_SHIFT);
	u32 cb = pb->cblock, first, nr = 0, i, n = tac_run_blocks(c, pb);
	bool mismatch = false;
	unsigned long flags;
	u32 crc[TAC_RUN_UNITS];

	if (!*error && pb->verify && tac_units_aligned(c, start, end)) {
		nr = tac_whole_units(c, start, end, &first);
		if (((u64)nr << (c->unit_shift + SECTOR_SHIFT)) > SZ_16K &&
		    in_hardirq()) {
			/* The bio is the work's from the queueing on. */
			pb->route = ROUTE_HIT_CHECK;
			INIT_WORK(&pb->check, tac_hit_check_work);
			queue_work(c->check_wq, &pb->check);
			return DM_ENDIO_INCOMPLETE;
		}
		tac_bio_crcs(c, bio, pb->iter, nr, crc);
		mismatch = !tac_crcs_match(c, cb, first, nr, crc);
	}
	/*
	 * The usual end, with nothing to wake: no lock (a block to free is
	 * left to the worker).
	 */
	if (!*error && !mismatch) {
		for (i = 0; i < n; i++)
			if (!tac_unshare_fast(c, cb + i) &&
			    !tac_log_doomed(c, cb + i))
				break;
		if (i == n)
			return DM_ENDIO_DONE;
		spin_lock_irqsave(&c->lock, flags);
		for (; i < n; i++)
			__tac_unshare(c, cb + i);
		spin_unlock_irqrestore(&c->lock, flags);
		return DM_ENDIO_DONE;
	}
	spin_lock_irqsave(&c->lock, flags);
	/*
	 * Dirty when routed, perhaps cleaned since (never the reverse); a
	 * run's blocks were all dirty or all clean.  Which block of a run
	 * failed to read is unknown: one still dirty fails the read, as a
	 * dirty block read alone does.
	 */
	if (*error && __tac_run_dirty(c, cb, n)) {
		/* The only copy: its loss is an error, never stale data. */
		__tac_fail(c, "a dirty block could not be read");
	} else if (*error) {
		/* One failed read: one error; which block failed is unknown. */
		for (i = 0; i < n; i++) {
			if (!(tac_cb(c, cb + i) & CB_DOOMED))
				__tac_invalidate(c, cb + i);
			__tac_unshare(c, cb + i);
		}
		__tac_cache_error(c, "read");
		pb->route = ROUTE_RETRY;
		__tac_defer(c, bio);
		spin_unlock_irqrestore(&c->lock, flags);
		return DM_ENDIO_INCOMPLETE;
	} else if (mismatch) {
		/* Keep the blocks shared until our copy is checked. */
		pb->route = ROUTE_VERIFY;
		__tac_defer(c, bio);
		spin_unlock_irqrestore(&c->lock, flags);
		return DM_ENDIO_INCOMPLETE;
	}
	__tac_unshare_run(c, cb, n);
	spin_unlock_irqrestore(&c->lock, flags);
	return DM_ENDIO_DONE;
}

/* ROUTE_HIT_CHECK: tac_end_hit()'s check, in process context. */
static void tac_hit_check_work(struct work_struct *work)
{
	struct tac_bio *pb = container_of(work, struct tac_bio, check);
	struct bio *bio = dm_bio_from_per_bio_data(pb, sizeof(*pb));
	struct tac_cache *c = pb->c;
	sector_t start = pb->iter.bi_sector;
	sector_t end = start + (pb->iter.bi_size >> SECTOR_SHIFT);
	u32 cb = pb->cblock, first, nr, n = tac_run_blocks(c, pb);
	bool mismatch;
	u32 crc[TAC_RUN_UNITS];

	nr = tac_whole_units(c, start, end, &first);
	tac_bio_crcs(c, bio, pb->iter, nr, crc);
	mismatch = !tac_crcs_match(c, cb, first, nr, crc);
	spin_lock_irq(&c->lock);
	c->n.deferred_checks++;
	if (mismatch) {
		/* Still shared: the worker checks it through our pages. */
		pb->route = ROUTE_VERIFY;
		__tac_defer(c, bio);
	} else {
		__tac_unshare_run(c, cb, n);
	}
	spin_unlock_irq(&c->lock);
	if (!mismatch)
		tac_complete(bio, BLK_STS_OK);
}

int tac_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct tac_bio *pb = tac_pb(bio);
	struct tac_cache *c = pb->c;
	unsigned long flags;

	switch (pb->route) {
	case ROUTE_HIT:
		return tac_end_hit(c, bio, pb, error);

	case ROUTE_OVERLAY:
		/* The origin's part is in: the dirty blocks go over it. */
		if (*error) {
			spin_lock_irqsave(&c->lock, flags);
			__tac_overlay_end(c, pb);
			spin_unlock_irqrestore(&c->lock, flags);
			break;
		}
		tac_overlay_step(c, bio, BLK_STS_OK);
		return DM_ENDIO_INCOMPLETE;

	case ROUTE_ORIGIN:
	case ROUTE_DISCARD:
		if (!pb->wcount)
			break;
		spin_lock_irqsave(&c->lock, flags);
		__tac_wtrack(c, pb->wfirst, pb->wcount, -1);
		pb->wcount = 0;
		if (bio_op(bio) == REQ_OP_WRITE &&
		    __tac_fua_commit(c, bio, *error)) {
			spin_unlock_irqrestore(&c->lock, flags);
			return DM_ENDIO_INCOMPLETE;
		}
		spin_unlock_irqrestore(&c->lock, flags);
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
/* The worker */

static void tac_submit_remapped(struct bio *bio, int r)
{
	if (r == DM_MAPIO_REMAPPED)
		dm_submit_bio_remap(bio, NULL);
}

static void tac_work_bio(struct tac_cache *c, struct bio *bio)
{
	struct tac_bio *pb = tac_pb(bio);

	switch (pb->route) {
	case ROUTE_PARKED:
		if (pb->next == PARKED_READ)
			tac_submit_remapped(bio, tac_route_read(NULL, c, bio));
		else if (pb->next == PARKED_WRITE)
			tac_submit_remapped(bio, tac_route_write(NULL, c, bio));
		else
			tac_submit_remapped(bio,
					    tac_route_discard(c, bio, true));
		break;
	case ROUTE_RETRY:
		tac_retry(c, bio);
		break;
	case ROUTE_VERIFY:
		tac_verify_read(c, bio);
		break;
	case ROUTE_OVERLAY:
		tac_overlay_next(c, bio);
		break;
	case ROUTE_WB:
	case ROUTE_FANOUT:
		tac_copy_start(c, bio, true);
		break;
	case ROUTE_DISCARD:
		tac_submit_remapped(bio, tac_route_discard(c, bio, true));
		break;
	default:
		WARN_ON_ONCE(1);
		tac_complete(bio, BLK_STS_IOERR);
	}
}

static void tac_worker(struct work_struct *work)
{
	struct tac_cache *c = container_of(work, struct tac_cache, worker);
	struct tac_fill_read *fr, *tmp;
	struct bio_list bios;
	struct bio *bio;
	LIST_HEAD(fills);
	bool drop;

	spin_lock_irq(&c->lock);
	if (READ_ONCE(c->doomed_logged)) {
		int cpu;

		WRITE_ONCE(c->doomed_logged, false);
		for_each_possible_cpu(cpu)
			__tac_free_doomed(c, per_cpu_ptr(c->hit_log, cpu));
	}
	bios = c->deferred;
	bio_list_init(&c->deferred);
	list_splice_init(&c->fills, &fills);
	drop = c->drop_all;
	c->drop_all = false;
	spin_unlock_irq(&c->lock);

	list_for_each_entry_safe(fr, tmp, &fills, list) {
		list_del(&fr->list);
		tac_fill_read_done(fr);
	}
	while ((bio = bio_list_pop(&bios)))
		tac_work_bio(c, bio);
	if (drop)
		tac_invalidate_all(c);
}

/* ------------------------------------------------------------------ */
/* The I/O path's own state */

/* Bios in our own pool: enough for the worker and the cleaner to go on. */
#define TAC_BIO_POOL	16

int tac_io_init(struct tac_cache *c)
{
	int r, cpu;

	mutex_init(&c->page_pool_lock);
	INIT_LIST_HEAD(&c->fills);
	init_waitqueue_head(&c->bg_wait);
	INIT_WORK(&c->worker, tac_worker);
	/*
	 * Copies of user data are made without waiting in map(); the worker
	 * falls back on these reserves, one copy's pages at a time: a
	 * block's, or a write run's (TAC_RUN_UNITS units at most).
	 */
	r = bioset_init(&c->bs, TAC_BIO_POOL, 0,
			BIOSET_NEED_BVECS | BIOSET_NEED_RESCUER);
	if (!r)
		r = mempool_init_page_pool(&c->page_pool,
			DIV_ROUND_UP(max_t(u32, c->block_sectors,
					   TAC_RUN_UNITS << c->unit_shift) <<
				     SECTOR_SHIFT, PAGE_SIZE), 0);
	if (r)
		return r;
	c->stash = alloc_percpu(struct tac_page_stash);
	if (!c->stash)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		local_lock_init(&per_cpu_ptr(c->stash, cpu)->lock);
	c->wq = alloc_workqueue("dm-tac", WQ_MEM_RECLAIM, 1);
	c->check_wq = alloc_workqueue("dm-tac-check",
				      WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return c->wq && c->check_wq ? 0 : -ENOMEM;
}

/* Whatever tac_io_init() made, also after it failed half-way. */
void tac_io_exit(struct tac_cache *c)
{
	if (c->check_wq)
		destroy_workqueue(c->check_wq);
	if (c->wq)
		destroy_workqueue(c->wq);
	mempool_exit(&c->page_pool);
	bioset_exit(&c->bs);
	if (c->stash) {
		int cpu;

		for_each_possible_cpu(cpu) {
			struct tac_page_stash *s = per_cpu_ptr(c->stash, cpu);

			while (s->nr)
				__free_page(s->page[--s->nr]);
		}
		free_percpu(c->stash);
		c->stash = NULL;
	}
}

/*
 * Suspend: user I/O has drained; wait for the fills and other background
 * I/O it started, and for the worker.
 */
void tac_io_drain(struct tac_cache *c)
{
	wait_event(c->bg_wait, !READ_ONCE(c->bg_inflight));
	flush_workqueue(c->check_wq);	/* a mismatch goes to the worker */
	flush_workqueue(c->wq);
}
