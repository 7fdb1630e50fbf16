// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-hddsim: a test-only device-mapper target that makes a fast backing
 * device (a RAM disk) answer like a single-actuator hard disk.  Data goes
 * to the backing device unchanged; each bio is completed no earlier than a
 * virtual clock says a mechanical disk would have finished it.  Requests
 * are served one at a time in arrival order: the service time is a seek
 * from the end of the previous request (a + b*sqrt(x) + c*x of the
 * distance x as a fraction of the device), half a revolution of rotational
 * latency, and the transfer at a fixed media rate.  A request that starts
 * where the previous one ended pays only the transfer.  See
 * tests/hddsim/README.md for the model, the table line and measurements.
 *
 * Not part of the dm-tac module: it exists so that dm-tac, dm-cache,
 * bcache and dm-writecache can be benchmarked against a slow origin whose
 * random I/O costs about a hundred times more per block than sequential.
 */

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/device-mapper.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/math.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/version.h>
#include <linux/wait.h>

#define DM_MSG_PREFIX "hddsim"

/*
 * (sqrt(3) + 1) / 2 in units of 1e-9; see hddsim_model_init() for where it
 * comes from.
 */
#define HDDSIM_SQRT3_COEF	1366025404ULL
#define HDDSIM_MAX_US		1000000U
/* Timer latency owed to the caller is forgiven beyond this (a paused VM). */
#define HDDSIM_MAX_CREDIT_NS	(250ULL * NSEC_PER_MSEC)

/* 6.11 moved "rotational" from a queue flag into struct queue_limits. */
#define HDDSIM_ROTATIONAL_IS_LIMIT \
	(LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0))

enum hddsim_opt {
	HDDSIM_SEEK_TRACK,
	HDDSIM_SEEK_AVG,
	HDDSIM_SEEK_FULL,
	HDDSIM_RPM,
	HDDSIM_RATE,
	HDDSIM_OVERHEAD,
	HDDSIM_NR_OPTS
};

struct hddsim_opt_desc {
	const char *name;
	unsigned int def;
	struct dm_arg range;
};

/* Defaults: a 7200 rpm 3.5" SATA disk of the 1-4 TB class. */
static const struct hddsim_opt_desc hddsim_opts[HDDSIM_NR_OPTS] = {
	[HDDSIM_SEEK_TRACK] = { "seek_track_us", 500,
		{ 0, HDDSIM_MAX_US, "Invalid seek_track_us" } },
	[HDDSIM_SEEK_AVG] = { "seek_avg_us", 8500,
		{ 0, HDDSIM_MAX_US, "Invalid seek_avg_us" } },
	[HDDSIM_SEEK_FULL] = { "seek_full_us", 16000,
		{ 0, HDDSIM_MAX_US, "Invalid seek_full_us" } },
	[HDDSIM_RPM] = { "rpm", 7200,
		{ 60, 100000, "Invalid rpm" } },
	[HDDSIM_RATE] = { "rate_mb_s", 150,
		{ 1, 100000, "Invalid rate_mb_s" } },
	[HDDSIM_OVERHEAD] = { "overhead_us", 0,
		{ 0, HDDSIM_MAX_US, "Invalid overhead_us" } },
};

/*
 * Status INFO fields, in this order (append only):
 *   requests sequential near seeks reads writes passthrough
 *   busy_us avg_service_us late_us overruns overrun_us credited_us
 *   failed_flushes failed_fua
 */
struct hddsim_stats {
	u64 requests;		/* bios that moved the head */
	u64 sequential;		/* started where the previous one ended */
	u64 near;		/* short forward skip on the same track */
	u64 seeks;		/* everything else */
	u64 reads;
	u64 writes;
	u64 passthrough;	/* flush, discard: passed down, no cost */
	u64 busy_ns;		/* sum of modelled service times */
	u64 late_ns;		/* timer latency: handed back after due */
	u64 overruns;		/* backing I/O finished after the model did */
	u64 overrun_ns;		/* ... by this much in total */
	u64 credited_ns;	/* timer latency given back (see schedule) */
	u64 failed_flushes;	/* flushes failed on purpose (fail_flush) */
	u64 failed_fua;		/* FUA writes failed on purpose (fail_fua) */
};

