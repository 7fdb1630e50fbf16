// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac coherence: who may touch a block's data and its mapping, and
 * when.  The I/O path (dm-tac-io.c), the cleaner (dm-tac-writeback.c) and
 * the metadata commits (dm-tac-metadata.c) change block state only
 * through the functions here, all under c->lock, with two exceptions,
 * both changing nothing but the readers' count: a read hit found without
 * the lock takes its block (tac_try_share_fast()), and a read hit lets go
 * of it in its completion (tac_unshare_fast(); and tac_unshare_doomed()
 * for the last reader of a DOOMED block, whose freeing is then left to
 * the worker or the next fold of that CPU's hit log, under the lock).  So
 * every change of a block's state word is one atomic update, and under
 * the lock the count of readers may change behind the holder's back at
 * any time: whoever needs no readers (a writer taking a block, a
 * reservation reusing one) tests and sets in one atomic step
 * (__cb_update_if()).
 *
 * A hit without the lock (tac_read_hit_fast() in dm-tac-io.c)
 * ===========================================================
 * It reads c->map_seq, finds the block in the policy's hash without the
 * lock (tac_policy_peek()), takes it as a reader unless the block is
 * refused to readers (CB_SHARE_BLOCKERS: being written, filled, unmapped,
 * or waited for), then reads c->map_seq again.  Every change of which
 * block maps which origin block happens under the lock inside a write
 * section of c->map_seq (__map_begin(), __map_end()), with the state
 * that makes the block unreadable set in the same section: a reservation
 * maps the newcomer and makes it PENDING, an unmapping makes it DOOMED.
 * And a mapped block loses its last bit refusing readers only once its
 * data is that of its origin block (a fill that failed is unmapped and
 * DOOMED in the step that ends PENDING).  So if the count did not move,
 * the block mapped the origin block when it was taken, and was readable; from then on no writer and no
 * reservation can take it (they need no readers), and an unmapping
 * leaves its data to the readers in flight.  If the count moved, the
 * reader lets go (tac_unshare()) and takes the lock.  A reader that took
 * a block a reservation was reusing made the reservation fail (it needs
 * no readers): the block leaves the cache, as a victim still being read
 * does.
 *
 * The rule
 * ========
 * A read returns the data of the last write to complete before it was
 * issued, or of a write in flight with it; an acknowledged write is never
 * lost; and a clean cached block holds exactly what the origin holds.
 *
 * State of a cache block (c->cb_state[cb])
 * ========================================
 *   readers      shared holders: read hits, stream reads laying a dirty
 *                block over the origin's data (Overlays in dm-tac-io.c),
 *                and the cleaner reading it.  Not holds in the policy's
 *                sense: a clean block being read may be chosen as a
 *                victim, and then leaves the cache rather than take new
 *                data under its readers (__tac_reserve()).  A bio that
 *                parks because of readers alone rechecks once WAITERS is
 *                set (__tac_park()): the last reader may have let go
 *                without the lock just before.
 *   WRITER       the one exclusive holder: a user write being copied to
 *                the cache (write-back, or a write-through write of a
 *                cached block); excludes readers and other writers
 *   FRESH        dirty only because of the write in flight: its on-disk
 *                entry is still written clean until that write is done
 *   PENDING      mapped, but its data is not there yet: a fill, or the
 *                first write of a block admitted by that write.  Reads of
 *                it go to the origin, which is current: the data under way
 *                is either the origin's (a fill) or a write still in
 *                flight, which a read may miss.
 *   DOOMED       unmapped: lookups no longer find it; its space returns
 *                once nothing holds it and no on-disk entry says dirty
 *   WAITERS      bios are parked on it (c->parked, hashed by block)
 *   CLEANING     the cleaner took it; any write clears it, and the cleaner
 *                marks clean only a block that kept it
 *   CLEAN_WANTED a flush outside write-back found this dirty block busy:
 *                new writers park until the cleaner has taken it
 *   CLEANER_IO   the cleaner's origin write of it is in flight
 *   DISK_DIRTY, CLEAN_WRITTEN  what its on-disk entry may say (see
 *                dm-tac-metadata.c): such a block is never reused
 *
 * Rules, per origin block X
 * =========================
 * 1. X becomes mapped (a fill, or a write admitted into the cache) only
 *    while no origin write or discard of X is in flight: c->wtrack counts
 *    them, hashed, and a collision only refuses a fill.  Once X is mapped,
 *    a write of X goes to the cache (a dirty block always; a clean one in
 *    write-back and write-through), or unmaps X before going to the origin
 *    (write-around, passthrough), so the origin never changes under a
 *    mapped clean block.
 * 2. Cache data changes only under WRITER (or PENDING, by the one bio or
 *    fill that reserved the block).  A bio that finds its block held in a
 *    conflicting way is parked and re-routed by the worker when the holder
 *    lets go: never spun on in map, never dropped.  A newcomer also parks
 *    behind bios already parked, so readers cannot starve a writer.
 * 3. A write-back write makes its block dirty when it is routed, before
 *    its data is written.  A dirty block is read and written on the cache
 *    only, in every mode, and only a discard of the whole block unmaps it,
 *    once nothing holds it.  A discard of part of a block changes nothing
 *    cached: that part is not passed down.  Until that first write is
 *    done (FRESH), a commit writes the block's entry as it was, clean, so
 *    a crash or a failed write never leaves an entry that calls
 *    unwritten data dirty; and a clean block whose entry may still say
 *    dirty (DISK_DIRTY) is never written in the cache at all: a write of
 *    it unmaps it and goes to the origin.
 * 4. A write or discard of X while X is PENDING without being dirty (a
 *    fill, whose data was read before that write) unmaps the block: the
 *    fill is dropped when it ends.
 * 5. The cleaner reads a dirty block as a reader (no write changes it
 *    meanwhile), writes it to the origin with CLEANER_IO set (no discard
 *    unmaps X then, so no later origin write of X can be overtaken by the
 *    copy), and marks it clean only if CLEANING survived until the origin
 *    was flushed.  Outside write-back, while a flush (or a switch out of
 *    write-back) waits for the last dirty block, the cleaner must win
 *    against writers: each write of a dirty block it has taken waits for
 *    it, and one it found busy is marked CLEAN_WANTED and listed for the
 *    cleaner's next batch, ahead of its cursor: new writers (and then
 *    readers, behind them) park, the cleaner goes ahead of the parked
 *    bios and is kicked when the holders let go.  A dirty block rewritten
 *    without pause is then cleaned once more, and the flush ends.
 * 6. Data checksums (c->crc, per unit, TAC_CRC_UNKNOWN when not known)
 *    change only under WRITER or PENDING, and are computed from our own
 *    pages, which no user can change under us.
 *
 * A crash sees what the on-disk map says (dm-tac-metadata.c): an entry is
 * written only after the data it describes is durable, and a block whose
 * entry may say dirty is never reused until a commit says otherwise.
 */
