/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User-space shim for <linux/minmax.h>: single evaluation, without the
 * kernel's type checks (the kernel build does those).
 */
#ifndef TOOLS_LINUX_MINMAX_H
#define TOOLS_LINUX_MINMAX_H

#define min_t(type, x, y) ({		\
	type __x = (x);			\
	type __y = (y);			\
	__x < __y ? __x : __y;		\
})

#define max_t(type, x, y) ({		\
	type __x = (x);			\
	type __y = (y);			\
	__x > __y ? __x : __y;		\
})

#define min3(x, y, z)	min_t(__typeof__(x), min_t(__typeof__(x), x, y), z)

#endif /* TOOLS_LINUX_MINMAX_H */
