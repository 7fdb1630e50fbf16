/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The few kernel API differences between the LTS kernels dm-tac supports
 * (6.1 and 6.12), in one place.  Everything else uses the API common to
 * both.
 */
#ifndef DM_TAC_COMPAT_H
#define DM_TAC_COMPAT_H

#include <linux/version.h>
#include <linux/blkdev.h>
#include <linux/device-mapper.h>

/*
 * 6.10 reworked queue limits: the stacking code derives
 * max_discard_sectors from max_hw_discard_sectors and the user limit, so a
 * target sets the hardware value.  6.1 reads max_discard_sectors directly.
 */
static inline void tac_set_max_discard(struct queue_limits *limits,
				       unsigned int sectors)
{
	limits->max_hw_discard_sectors = sectors;
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 10, 0)
	limits->max_discard_sectors = sectors;
#endif
}

/* 6.5 replaced fmode_t open modes with blk_mode_t. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
#define TAC_OPEN_WRITE	FMODE_WRITE
#else
#define TAC_OPEN_WRITE	BLK_OPEN_WRITE
#endif

/*
 * Stable writes: pages must not change while a write is in flight, since
 * dm-tac checksums written data.  6.11 made it a queue limits feature a
 * target sets in io_hints; before that it was a queue flag, which dm sets
 * only from the underlying devices, so a target sets it after the table
 * is bound (in preresume).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
static inline void tac_hint_stable_writes(struct queue_limits *limits)
{
	limits->features |= BLK_FEAT_STABLE_WRITES;
}

static inline void tac_force_stable_writes(struct dm_target *ti)
{
}
#else
static inline void tac_hint_stable_writes(struct queue_limits *limits)
{
}

static inline void tac_force_stable_writes(struct dm_target *ti)
{
	struct gendisk *disk = dm_disk(dm_table_get_md(ti->table));

	blk_queue_flag_set(QUEUE_FLAG_STABLE_WRITES, disk->queue);
}
#endif

/* 6.12 moved the unaligned access helpers out of asm/. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#endif /* DM_TAC_COMPAT_H */
