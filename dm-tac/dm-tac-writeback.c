// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac write-back: the cleaner that writes dirty blocks back to the
 * origin, and the periodic tick that drives it and the interval commits.
 *
 * The cleaner (Turbocharging sections 2.3.3 and 3.3.5) starts when dirty
 * blocks exceed the split's target (dirty_threshold percent of the cache,
 * or, with dirty_adapt, where FD-Buffer's cost model has moved it from
 * there, plus half the free blocks beyond a reserve in write-back on a
 * healthy cache: policy/tac-split.c, __tac_dirty_high()) and cleans down
 * to a little under it, or toward zero once no user I/O arrived for
 * clean_idle_ms, or to zero for 'flush' and a 'mode' message out of
 * write-back (a table reloaded out of it cleans to the target only).
 * It takes dirty blocks in origin order from a moving cursor (the policy's
 * dirty_batch()), coalesces runs of consecutive origin blocks into single
 * origin writes of up to clean_batch blocks (group cleaning, alpha), and
 * keeps at most cleaner_inflight of them in flight so that user I/O is not
 * starved.  Each block is read as a shared holder and written to the
 * origin under CLEANER_IO (rule 5 in dm-tac-blocks.c); it is marked clean
 * only if no write reached it since it was taken, and only after the
 * origin has been flushed: a clean entry may reach the cache's metadata,
 * and then the block may be reused, only when the origin's copy is
 * durable.  Commits themselves belong to dm-tac-metadata.c.
 */
#include <linux/blkdev.h>
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dm-tac.h"

#define TAC_TICK_MS		100
#define TAC_MAX_CLEAN_BLOCKS	1024
#define TAC_MAX_CLEANER_INFLIGHT 64	/* the tunable's maximum */

struct tac_clean_blk {
	u64 oblock;
	u32 cblock;
	bool taken;			/* __tac_clean_start() succeeded */
	bool ok;			/* read, verified and written back */
	u32 crc[32];			/* of what was read */
};

struct tac_clean_run {
	struct tac_cache *c;
	struct tac_clean_blk *blk;	/* consecutive origin blocks */
	u32 n;
	struct page **pages;		/* n blocks of data */
	u32 nr_pages;
	atomic_t pending;
	blk_status_t read_status;
	blk_status_t write_status;
	struct completion done;
};

/* The cleaner's arrays, allocated with the cache (a batch never does). */
struct tac_cleaner {
	struct tac_clean_blk blk[TAC_MAX_CLEAN_BLOCKS];
	struct tac_mapping maps[TAC_MAX_CLEAN_BLOCKS];
	struct tac_clean_run runs[TAC_MAX_CLEANER_INFLIGHT];
};

static void tac_run_read_endio(struct bio *bio)
{
	struct tac_clean_run *run = bio->bi_private;

	if (bio->bi_status)
		run->read_status = bio->bi_status;
	bio_put(bio);
	if (atomic_dec_and_test(&run->pending))
		complete(&run->done);
}

static void tac_run_write_endio(struct bio *bio)
{
	struct tac_clean_run *run = bio->bi_private;

	run->write_status = bio->bi_status;
	bio_put(bio);
	complete(&run->done);
}

static void tac_run_free(struct tac_clean_run *run)
{
	u32 i;

	if (run->pages) {
		for (i = 0; i < run->nr_pages; i++)
			if (run->pages[i])
				__free_page(run->pages[i]);
		kvfree(run->pages);
		run->pages = NULL;
	}
}

static int tac_run_alloc(struct tac_cache *c, struct tac_clean_run *run)
{
	u32 per_block = (c->block_sectors << SECTOR_SHIFT) / PAGE_SIZE, i;

	run->nr_pages = run->n * max(per_block, 1U);
	run->pages = kvcalloc(run->nr_pages, sizeof(*run->pages), GFP_NOIO);
	if (!run->pages)
		return -ENOMEM;
	for (i = 0; i < run->nr_pages; i++) {
		run->pages[i] = alloc_page(GFP_NOIO);
		if (!run->pages[i])
			return -ENOMEM;
	}
	return 0;
}

/* A bio over @n blocks' worth of the run's pages, from block @first. */
static struct bio *tac_run_bio(struct tac_cache *c, struct tac_clean_run *run,
			       u32 first, u32 n, struct block_device *bdev,
			       blk_opf_t opf)
{
	u32 bytes = c->block_sectors << SECTOR_SHIFT;
	u32 per_block = DIV_ROUND_UP(bytes, PAGE_SIZE), i;
	struct bio *bio;

	bio = bio_alloc_bioset(bdev, n * per_block, opf, GFP_NOIO, &c->bs);
	for (i = first * per_block; i < (first + n) * per_block; i++)
		__bio_add_page(bio, run->pages[i], min_t(u32, PAGE_SIZE, bytes),
			       0);
	bio->bi_private = run;
	return bio;
}