struct hddsim_c {
	struct dm_dev *dev;

	unsigned int opt[HDDSIM_NR_OPTS];
	unsigned int opt_given;			/* bitmap of enum hddsim_opt */
	u8 opt_order[HDDSIM_NR_OPTS];		/* as on the table line */
	unsigned int nr_opts_given;

	/* Derived at construction, all in nanoseconds. */
	u64 seek_a;
	u64 seek_b;
	u64 seek_c;
	u64 half_rev_ns;
	u64 overhead_ns;
	sector_t track_sectors;

	spinlock_t lock;		/* protects the model, list and stats */
	sector_t head;			/* where the last request ended */
	ktime_t busy_until;		/* virtual clock: the disk is busy */
	u64 credit_ns;			/* timer latency not yet paid back */
	struct list_head waiting;	/* hddsim_io sorted by due time */
	struct hddsim_stats stats;

	struct hrtimer timer;
	atomic_t fail_flush_in;	/* fail_flush: fail the Nth flush from now */
	atomic_t fail_flushes;	/* fail_flushes on: fail every flush */
	atomic_t fail_fua_in;	/* fail_fua: fail the Nth FUA write from now */
	atomic_t inflight;		/* timed bios not yet handed back */
	wait_queue_head_t drain_wait;
};

enum hddsim_io_state {
	HDDSIM_IO_PASS,		/* not modelled: flush, discard */
	HDDSIM_IO_TIMED,	/* modelled, backing I/O in flight */
	HDDSIM_IO_WAITING,	/* backing I/O done, on hc->waiting */
	HDDSIM_IO_DONE,		/* modelled time elapsed, ending again */
};

/* Per-bio data. */
struct hddsim_io {
	struct list_head list;
	ktime_t due;
	u64 credit_ns;		/* timer latency repaid by starting early */
	enum hddsim_io_state state;
};

static u64 hddsim_xfer_ns(struct hddsim_c *hc, u64 sectors)
{
	return div_u64(sectors * SECTOR_SIZE * NSEC_PER_USEC,
		       hc->opt[HDDSIM_RATE]);
}

/*
 * Seek time for a head movement of @dist sectors on a device of @len
 * sectors.  x = dist / len in 32.32 fixed point, so sqrt(x) comes out of
 * int_sqrt64() in 16.16.
 */
static u64 hddsim_seek_ns(struct hddsim_c *hc, sector_t dist, sector_t len)
{
	u64 x = mul_u64_u64_div_u64(dist, 1ULL << 32, len);
	u64 sqrt_x = int_sqrt64(x);

	return hc->seek_a + ((hc->seek_b * sqrt_x) >> 16) +
	       ((hc->seek_c * x) >> 32);
}

/*
 * Service time of a request of @sectors at @start (target-relative) given
 * where the head is; moves the head.  Caller holds hc->lock.
 */
static u64 __hddsim_service_ns(struct hddsim_c *hc, sector_t start,
			       sector_t sectors, sector_t len)
{
	u64 position;

	if (start == hc->head) {
		/* Continues the previous request: no seek, no rotation. */
		position = 0;
		hc->stats.sequential++;
	} else if (start > hc->head && start - hc->head < hc->track_sectors) {
		/* Same track, a little ahead: let the platter spin past. */
		position = hddsim_xfer_ns(hc, start - hc->head);
		hc->stats.near++;
	} else {
		position = hddsim_seek_ns(hc, start > hc->head ?
					  start - hc->head : hc->head - start,
					  len) + hc->half_rev_ns;
		hc->stats.seeks++;
	}

	hc->head = start + sectors;
	return hc->overhead_ns + position + hddsim_xfer_ns(hc, sectors);
}

/*
 * Queue a request behind the ones already accepted; set when the disk will
 * have finished it.  Caller holds hc->lock.
 */
