/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User-space shim for <linux/compiler.h>: just what the dm-tac policy core
 * uses.  Sparse annotations are empty here; the kernel build checks them.
 */
#ifndef TOOLS_LINUX_COMPILER_H
#define TOOLS_LINUX_COMPILER_H

#ifndef __bitwise
#define __bitwise
#endif
#ifndef __force
#define __force
#endif
#ifndef __weak
#define __weak		__attribute__((__weak__))
#endif
#ifndef __packed
#define __packed	__attribute__((__packed__))
#endif

/* One load or store the compiler may not tear, merge or repeat. */
#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, val)	(*(volatile __typeof__(x) *)&(x) = (val))

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#endif /* TOOLS_LINUX_COMPILER_H */
