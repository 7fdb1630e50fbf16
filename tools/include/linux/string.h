/* SPDX-License-Identifier: GPL-2.0-only */
/* User-space shim for <linux/string.h>. */
#ifndef TOOLS_LINUX_STRING_H
#define TOOLS_LINUX_STRING_H

#include <string.h>

#endif /* TOOLS_LINUX_STRING_H */
