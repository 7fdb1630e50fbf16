/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Definitions shared by every file of the dm-tac module (the dependency
 * order of the files is in Kbuild).
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

#include <linux/bio.h>
#include <linux/crc32.h>
#include <linux/crc32c.h>
#include <linux/device-mapper.h>
#include <linux/dm-io.h>
#include <linux/list.h>
#include <linux/local_lock.h>
#include <linux/mempool.h>
#include <linux/mutex.h>
#include <linux/jump_label.h>
#include <linux/refcount.h>
#include <linux/seqlock.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uuid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "policy/tac.h"
#include "policy/tac-split.h"

#define DM_MSG_PREFIX "tac"

enum tac_mode {
	TAC_MODE_PASSTHROUGH,
	TAC_MODE_WRITETHROUGH,
	TAC_MODE_WRITEAROUND,
	TAC_MODE_WRITEBACK,
	TAC_MODE_NR,
};

enum tac_health {
	TAC_OK,
	TAC_DEGRADED,		/* cache errors forced passthrough */
	TAC_FAIL,		/* write-back data could not be read or kept */
};

enum tac_cleaner_state {
	CLEANER_IDLE,
	CLEANER_THRESHOLD,	/* above the split's target (dirty_target) */
	CLEANER_IDLE_CLEAN,	/* no foreground I/O for clean_idle_ms */
	CLEANER_FLUSH,		/* 'flush' or a mode switch wants 0 dirty */
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

/* In-core view of the superblock and metadata areas. */
struct tac_md {
	struct dm_io_client *io_client;
	void *buf;			/* 8 KiB I/O buffer, under lock */
	void *sb_last;			/* the last superblock written, */
	bool sb_known;			/* if this is set (under lock) */
	void *chunk;			/* TAC_MD_CHUNK pages, under lock */
	unsigned long *pages;		/* map pages of a commit, under lock */
	unsigned long *release;		/* of those, the ones with blocks
					 * to release, under lock */
	struct mutex lock;
	struct tac_geometry geo;
	uuid_t uuid;
	u64 seq;			/* last superblock sequence written */
	u32 seed;			/* crc32c seed of map sectors */
	u32 temp_records;		/* saved at the last clean shutdown */
	u32 last_mode;			/* mode in the superblock read */
	u64 nr_dirty;			/* dirty blocks at the last commit */
	unsigned long last_commit;	/* jiffies */
	u32 extent_blocks;		/* extent size of those records */
	bool was_clean;			/* last shutdown was clean */
	u32 page_blocks;		/* map entries per map page */
	bool saved;			/* tac_md_save() done, not resumed
					 * since: a superblock may say clean
					 * (under lock) */
	bool formatted;			/* formatted by this constructor */
	bool rewrite;			/* load: rewrite every map page */
};

/*
 * Tunables that can be given on the table line and changed with
 * "set <name> <value>".  The policy's share lives in struct tac_params.
 */
struct tac_tunables {
	struct tac_params policy;
	u32 max_cache_inflight;
	u32 error_threshold;
	u32 dirty_threshold;		/* percent: the cleaner starts above
					 * (where dirty_adapt starts) */
	u32 dirty_adapt;		/* the split learns (tac-split.c) */
	u32 clean_batch;		/* blocks per coalesced origin write */
	u32 cleaner_inflight;		/* origin writes the cleaner has out */
	u32 clean_idle_ms;		/* idle this long: clean toward 0 */
	u32 commit_interval;		/* ms between metadata commits */
	u32 sequential_cutoff_kb;	/* streams this long bypass the cache */
	u32 verify_reads;		/* check clean hits' checksums (dirty
					 * ones always) */
	bool no_discard_passdown;
	bool discard_dirty;		/* constructor: drop damaged metadata */
	u32 given;			/* bit per option given or set */
};

/*
 * Per cache block state (c->cb_state[], under c->lock; the readers' count
 * may also change without it, see tac_try_share_fast() and
 * tac_unshare_fast()).  What each bit
 * means and who may set it is the contract at the top of
 * dm-tac-blocks.c; the metadata and write-back code use it through the
 * functions declared below (and read it with tac_cb()), never by
 * touching the bits themselves.
 */
#define CB_READERS	0x003fU		/* shared holders: hits, the cleaner */
#define CB_CLEAN_WANTED	0x0040U		/* a flush's cleaner found it busy */
#define CB_FRESH	0x0080U		/* dirty by the write in flight only */
#define CB_WRITER	0x0100U		/* the exclusive holder: a cache write */
#define CB_PENDING	0x0200U		/* data not there yet: reads go around */
#define CB_DOOMED	0x0400U		/* unmapped: freed when nothing holds it */
#define CB_WAITERS	0x0800U		/* bios are parked on it */
#define CB_CLEANING	0x1000U		/* taken by the cleaner; a write clears */
#define CB_CLEANER_IO	0x2000U		/* the cleaner's origin write in flight */
#define CB_DISK_DIRTY	0x4000U		/* its on-disk entry may say dirty */
#define CB_CLEAN_WRITTEN 0x8000U	/* a commit wrote it not dirty */

/*
 * What keeps a new reader out (besides a full count), and a writer: the
 * tests of __tac_try_share() and __tac_try_own(), which a bio refused by
 * them passes to __tac_readers_only() when it parks.
 */
#define CB_SHARE_BLOCKERS (CB_WRITER | CB_PENDING | CB_DOOMED | CB_WAITERS)
#define CB_OWN_BLOCKERS	(CB_READERS | CB_SHARE_BLOCKERS)

/*
 * Read hits served without c->lock (tac_read_hit_fast()), logged per CPU
 * for the policy and the counters, and folded into them in order under
 * c->lock, by the next map() of that CPU that takes it, when a log is
 * full, and before the status, "heat" or a suspend reads what they feed
 * (__tac_fold_hits()).  A read of several blocks is served one block per
 * map(), as dm core brings back the remainder of each split: its first
 * block is logged with the read's length (nr), the others with nr 0, and
 * the remainder still to come is the log's rest_start..rest_end (start 0:
 * none).  A fold turns that into a record of c->rests, which the
 * remainder then takes the locked way.
 */
#define TAC_HIT_LOG	32
#define TAC_DOOMED_LOG	16

struct tac_hit_log {
	spinlock_t lock;		/* inside c->lock; irq-safe */
	u32 nr;
	sector_t rest_start, rest_end;
	/*
	 * DOOMED blocks whose last reader let go here without the lock
	 * (tac_unshare_doomed()), to be freed under the lock by the next
	 * fold or the worker, kicked for them (__tac_free_doomed()).
	 */
	u32 nr_doomed;
	u32 doomed[TAC_DOOMED_LOG];
	struct {
		u64 oblock;
		u32 cblock;
		u32 nr;			/* blocks of its read; 0: a later one */
	} hit[TAC_HIT_LOG];
};

/* Recent sequential streams, per direction (dm-tac-io.c). */
#define TAC_STREAMS	16
#define TAC_STREAM_MIN_SECTORS	128	/* 64 KiB: smaller ones never stream */

struct tac_stream {
	sector_t end;			/* where the next request would start */
	u64 sectors;			/* length so far */
	unsigned long last;		/* jiffies of its last request */
};

/* Splits whose remainder has not come back to map() yet (dm-tac-io.c). */
#define TAC_RESTS	32

struct tac_rest {
	sector_t start, end;		/* the remainder's range; start 0: free */
	unsigned long expires;		/* jiffies; 0: kept until taken */
	bool write;
	bool stream, around, random;	/* its request's verdicts */
};

/*
 * Stream reads over dirty blocks (Overlays, dm-tac-io.c): the request
 * reads the origin whole; its dirty blocks, held shared, are then read
 * from the cache and copied over the origin's stale data.
 */
#define TAC_OVERLAYS		16	/* requests at a time */
#define TAC_OVERLAY_BLOCKS	16	/* dirty blocks per request */

struct tac_overlay {
	struct bvec_iter whole;		/* the request, as routed */
	u32 cb[TAC_OVERLAY_BLOCKS];	/* its dirty blocks, held shared */
	u32 off[TAC_OVERLAY_BLOCKS];	/* their blocks from the first */
	u8 nr, next;			/* blocks; the next to read */
	bool busy;
};

/* Origin writes and discards in flight, hashed by origin block. */
#define TAC_WTRACK_BITS	14
#define TAC_WTRACK_SIZE	BIT(TAC_WTRACK_BITS)

/* Bios parked on a held block, hashed by cache block. */
#define TAC_PARK_BITS	6
#define TAC_PARK_SIZE	BIT(TAC_PARK_BITS)
#define TAC_WANTED_MAX	64	/* CLEAN_WANTED blocks at a time */

/*
 * A data unit's checksum, as kept in RAM (c->crc):
 * - TAC_CRC_UNKNOWN (0): not known (after a write of part of the unit, or
 *   a crash);
 * - 1 to 0xffff: only its low 16 bits are known, as the on-disk map keeps
 *   them (a restarted cache, until the unit is written, filled, cleaned
 *   or read through our pages again);
 * - from TAC_CRC_FULL up: its whole crc32c (bit 16 set when the crc32c is
 *   below it, so the forms never mix).
 * A unit the cache lost or garbled then passes a check by chance with
 * odds of 2^-32, not the 2^-16 of a 16-bit checksum: with 16 bits, one
 * lost write in 65,536 was served stale (a test that rewrote 256 cached
 * blocks over a cache dropping its writes failed about 1 run in 200).
 */
#define TAC_CRC_UNKNOWN	0
#define TAC_CRC_FULL	0x10000U

/*
 * Every crc32c of dm-tac (data and metadata) goes through tac_crc32c():
 * the crc32c library (crc32c(), the kernel's preferred driver) or the
 * plain table code (__crc32c_le()), whichever tac_crc_select() timed
 * faster when the module was loaded.  Both compute the same function.
 * On real x86 hardware the library's SSE 4.2 driver wins by far; under
 * an emulated CPU (QEMU TCG) that driver costs about 5 times the table's
 * time per 4 KiB, and the table wins.
 */
DECLARE_STATIC_KEY_FALSE(tac_crc_by_table);

static inline u32 tac_crc32c(u32 crc, const void *p, unsigned int len)
{
	if (static_branch_unlikely(&tac_crc_by_table))
		return __crc32c_le(crc, p, len);
	return crc32c(crc, p, len);
}

void tac_crc_select(void);	/* dm-tac-blocks.c */

/* The form of a crc32c kept in c->crc. */
static inline u32 tac_crc_full(u32 crc32c)
{
	return crc32c < TAC_CRC_FULL ? crc32c | TAC_CRC_FULL : crc32c;
}

/* The on-disk (16-bit) form of a known checksum; a real 0 is stored as 1. */
static inline u16 tac_crc16(u32 crc)
{
	u16 v = crc;

	return v ? v : 1;
}

/* Does data of checksum @got (tac_crc_full()) pass a unit's @want? */
static inline bool tac_crc_ok(u32 want, u32 got)
{
	if (want == TAC_CRC_UNKNOWN)
		return true;
	return want < TAC_CRC_FULL ? want == tac_crc16(got) : want == got;
}

struct tac_counters {
	u64 read_hits;
	u64 read_misses;
	u64 write_hits;
	u64 write_misses;
	u64 promotions;
	u64 writebacks;
	u64 bypassed;
	u64 invalidations;
	u64 cache_errors;
	u64 promo_aborts;	/* fills dropped: raced a write, or failed */
	u64 commits;		/* metadata commits */
	u64 random_read_hits;	/* read hits of requests classified random */
	u64 random_read_misses;
	u64 cleaner_writes;	/* origin writes issued by the cleaner */
	u64 deferred_checks;	/* hits checked off the disk's interrupt */
	u64 lockless_hits;	/* read hits served without c->lock */
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
	u32 block_sectors;
	u64 origin_sectors;		/* the target's length */
	u64 nr_oblocks;			/* whole blocks within it */
	u32 nr_cblocks;
	u32 units;			/* data checksum units per block */
	u32 unit_shift;			/* log2(unit size in sectors) */