static void __hddsim_schedule(struct hddsim_c *hc, struct hddsim_io *io,
			      sector_t start, sector_t sectors, sector_t len)
{
	ktime_t now = ktime_get();
	u64 service = __hddsim_service_ns(hc, start, sectors, len);
	u64 idle, credit = 0;

	/*
	 * A busy disk queues the request behind the previous one: late
	 * completions cost nothing then, the clock runs on.  An idle disk
	 * starts at once, but gives back timer latency it owes: a caller
	 * waiting for a late completion issued this request that much too
	 * late, and at queue depth 1 that would add to every request.  The
	 * start moves back by at most the idle time (one request at a time)
	 * and the service time (never due before it arrived); the rest is
	 * kept, up to a limit, and repaid as later requests find the disk
	 * idle.  Time lost to a backing device or a host slower than the model
	 * (overruns) is not credited, or the clock would drift behind real
	 * time and hand the debt to later requests.
	 */
	if (ktime_before(hc->busy_until, now)) {
		idle = ktime_to_ns(ktime_sub(now, hc->busy_until));
		credit = min3(hc->credit_ns, idle, service);
		hc->credit_ns -= credit;
		hc->stats.credited_ns += credit;
		hc->busy_until = ktime_sub_ns(now, credit);
	} else {
		hc->credit_ns = 0;
	}
	hc->busy_until = ktime_add_ns(hc->busy_until, service);

	io->due = hc->busy_until;
	io->credit_ns = credit;
	hc->stats.requests++;
	hc->stats.busy_ns += service;
}

static void hddsim_io_finished(struct hddsim_c *hc)
{
	if (atomic_dec_and_test(&hc->inflight))
		wake_up(&hc->drain_wait);
}

/*
 * Park a bio whose backing I/O is done until its modelled completion time.
 * Due times are monotonic in arrival order, but backing devices may complete
 * out of order, so insert from the tail.  Caller holds hc->lock.
 */
static void __hddsim_wait(struct hddsim_c *hc, struct hddsim_io *io)
{
	struct hddsim_io *pos;

	list_for_each_entry_reverse(pos, &hc->waiting, list)
		if (!ktime_before(io->due, pos->due))
			break;
	list_add(&io->list, &pos->list);
	io->state = HDDSIM_IO_WAITING;

	if (hc->waiting.next == &io->list)
		hrtimer_start(&hc->timer, io->due, HRTIMER_MODE_ABS_SOFT);
}

/*
 * Hand back every parked bio that is due.  Runs in softirq context, so
 * completion latency is that of a timer interrupt, not of a scheduled
 * thread.  The timer is only ever (re)armed under hc->lock with
 * hrtimer_start(), which is safe against a concurrent callback.
 */
static enum hrtimer_restart hddsim_timer_fn(struct hrtimer *timer)
{
	struct hddsim_c *hc = container_of(timer, struct hddsim_c, timer);
	struct hddsim_io *io, *tmp;
	unsigned long flags;
	LIST_HEAD(due);
	ktime_t now;
	u64 late;

	spin_lock_irqsave(&hc->lock, flags);
	now = ktime_get();
	list_for_each_entry_safe(io, tmp, &hc->waiting, list) {
		if (ktime_before(now, io->due)) {
			hrtimer_start(timer, io->due, HRTIMER_MODE_ABS_SOFT);
			break;
		}
		late = ktime_to_ns(ktime_sub(now, io->due));
		hc->stats.late_ns += late;
		hc->credit_ns = min(hc->credit_ns + late, HDDSIM_MAX_CREDIT_NS);
		io->state = HDDSIM_IO_DONE;
		list_move_tail(&io->list, &due);
	}
	spin_unlock_irqrestore(&hc->lock, flags);

	/* Ends the clone a second time: hddsim_end_io() sees DONE. */
	list_for_each_entry_safe(io, tmp, &due, list)
		bio_endio(dm_bio_from_per_bio_data(io, sizeof(*io)));

	return HRTIMER_NORESTART;
}

static bool hddsim_bio_is_timed(struct bio *bio)
{
	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
	case REQ_OP_WRITE_ZEROES:
		/* An empty REQ_PREFLUSH write carries no data. */
		return bio_sectors(bio) != 0;
	default:
		return false;
	}
}

