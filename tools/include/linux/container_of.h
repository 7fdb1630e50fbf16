/* SPDX-License-Identifier: GPL-2.0-only */
/* User-space shim for <linux/container_of.h>. */
#ifndef TOOLS_LINUX_CONTAINER_OF_H
#define TOOLS_LINUX_CONTAINER_OF_H

#include <stddef.h>

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#endif /* TOOLS_LINUX_CONTAINER_OF_H */