#include <linux/hash.h>
#include <linux/jump_label.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dm-tac.h"

/* kvcalloc() refuses more than INT_MAX bytes (a cache of over 2 TiB). */
static void *tac_alloc_array(size_t n, size_t size)
{
	if (n > INT_MAX / size)
		return vcalloc(n, size);
	return kvcalloc(n, size, GFP_KERNEL);
}

int tac_blocks_init(struct tac_cache *c)
{
	int i;

	c->cb_state = tac_alloc_array(c->nr_cblocks, sizeof(*c->cb_state));
	c->crc = tac_alloc_array((size_t)c->nr_cblocks * c->units,
				 sizeof(*c->crc));
	c->wtrack = kvcalloc(TAC_WTRACK_SIZE, sizeof(*c->wtrack), GFP_KERNEL);
	for (i = 0; i < TAC_PARK_SIZE; i++)
		bio_list_init(&c->parked[i]);
	bio_list_init(&c->deferred);
	seqcount_spinlock_init(&c->map_seq, &c->lock);
	c->hit_log = alloc_percpu(struct tac_hit_log);
	if (c->hit_log)
		for_each_possible_cpu(i)
			spin_lock_init(&per_cpu_ptr(c->hit_log, i)->lock);
	return c->cb_state && c->crc && c->wtrack && c->hit_log ? 0 : -ENOMEM;
}

void tac_blocks_exit(struct tac_cache *c)
{
	free_percpu(c->hit_log);
	kvfree(c->cb_state);
	kvfree(c->crc);
	kvfree(c->wtrack);
}

/*
 * A block is held (never an eviction victim) while a write or a fill
 * changes its data, while the cleaner's origin write of it is in flight,
 * and while its on-disk entry may say dirty: reusing it then could make a
 * crash recover another block's data as this one's.  Dirty blocks
 * themselves the policy never evicts.  Readers do not hold a block in
 * the policy (a hit lets go without the lock, tac_unshare_fast()): a
 * victim that still has readers leaves the cache instead of taking new
 * data (__tac_reserve()).
 */
static void __update_hold(struct tac_cache *c, u32 cb)
{
	u16 st = tac_cb(c, cb);

	if (st & CB_DOOMED)
		return;
	tac_policy_hold(c->policy, to_cblock(cb),
			st & (CB_WRITER | CB_PENDING | CB_CLEANER_IO |
			      CB_DISK_DIRTY));
}

/*
 * One atomic change of @cb's state: clear @clear, set @set.  Under
 * c->lock, but a reader may take one off the count at the same time
 * (tac_unshare_fast()).  Returns the new state.
 */
static u16 __cb_update(struct tac_cache *c, u32 cb, u16 clear, u16 set)
{
	u16 old = READ_ONCE(c->cb_state[cb]), new;

	do {
		new = (old & ~clear) | set;
	} while (!try_cmpxchg(&c->cb_state[cb], &old, new));
	return new;
}

/*
 * One atomic change of @cb's state, only if none of @refuse is set:
 * clear @clear, set @set.  False if @refuse was found (nothing changed).
 */