	struct tac_md md;

	/* Everything below is protected by lock (irq-safe). */
	spinlock_t lock;
	enum tac_mode mode;
	enum tac_health health;
	bool drop_all;			/* worker: invalidate every block */
	u32 disk_dirty;			/* blocks with CB_DISK_DIRTY */
	unsigned long *md_changed;	/* map pages to write at commit */
	struct bio_list commit_waiters;	/* flushes and FUA writes */
	unsigned long last_io;		/* jiffies of the last user I/O (also
					 * set by hits without the lock) */
	enum tac_cleaner_state cleaner;
	u64 clean_cursor;		/* origin block the cleaner goes on at */
	u64 clean_rate;			/* blocks per second, last interval */
	u64 clean_mark;			/* writebacks at the interval's start */
	unsigned long clean_mark_time;
	bool flush_wanted;		/* clean everything */
	u32 nr_wanted;			/* blocks in wanted[] */
	u32 wanted[TAC_WANTED_MAX];	/* CLEAN_WANTED: cleaned first */
	struct tac_tunables tun;
	struct tac_policy *policy;
	u16 *cb_state;			/* per cache block, CB_* */
	/*
	 * Bumped (odd, then even) around every change of which cache block
	 * maps which origin block (dm-tac-blocks.c): a reader without the
	 * lock trusts what it found only if it did not move meanwhile.
	 */
	seqcount_spinlock_t map_seq;
	struct tac_hit_log __percpu *hit_log;
	u32 *crc;			/* per unit: see TAC_CRC_UNKNOWN */
	u32 *wtrack;			/* origin writes in flight, hashed */
	struct bio_list parked[TAC_PARK_SIZE];	/* bios waiting for a block */
	u32 errors;			/* cache errors since health was ok */
	u64 clean_failed;		/* origin writes of the cleaner, or
					 * flushes after them, failed */
	atomic_t cache_inflight;	/* cache I/Os in flight */
	u32 bg_inflight;		/* fills not tied to a user bio */
	struct tac_counters n;
	struct tac_stream streams[2][TAC_STREAMS];	/* reads, writes */
	struct tac_rest rests[TAC_RESTS];	/* splits' remainders to come */
	unsigned int nr_rests;		/* records in use */
	unsigned int rest_next;		/* the next record to take when
					 * none is free */
	struct tac_overlay ovl[TAC_OVERLAYS];	/* stream reads over dirty
						 * blocks in flight */
	struct bio_list deferred;	/* bios for the worker */
	struct list_head fills;		/* fills for the worker */

