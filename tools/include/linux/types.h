/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User-space shim for <linux/types.h>.  The UAPI header of the same name
 * (found next on the include path) supplies __u32 and friends; the kernel's
 * short names are added here.  glibc also includes <linux/types.h> through
 * some of its own headers, which is why this must chain to the real one.
 */
#ifndef TOOLS_LINUX_TYPES_H
#define TOOLS_LINUX_TYPES_H

#include_next <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/compiler.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

#endif /* TOOLS_LINUX_TYPES_H */