static bool __cb_update_if(struct tac_cache *c, u32 cb, u16 refuse,
			   u16 clear, u16 set)
{
	u16 old = READ_ONCE(c->cb_state[cb]);

	do {
		if (old & refuse)
			return false;
	} while (!try_cmpxchg(&c->cb_state[cb], &old, (old & ~clear) | set));
	return true;
}

/*
 * Around every change of which block maps which origin block: a hit
 * found without the lock trusts its block only if no such change began
 * or ended meanwhile (the contract above).
 */
static void __map_begin(struct tac_cache *c)
{
	write_seqcount_begin(&c->map_seq);
}

static void __map_end(struct tac_cache *c)
{
	write_seqcount_end(&c->map_seq);
}

/*
 * One reader more (+1) or fewer (-1); the caller checked the count.  A
 * full count stays full: readers without the lock stop one short of it
 * (tac_try_share_fast()), so one more under the lock always fits.
 */
static void __cb_readers(struct tac_cache *c, u32 cb, int delta)
{
	u16 old = READ_ONCE(c->cb_state[cb]);

	while (!try_cmpxchg(&c->cb_state[cb], &old, old + delta))
		;
}

/* A doomed block's space goes back when nothing refers to it any more. */
static void __maybe_free(struct tac_cache *c, u32 cb)
{
	u16 st = tac_cb(c, cb);

	if (!(st & CB_DOOMED) ||
	    (st & (CB_READERS | CB_WRITER | CB_PENDING | CB_CLEANER_IO |
		   CB_DISK_DIRTY | CB_WAITERS)))
		return;
	tac_policy_release(c->policy, to_cblock(cb));
	/* DOOMED, no holder: no one can change it without the lock. */
	WRITE_ONCE(c->cb_state[cb], 0);
}

/*
 * @use: a read or a write that uses the block (the policy counts it, see
 * tac_policy_lookup()); TAC_PROBE for probes, discards and data that goes
 * to the origin around the cache.
 */
enum tac_lookup __tac_lookup(struct tac_cache *c, u64 oblock, u32 *cb,
			     enum tac_use use)
{
	tac_cblock_t cblock;

	if (oblock >= c->nr_oblocks ||
	    tac_policy_lookup(c->policy, to_oblock(oblock), &cblock, use))
		return LK_NONE;
	*cb = from_cblock(cblock);
	return (tac_cb(c, *cb) & CB_PENDING) ? LK_PENDING : LK_VALID;
}

bool __tac_is_dirty(struct tac_cache *c, u32 cb)
{
	tac_oblock_t ob;
	bool dirty;

	return tac_policy_mapping(c->policy, to_cblock(cb), &ob, &dirty) &&
	       dirty;
}

/* Take @cb shared (a reader); false if the caller must park instead. */
bool __tac_try_share(struct tac_cache *c, u32 cb)
{
	u16 st = tac_cb(c, cb);

	if ((st & CB_SHARE_BLOCKERS) || (st & CB_READERS) == CB_READERS)
		return false;
	__cb_readers(c, cb, 1);
	atomic_inc(&c->cache_inflight);
	return true;
}

/*
 * Take @cb exclusively (the writer); false if the caller must park.  The
 * write will change the data, so the cleaner's copy no longer counts.
 */
bool __tac_try_own(struct tac_cache *c, u32 cb)
{
	/* No reader, in the same step: one may come without the lock. */
	if (!__cb_update_if(c, cb, CB_OWN_BLOCKERS, CB_CLEANING, CB_WRITER))
		return false;
	atomic_inc(&c->cache_inflight);
	__update_hold(c, cb);
	return true;
}

/*
 * May a write of mapped block @cb (@dirty) go to the cache (rule 3)?  A
 * clean block whose on-disk entry may say dirty may not: a failed or torn
 * write there would be recovered after a crash as dirty data.
 */
bool __tac_cache_writable(struct tac_cache *c, u32 cb, bool dirty)
{
	return dirty || !(tac_cb(c, cb) & CB_DISK_DIRTY);
}

/*
 * Outside write-back, a write of a dirty block the cleaner has taken
 * waits for the cleaner to finish, so that leaving write-back ends: each
 * dirty block is cleaned at most once more, however often it is written.
 */
bool __tac_wait_cleaner(struct tac_cache *c, u32 cb)
{
	u16 st = tac_cb(c, cb);

	return c->mode != TAC_MODE_WRITEBACK &&
	       ((st & CB_CLEANING) ||
		((st & CB_CLEAN_WANTED) && c->flush_wanted));
}

/*
 * @cb's entry changed: the next commit writes its map page if the disk
 * needs it there, that is if the block is dirty now, or its on-disk entry
 * may say dirty (DISK_DIRTY: the commit also releases it), or the device
 * is not running (suspended: the superblock may say clean since the save,
 * and the next start would load clean entries, such as one that an
 * 'invalidate' message has just dropped).  Any other entry is clean in
 * memory and on disk while the superblock says unclean: clean entries are
 * dropped after a crash (tac_md_load()), and the save at suspend or
 * removal writes every page (tac_md_save()), so a fill, a write-through
 * update or the eviction of such a block makes no flush wait for a page
 * write.  A page written for another reason carries its clean entries
 * along.
 */
