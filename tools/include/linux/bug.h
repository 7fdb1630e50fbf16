/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User-space shim for <linux/bug.h>.  WARN_ON_ONCE() reports a broken
 * caller contract on stderr and carries on, as the kernel does; the unit
 * tests count the reports through tools_warn_count.
 */
#ifndef TOOLS_LINUX_BUG_H
#define TOOLS_LINUX_BUG_H

#include <stdio.h>
#include <linux/compiler.h>

/* One weak definition per object file; the linker keeps one of them. */
unsigned long tools_warn_count __weak;

#define WARN_ON(cond) ({						\
	int __ret_warn_on = !!(cond);					\
	if (__ret_warn_on) {						\
		tools_warn_count++;					\
		fprintf(stderr, "WARNING at %s:%d: %s\n",		\
			__FILE__, __LINE__, #cond);			\
	}								\
	__ret_warn_on;							\
})

#define WARN_ON_ONCE(cond)	WARN_ON(cond)

#define BUILD_BUG_ON(cond)	((void)sizeof(char[1 - 2 * !!(cond)]))

#endif /* TOOLS_LINUX_BUG_H */
