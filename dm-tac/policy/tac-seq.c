// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-tac policy core: the sequential/random access classifier.
 *
 * TAC section 3.1: page requests enter a window of the last 20 page IDs,
 * turned into region (extent) IDs; a request whose extent appears more than
 * twice in the window is sequential, otherwise random.  A block-layer
 * request covers nr_blocks consecutive blocks, which TAC would have seen
 * as that many page requests in a row, so:
 *
 *  - every block of the request enters the window (only the last
 *    seq_window of them can still be in it afterwards);
 *  - the request counts as min(nr_blocks, seq_window) occurrences of the
 *    extent of its first block, plus the occurrences of that extent among
 *    the older window entries that the request does not push out.
 *
 * Hence a request of more than seq_threshold blocks is sequential on its
 * own: with the default threshold of 2 a random 8 KiB read (two 4 KiB
 * blocks) is random, a 16 KiB read is sequential.  That is also where the
 * disk's real cost per block (one positioning plus n transfers, divided by
 * n) gets nearer S_HDD than R_HDD for the default costs.  Several
 * interleaved scans each keep their extent in the window, so each is still
 * seen: k single-block scans in round robin leave floor((window - 1) / k)
 * earlier occurrences of each extent among the entries a one-block request
 * looks at, enough while that is >= threshold (up to 9 scans by default).
 *
 * Cost: O(seq_window) per request, no allocation.
 */
#include <linux/bug.h>
#include <linux/minmax.h>
#include <linux/string.h>

#include "tac-seq.h"

#define SEQ_RING_MASK	(TAC_MAX_SEQ_WINDOW - 1)

void tac_seq_init(struct tac_seq_window *w)
{
	BUILD_BUG_ON(TAC_MAX_SEQ_WINDOW & SEQ_RING_MASK);
	memset(w, 0, sizeof(*w));
}

enum tac_class tac_seq_classify(struct tac_seq_window *w, u64 first,
				u32 nr_blocks, unsigned int extent_shift,
				u32 window, u32 threshold)
{
	u32 own = min_t(u32, nr_blocks, window);
	u32 older = min_t(u32, w->count, window - own);
	u64 extent = first >> extent_shift;
	u64 block = first + (nr_blocks - own);
	u32 seen = own;
	u32 i;

	for (i = 1; i <= older; i++)
		if (w->ring[(w->head - i) & SEQ_RING_MASK] == extent)
			seen++;

	for (i = 0; i < own; i++) {
		w->ring[w->head & SEQ_RING_MASK] = (block + i) >> extent_shift;
		w->head++;
	}
	w->count = min_t(u32, w->count + own, TAC_MAX_SEQ_WINDOW);

	return seen > threshold ? TAC_SEQUENTIAL : TAC_RANDOM;
}