static int hddsim_map(struct dm_target *ti, struct bio *bio)
{
	struct hddsim_c *hc = ti->private;
	struct hddsim_io *io = dm_per_bio_data(bio, sizeof(*io));
	unsigned long flags;
	sector_t start;

	bio_set_dev(bio, hc->dev->bdev);
	if (bio_sectors(bio))
		bio->bi_iter.bi_sector = dm_target_offset(ti,
							  bio->bi_iter.bi_sector);

	/* For the tests: a FUA write that fails while flushes work. */
	if ((bio->bi_opf & REQ_FUA) && bio_op(bio) == REQ_OP_WRITE &&
	    bio_sectors(bio) &&
	    atomic_dec_if_positive(&hc->fail_fua_in) == 0) {
		spin_lock_irqsave(&hc->lock, flags);
		hc->stats.failed_fua++;
		spin_unlock_irqrestore(&hc->lock, flags);
		return DM_MAPIO_KILL;
	}

	if (!hddsim_bio_is_timed(bio)) {
		/*
		 * A disk whose cache flush fails while its writes succeed (a
		 * reset between them), for the tests: the flush ends in an
		 * error, and the writes around it go through.
		 */
		if ((bio->bi_opf & REQ_PREFLUSH) && !bio_sectors(bio) &&
		    (atomic_read(&hc->fail_flushes) ||
		     atomic_dec_if_positive(&hc->fail_flush_in) == 0)) {
			spin_lock_irqsave(&hc->lock, flags);
			hc->stats.failed_flushes++;
			spin_unlock_irqrestore(&hc->lock, flags);
			return DM_MAPIO_KILL;
		}
		io->state = HDDSIM_IO_PASS;
		spin_lock_irqsave(&hc->lock, flags);
		hc->stats.passthrough++;
		spin_unlock_irqrestore(&hc->lock, flags);
		return DM_MAPIO_REMAPPED;
	}

	start = bio->bi_iter.bi_sector;
	io->state = HDDSIM_IO_TIMED;
	atomic_inc(&hc->inflight);

	spin_lock_irqsave(&hc->lock, flags);
	__hddsim_schedule(hc, io, start, bio_sectors(bio), ti->len);
	if (op_is_write(bio_op(bio)))
		hc->stats.writes++;
	else
		hc->stats.reads++;
	spin_unlock_irqrestore(&hc->lock, flags);

	return DM_MAPIO_REMAPPED;
}

static int hddsim_end_io(struct dm_target *ti, struct bio *bio,
			 blk_status_t *error)
{
	struct hddsim_c *hc = ti->private;
	struct hddsim_io *io = dm_per_bio_data(bio, sizeof(*io));
	unsigned long flags;
	ktime_t now;
	u64 over, unused;

	if (io->state == HDDSIM_IO_PASS)
		return DM_ENDIO_DONE;

	if (io->state == HDDSIM_IO_DONE) {
		hddsim_io_finished(hc);
		return DM_ENDIO_DONE;
	}

	/* Still parked: ending it now would leave it on hc->waiting. */
	if (WARN_ON_ONCE(io->state != HDDSIM_IO_TIMED))
		return DM_ENDIO_INCOMPLETE;

	spin_lock_irqsave(&hc->lock, flags);
	now = ktime_get();
	if (!ktime_before(now, io->due)) {
		/*
		 * The backing device was slower than the model.  Credit this
		 * request took but could not use goes back to the bank.
		 */
		over = ktime_to_ns(ktime_sub(now, io->due));
		hc->stats.overruns++;
		hc->stats.overrun_ns += over;
		unused = min(over, io->credit_ns);
		hc->stats.credited_ns -= min(unused, hc->stats.credited_ns);
		hc->credit_ns = min(hc->credit_ns + unused,
				    HDDSIM_MAX_CREDIT_NS);
		spin_unlock_irqrestore(&hc->lock, flags);
		hddsim_io_finished(hc);
		return DM_ENDIO_DONE;
	}
	__hddsim_wait(hc, io);
	spin_unlock_irqrestore(&hc->lock, flags);

	return DM_ENDIO_INCOMPLETE;
}