	wait_queue_head_t bg_wait;	/* bg_inflight reached 0 */
	wait_queue_head_t clean_wait;	/* cleaner progress, for 'flush' */
	struct workqueue_struct *wq;
	struct workqueue_struct *check_wq;	/* large hits' checksums */
	struct work_struct worker;
	bool doomed_logged;		/* a hit log holds DOOMED blocks */
	struct workqueue_struct *wb_wq;	/* the cleaner and the tick */
	struct workqueue_struct *commit_wq;	/* commits alone */
	struct work_struct commit_work;
	struct delayed_work cleaner_work;
	struct delayed_work tick_work;	/* commit interval, idle cleaning */
	bool cleaner_stopped;		/* suspended */
	struct tac_cleaner *cleaner_mem;	/* the cleaner's arrays */
	struct tac_split split;		/* dirty blocks the cleaner lets be;
					 * fed under c->lock by blocks.c and
					 * io.c, owned by writeback.c */
	struct bio_set bs;		/* our bios: clones, copies, fills */
	mempool_t page_pool;		/* pages of copies when memory is short */
	struct mutex page_pool_lock;	/* one reserve user at a time */
	struct tac_page_stash __percpu *stash;	/* pages of copies freed
					 * lately, for the next ones */
};

/* Where a bio is in its life: what end_io and the worker do with it. */
enum tac_route {
	ROUTE_ORIGIN,		/* remapped to the origin */
	ROUTE_HIT,		/* remapped to a cached block, shared */
	ROUTE_PARKED,		/* waits for a block, or woken for the worker */
	ROUTE_RETRY,		/* a hit re-read from the origin */
	ROUTE_VERIFY,		/* a hit read through our pages and checked */
	ROUTE_HIT_CHECK,	/* a large hit checked in process context */
	ROUTE_OVERLAY,		/* origin read, then its dirty blocks over it */
	ROUTE_FILL,		/* a miss read through our pages, then cached */
	ROUTE_WB,		/* a copy written to the cache only */
	ROUTE_FANOUT,		/* a copy written to the origin and the cache */
	ROUTE_DISCARD,		/* invalidates, then to the origin or done */
	ROUTE_CACHE_FLUSH,	/* the cache device's share of a flush */
	ROUTE_COMMIT,		/* waits for a metadata commit */
	ROUTE_DONE,		/* completed by us: end_io has nothing to do */
};

struct tac_fill_read;
struct tac_cleaner;

/* Per-bio state (dm's per-bio data). */
struct tac_bio {
	struct tac_cache *c;
	struct bvec_iter iter;		/* as routed: origin sector and size */
	u64 wfirst, wcount;		/* origin blocks counted in c->wtrack */
	u64 oblock;			/* the block of HIT, WB, FANOUT (of a
					 * run: the first); OVERLAY: the first */
	u64 cursor;			/* DISCARD: where invalidation goes on */
	u32 cblock;
	u32 park_cb;			/* PARKED: the block waited for */
	u8 route;
	u8 next;			/* PARKED: what to do once woken */
	u32 was_clean;			/* WB: bit i: block i of the run (Write
					 * runs in dm-tac-io.c) was clean */
	u32 keep;			/* RETRY: bit i: block i of the read
					 * run is in the user's pages already,
					 * the others come from the origin */
	bool admitted;			/* WB, FANOUT: reserved by this write */
	bool cache_failed;		/* FANOUT: the cache's copy failed */
	bool stream;			/* part of a long sequential stream */
	bool around;			/* a stream read around clean blocks */
	bool random;			/* its request was classified random */
	bool verify;			/* HIT: check its checksums */
	u8 rest;			/* map: its record in c->rests, plus 1
					 * (0: not split yet) */
	u8 ovl;				/* OVERLAY: its record in c->ovl,
					 * plus 1 (0: none) */
	bool fua;			/* the user's write was FUA (below us
					 * the block layer strips the flag
					 * for a device with no write cache) */
	blk_status_t status;		/* FANOUT: the origin's; RETRY: any
					 * clone's error */
	atomic_t pending;		/* FANOUT, RETRY: our bios in flight */
	struct bio *copy;		/* WB, FANOUT, VERIFY: our pages */
	struct tac_fill_read *fr;	/* FILL */
	struct work_struct check;	/* HIT_CHECK */
};

static inline struct tac_bio *tac_pb(struct bio *bio)
{
	return dm_per_bio_data(bio, sizeof(struct tac_bio));
}

/* One table's target.  Table arguments, kept to reproduce the line. */
struct tac_c {
	struct dm_target *ti;
	struct dm_dev *origin_dev;
	struct dm_dev *cache_dev;
	struct tac_cache *cache;