static void __tac_entry_changed(struct tac_cache *c, u32 cb)
{
	if ((tac_cb(c, cb) & CB_DISK_DIRTY) || __tac_is_dirty(c, cb) ||
	    !READ_ONCE(c->running))
		__tac_md_changed(c, cb);
}

/* The owner of clean block @cb makes it dirty with its write (rule 3). */
void __tac_make_dirty(struct tac_cache *c, u32 cb)
{
	tac_policy_set_dirty(c->policy, to_cblock(cb));
	__cb_update(c, cb, 0, CB_FRESH);
}

/* The write that owned @cb wrote it: its entry may now say dirty. */
void __tac_write_done(struct tac_cache *c, u32 cb)
{
	__cb_update(c, cb, CB_FRESH, 0);
	__tac_entry_changed(c, cb);
}

static struct bio_list *__park_list(struct tac_cache *c, u32 cb)
{
	return &c->parked[hash_32(cb, TAC_PARK_BITS)];
}

static void __wake(struct tac_cache *c, u32 cb);

/*
 * Did readers alone keep a bio out of @cb, @mask being the other bits
 * that would have?  Those change only under the lock: what they are now,
 * they were when the bio was refused.
 */
bool __tac_readers_only(struct tac_cache *c, u32 cb, u16 mask)
{
	return !(tac_cb(c, cb) & mask & ~CB_READERS);
}

/*
 * @bio waits for @cb; the worker re-routes it when the holders let go.
 * @for_readers: readers alone kept it out.  A reader may have let go
 * without the lock (tac_unshare_fast()) after the caller looked and
 * before WAITERS was set, seeing no one to wake: if none is left once
 * WAITERS is set, the bio goes on now.  Later readers see WAITERS and
 * let go under the lock, where the last one wakes it (__released()).
 */
void __tac_park(struct tac_cache *c, u32 cb, struct bio *bio,
		bool for_readers)
{
	struct tac_bio *pb = tac_pb(bio);
	u16 st;

	pb->route = ROUTE_PARKED;
	pb->park_cb = cb;
	bio_list_add(__park_list(c, cb), bio);
	st = __cb_update(c, cb, 0, CB_WAITERS);
	if (for_readers && !(st & CB_READERS))
		__wake(c, cb);
}

void __tac_defer(struct tac_cache *c, struct bio *bio)
{
	bio_list_add(&c->deferred, bio);
	tac_io_kick(c);
}

/*
 * Every parked bio tries again: after a change of mode or the end of a
 * flush, a bio may be parked on a reason that no longer holds
 * (CLEAN_WANTED), with nothing left to wake it.  One that must still
 * wait parks again.
 */
void __tac_wake_all(struct tac_cache *c)
{
	struct bio *bio;
	bool any = false;
	u32 i;

	for (i = 0; i < TAC_PARK_SIZE; i++)
		while ((bio = bio_list_pop(&c->parked[i]))) {
			__cb_update(c, tac_pb(bio)->park_cb, CB_WAITERS, 0);
			bio_list_add(&c->deferred, bio);
			any = true;
		}
	if (any)
		tac_io_kick(c);
}

/* Hand the bios parked on @cb to the worker, in the order they came. */
static void __wake(struct tac_cache *c, u32 cb)
{
	struct bio_list *list = __park_list(c, cb), keep;
	struct bio *bio;

	if (!(tac_cb(c, cb) & CB_WAITERS))
		return;
	__cb_update(c, cb, CB_WAITERS, 0);
	bio_list_init(&keep);
	while ((bio = bio_list_pop(list))) {
		if (tac_pb(bio)->park_cb == cb)
			bio_list_add(&c->deferred, bio);
		else
			bio_list_add(&keep, bio);
	}
	*list = keep;
	tac_io_kick(c);
}

/* Whoever may be parked can try again once no reader or writer is left. */
static void __released(struct tac_cache *c, u32 cb)
{
	u16 st = tac_cb(c, cb);

	if (!(st & (CB_READERS | CB_WRITER))) {
		__wake(c, cb);
		if ((st & CB_CLEAN_WANTED) && c->flush_wanted)
			tac_wb_kick(c);
	}
	__maybe_free(c, cb);
	__update_hold(c, cb);
}

void __tac_unshare(struct tac_cache *c, u32 cb)
{
	if (WARN_ON_ONCE(!(tac_cb(c, cb) & CB_READERS)))
		return;
	__cb_readers(c, cb, -1);
	atomic_dec(&c->cache_inflight);
	__released(c, cb);
}

/*
 * A reader takes @cb without c->lock (the contract above): not if the
 * block is refused to readers, and never the last place in the count,
 * which is kept for readers under the lock.  The caller then checks that
 * the block still maps what it looked up (c->map_seq), and lets go with
 * tac_unshare() if not.
 */
bool tac_try_share_fast(struct tac_cache *c, u32 cb)
{
	u16 old = READ_ONCE(c->cb_state[cb]);

	do {
		if ((old & CB_SHARE_BLOCKERS) ||
		    (old & CB_READERS) >= CB_READERS - 1)
			return false;
	} while (!try_cmpxchg(&c->cb_state[cb], &old, old + 1));
	atomic_inc(&c->cache_inflight);
	return true;
}

