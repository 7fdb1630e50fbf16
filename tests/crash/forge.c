// SPDX-License-Identifier: GPL-2.0-only
/*
 * Damage one block of a crash-test image on purpose, to prove that the
 * verifier notices (test_verify.sh).  Not for devices in use.
 *
 * usage: forge IMAGE BLOCK ACTION [ARGS]
 *   record RUN BLK SEQ   a valid record for (RUN, BLK, SEQ), RUN in hex
 *   torn RUN BLK SEQ     first half of that record over the second half
 *                        of what is there (a torn write)
 *   copy SRC             the content of block SRC
 *   flip OFFSET          invert one byte of the block
 *   zero                 zeros
 *   garbage              bytes that are no record
 *   show                 print "run block seq kind" of what is there
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record.h"

static uint64_t num(const char *s, int base)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || end == s || *end) {
		fprintf(stderr, "forge: not a number: '%s'\n", s);
		exit(2);
	}
	return v;
}

static void io(ssize_t r, const char *what)
{
	if (r != REC_SIZE) {
		fprintf(stderr, "forge: %s: %s\n", what,
			r < 0 ? strerror(errno) : "short");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	uint8_t buf[REC_SIZE], rec[REC_SIZE];
	const char *act;
	uint64_t b;
	off_t off;
	int fd, i;

	if (argc < 4) {
		fprintf(stderr, "usage: forge IMAGE BLOCK ACTION [ARGS] "
			"(see forge.c)\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "forge: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	b = num(argv[2], 0);
	act = argv[3];
	off = (off_t)(b * REC_SIZE);
	io(pread(fd, buf, REC_SIZE, off), "read");
	if (!strcmp(act, "record") && argc == 7) {
		rec_fill(buf, num(argv[4], 16), num(argv[5], 0),
			 num(argv[6], 0));
	} else if (!strcmp(act, "torn") && argc == 7) {
		rec_fill(rec, num(argv[4], 16), num(argv[5], 0),
			 num(argv[6], 0));
		memcpy(buf, rec, REC_SIZE / 2);
	} else if (!strcmp(act, "copy") && argc == 5) {
		io(pread(fd, buf, REC_SIZE, (off_t)(num(argv[4], 0) * REC_SIZE)),
		   "read source");
	} else if (!strcmp(act, "flip") && argc == 5) {
		buf[num(argv[4], 0) % REC_SIZE] ^= 0xff;
	} else if (!strcmp(act, "zero") && argc == 4) {
		memset(buf, 0, REC_SIZE);
	} else if (!strcmp(act, "garbage") && argc == 4) {
		for (i = 0; i < REC_SIZE; i++)
			buf[i] = (uint8_t)(i * 7 + 3);
	} else if (!strcmp(act, "show") && argc == 4) {
		struct rec_info ri;

		rec_parse(buf, &ri);
		printf("%llx %llu %llu %s\n", (unsigned long long)ri.run,
		       (unsigned long long)ri.block,
		       (unsigned long long)ri.seq, rec_kind_name(ri.kind));
		return 0;
	} else {
		fprintf(stderr, "forge: bad action or arguments (see forge.c)\n");
		return 2;
	}
	io(pwrite(fd, buf, REC_SIZE, off), "write");
	return close(fd) ? 2 : 0;
}