	u32 block_sectors;
	enum tac_mode mode;
	bool format;			/* 'format' was given */
	struct tac_tunables tun;
};

/* @cb's state (CB_*): under c->lock, all but the readers' count is stable. */
static inline u16 tac_cb(struct tac_cache *c, u32 cb)
{
	return READ_ONCE(c->cb_state[cb]);
}

/*
 * What a commit writes for a block mapped and @dirty in core, its state
 * @st: dirty only once the write that made it dirty is done (rule 3).
 */
static inline bool tac_entry_dirty(u16 st, bool dirty)
{
	return dirty && !(st & CB_FRESH);
}

/*
 * Does state @st already record an entry written @dirty, so that
 * __tac_entry_written() has nothing to change?  (For an entry written
 * clean over one that said dirty it still reports the block waiting.)
 */
static inline bool tac_entry_current(u16 st, bool dirty)
{
	return dirty ? (st & (CB_CLEAN_WRITTEN | CB_DISK_DIRTY)) ==
		       CB_DISK_DIRTY : !(st & CB_DISK_DIRTY);
}

static inline sector_t tac_cblock_sector(struct tac_cache *c, u32 cblock)
{
	return c->md.geo.data_start + ((sector_t)cblock << c->block_shift);
}

static inline u32 tac_unit_sectors(struct tac_cache *c)
{
	return 1U << c->unit_shift;
}

/* dm-tac-blocks.c: block state and exclusion (its contract at its top) */
enum tac_lookup {
	LK_NONE,	/* not cached */
	LK_VALID,	/* cached and readable */
	LK_PENDING,	/* being filled, or first written: not readable */
};

int tac_blocks_init(struct tac_cache *c);
void tac_blocks_exit(struct tac_cache *c);
enum tac_lookup __tac_lookup(struct tac_cache *c, u64 oblock, u32 *cb,
			     enum tac_use use);
bool __tac_is_dirty(struct tac_cache *c, u32 cb);
bool __tac_try_share(struct tac_cache *c, u32 cb);
bool tac_try_share_fast(struct tac_cache *c, u32 cb);
bool __tac_try_own(struct tac_cache *c, u32 cb);
bool __tac_cache_writable(struct tac_cache *c, u32 cb, bool dirty);
bool __tac_wait_cleaner(struct tac_cache *c, u32 cb);
void __tac_make_dirty(struct tac_cache *c, u32 cb);
void __tac_write_done(struct tac_cache *c, u32 cb);
bool __tac_readers_only(struct tac_cache *c, u32 cb, u16 mask);
void __tac_park(struct tac_cache *c, u32 cb, struct bio *bio,
		bool for_readers);
void __tac_defer(struct tac_cache *c, struct bio *bio);
void __tac_wake_all(struct tac_cache *c);
void __tac_unshare(struct tac_cache *c, u32 cb);
bool tac_unshare_fast(struct tac_cache *c, u32 cb);
bool tac_unshare_doomed(struct tac_cache *c, u32 cb);
void __tac_unshared_doomed(struct tac_cache *c, u32 cb);
void tac_unshare(struct tac_cache *c, u32 cb);
void __tac_disown(struct tac_cache *c, u32 cb);
bool __tac_clean_start(struct tac_cache *c, u32 cb, u64 oblock);
void __tac_clean_read_done(struct tac_cache *c, u32 cb, bool write);
void __tac_clean_write_done(struct tac_cache *c, u32 cb);
bool __tac_clean_finish(struct tac_cache *c, u32 cb, u64 oblock, bool ok,
			const u32 *crc);
void __tac_invalidate(struct tac_cache *c, u32 cb);
void __tac_set_clean(struct tac_cache *c, u32 cb);
bool __tac_may_fill(struct tac_cache *c, u64 oblock);
bool __tac_reserve(struct tac_cache *c, u64 oblock, u32 *cb);
void __tac_admit_write(struct tac_cache *c, u32 cb);
void __tac_fill_done(struct tac_cache *c, u32 cb, bool ok);
void __tac_wtrack(struct tac_cache *c, u64 first, u64 n, int delta);
bool __tac_entry_written(struct tac_cache *c, u32 cb, bool dirty);
void __tac_entry_committed(struct tac_cache *c, u32 cb);
void __tac_cache_error(struct tac_cache *c, const char *what);
void __tac_fail(struct tac_cache *c, const char *why);
u32 __tac_nr_dirty(struct tac_cache *c);
void __tac_dirty_high(struct tac_cache *c, u32 *dirty, u32 *high);
void __tac_ghost_read(struct tac_cache *c, u64 oblock, bool random);
void __tac_ghost_write(struct tac_cache *c, u64 oblock);
bool __tac_wb_active(struct tac_cache *c);
void tac_invalidate_all(struct tac_cache *c);

/* dm-tac-metadata.c */
u32 tac_units(u32 block_sectors);
int tac_md_open(struct tac_cache *c, u32 block_sectors, bool format,
		char **error);
void tac_md_close(struct tac_cache *c);
int tac_md_set_clean(struct tac_cache *c, bool clean);
int tac_md_save(struct tac_cache *c);
int tac_md_load(struct tac_cache *c, bool discard_dirty, char **error);
int tac_md_commit(struct tac_cache *c);
void __tac_md_commit_bio(struct tac_cache *c, struct bio *bio);
void tac_md_commit_kick(struct tac_cache *c);

/*
 * The map page a cache block's entry is in must be written at commit.
 * Holds c->lock (the commit copies and clears c->md_changed under it).
 * Inline: the block-state code marks pages without calling up into the
 * metadata code.
 */
static inline void __tac_md_changed(struct tac_cache *c, u32 cblock)
{
	__set_bit(cblock / c->md.page_blocks, c->md_changed);
}

/* dm-tac-writeback.c */
int tac_wb_init(struct tac_cache *c);
void tac_wb_exit(struct tac_cache *c);
/*
 * Any context: let the cleaner look at the situation.  Inline: the
 * block-state code rings this without calling up into dm-tac-writeback.c.
 */
static inline void tac_wb_kick(struct tac_cache *c)
{
	if (!READ_ONCE(c->cleaner_stopped))
		mod_delayed_work(c->wb_wq, &c->cleaner_work, 0);
}
void tac_wb_stop(struct tac_cache *c);
void tac_wb_start(struct tac_cache *c);
int tac_wb_flush(struct tac_cache *c);
void __tac_wb_tunables(struct tac_cache *c, const struct tac_tunables *t);

/* dm-tac-io.c: the I/O path */

/*
 * Any context: the worker (dm-tac-io.c) looks at the deferred bios.  An
 * inline doorbell like tac_wb_kick(): the block-state code rings it when
 * it wakes parked bios, without calling up into the I/O path.
 */
static inline void tac_io_kick(struct tac_cache *c)
{
	queue_work(c->wq, &c->worker);
}

int tac_io_init(struct tac_cache *c);
void tac_io_exit(struct tac_cache *c);
void tac_io_drain(struct tac_cache *c);
void __tac_fold_all(struct tac_cache *c);
int tac_map(struct dm_target *ti, struct bio *bio);
int tac_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error);

#endif /* DM_TAC_H */
