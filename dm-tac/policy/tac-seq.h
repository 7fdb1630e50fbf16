/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-tac policy core: the sequential/random access classifier (TAC
 * section 3.1).  Private to the policy core.
 */
#ifndef DM_TAC_SEQ_H
#define DM_TAC_SEQ_H

#include "tac-types.h"

/*
 * The extents of the last block accesses, newest at head - 1.  Sized for
 * the largest window so that seq_window can change online.
 */
struct tac_seq_window {
	u64 ring[TAC_MAX_SEQ_WINDOW];
	u32 head;	/* next slot to write */
	u32 count;	/* valid entries, at most TAC_MAX_SEQ_WINDOW */
};

void tac_seq_init(struct tac_seq_window *w);

enum tac_class tac_seq_classify(struct tac_seq_window *w, u64 first,
				u32 nr_blocks, unsigned int extent_shift,
				u32 window, u32 threshold);

#endif /* DM_TAC_SEQ_H */