/*
 * A reader lets go of @cb without c->lock, in a hit's completion: only
 * when that changes nothing but the count, i.e. no bio waits for the
 * block (WAITERS), it is not a DOOMED block's last reader (which frees
 * it) and no flush's cleaner waits for it (CLEAN_WANTED).  Those bits are
 * set under the lock with an atomic update, so either this update sees
 * them and fails (the caller then lets go under the lock,
 * __tac_unshare()), or it comes first and whoever sets them sees the
 * count it left (__tac_park()).  A DOOMED block takes no new reader, so
 * its count only goes down.  False if the caller must take the lock, or
 * tac_unshare_doomed().
 */
bool tac_unshare_fast(struct tac_cache *c, u32 cb)
{
	u16 old = READ_ONCE(c->cb_state[cb]);

	do {
		if (!(old & CB_READERS) ||
		    (old & (CB_WAITERS | CB_CLEAN_WANTED)) ||
		    ((old & CB_DOOMED) && (old & CB_READERS) == 1))
			return false;
	} while (!try_cmpxchg(&c->cb_state[cb], &old, old - 1));
	atomic_dec(&c->cache_inflight);
	return true;
}

/*
 * The last reader of DOOMED @cb lets go without c->lock: the block is
 * unmapped and takes no new holder, so all that is left is to free it
 * (__released()), which the caller has done under the lock later:
 * __tac_unshared_doomed().  False if it is not that case (or a bio or a
 * flush's cleaner waits for the block: the caller takes the lock).
 */
bool tac_unshare_doomed(struct tac_cache *c, u32 cb)
{
	u16 old = READ_ONCE(c->cb_state[cb]);

	do {
		if (!(old & CB_DOOMED) || (old & CB_READERS) != 1 ||
		    (old & (CB_WAITERS | CB_CLEAN_WANTED)))
			return false;
	} while (!try_cmpxchg(&c->cb_state[cb], &old, old - 1));
	atomic_dec(&c->cache_inflight);
	return true;
}

/*
 * After tac_unshare_doomed(): free @cb if no one did meanwhile (a commit
 * that cleared DISK_DIRTY may have; the block may even be in use again,
 * and then it is not DOOMED, or DOOMED by a change that frees it itself).
 */
void __tac_unshared_doomed(struct tac_cache *c, u32 cb)
{
	if (tac_cb(c, cb) & CB_DOOMED)
		__released(c, cb);
}

/* Let go of @cb as a reader, with c->lock only if need be. */
void tac_unshare(struct tac_cache *c, u32 cb)
{
	unsigned long flags;

	if (tac_unshare_fast(c, cb))
		return;
	spin_lock_irqsave(&c->lock, flags);
	__tac_unshare(c, cb);
	spin_unlock_irqrestore(&c->lock, flags);
}

void __tac_disown(struct tac_cache *c, u32 cb)
{
	if (WARN_ON_ONCE(!(tac_cb(c, cb) & CB_WRITER)))
		return;
	__cb_update(c, cb, CB_WRITER, 0);
	atomic_dec(&c->cache_inflight);
	__released(c, cb);
}

/* Is @cb mapped to @oblock and dirty (not a block freed and reused)? */
static bool __dirty_for(struct tac_cache *c, u32 cb, u64 oblock)
{
	tac_oblock_t ob;
	bool dirty;

	return tac_policy_mapping(c->policy, to_cblock(cb), &ob, &dirty) &&
	       dirty && from_oblock(ob) == oblock;
}

/*
 * Mark @cb CLEAN_WANTED and list it in c->wanted[], which the cleaner's
 * next batch takes first, before its cursor: the cursor may have passed
 * the block, and its writers wait until the cleaner has it.  With the
 * list full the block is not marked (its writers do not wait).
 */
static void __want_clean(struct tac_cache *c, u32 cb)
{
	u32 i;

	for (i = 0; i < c->nr_wanted && c->wanted[i] != cb; i++)
		;
	if (i == c->nr_wanted) {
		if (c->nr_wanted == TAC_WANTED_MAX)
			return;
		c->wanted[c->nr_wanted++] = cb;
	}
	__cb_update(c, cb, 0, CB_CLEAN_WANTED);
}

/*
 * The cleaner (rule 5).  clean_start: take @cb, dirty for @oblock, shared
 * to read it; false if it is busy or no longer that block's (it is left
 * for a later batch).  read_done: the read is over, the origin write
 * starts: writes may come in again, but no discard may unmap the block
 * until write_done.
 */
