// SPDX-License-Identifier: GPL-2.0-only
/*
 * Bad-metadata fuzzing: copy a pristine image
 * onto a device (or file) and invert random bits in its first LIMIT
 * bytes, the metadata area.  One static program per image: starting
 * dd and friends over the VM's 9p root costs more than the test itself.
 *
 * usage: flipbits SRC DST LIMIT NBITS SEED
 *   SRC    pristine image (a file); copied whole onto DST first
 *   DST    the device or file to damage
 *   LIMIT  bits are flipped at byte offsets 0..LIMIT-1 (0: copy only)
 *   NBITS  how many bits (a bit may be hit twice: then it is restored)
 *   SEED   the offsets follow it
 * Prints "flipped <byte>.<bit> ..." on stdout.  Exit 0, or 2 on errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t num(const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "flipbits: not a number: '%s'\n", s);
		exit(2);
	}
	return v;
}

/* splitmix64: small, seedable, good enough to pick offsets */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "flipbits: %s %s: %s\n", what, path, strerror(errno));
	exit(2);
}

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	uint64_t limit, nbits, seed, i;
	int in, out;
	ssize_t n;

	if (argc != 6) {
		fprintf(stderr, "usage: flipbits SRC DST LIMIT NBITS SEED\n");
		return 2;
	}
	limit = num(argv[3]);
	nbits = num(argv[4]);
	seed = num(argv[5]);

	in = open(argv[1], O_RDONLY);
	if (in < 0)
		die("open", argv[1]);
	out = open(argv[2], O_RDWR);
	if (out < 0)
		die("open", argv[2]);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			die("write", argv[2]);
	if (n < 0)
		die("read", argv[1]);

	printf("flipped");
	for (i = 0; limit && i < nbits; i++) {
		uint64_t r = next(&seed);
		off_t off = r % limit;
		int bit = (r >> 56) & 7;
		unsigned char c;

		if (pread(out, &c, 1, off) != 1)
			die("read", argv[2]);
		c ^= 1u << bit;
		if (pwrite(out, &c, 1, off) != 1)
			die("write", argv[2]);
		printf(" %lld.%d", (long long)off, bit);
	}
	printf("\n");
	if (fsync(out))
		die("fsync", argv[2]);
	close(in);
	close(out);
	return 0;
}
