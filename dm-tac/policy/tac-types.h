/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-tac policy core: the types every part of it shares (block numbers,
 * request classes, extent records) and the limits of its tables.  No
 * functions: tac-seq.h and tac-temp.h need these without the policy
 * interface (tac-policy.h) or TAC itself (tac.h).
 */
#ifndef DM_TAC_TYPES_H
#define DM_TAC_TYPES_H

#include <linux/types.h>

typedef u64 __bitwise tac_oblock_t;
typedef u32 __bitwise tac_cblock_t;
typedef u64 __bitwise tac_extent_t;

static inline tac_oblock_t to_oblock(u64 b)
{
	return (__force tac_oblock_t)b;
}

static inline u64 from_oblock(tac_oblock_t b)
{
	return (__force u64)b;
}

static inline tac_cblock_t to_cblock(u32 b)
{
	return (__force tac_cblock_t)b;
}

static inline u32 from_cblock(tac_cblock_t b)
{
	return (__force u32)b;
}

static inline tac_extent_t to_extent(u64 e)
{
	return (__force tac_extent_t)e;
}

static inline u64 from_extent(tac_extent_t e)
{
	return (__force u64)e;
}

/*
 * Limits of the core's tables; the target validates table arguments
 * against them.
 */
#define TAC_MAX_SEQ_WINDOW	256
#define TAC_MAX_EXTENT_BLOCKS	(1U << 20)
#define TAC_MIN_STATS_EXTENTS	16
#define TAC_MAX_STATS_EXTENTS	(1U << 28)
#define TAC_MAX_CACHE_BLOCKS	(1U << 31)
/* Origin block numbers are kept in 40 bits: 4 PiB of 4 KiB blocks. */
#define TAC_MAX_ORIGIN_BLOCKS	(1ULL << 40)

enum tac_class {
	TAC_RANDOM = 0,
	TAC_SEQUENTIAL = 1,
};

/* What a lookup() is: a probe, or a use by a read or by a write. */
enum tac_use {
	TAC_PROBE = 0,
	TAC_USE_READ,
	TAC_USE_WRITE,
};

struct tac_extent_rec {
	tac_extent_t extent;
	u32 temp;		/* aged to the current epoch */
};

#endif /* DM_TAC_TYPES_H */