/*
 * Seek model: seek(x) = a + b*sqrt(x) + c*x for a head movement of a
 * fraction x (0 < x <= 1) of the device, through the three datasheet
 * points seek(0+) = track, seek(1/3) = avg, seek(1) = full.  With
 * A = avg - track and F = full - track:
 *
 *   b/sqrt(3) + c/3 = A,  b + c = F
 *   =>  b = (3A - F) * (sqrt(3) + 1) / 2,  c = F - b
 *
 * The square-root term is the acceleration-limited short seek, the linear
 * term the coast phase of long seeks.  b and c must not be negative, or
 * the curve would not grow with distance: F/3 <= A <= F/sqrt(3).
 */
static int hddsim_model_init(struct hddsim_c *hc, char **error)
{
	u64 track = (u64)hc->opt[HDDSIM_SEEK_TRACK] * NSEC_PER_USEC;
	u64 avg = (u64)hc->opt[HDDSIM_SEEK_AVG] * NSEC_PER_USEC;
	u64 full = (u64)hc->opt[HDDSIM_SEEK_FULL] * NSEC_PER_USEC;
	unsigned int rpm = hc->opt[HDDSIM_RPM];
	u64 a, f;

	if (avg < track || full < avg) {
		*error = "Need seek_track_us <= seek_avg_us <= seek_full_us";
		return -EINVAL;
	}

	a = avg - track;
	f = full - track;
	if (3 * a < f || 3 * a * a > f * f) {
		*error = "seek_avg_us out of range for this track/full pair";
		return -EINVAL;
	}

	hc->seek_a = track;
	hc->seek_b = min(f, div_u64((3 * a - f) * HDDSIM_SQRT3_COEF,
				    NSEC_PER_SEC));
	hc->seek_c = f - hc->seek_b;
	hc->half_rev_ns = div_u64(30ULL * NSEC_PER_SEC, rpm);
	hc->overhead_ns = (u64)hc->opt[HDDSIM_OVERHEAD] * NSEC_PER_USEC;
	/* Bytes under the head in one revolution. */
	hc->track_sectors = div_u64((u64)hc->opt[HDDSIM_RATE] * 60000000ULL,
				    rpm * SECTOR_SIZE);

	return 0;
}

static int hddsim_parse_opt(struct hddsim_c *hc, struct dm_arg_set *as,
			    char **error)
{
	const char *key = dm_shift_arg(as);
	unsigned int i;
	int r;

	for (i = 0; i < HDDSIM_NR_OPTS; i++)
		if (!strcasecmp(key, hddsim_opts[i].name))
			break;

	if (i == HDDSIM_NR_OPTS) {
		*error = "Unrecognised optional argument";
		return -EINVAL;
	}

	if (hc->opt_given & BIT(i)) {
		*error = "Duplicate optional argument";
		return -EINVAL;
	}

	r = dm_read_arg(&hddsim_opts[i].range, as, &hc->opt[i], error);
	if (r)
		return r;

	hc->opt_given |= BIT(i);
	hc->opt_order[hc->nr_opts_given++] = i;
	return 0;
}

static void hddsim_dtr(struct dm_target *ti)
{
	struct hddsim_c *hc = ti->private;

	/*
	 * dm core quiesces the target before destroying it, so this only
	 * waits if something went wrong; parked bios still complete on time.
	 */
	wait_event(hc->drain_wait, !atomic_read(&hc->inflight));
	hrtimer_cancel(&hc->timer);

	if (hc->dev)
		dm_put_device(ti, hc->dev);
	kfree(hc);
}

/*
 * Construct an HDD model over a backing device of at least the target's
 * length:
 *
 *   hddsim <backing_dev> <#opt_args> [<key> <value>]...
 *
 * <#opt_args> counts words (twice the number of options).  Keys, each at
 * most once, all unsigned decimal integers:
 *   seek_track_us	adjacent-track seek (500)
 *   seek_avg_us	seek over a third of the device (8500)
 *   seek_full_us	seek over the whole device (16000)
 *   rpm		spindle speed (7200)
 *   rate_mb_s		media transfer rate, 10^6 bytes/s (150)
 *   overhead_us	controller time added to every request (0)
 */
