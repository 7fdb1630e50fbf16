/* SPDX-License-Identifier: GPL-2.0-only */
/* User-space shim for <linux/bitops.h>: the non-atomic bit helpers. */
#ifndef TOOLS_LINUX_BITOPS_H
#define TOOLS_LINUX_BITOPS_H

#include <linux/types.h>

#define BITS_PER_LONG		(8 * (int)sizeof(long))
#define BITS_TO_LONGS(nr)	(((nr) + BITS_PER_LONG - 1) / BITS_PER_LONG)
#define BIT_WORD(nr)		((nr) / BITS_PER_LONG)
#define BIT_MASK(nr)		(1UL << ((nr) % BITS_PER_LONG))

static inline void __set_bit(unsigned long nr, unsigned long *addr)
{
	addr[BIT_WORD(nr)] |= BIT_MASK(nr);
}

static inline void __clear_bit(unsigned long nr, unsigned long *addr)
{
	addr[BIT_WORD(nr)] &= ~BIT_MASK(nr);
}

static inline bool test_bit(unsigned long nr, const unsigned long *addr)
{
	return addr[BIT_WORD(nr)] & BIT_MASK(nr);
}

/* Undefined for 0, as in the kernel. */
static inline unsigned long __ffs(unsigned long word)
{
	return __builtin_ctzl(word);
}

#endif /* TOOLS_LINUX_BITOPS_H */
