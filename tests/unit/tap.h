/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A tiny TAP producer for the unit tests.  A test is a void function; the
 * EXPECT_* macros return from it at the first mismatch, and tap_run()
 * prints "ok N - name" or "not ok N - name # expected X got Y".  The plan
 * line "1..N" comes last (TAP allows either end).
 */
#ifndef TESTS_UNIT_TAP_H
#define TESTS_UNIT_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int tap_count;
static int tap_failures;
static bool tap_failed;
static char tap_why[512];

static inline void tap_fail(int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	tap_failed = true;
	n = snprintf(tap_why, sizeof(tap_why), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(tap_why + n, sizeof(tap_why) - n, fmt, ap);
	va_end(ap);
}

/* Signed comparison: error codes, counts, temperatures. */
#define EXPECT_EQ(expected, got) do {					\
	long long __e = (long long)(expected);				\
	long long __g = (long long)(got);				\
	if (__e != __g) {						\
		tap_fail(__LINE__, "expected %lld got %lld (%s)",	\
			 __e, __g, #got);				\
		return;							\
	}								\
} while (0)

/* Unsigned 64-bit comparison: block numbers near the top of the range. */
#define EXPECT_EQ_U64(expected, got) do {				\
	unsigned long long __e = (unsigned long long)(expected);	\
	unsigned long long __g = (unsigned long long)(got);		\
	if (__e != __g) {						\
		tap_fail(__LINE__, "expected %llu got %llu (%s)",	\
			 __e, __g, #got);				\
		return;							\
	}								\
} while (0)

#define EXPECT_TRUE(cond) do {						\
	if (!(cond)) {							\
		tap_fail(__LINE__, "expected true got false (%s)",	\
			 #cond);					\
		return;							\
	}								\
} while (0)

#define EXPECT_FALSE(cond) do {						\
	if (cond) {							\
		tap_fail(__LINE__, "expected false got true (%s)",	\
			 #cond);					\
		return;							\
	}								\
} while (0)

static inline void tap_run(const char *name, void (*fn)(void))
{
	tap_failed = false;
	fn();
	tap_count++;
	if (tap_failed) {
		tap_failures++;
		printf("not ok %d - %s # %s\n", tap_count, name, tap_why);
	} else {
		printf("ok %d - %s\n", tap_count, name);
	}
	fflush(stdout);
}

#define RUN(fn)	tap_run(#fn, fn)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failures ? 1 : 0;
}

#endif /* TESTS_UNIT_TAP_H */
