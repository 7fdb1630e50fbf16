/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * User-space shim for <linux/errno.h>: the UAPI numbers are the kernel's.
 * glibc's <errno.h> includes <linux/errno.h> too, so no guard of our own.
 */
#include_next <linux/errno.h>