bool __tac_clean_start(struct tac_cache *c, u32 cb, u64 oblock)
{
	u16 st = tac_cb(c, cb);

	/* CLEANING: taken already in this batch; never twice (rule 5). */
	if ((st & CB_CLEANING) || !__dirty_for(c, cb, oblock))
		return false;
	if ((st & CB_CLEAN_WANTED) && !(st & (CB_WRITER | CB_PENDING |
					      CB_DOOMED)) &&
	    (st & CB_READERS) != CB_READERS) {
		/* Ahead of the writers parked on it (rule 5). */
		__cb_readers(c, cb, 1);
		atomic_inc(&c->cache_inflight);
	} else if (!__tac_try_share(c, cb)) {
		if (c->flush_wanted && c->mode != TAC_MODE_WRITEBACK &&
		    !(st & CB_DOOMED))
			__want_clean(c, cb);
		return false;
	}
	__cb_update(c, cb, CB_CLEAN_WANTED, CB_CLEANING);
	return true;
}

void __tac_clean_read_done(struct tac_cache *c, u32 cb, bool write)
{
	if (write)
		__cb_update(c, cb, 0, CB_CLEANER_IO);
	__tac_unshare(c, cb);
}

void __tac_clean_write_done(struct tac_cache *c, u32 cb)
{
	__cb_update(c, cb, CB_CLEANER_IO, 0);
	__released(c, cb);
}

/*
 * The origin holds @cb's data durably (@ok): mark it clean if no write
 * or invalidation came since clean_start.  @crc: the checksums of what
 * was written back, which fill in the units whose checksums were not
 * known.  Returns true if the block is now clean.
 */
bool __tac_clean_finish(struct tac_cache *c, u32 cb, u64 oblock, bool ok,
			const u32 *crc)
{
	u32 *want = &c->crc[(u64)cb * c->units];
	bool cleaning = tac_cb(c, cb) & CB_CLEANING;
	u32 u;

	__cb_update(c, cb, CB_CLEANING, 0);
	/* Writes that waited for the cleaner to finish may go (see io.c). */
	__wake(c, cb);
	if (!ok || !cleaning || (tac_cb(c, cb) & CB_DOOMED) ||
	    !__dirty_for(c, cb, oblock))
		return false;
	/* Readers may check these without the lock (tac_end_hit()). */
	for (u = 0; u < c->units; u++)
		if (want[u] < TAC_CRC_FULL)
			WRITE_ONCE(want[u], crc[u]);
	__tac_set_clean(c, cb);
	/* Written back to keep under the split's target (tac-split.c). */
	if (c->cleaner == CLEANER_THRESHOLD && c->mode == TAC_MODE_WRITEBACK)
		tac_split_cleaned(&c->split, oblock);
	return true;
}

/*
 * The clean/dirty split's votes (tac-split.c), each weighing what the
 * disk paid: a read the cache misses (a vote if the block was evicted
 * lately) costs a read of its class; a write to a block written back
 * lately wasted that write-back, which the cleaner makes in runs in
 * origin order: a seek per run (cleaner_writes / writebacks of one) and
 * a transfer.  Only write-back has dirty space to size.
 */
void __tac_ghost_read(struct tac_cache *c, u64 oblock, bool random)
{
	if (c->mode == TAC_MODE_WRITEBACK)
		tac_split_read_miss(&c->split, oblock, random ?
				    c->tun.policy.cost_hdd_random_us :
				    c->tun.policy.cost_hdd_seq_us);
}

void __tac_ghost_write(struct tac_cache *c, u64 oblock)
{
	u64 runs = c->n.cleaner_writes, blocks = max(c->n.writebacks, 1ULL);
	u64 cost;

	if (c->mode != TAC_MODE_WRITEBACK ||
	    !tac_split_write(&c->split, oblock))
		return;
	cost = mul_u64_u64_div_u64(c->tun.policy.cost_hdd_random_us,
				   min(runs, blocks), blocks) +
	       c->tun.policy.cost_hdd_seq_us;
	tac_split_dirty_vote(&c->split, min_t(u64, cost, U32_MAX));
}

/*
 * A mapped block leaves the cache now.  Readers in flight finish on the
 * old data, which stays until they are done; a fill in flight is dropped
 * when it ends (rule 4).
 */
static void __unmap(struct tac_cache *c, u32 cb)
{
	tac_policy_unmap(c->policy, to_cblock(cb));
	c->n.invalidations++;
	__cb_update(c, cb, CB_CLEANING | CB_CLEAN_WANTED, CB_DOOMED);
	__tac_entry_changed(c, cb);
	__maybe_free(c, cb);
}

void __tac_invalidate(struct tac_cache *c, u32 cb)
{
	__map_begin(c);
	__unmap(c, cb);
	__map_end(c);
}

void __tac_set_clean(struct tac_cache *c, u32 cb)
{
	tac_policy_clear_dirty(c->policy, to_cblock(cb));
	__cb_update(c, cb, CB_FRESH, 0);
	__tac_entry_changed(c, cb);
}

static u32 *__wt(struct tac_cache *c, u64 oblock)
{
	return &c->wtrack[hash_64(oblock, TAC_WTRACK_BITS)];
}

/* Count (+1) or retire (-1) origin writes of blocks [first, first+n). */
void __tac_wtrack(struct tac_cache *c, u64 first, u64 n, int delta)
{
	u64 b;

	if (n >= TAC_WTRACK_SIZE) {
		for (b = 0; b < TAC_WTRACK_SIZE; b++)
			c->wtrack[b] += delta;
		return;
	}
	for (b = first; b < first + n; b++)
		*__wt(c, b) += delta;
}