/* Read the run's blocks from the cache (one bio per block). */
static void tac_run_start_reads(struct tac_cache *c, struct tac_clean_run *run)
{
	u32 i;

	atomic_set(&run->pending, run->n);
	for (i = 0; i < run->n; i++) {
		struct bio *bio = tac_run_bio(c, run, i, 1, c->cache,
					      REQ_OP_READ);

		bio->bi_iter.bi_sector = tac_cblock_sector(c,
							   run->blk[i].cblock);
		bio->bi_end_io = tac_run_read_endio;
		submit_bio_noacct(bio);
	}
}

/*
 * Checksum what was read; the units whose checksums are known must
 * match.  The blocks are held shared, so no write changed them under the
 * read: a mismatch is the cache device's doing.
 */
static bool tac_run_verify(struct tac_cache *c, struct tac_clean_run *run)
{
	u32 unit = SECTOR_SIZE << c->unit_shift, per_block, i, u, p;
	bool good = true;

	per_block = DIV_ROUND_UP(c->block_sectors << SECTOR_SHIFT, PAGE_SIZE);
	for (i = 0; i < run->n; i++) {
		struct tac_clean_blk *b = &run->blk[i];
		const u32 *want;
		u32 off = 0;

		for (u = 0; u < c->units; u++) {
			u32 crc = ~0U, left = unit;

			while (left) {
				u32 pg = off / PAGE_SIZE, in = off % PAGE_SIZE;
				u32 len = min_t(u32, left, PAGE_SIZE - in);
				void *v;

				p = i * per_block + pg;
				v = kmap_local_page(run->pages[p]);
				crc = tac_crc32c(crc, v + in, len);
				kunmap_local(v);
				off += len;
				left -= len;
			}
			b->crc[u] = tac_crc_full(crc);
		}
		spin_lock_irq(&c->lock);
		want = &c->crc[(u64)b->cblock * c->units];
		for (u = 0; u < c->units; u++) {
			if (!tac_crc_ok(want[u], b->crc[u])) {
				__tac_fail(c, "a dirty block failed its checksum during write-back");
				good = false;
				break;
			}
		}
		spin_unlock_irq(&c->lock);
	}
	return good;
}

/*
 * Take the next blocks of @blk[*i..n) that are not busy, grouping
 * consecutive origin blocks into at most cleaner_inflight runs of at most
 * @max_run blocks.  A busy block is left for a later batch and ends its
 * run.  Returns the number of runs.
 */
static u32 tac_clean_take(struct tac_cache *c, struct tac_clean_blk *blk,
			  u32 n, u32 *i, struct tac_clean_run *runs,
			  u32 max_run)
{
	u32 nr_runs = 0, limit = c->tun.cleaner_inflight;
	bool open = false;

	spin_lock_irq(&c->lock);
	for (; *i < n; (*i)++) {
		struct tac_clean_blk *b = &blk[*i];
		struct tac_clean_run *run = nr_runs ? &runs[nr_runs - 1] : NULL;
		bool extend = open && run->n < max_run &&
			      run->blk[run->n - 1].oblock + 1 == b->oblock;

		if (!extend && nr_runs == limit)
			break;
		b->taken = __tac_clean_start(c, b->cblock, b->oblock);
		b->ok = false;
		if (!b->taken) {
			open = false;
			continue;
		}
		if (extend) {
			run->n++;
			continue;
		}
		run = &runs[nr_runs++];
		run->c = c;
		run->blk = b;
		run->n = 1;
		run->pages = NULL;
		run->read_status = BLK_STS_OK;
		run->write_status = BLK_STS_OK;
		open = true;
	}
	spin_unlock_irq(&c->lock);
	return nr_runs;
}

/* The run's reads are over: writes may come in, discards still wait. */
static void tac_run_read_done(struct tac_cache *c, struct tac_clean_run *run,
			      bool write)
{
	u32 j;

	spin_lock_irq(&c->lock);
	for (j = 0; j < run->n; j++)
		__tac_clean_read_done(c, run->blk[j].cblock, write);
	spin_unlock_irq(&c->lock);
}

