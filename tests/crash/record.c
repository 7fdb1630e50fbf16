// SPDX-License-Identifier: GPL-2.0-only
/*
 * Crash-test records and journals: the format described in record.h, the
 * deterministic block stream, and the journal parser.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

static uint32_t crc_table[256];

static void crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ ((c & 1) ? 0x82f63b78u : 0);
		crc_table[i] = c;
	}
}

#if defined(__x86_64__)
/*
 * The SSE4.2 crc32 instruction computes the same CRC-32C.  It matters in
 * the VM: under TCG the table loop costs ~0.3 s per verification.
 */
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}
#endif

/* CRC-32C as iSCSI and the kernel's crc32c() with ~0 in and out. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
#if defined(__x86_64__)
	static int hw = -1;

	if (hw < 0)
		hw = __builtin_cpu_supports("sse4.2");
	if (hw)
		return ~crc32c_hw(~crc, p, len);
#endif
	if (!crc_table[1])
		crc_init();
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t rand_below(uint64_t *state, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)splitmix64(state) * n) >> 64);
}

void put_le64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void put_le32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void payload_fill(uint8_t *buf, uint64_t run, uint64_t block,
			 uint64_t seq)
{
	uint64_t st = run ^ 0x243f6a8885a308d3ULL;
	uint64_t x;
	size_t off;

	/* Fold each field through the mixer so no two triples share a stream. */
	st = splitmix64(&st) ^ block;
	st = splitmix64(&st) ^ seq;
	for (off = 32; off + 8 <= REC_CRC_OFF; off += 8)
		put_le64(buf + off, splitmix64(&st));
	x = splitmix64(&st);
	for (; off < REC_CRC_OFF; off++, x >>= 8)
		buf[off] = (uint8_t)x;
}

void rec_fill(uint8_t *buf, uint64_t run, uint64_t block, uint64_t seq)
{
	put_le64(buf, REC_MAGIC);
	put_le64(buf + 8, run);
	put_le64(buf + 16, block);
	put_le64(buf + 24, seq);
	payload_fill(buf, run, block, seq);
	put_le32(buf + REC_CRC_OFF, crc32c(0, buf, REC_CRC_OFF));
}

void rec_parse(const uint8_t *buf, struct rec_info *ri)
{
	uint8_t expect[REC_SIZE];
	size_t i;

	memset(ri, 0, sizeof(*ri));
	for (i = 0; i < REC_SIZE && !buf[i]; i++)
		;
	if (i == REC_SIZE) {
		ri->kind = REC_ZERO;
		return;
	}
	ri->run = get_le64(buf + 8);
	ri->block = get_le64(buf + 16);
	ri->seq = get_le64(buf + 24);
	if (get_le64(buf) != REC_MAGIC) {
		ri->kind = REC_NO_MAGIC;
		return;
	}
	ri->crc_stored = get_le32(buf + REC_CRC_OFF);
	ri->crc_computed = crc32c(0, buf, REC_CRC_OFF);
	if (ri->crc_stored != ri->crc_computed) {
		ri->kind = REC_BAD_CRC;
		return;
	}
	payload_fill(expect, ri->run, ri->block, ri->seq);
	if (memcmp(expect + 32, buf + 32, REC_CRC_OFF - 32)) {
		ri->kind = REC_BAD_PAYLOAD;
		return;
	}
	ri->kind = REC_OK;
}

const char *rec_kind_name(enum rec_kind k)
{
	switch (k) {
	case REC_OK:
		return "valid record";
	case REC_ZERO:
		return "zeros";
	case REC_NO_MAGIC:
		return "garbage (no record magic)";
	case REC_BAD_CRC:
		return "torn or corrupt record (crc32c mismatch)";
	case REC_BAD_PAYLOAD:
		return "record whose payload does not match its header";
	}
	return "?";
}

void blockgen_init(struct blockgen *g, uint64_t seed, uint64_t nblocks,
		   unsigned int qd)
{
	memset(g, 0, sizeof(*g));
	g->state = seed ^ 0x6a09e667f3bcc908ULL;
	g->nblocks = nblocks;
	g->qd = qd;
}

uint64_t blockgen_next(struct blockgen *g)
{
	uint64_t b, back;
	int clash;

	do {
		b = rand_below(&g->state, g->nblocks);
		clash = 0;
		for (back = 1; back < g->qd && back <= g->seq; back++)
			if (g->recent[(g->seq + 1 - back) % REC_QD_MAX] == b)
				clash = 1;
	} while (clash);
	g->seq++;
	g->recent[g->seq % REC_QD_MAX] = b;
	return b;
}

uint64_t run_id_from_seed(uint64_t seed)
{
	uint64_t st = seed ^ 0xbb67ae8584caa73bULL;

	return splitmix64(&st);
}

static int jent_add(struct journal *j, struct jent e)
{
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 4096;
		struct jent *n = realloc(j->ents, cap * sizeof(*n));

		if (!n)
			return -1;
		j->ents = n;
		j->cap = cap;
	}
	j->ents[j->n++] = e;
	return 0;
}

int journal_load(const char *path, struct journal *j)
{
	char line[256], extra[16];
	unsigned long long a, b;
	unsigned int lineno = 0;
	FILE *f;
	int have_header = 0, ret = -1;

	memset(j, 0, sizeof(*j));
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct jent e = { 0 };
		size_t len = strlen(line);

		lineno++;
		if (!len || line[len - 1] != '\n') {
			if (!feof(f)) {
				fprintf(stderr, "%s:%u: line too long\n", path,
					lineno);
				goto out;
			}
			j->torn_tail = 1;	/* cut mid-write: not acked */
			break;
		}
		if (!have_header) {
			unsigned long long run, seed, nb;
			unsigned int qd;

			if (sscanf(line, "R run=%llx seed=%llu blocks=%llu qd=%u",
				   &run, &seed, &nb, &qd) != 4 || !nb ||
			    !qd || qd > REC_QD_MAX || nb <= qd) {
				fprintf(stderr, "%s:1: bad header: %s", path,
					line);
				goto out;
			}
			j->run = run;
			j->seed = seed;
			j->nblocks = nb;
			j->qd = qd;
			have_header = 1;
			continue;
		}
		switch (line[0]) {
		case 'C':
			extra[0] = 0;
			if (sscanf(line, "C %llu %llu %15s", &a, &b, extra) < 2 ||
			    (extra[0] && strcmp(extra, "D")))
				goto bad;
			e.type = 'C';
			e.a = a;
			e.b = b;
			e.dsync = extra[0] == 'D';
			break;
		case 'F':
			if (sscanf(line, "F %llu", &a) != 1)
				goto bad;
			e.type = 'F';
			e.a = a;
			break;
		case 'E':
			/* "E stopped after N writes": nothing beyond N issued */
			e.type = 'E';
			if (sscanf(line, "E stopped after %llu writes", &a) == 1)
				e.a = a;
			else
				e.a = UINT64_MAX;
			break;
		default:
			goto bad;
		}
		if (jent_add(j, e)) {
			fprintf(stderr, "%s: out of memory\n", path);
			goto out;
		}
	}
	if (!have_header) {
		fprintf(stderr, "%s: empty journal (no header line)\n", path);
		goto out;
	}
	ret = 0;
	goto out;
bad:
	fprintf(stderr, "%s:%u: malformed line: %s", path, lineno, line);
out:
	fclose(f);
	if (ret)
		journal_free(j);
	return ret;
}

void journal_free(struct journal *j)
{
	free(j->ents);
	j->ents = NULL;
	j->n = j->cap = 0;
}