/* May @oblock become mapped now (rule 1), and is there room to try? */
bool __tac_may_fill(struct tac_cache *c, u64 oblock)
{
	return c->health == TAC_OK && oblock < c->nr_oblocks &&
	       !*__wt(c, oblock) &&
	       atomic_read(&c->cache_inflight) < c->tun.max_cache_inflight;
}

/*
 * Reserve a cache block for the unmapped @oblock if the policy admits it:
 * it becomes PENDING (mapped, not readable) and counts as cache I/O.
 */
bool __tac_reserve(struct tac_cache *c, u64 oblock, u32 *cb)
{
	tac_cblock_t cblock;
	tac_oblock_t victim;
	bool admit;
	int r;

	if (!__tac_may_fill(c, oblock)) {
		c->n.bypassed++;
		return false;
	}
	/*
	 * Most candidates are refused, which changes no mapping: outside a
	 * write section, so that refusals do not send the hits racing them
	 * the locked way.  admit() agrees with would_admit() just before.
	 */
	admit = tac_policy_would_admit(c->policy, to_oblock(oblock));
	if (admit)
		__map_begin(c);
	r = tac_policy_admit(c->policy, to_oblock(oblock), &cblock, &victim);
	if (r < 0) {
		if (admit)
			__map_end(c);
		c->n.bypassed++;
		return false;
	}
	if (WARN_ON_ONCE(!admit))
		__map_begin(c);	/* never (tac-policy.h): late, but at once */
	*cb = from_cblock(cblock);
	if (r == 1 && c->mode == TAC_MODE_WRITEBACK)	/* a clean block left */
		tac_split_evicted(&c->split, from_oblock(victim));
	/*
	 * A victim still being read (readers are not holds, see
	 * __update_hold()) cannot take new data under them: it leaves the
	 * cache, freed when they are done, and @oblock is not admitted.
	 * Readers may come without the lock until the block is PENDING:
	 * tested and set in one step, inside the same write section, so a
	 * reader that found @oblock here before it was PENDING lets go.
	 */
	if (!__cb_update_if(c, *cb, CB_READERS, U16_MAX, CB_PENDING)) {
		__unmap(c, *cb);
		__map_end(c);
		c->n.bypassed++;
		return false;
	}
	__map_end(c);
	atomic_inc(&c->cache_inflight);
	__update_hold(c, *cb);
	return true;
}

/* A reserved block is the first write's: dirty, and owned by it. */
void __tac_admit_write(struct tac_cache *c, u32 cb)
{
	__cb_update(c, cb, 0, CB_WRITER);
	tac_policy_set_dirty(c->policy, to_cblock(cb));
}

/*
 * A reserved block's data was written (@ok) or not: make it readable, or
 * drop it if it failed, was unmapped meanwhile (rule 4), or is a clean
 * copy and the cache is no longer healthy.  A dirty one written is kept
 * whatever the health: it is the only copy of an acknowledged write.
 * Ends the reserving writer's hold too.
 */
void __tac_fill_done(struct tac_cache *c, u32 cb, bool ok)
{
	const u16 filling = CB_PENDING | CB_WRITER | CB_FRESH;
	bool doomed = tac_cb(c, cb) & CB_DOOMED;

	atomic_dec(&c->cache_inflight);
	if (ok && !doomed &&
	    (c->health == TAC_OK || __tac_is_dirty(c, cb))) {
		__cb_update(c, cb, filling, 0);
		c->n.promotions++;
		__tac_entry_changed(c, cb);
		__released(c, cb);
		return;
	}
	c->n.promo_aborts++;
	if (doomed) {
		__cb_update(c, cb, filling, 0);
	} else {
		/*
		 * Unreadable until unmapped, in one step: a reader without
		 * the lock must never find it mapped with data not its own.
		 */
		__map_begin(c);
		tac_policy_unmap(c->policy, to_cblock(cb));
		__cb_update(c, cb, filling, CB_DOOMED);
		__map_end(c);
	}
	__released(c, cb);
}

/*
 * What a block's entry says on disk decides whether it may be reused: an
 * entry written dirty keeps the block (DISK_DIRTY) until a durable commit
 * writes it otherwise (CLEAN_WRITTEN until then).  True if the block
 * waits for this commit (CLEAN_WRITTEN).  Both bits change only under
 * c->lock, so a state that already says what the entry says (a dirty
 * block written dirty again, the common case) needs no atomic update.
 */
bool __tac_entry_written(struct tac_cache *c, u32 cb, bool dirty)
{
	u16 st = tac_cb(c, cb);

	if (dirty) {
		if (!tac_entry_current(st, true))
			__cb_update(c, cb, CB_CLEAN_WRITTEN, CB_DISK_DIRTY);
		if (!(st & CB_DISK_DIRTY)) {
			c->disk_dirty++;
			__update_hold(c, cb);
		}
		return false;
	}
	if (!(st & CB_DISK_DIRTY))
		return false;
	if (!(st & CB_CLEAN_WRITTEN))
		__cb_update(c, cb, 0, CB_CLEAN_WRITTEN);
	return true;
}

