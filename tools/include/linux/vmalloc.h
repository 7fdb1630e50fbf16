/* SPDX-License-Identifier: GPL-2.0-only */
/* User-space shim for <linux/vmalloc.h>: see slab.h. */
#ifndef TOOLS_LINUX_VMALLOC_H
#define TOOLS_LINUX_VMALLOC_H

#include <linux/slab.h>

static inline void *vcalloc(size_t n, size_t size)
{
	return calloc(n, size);
}

#endif /* TOOLS_LINUX_VMALLOC_H */