static int hddsim_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	static const struct dm_arg nr_opt_arg = {
		0, 2 * HDDSIM_NR_OPTS, "Invalid number of optional arguments"
	};
	struct dm_arg_set as = { .argc = argc, .argv = argv };
	struct hddsim_c *hc;
	unsigned int nr_opt, i;
	int r;

	if (argc < 2) {
		ti->error = "Not enough arguments";
		return -EINVAL;
	}

	hc = kzalloc(sizeof(*hc), GFP_KERNEL);
	if (!hc) {
		ti->error = "Cannot allocate context";
		return -ENOMEM;
	}
	ti->private = hc;

	spin_lock_init(&hc->lock);
	INIT_LIST_HEAD(&hc->waiting);
	init_waitqueue_head(&hc->drain_wait);
	hrtimer_init(&hc->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	hc->timer.function = hddsim_timer_fn;
	for (i = 0; i < HDDSIM_NR_OPTS; i++)
		hc->opt[i] = hddsim_opts[i].def;

	r = dm_get_device(ti, dm_shift_arg(&as), dm_table_get_mode(ti->table),
			  &hc->dev);
	if (r) {
		ti->error = "Device lookup failed";
		goto bad;
	}

	r = dm_read_arg_group(&nr_opt_arg, &as, &nr_opt, &ti->error);
	if (r)
		goto bad;

	if (nr_opt % 2) {
		ti->error = "Optional arguments must be <key> <value> pairs";
		r = -EINVAL;
		goto bad;
	}

	for (; nr_opt; nr_opt -= 2) {
		r = hddsim_parse_opt(hc, &as, &ti->error);
		if (r)
			goto bad;
	}

	if (as.argc) {
		ti->error = "Unexpected argument after the optional arguments";
		r = -EINVAL;
		goto bad;
	}

	r = hddsim_model_init(hc, &ti->error);
	if (r)
		goto bad;

	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	ti->num_write_zeroes_bios = 1;
	ti->per_io_data_size = sizeof(struct hddsim_io);
	return 0;

bad:
	hddsim_dtr(ti);
	return r;
}

static void hddsim_status(struct dm_target *ti, status_type_t type,
			  unsigned int status_flags, char *result,
			  unsigned int maxlen)
{
	struct hddsim_c *hc = ti->private;
	struct hddsim_stats s;
	unsigned int sz = 0, i, k;

	switch (type) {
	case STATUSTYPE_INFO:
		spin_lock_irq(&hc->lock);
		s = hc->stats;
		spin_unlock_irq(&hc->lock);

		DMEMIT("%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		       s.requests, s.sequential, s.near, s.seeks, s.reads,
		       s.writes, s.passthrough,
		       div_u64(s.busy_ns, NSEC_PER_USEC),
		       s.requests ? div64_u64(s.busy_ns,
					      s.requests * NSEC_PER_USEC) : 0,
		       div_u64(s.late_ns, NSEC_PER_USEC), s.overruns,
		       div_u64(s.overrun_ns, NSEC_PER_USEC),
		       div_u64(s.credited_ns, NSEC_PER_USEC),
		       s.failed_flushes, s.failed_fua);
		break;

	case STATUSTYPE_TABLE:
		DMEMIT("%s %u", hc->dev->name, 2 * hc->nr_opts_given);
		for (i = 0; i < hc->nr_opts_given; i++) {
			k = hc->opt_order[i];
			DMEMIT(" %s %u", hddsim_opts[k].name, hc->opt[k]);
		}
		break;

	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",device_name=%s", hc->dev->name);
		for (k = 0; k < HDDSIM_NR_OPTS; k++)
			DMEMIT(",%s=%u", hddsim_opts[k].name, hc->opt[k]);
		DMEMIT(";");
		break;
	}
}

