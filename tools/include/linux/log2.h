/* SPDX-License-Identifier: GPL-2.0-only */
/* User-space shim for <linux/log2.h>. */
#ifndef TOOLS_LINUX_LOG2_H
#define TOOLS_LINUX_LOG2_H

#include <linux/types.h>

static inline bool is_power_of_2(unsigned long n)
{
	return n != 0 && (n & (n - 1)) == 0;
}

/* Only for non-zero values, as in the kernel. */
#define ilog2(n)	(63 - __builtin_clzll((unsigned long long)(n)))

/* The least power of 2 not below @n, for 1 <= n <= 2^63. */
#define roundup_pow_of_two(n) \
	((n) <= 1 ? 1ULL : 1ULL << (ilog2((unsigned long long)(n) - 1) + 1))

#endif /* TOOLS_LINUX_LOG2_H */