/* A commit that wrote @cb's entry is durable: release what it freed. */
void __tac_entry_committed(struct tac_cache *c, u32 cb)
{
	if (!(tac_cb(c, cb) & CB_CLEAN_WRITTEN))
		return;
	__cb_update(c, cb, CB_CLEAN_WRITTEN | CB_DISK_DIRTY, 0);
	c->disk_dirty--;
	__maybe_free(c, cb);
	__update_hold(c, cb);
}

/* Count a cache error; too many switch the cache to passthrough. */
void __tac_cache_error(struct tac_cache *c, const char *what)
{
	c->n.cache_errors++;
	c->errors++;
	DMERR_LIMIT("cache device %s error (%llu so far)", what,
		    c->n.cache_errors);
	if (c->health == TAC_OK && c->errors >= c->tun.error_threshold) {
		c->health = TAC_DEGRADED;
		c->mode = TAC_MODE_PASSTHROUGH;
		DMERR("%llu cache device errors: switching to passthrough; clean blocks are dropped%s",
		      c->n.cache_errors, __tac_wb_active(c) ?
		      ", dirty ones kept and still written back" : "");
		c->drop_all = true;
		tac_io_kick(c);
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

	tac_policy_stats(c->policy, &ps);
	return ps.nr_dirty;
}

/*
 * Dirty blocks now (@dirty) and how many the cleaner lets be (@high),
 * from one look at the policy: the split's target, plus half the free
 * blocks beyond its reserve (tac_split_high(): free space is clean
 * space while the cache fills), but only in write-back on a healthy
 * cache.  Out of write-back the dirty blocks are no longer meant to
 * stay, and after cache errors (which switch to passthrough) they sit
 * on a device that is failing while nothing fills the free space again:
 * the target alone.
 */
void __tac_dirty_high(struct tac_cache *c, u32 *dirty, u32 *high)
{
	struct tac_policy_stats ps;

	tac_policy_stats(c->policy, &ps);
	*dirty = ps.nr_dirty;
	if (c->mode != TAC_MODE_WRITEBACK || c->health != TAC_OK)
		*high = c->split.target;
	else
		*high = tac_split_high(&c->split, ps.nr_blocks - ps.nr_mapped -
						  ps.nr_detached);
}

/* Write-back state to keep on disk: dirty blocks, or their shadows. */
bool __tac_wb_active(struct tac_cache *c)
{
	return c->mode == TAC_MODE_WRITEBACK || c->disk_dirty ||
	       __tac_nr_dirty(c);
}

/* Drop every clean block, fills in flight included (message, errors). */
void tac_invalidate_all(struct tac_cache *c)
{
	tac_oblock_t ob;
	bool dirty;
	u32 cb;

	for (cb = 0; cb < c->nr_cblocks; cb++) {
		spin_lock_irq(&c->lock);
		if (!(tac_cb(c, cb) & CB_DOOMED) &&
		    tac_policy_mapping(c->policy, to_cblock(cb), &ob,
				       &dirty) && !dirty)
			__tac_invalidate(c, cb);
		spin_unlock_irq(&c->lock);
		if (!(cb & 1023))
			cond_resched();
	}
}

/* ------------------------------------------------------------------ */
/* Checksums: which crc32c code (tac_crc32c() in dm-tac.h) */

DEFINE_STATIC_KEY_FALSE(tac_crc_by_table);

/* Best time of a few rounds of crc32c over @buf (PAGE_SIZE), in ns. */
static u64 tac_crc_ns(const u8 *buf, bool table, u32 *crc)
{
	u64 best = U64_MAX, t;
	int i, j;

	for (i = 0; i < 5; i++) {
		t = ktime_get_ns();
		for (j = 0; j < 8; j++)
			*crc = table ? __crc32c_le(~0U, buf, PAGE_SIZE) :
				       crc32c(~0U, buf, PAGE_SIZE);
		best = min(best, (ktime_get_ns() - t) / 8);
		cond_resched();
	}
	return best;
}

/* Module load: time both crc32c codes (see tac_crc32c()), keep the faster. */
void tac_crc_select(void)
{
	u32 lib_crc, table_crc, i;
	u64 lib, table;
	u8 *buf;

	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return;
	for (i = 0; i < PAGE_SIZE; i++)
		buf[i] = i * 131 + (i >> 8);
	lib = tac_crc_ns(buf, false, &lib_crc);
	table = tac_crc_ns(buf, true, &table_crc);
	kfree(buf);
	if (table_crc != lib_crc)
		DMERR("checksums: the crc32c table code gives %08x, the library %08x: using the library",
		      table_crc, lib_crc);
	else if (table < lib)
		static_branch_enable(&tac_crc_by_table);
	DMINFO("checksums: crc32c library %llu ns, table %llu ns per 4 KiB: using the %s",
	       lib, table, table < lib && table_crc == lib_crc ?
	       "table" : "library");
}
