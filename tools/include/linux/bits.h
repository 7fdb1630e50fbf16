/* SPDX-License-Identifier: GPL-2.0-only */
/* User-space shim for <linux/bits.h>. */
#ifndef TOOLS_LINUX_BITS_H
#define TOOLS_LINUX_BITS_H

#define BIT(nr)		(1UL << (nr))

#endif /* TOOLS_LINUX_BITS_H */
