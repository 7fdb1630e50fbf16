/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User-space shim for <linux/slab.h>: every kernel allocator is calloc(),
 * so ASan sees each array as its own object.
 */
#ifndef TOOLS_LINUX_SLAB_H
#define TOOLS_LINUX_SLAB_H

#include <stdlib.h>
#include <linux/types.h>

typedef unsigned int gfp_t;
#define GFP_KERNEL	0U

static inline void *kzalloc(size_t size, gfp_t gfp)
{
	(void)gfp;
	return calloc(1, size);
}

static inline void *kvcalloc(size_t n, size_t size, gfp_t gfp)
{
	(void)gfp;
	return calloc(n, size);
}

static inline void kfree(const void *p)
{
	free((void *)p);
}

static inline void kvfree(const void *p)
{
	free((void *)p);
}

#endif /* TOOLS_LINUX_SLAB_H */
