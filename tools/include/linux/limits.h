/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User-space shim for <linux/limits.h>.  glibc's <limits.h> includes the
 * UAPI header of the same name, so chain to it first.
 */
#include_next <linux/limits.h>

#ifndef TOOLS_LINUX_LIMITS_H
#define TOOLS_LINUX_LIMITS_H

#include <limits.h>

#define U8_MAX		((u8)~0U)
#define U16_MAX		((u16)~0U)
#define U32_MAX		((u32)~0U)
#define U64_MAX		((u64)~0ULL)

#endif /* TOOLS_LINUX_LIMITS_H */
