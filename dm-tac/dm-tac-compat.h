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

#endif /* DM_TAC_COMPAT_H */
