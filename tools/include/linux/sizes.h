/* SPDX-License-Identifier: GPL-2.0-only */
/* User-space shim for <linux/sizes.h>: the sizes the core uses. */
#ifndef TOOLS_LINUX_SIZES_H
#define TOOLS_LINUX_SIZES_H

#define SZ_1K		0x00000400
#define SZ_1M		0x00100000

#endif /* TOOLS_LINUX_SIZES_H */