/* Read, verify and write back the runs [0, nr_runs); returns writes. */
static u32 tac_clean_runs(struct tac_cache *c, struct tac_clean_run *runs,
			  u32 nr_runs)
{
	u32 i, j, writes = 0;

	for (i = 0; i < nr_runs; i++) {
		init_completion(&runs[i].done);
		if (tac_run_alloc(c, &runs[i])) {
			runs[i].read_status = BLK_STS_RESOURCE;
			complete(&runs[i].done);
			continue;
		}
		tac_run_start_reads(c, &runs[i]);
	}
	for (i = 0; i < nr_runs; i++) {
		struct tac_clean_run *run = &runs[i];
		struct bio *bio;

		wait_for_completion(&run->done);
		if (run->read_status) {
			if (run->read_status != BLK_STS_RESOURCE) {
				spin_lock_irq(&c->lock);
				__tac_fail(c, "a dirty block could not be read for write-back");
				spin_unlock_irq(&c->lock);
			}
		} else if (!tac_run_verify(c, run)) {
			run->read_status = BLK_STS_IOERR;
		}
		tac_run_read_done(c, run, !run->read_status);
		if (run->read_status)
			continue;
		reinit_completion(&run->done);
		bio = tac_run_bio(c, run, 0, run->n, c->origin, REQ_OP_WRITE);
		bio->bi_iter.bi_sector = run->blk[0].oblock << c->block_shift;
		bio->bi_end_io = tac_run_write_endio;
		submit_bio_noacct(bio);
		writes++;
	}
	for (i = 0; i < nr_runs; i++) {
		struct tac_clean_run *run = &runs[i];

		if (!run->read_status) {
			wait_for_completion(&run->done);
			spin_lock_irq(&c->lock);
			for (j = 0; j < run->n; j++)
				__tac_clean_write_done(c, run->blk[j].cblock);
			spin_unlock_irq(&c->lock);
			if (run->write_status) {
				DMERR_LIMIT("write-back to the origin failed (block %llu): kept dirty",
					    run->blk[0].oblock);
				spin_lock_irq(&c->lock);
				c->clean_failed++;
				spin_unlock_irq(&c->lock);
			}
			else
				for (j = 0; j < run->n; j++)
					run->blk[j].ok = true;
		}
		tac_run_free(run);
	}
	return writes;
}

/*
 * Clean one batch: dirty blocks in origin order from the cursor, in
 * rounds of at most cleaner_inflight runs, then one origin flush for the
 * batch before anything is marked clean.  Returns the number of blocks
 * made clean.
 */
static int tac_clean_batch(struct tac_cache *c)
{
	struct tac_cleaner *cl = c->cleaner_mem;
	u32 batch = min_t(u32, c->tun.clean_batch * c->tun.cleaner_inflight,
			  TAC_MAX_CLEAN_BLOCKS);
	u32 per_block = DIV_ROUND_UP(c->block_sectors << SECTOR_SHIFT,
				     PAGE_SIZE);
	u32 max_run = min_t(u32, c->tun.clean_batch,
			    max(BIO_MAX_VECS / per_block, 1U));
	u32 n = 0, m, i, j, wanted, next = 0, cleaned = 0, writes = 0;
	u32 nr_runs;
	tac_oblock_t ob;
	bool dirty, flush_failed = false;

	spin_lock_irq(&c->lock);
	/*
	 * First the blocks a flush found busy (CLEAN_WANTED, blocks.c).  An
	 * entry whose block lost the mark was invalidated (and maybe reused
	 * since): not this list's business any more.
	 */
	for (i = 0; i < c->nr_wanted; i++)
		if ((tac_cb(c, c->wanted[i]) & CB_CLEAN_WANTED) &&
		    tac_policy_mapping(c->policy, to_cblock(c->wanted[i]),
				       &ob, &dirty) && dirty) {
			cl->blk[n].oblock = from_oblock(ob);
			cl->blk[n].cblock = c->wanted[i];
			cl->blk[n++].taken = false;
		}
	c->nr_wanted = 0;
	wanted = n;
	m = n < batch ? tac_policy_dirty_batch(c->policy,
			to_oblock(c->clean_cursor), cl->maps, batch - n) : 0;
	for (i = 0; i < m; i++) {
		u32 cb = from_cblock(cl->maps[i].cblock);

		if (tac_cb(c, cb) & CB_CLEAN_WANTED) {
			for (j = 0; j < wanted && cl->blk[j].cblock != cb; j++)
				;
			if (j < wanted)
				continue;	/* in this batch already */
		}
		cl->blk[n].oblock = from_oblock(cl->maps[i].oblock);
		cl->blk[n].cblock = cb;
		cl->blk[n++].taken = false;
	}
	if (m)
		c->clean_cursor = from_oblock(cl->maps[m - 1].oblock) + 1;
	spin_unlock_irq(&c->lock);

	while (next < n) {
		nr_runs = tac_clean_take(c, cl->blk, n, &next, cl->runs,
					 max_run);
		writes += tac_clean_runs(c, cl->runs, nr_runs);
	}

	/*
	 * The origin's copies must be durable before anything says clean.
	 * A failed flush fails the batch's writes as a failed write does:
	 * a 'flush' waiting for them returns rather than wait for ever.
	 */
	if (writes && blkdev_issue_flush(c->origin)) {
		DMERR_LIMIT("flushing the origin after write-back failed: kept dirty");
		for (i = 0; i < n; i++)
			cl->blk[i].ok = false;
		flush_failed = true;
	}

	spin_lock_irq(&c->lock);
	if (flush_failed)
		c->clean_failed++;
	for (i = 0; i < n; i++) {
		struct tac_clean_blk *b = &cl->blk[i];

		if (b->taken &&
		    __tac_clean_finish(c, b->cblock, b->oblock, b->ok,
				       b->crc)) {
			c->n.writebacks++;
			cleaned++;
		}
	}
	c->n.cleaner_writes += writes;
	spin_unlock_irq(&c->lock);
	return cleaned;
}

