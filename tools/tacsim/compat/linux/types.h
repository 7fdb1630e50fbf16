/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stand-in for tools/include/linux/types.h (owned by the policy core) so
 * that tacsim and the baselines build before the core's shim headers land.
 * tools/include comes first on the include path, so the real shim wins as
 * soon as it exists; delete this directory then.
 */
#ifndef TACSIM_COMPAT_LINUX_TYPES_H
#define TACSIM_COMPAT_LINUX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#ifdef __CHECKER__
#define __bitwise __attribute__((bitwise))
#define __force __attribute__((force))
#else
#define __bitwise
#define __force
#endif

#endif