static int hddsim_reset_stats(struct hddsim_c *hc, unsigned int argc)
{
	if (argc != 1) {
		DMERR("reset_stats takes no argument");
		return -EINVAL;
	}

	spin_lock_irq(&hc->lock);
	memset(&hc->stats, 0, sizeof(hc->stats));
	spin_unlock_irq(&hc->lock);
	return 0;
}

static int hddsim_message(struct dm_target *ti, unsigned int argc,
			  char **argv, char *result, unsigned int maxlen)
{
	struct hddsim_c *hc = ti->private;
	atomic_t *fail = NULL;
	unsigned int n;

	if (!strcasecmp(argv[0], "reset_stats"))
		return hddsim_reset_stats(hc, argc);
	/* fail_flushes on|off: every empty flush fails, until off. */
	if (!strcasecmp(argv[0], "fail_flushes")) {
		if (argc != 2 || (strcasecmp(argv[1], "on") &&
				  strcasecmp(argv[1], "off"))) {
			DMERR("usage: fail_flushes on|off");
			return -EINVAL;
		}
		atomic_set(&hc->fail_flushes, !strcasecmp(argv[1], "on"));
		return 0;
	}
	/*
	 * fail_flush N, fail_fua N: the Nth empty flush, or write with
	 * FUA, from now fails (0: none).
	 */
	if (!strcasecmp(argv[0], "fail_flush"))
		fail = &hc->fail_flush_in;
	else if (!strcasecmp(argv[0], "fail_fua"))
		fail = &hc->fail_fua_in;
	if (fail) {
		if (argc != 2 || kstrtouint(argv[1], 10, &n) || n > INT_MAX) {
			DMERR("usage: %s <n>", argv[0]);
			return -EINVAL;
		}
		atomic_set(fail, n);
		return 0;
	}

	DMERR("unrecognised message \"%s\"", argv[0]);
	return -EINVAL;
}

static int hddsim_iterate_devices(struct dm_target *ti,
				  iterate_devices_callout_fn fn, void *data)
{
	struct hddsim_c *hc = ti->private;

	return fn(ti, hc->dev, 0, ti->len, data);
}

/*
 * Report a rotational device even over a RAM disk, so that whatever looks
 * at queue/rotational (lsblk, dm-tac's origin probe, bcache) sees a disk.
 * Since 6.11 rotational is a queue limit feature that stacks from the
 * targets' limits; before, it is a queue flag dm recomputes from the
 * underlying devices when a table is bound, after which resume runs.
 */
#if HDDSIM_ROTATIONAL_IS_LIMIT
static void hddsim_io_hints(struct dm_target *ti, struct queue_limits *limits)
{
	limits->features |= BLK_FEAT_ROTATIONAL;
}
#else
static void hddsim_resume(struct dm_target *ti)
{
	struct gendisk *disk = dm_disk(dm_table_get_md(ti->table));

	blk_queue_flag_clear(QUEUE_FLAG_NONROT, disk->queue);
}
#endif

static struct target_type hddsim_target = {
	.name = "hddsim",
	.version = {1, 0, 0},
	.module = THIS_MODULE,
	.ctr = hddsim_ctr,
	.dtr = hddsim_dtr,
	.map = hddsim_map,
	.end_io = hddsim_end_io,
	.status = hddsim_status,
	.message = hddsim_message,
	.iterate_devices = hddsim_iterate_devices,
#if HDDSIM_ROTATIONAL_IS_LIMIT
	.io_hints = hddsim_io_hints,
#else
	.resume = hddsim_resume,
#endif
};

static int __init dm_hddsim_init(void)
{
	int r = dm_register_target(&hddsim_target);

	if (r < 0)
		DMERR("register failed %d", r);
	return r;
}

static void __exit dm_hddsim_exit(void)
{
	dm_unregister_target(&hddsim_target);
}

module_init(dm_hddsim_init);
module_exit(dm_hddsim_exit);

MODULE_DESCRIPTION(DM_NAME " target modelling a rotating hard disk (test only)");
MODULE_LICENSE("GPL");