/* What the cleaner should do now (lock held). */
static enum tac_cleaner_state __clean_goal(struct tac_cache *c)
{
	u32 dirty, high, low;

	__tac_dirty_high(c, &dirty, &high);
	low = high - high / 20;	/* "a little under" the target */

	if (!dirty) {
		if (c->flush_wanted)
			__tac_wake_all(c);	/* none waits for CLEAN_WANTED */
		c->flush_wanted = false;
		c->nr_wanted = 0;
		return CLEANER_IDLE;
	}
	if (c->flush_wanted)
		return CLEANER_FLUSH;
	if (dirty > high || (c->cleaner == CLEANER_THRESHOLD && dirty > low))
		return CLEANER_THRESHOLD;
	if (c->tun.clean_idle_ms &&
	    time_after_eq(jiffies, READ_ONCE(c->last_io) +
			  msecs_to_jiffies(c->tun.clean_idle_ms)))
		return CLEANER_IDLE_CLEAN;
	return CLEANER_IDLE;
}

static void tac_cleaner_worker(struct work_struct *work)
{
	struct tac_cache *c = container_of(to_delayed_work(work),
					   struct tac_cache, cleaner_work);
	enum tac_cleaner_state goal;
	int r;

	for (;;) {
		spin_lock_irq(&c->lock);
		goal = __clean_goal(c);
		c->cleaner = goal;
		spin_unlock_irq(&c->lock);
		if (goal == CLEANER_IDLE || READ_ONCE(c->cleaner_stopped))
			break;

		r = tac_clean_batch(c);
		if (r > 0)
			tac_md_commit(c);	/* cleaned blocks become reusable */
		wake_up(&c->clean_wait);
		if (r <= 0) {
			/* Nothing cleanable now (busy or failing): retry. */
			if (!READ_ONCE(c->cleaner_stopped))
				queue_delayed_work(c->wb_wq, &c->cleaner_work,
						   msecs_to_jiffies(TAC_TICK_MS));
			break;
		}
		cond_resched();
	}
	wake_up(&c->clean_wait);
}

/* Every TAC_TICK_MS: interval commits, idle cleaning, the cleaning rate. */
static void tac_tick(struct work_struct *work)
{
	struct tac_cache *c = container_of(to_delayed_work(work),
					   struct tac_cache, tick_work);
	unsigned long now = jiffies;
	bool commit, clean;

	spin_lock_irq(&c->lock);
	if (time_after_eq(now, c->clean_mark_time + HZ)) {
		c->clean_rate = div_u64((c->n.writebacks - c->clean_mark) * HZ,
					now - c->clean_mark_time);
		c->clean_mark = c->n.writebacks;
		c->clean_mark_time = now;
	}
	/*
	 * A failed superblock write (the second slot's at resume) is
	 * retried by the next commit: one comes within the interval even
	 * with nothing else to write, or the older slot could say clean for
	 * as long as the device runs without flushes.
	 */
	commit = ((__tac_wb_active(c) &&
		   !bitmap_empty(c->md_changed, c->md.geo.map_pages)) ||
		  (!READ_ONCE(c->md.sb_known) && c->health != TAC_FAIL)) &&
		 time_after_eq(now, c->md.last_commit +
			       msecs_to_jiffies(c->tun.commit_interval));
	clean = __clean_goal(c) != CLEANER_IDLE;
	spin_unlock_irq(&c->lock);

	if (commit)
		tac_md_commit_kick(c);
	if (clean)
		tac_wb_kick(c);
	if (!READ_ONCE(c->cleaner_stopped))
		queue_delayed_work(c->wb_wq, &c->tick_work,
				   msecs_to_jiffies(TAC_TICK_MS));
}

