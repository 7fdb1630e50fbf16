// SPDX-License-Identifier: GPL-2.0-only
/*
 * scribble: O_DIRECT I/O whose buffer another thread keeps changing while
 * the I/O is in flight, as any user allowed to open the device can do.
 * The device must survive it: data changed in flight may be written or
 * read either way, but must never damage anything else (a cache must not
 * keep a checksum that does not match what it stored, nor store what the
 * user scribbled over data read from the origin).
 *
 * usage: scribble write|read --dev DEV --offset BYTES --len BYTES
 *                 [--count N] [--stride BYTES] [--fill FILE] [--calm]
 *                 [--dsync]
 *
 *   write   N writes of LEN bytes at OFFSET, OFFSET + STRIDE, ...; each
 *           buffer is filled from FILE (or 0x5a), submitted with native
 *           AIO (io_submit, raw syscalls), and scribbled on from the
 *           moment before submission until the completion is reaped
 *   read    N reads of the same ranges, scribbled on the same way
 *   --calm  leave the buffer alone: plain AIO writes or reads
 *   --dsync writes with RWF_DSYNC (FUA, with no flush after it, unlike
 *           a write(2) with O_DSYNC, which the kernel follows with an
 *           fsync)
 *
 * Prints one line per I/O that did not complete in full and
 * "scribble: N writes|reads, N failed, M bytes changed in flight";
 * exit 0 if every I/O completed, 1 if one failed, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint8_t *buf;
static size_t len;
static volatile int active, quit;
static volatile uint64_t flips;

/* Flip bytes all over the buffer for as long as an I/O is in flight. */
static void *scribbler(void *arg)
{
	size_t i = 0;

	(void)arg;
	while (!quit) {
		if (!active)
			continue;
		buf[i] ^= 0xff;
		i = (i + 4093) % len;
		flips++;
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: scribble write|read --dev DEV --offset BYTES "
		"--len BYTES [--count N] [--stride BYTES] [--fill FILE] [--calm] "
		"[--dsync]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", 1, 0, 'd' }, { "offset", 1, 0, 'o' },
		{ "len", 1, 0, 'l' }, { "count", 1, 0, 'c' },
		{ "stride", 1, 0, 's' }, { "fill", 1, 0, 'f' },
		{ "calm", 0, 0, 'C' }, { "dsync", 0, 0, 'Y' },
		{ 0, 0, 0, 0 },
	};
	const char *dev = NULL, *fill = NULL;
	unsigned long long offset = 0, stride = 0, count = 1, i, failed = 0;
	uint8_t *pattern;
	aio_context_t ctx = 0;
	pthread_t tid;
	int write, fd, c, calm = 0, dsync = 0;

	if (argc < 2)
		usage();
	write = !strcmp(argv[1], "write");
	if (!write && strcmp(argv[1], "read"))
		usage();
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'o': offset = strtoull(optarg, NULL, 0); break;
		case 'l': len = strtoull(optarg, NULL, 0); break;
		case 'c': count = strtoull(optarg, NULL, 0); break;
		case 's': stride = strtoull(optarg, NULL, 0); break;
		case 'f': fill = optarg; break;
		case 'C': calm = 1; break;
		case 'Y': dsync = 1; break;
		default: usage();
		}
	}
	if (!dev || !len || len % 512 || offset % 512 || optind != argc)
		usage();
	if (!stride)
		stride = len;
	if (posix_memalign((void **)&buf, 4096, len) ||
	    !(pattern = malloc(len)))
		return 2;
	memset(pattern, 0x5a, len);
	if (fill) {
		FILE *f = fopen(fill, "r");

		if (!f || fread(pattern, 1, len, f) != len) {
			fprintf(stderr, "scribble: %s: need %zu bytes\n", fill,
				len);
			return 2;
		}
		fclose(f);
	}
	fd = open(dev, (write ? O_WRONLY : O_RDONLY) | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "scribble: %s: %s\n", dev, strerror(errno));
		return 2;
	}
	if (syscall(SYS_io_setup, 1, &ctx)) {
		fprintf(stderr, "scribble: io_setup: %s\n", strerror(errno));
		return 2;
	}
	if (pthread_create(&tid, NULL, scribbler, NULL))
		return 2;

	for (i = 0; i < count; i++) {
		struct iocb cb, *cbs[1] = { &cb };
		struct io_event ev;
		long r;

		memcpy(buf, pattern, len);
		memset(&cb, 0, sizeof(cb));
		cb.aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
		cb.aio_fildes = fd;
		cb.aio_buf = (uint64_t)(uintptr_t)buf;
		cb.aio_nbytes = len;
		cb.aio_offset = (int64_t)(offset + i * stride);
		if (dsync)
			cb.aio_rw_flags = RWF_DSYNC;
		__atomic_store_n(&active, !calm, __ATOMIC_SEQ_CST);
		do {
			r = syscall(SYS_io_submit, ctx, 1, cbs);
		} while (r < 0 && (errno == EINTR || errno == EAGAIN));
		if (r != 1) {
			fprintf(stderr, "scribble: io_submit: %s\n",
				strerror(errno));
			return 2;
		}
		do {
			r = syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL);
		} while (r < 0 && errno == EINTR);
		__atomic_store_n(&active, 0, __ATOMIC_SEQ_CST);
		if (r != 1 || ev.res != (long long)len) {
			printf("scribble: %s of %zu bytes at %llu: %s\n",
			       write ? "write" : "read", len,
			       offset + i * stride,
			       r != 1 ? "no completion" :
			       ev.res < 0 ? strerror((int)-ev.res) : "short");
			failed++;
		}
	}
	quit = 1;
	pthread_join(tid, NULL);
	printf("scribble: %llu %s, %llu failed, %llu bytes changed in flight\n",
	       count, write ? "writes" : "reads", failed,
	       (unsigned long long)flips);
	return failed ? 1 : 0;
}
