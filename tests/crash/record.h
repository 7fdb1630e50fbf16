/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Crash-test records and journals, shared by the writer, the verifier,
 * the forging helper and the log replayer.
 *
 * A record is one 4 KiB block that describes itself: which run wrote it,
 * for which block, as which write (sequence number), a payload derived
 * from those three, and a crc32c over everything before the crc.  A torn
 * write, a misdirected write, a stale write and garbage are all told
 * apart by reading one block, without any other state.
 *
 * Every field is little-endian:
 *
 *   0     u64  REC_MAGIC ("TACCRSH1")
 *   8     u64  run id
 *   16    u64  block number (in 4 KiB units from the start of the device)
 *   24    u64  write sequence number (0: the initial record of the run)
 *   32    ...  payload: a splitmix64 stream seeded from run, block, seq
 *   4092  u32  crc32c (Castagnoli) of bytes 0..4091
 *
 * The journal is a text file, one event a line, written by the writer
 * as things happen (see writer.c for when, verify.c for what it proves):
 *
 *   R run=<hex> seed=<n> blocks=<n> qd=<n>   header, first line
 *   C <seq> <block> [D]     write <seq> completed (D: it was RWF_DSYNC)
 *   F <n>                   flush <n> acknowledged; F 0 ends the init
 *   E stopped after <n> writes   the writer stopped on its own: no
 *                           write beyond <n> was ever issued
 */
#ifndef CRASH_RECORD_H
#define CRASH_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define REC_SIZE	4096
#define REC_CRC_OFF	(REC_SIZE - 4)
#define REC_MAGIC	0x3148535243434154ULL	/* "TACCRSH1" on disk */
#define REC_QD_MAX	64

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

uint64_t splitmix64(uint64_t *state);
/* A uniform number in [0, n). */
uint64_t rand_below(uint64_t *state, uint64_t n);

void put_le64(uint8_t *p, uint64_t v);
void put_le32(uint8_t *p, uint32_t v);
uint64_t get_le64(const uint8_t *p);
uint32_t get_le32(const uint8_t *p);

void rec_fill(uint8_t *buf, uint64_t run, uint64_t block, uint64_t seq);

enum rec_kind {
	REC_OK,		/* header, crc and payload all consistent */
	REC_ZERO,	/* all zero bytes */
	REC_NO_MAGIC,	/* not a record at all */
	REC_BAD_CRC,	/* torn or corrupted */
	REC_BAD_PAYLOAD, /* crc matches but the payload is not the derived one */
};

struct rec_info {
	enum rec_kind kind;
	uint64_t run, block, seq;
	uint32_t crc_stored, crc_computed;
};

void rec_parse(const uint8_t *buf, struct rec_info *ri);
const char *rec_kind_name(enum rec_kind k);

/*
 * The block written by each sequence number is a pure function of the
 * seed, so the verifier knows where a write that never reached the
 * journal (in flight at the cut) would have gone.  A block is never
 * chosen twice within qd consecutive writes: the writer keeps every
 * in-flight write within the last qd sequence numbers, so two writes to
 * one block are never in flight together (their order would be
 * undefined).
 */
struct blockgen {
	uint64_t state;
	uint64_t nblocks;
	unsigned int qd;
	uint64_t seq;			/* last sequence number generated */
	uint64_t recent[REC_QD_MAX];	/* block of seq - i, ring by seq */
};

void blockgen_init(struct blockgen *g, uint64_t seed, uint64_t nblocks,
		   unsigned int qd);
/* The block of the next sequence number (1, 2, ...). */
uint64_t blockgen_next(struct blockgen *g);

/* The run id the writer uses for a seed unless told otherwise. */
uint64_t run_id_from_seed(uint64_t seed);

struct jent {
	char type;		/* 'C', 'F' or 'E' */
	uint8_t dsync;		/* C: written with RWF_DSYNC */
	uint64_t a;		/* C: seq, F: flush number, E: last seq */
	uint64_t b;		/* C: block */
};

struct journal {
	uint64_t run, seed, nblocks;
	unsigned int qd;
	struct jent *ents;
	size_t n, cap;
	int torn_tail;		/* the last line had no newline: ignored */
};

/*
 * Read a journal; on a malformed line print why (file:line) and return
 * -1.  A last line without its newline is a write cut by the power
 * failure and is ignored.
 */
int journal_load(const char *path, struct journal *j);
void journal_free(struct journal *j);

#endif