int tac_wb_init(struct tac_cache *c)
{
	INIT_DELAYED_WORK(&c->cleaner_work, tac_cleaner_worker);
	INIT_DELAYED_WORK(&c->tick_work, tac_tick);
	init_waitqueue_head(&c->clean_wait);
	c->cleaner_stopped = true;
	c->clean_mark_time = jiffies;
	c->cleaner_mem = kvzalloc(sizeof(*c->cleaner_mem), GFP_KERNEL);
	c->wb_wq = alloc_workqueue("dm-tac-wb", WQ_MEM_RECLAIM, 1);
	if (tac_split_init(&c->split, c->nr_cblocks, c->tun.dirty_threshold,
			   c->tun.dirty_adapt))
		return -ENOMEM;
	return c->cleaner_mem && c->wb_wq ? 0 : -ENOMEM;
}

/*
 * New dirty_threshold or dirty_adapt (@t; a message or a resume): the
 * split starts again from the threshold.  Other changes leave what it
 * learnt.  Caller holds c->lock.
 */
void __tac_wb_tunables(struct tac_cache *c, const struct tac_tunables *t)
{
	if (t->dirty_threshold != c->tun.dirty_threshold ||
	    t->dirty_adapt != c->tun.dirty_adapt)
		tac_split_set(&c->split, t->dirty_threshold, t->dirty_adapt);
}

void tac_wb_exit(struct tac_cache *c)
{
	if (c->wb_wq) {
		tac_wb_stop(c);
		destroy_workqueue(c->wb_wq);
	}
	kvfree(c->cleaner_mem);
	tac_split_exit(&c->split);
}

void tac_wb_start(struct tac_cache *c)
{
	WRITE_ONCE(c->cleaner_stopped, false);
	queue_delayed_work(c->wb_wq, &c->tick_work,
			   msecs_to_jiffies(TAC_TICK_MS));
	tac_wb_kick(c);
}

/*
 * Suspend: no cleaning until resume (dirty blocks stay dirty).  A flush
 * may still be waiting: dm's suspend waits for the messages in progress
 * (again after I/O has drained, so one sent meanwhile ends first), but
 * one can slip in after its last wait, and 'dmsetup remove' does not
 * wait for messages at all.  It is woken to return -EBUSY: the cleaner
 * it waits for is gone, and a reload's resume would wait for it for ever.
 */
void tac_wb_stop(struct tac_cache *c)
{
	WRITE_ONCE(c->cleaner_stopped, true);
	cancel_delayed_work_sync(&c->tick_work);
	cancel_delayed_work_sync(&c->cleaner_work);
	wake_up(&c->clean_wait);
}

/*
 * 'flush' (and leaving write-back): clean every dirty block and commit.
 * Returns 0 when nothing is dirty, -EINTR if a signal came first (the
 * cleaning goes on), -EBUSY if the device is suspended with dirty
 * blocks left (they are written back after resume), -EIO if the
 * cache failed or an origin write of the cleaner, or the origin flush
 * after them, failed with dirty blocks left (the cleaner keeps trying;
 * the message returns rather than hold the table while the origin
 * fails).
 */
int tac_wb_flush(struct tac_cache *c)
{
	u64 failed;
	u32 dirty;
	int r;

	spin_lock_irq(&c->lock);
	c->flush_wanted = true;
	failed = c->clean_failed;
	spin_unlock_irq(&c->lock);
	tac_wb_kick(c);

	r = wait_event_interruptible(c->clean_wait, ({
		bool origin_failed;

		spin_lock_irq(&c->lock);
		dirty = __tac_nr_dirty(c);
		origin_failed = c->clean_failed != failed;
		spin_unlock_irq(&c->lock);
		!dirty || origin_failed || READ_ONCE(c->health) == TAC_FAIL ||
		READ_ONCE(c->cleaner_stopped);
	}));
	if (r)
		return -EINTR;
	if (dirty && READ_ONCE(c->cleaner_stopped) &&
	    READ_ONCE(c->health) != TAC_FAIL) {
		DMERR("flush: suspended with %u dirty blocks; they are written back after resume",
		      dirty);
		return -EBUSY;
	}
	if (dirty) {
		DMERR("flush: %u dirty blocks could not be written back", dirty);
		return -EIO;
	}
	return tac_md_commit(c);
}
