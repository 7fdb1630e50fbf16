// SPDX-License-Identifier: GPL-2.0-only
/*
 * Trace line parsers for tacsim.  Every parser takes one line (modified in
 * place while splitting it into fields), and either fills a trace_rec, says
 * the line carries no data request, or says why it is malformed.  They
 * never trust the input: all numbers are checked for junk and overflow.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "trace.h"

#define MAX_FIELDS 16

static const char *const format_names[] = {
	[FMT_AUTO] = "auto", [FMT_BLKPARSE] = "blkparse", [FMT_MSR] = "msr",
	[FMT_SPC] = "spc", [FMT_CSV] = "csv",
};

const char *trace_format_name(enum trace_format fmt)
{
	return format_names[fmt];
}

enum trace_format trace_format_parse(const char *name)
{
	unsigned int i;

	for (i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (!strcasecmp(name, format_names[i]))
			return (enum trace_format)i;
	return (enum trace_format)-1;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Split at @sep (or any white space if @sep is 0); fields are trimmed. */
static int split(char *s, char sep, char **f, int max)
{
	int n = 0;

	if (!sep) {
		char *save = NULL, *tok;

		for (tok = strtok_r(s, " \t\r\n", &save); tok && n < max;
		     tok = strtok_r(NULL, " \t\r\n", &save))
			f[n++] = tok;
		return tok ? max + 1 : n;
	}
	for (;;) {
		char *c = strchr(s, sep);

		if (n == max)
			return max + 1;
		if (c)
			*c = '\0';
		f[n++] = trim(s);
		if (!c)
			return n;
		s = c + 1;
	}
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-' || *s == '+' || isspace((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && !*end;
}

static bool parse_time(const char *s)
{
	char *end;

	if (!*s)
		return false;
	errno = 0;
	(void)strtod(s, &end);
	return !errno && !*end;
}

/*
 * offset + length must not wrap, and the device id is folded into the
 * high bits by the caller: keep offsets below 2^56 bytes (64 PiB).
 */
static bool sane_extent(uint64_t off, uint64_t len)
{
	return off < (1ULL << 56) && len < (1ULL << 40);
}

/*
 * blkparse default output, one event per line:
 *   "  8,0    3       12     0.000012345  4711  Q   R 123456 + 8 [postgres]"
 * dev cpu seq time pid action rwbs sector + nsectors [cmd].  Only the
 * chosen action (st->blk_event) is kept; other actions are P_SKIP, and so
 * are the non-event lines from the "CPU0 (8,0):" summary on.
 */
static enum parse_result parse_blkparse(char *line, struct parse_state *st,
					struct trace_rec *rec, const char **why)
{
	char *f[MAX_FIELDS];
	unsigned int maj, min;
	uint64_t sector, n;
	char tail;
	const char *rwbs;
	int nf;

	nf = split(line, 0, f, MAX_FIELDS);
	if (nf == 0)
		return P_SKIP;
	if (sscanf(f[0], "%u,%u%c", &maj, &min, &tail) != 2) {
		/* blkparse's closing summary: "CPU0 (8,0):", "Total (8,0):" */
		if (!strncmp(f[0], "CPU", 3) || !strcmp(f[0], "Total"))
			st->in_summary = true;
		if (st->in_summary)
			return P_SKIP;
		*why = "not a blkparse event (expected MAJ,MIN first)";
		return P_BAD;
	}
	if (nf < 6) {
		*why = "blkparse event with too few fields";
		return P_BAD;
	}
	if (strlen(f[5]) != 1 || f[5][0] != st->blk_event)
		return P_SKIP;
	if (nf >= 7 && (nf == 7 || f[7][0] == '['))
		return P_SKIP;	/* no sector: a pure flush or barrier */
	if (nf < 10 || strcmp(f[8], "+")) {
		*why = "blkparse event without 'SECTOR + COUNT'";
		return P_BAD;
	}
	rwbs = f[6];
	if (!parse_u64(f[7], &sector) || !parse_u64(f[9], &n)) {
		*why = "bad sector or sector count";
		return P_BAD;
	}
	if (strchr(rwbs, 'D') || strchr(rwbs, 'N') || !n)
		return P_SKIP;	/* discard, no data, empty flush */
	if (strchr(rwbs, 'R'))
		rec->write = false;
	else if (strchr(rwbs, 'W'))
		rec->write = true;
	else
		return P_SKIP;
	if (sector >= (1ULL << 47) || n >= (1ULL << 31)) {
		*why = "sector out of range";
		return P_BAD;
	}
	rec->offset = sector * 512;
	rec->length = n * 512;
	rec->dev = maj << 20 | min;
	return P_OK;
}

static int parse_op(const char *s)
{
	if (!strcasecmp(s, "r") || !strcasecmp(s, "read"))
		return 0;
	if (!strcasecmp(s, "w") || !strcasecmp(s, "write"))
		return 1;
	return -1;
}

/* MSR Cambridge: Timestamp,Hostname,DiskNumber,Type,Offset,Size,RespTime */
static enum parse_result parse_msr(char *line, struct parse_state *st,
				   struct trace_rec *rec, const char **why)
{
	char *f[MAX_FIELDS];
	uint64_t disk, off, len, ts;
	int nf = split(line, ',', f, MAX_FIELDS), op;

	if (nf != 7) {
		*why = "MSR line without 7 fields";
		return P_BAD;
	}
	if (!parse_u64(f[0], &ts) || !parse_u64(f[2], &disk) ||
	    disk > 0xffff) {
		*why = "bad MSR timestamp or disk number";
		return P_BAD;
	}
	op = parse_op(f[3]);
	if (op < 0) {
		*why = "MSR type is neither Read nor Write";
		return P_BAD;
	}
	if (!parse_u64(f[4], &off) || !parse_u64(f[5], &len) ||
	    !sane_extent(off, len)) {
		*why = "bad MSR offset or size";
		return P_BAD;
	}
	if (!len)
		return P_SKIP;
	rec->offset = off;
	rec->length = len;
	rec->write = op;
	rec->dev = (uint32_t)disk;
	return P_OK;
}

/* SPC (UMass): ASU,LBA,Size,Opcode,Timestamp[,...]; LBA in sectors. */
static enum parse_result parse_spc(char *line, struct parse_state *st,
				   struct trace_rec *rec, const char **why)
{
	char *f[MAX_FIELDS];
	uint64_t asu, lba, len;
	int nf = split(line, ',', f, MAX_FIELDS), op;

	if (nf < 5 || nf > MAX_FIELDS) {
		*why = "SPC line without ASU,LBA,Size,Opcode,Timestamp";
		return P_BAD;
	}
	if (!parse_u64(f[0], &asu) || asu > 0xffff) {
		*why = "bad SPC ASU";
		return P_BAD;
	}
	if (!parse_u64(f[1], &lba) || !parse_u64(f[2], &len) ||
	    lba >= (1ULL << 47) || !sane_extent(lba * 512, len)) {
		*why = "bad SPC LBA or size";
		return P_BAD;
	}
	op = parse_op(f[3]);
	if (op < 0) {
		*why = "SPC opcode is neither r nor w";
		return P_BAD;
	}
	if (!parse_time(f[4])) {
		*why = "bad SPC timestamp";
		return P_BAD;
	}
	if (!len)
		return P_SKIP;
	rec->offset = lba * 512;
	rec->length = len;
	rec->write = op;
	rec->dev = (uint32_t)asu;
	return P_OK;
}

/* Plain CSV: time,op,offset_bytes,length_bytes; an optional header. */
static enum parse_result parse_csv(char *line, struct parse_state *st,
				   struct trace_rec *rec, const char **why)
{
	char *f[MAX_FIELDS];
	bool header_allowed = st->header_allowed;
	uint64_t off, len;
	int nf, op;

	st->header_allowed = false;
	nf = split(line, ',', f, MAX_FIELDS);
	if (nf != 4) {
		*why = "CSV line without 4 fields time,op,offset,length";
		return P_BAD;
	}
	if (header_allowed && !strcasecmp(f[0], "time") &&
	    !strcasecmp(f[1], "op"))
		return P_SKIP;
	if (!parse_time(f[0])) {
		*why = "bad CSV time";
		return P_BAD;
	}
	op = parse_op(f[1]);
	if (op < 0) {
		*why = "CSV op is not R, W, read or write";
		return P_BAD;
	}
	if (!parse_u64(f[2], &off) || !parse_u64(f[3], &len) ||
	    !sane_extent(off, len)) {
		*why = "bad CSV offset or length";
		return P_BAD;
	}
	if (!len)
		return P_SKIP;
	rec->offset = off;
	rec->length = len;
	rec->write = op;
	rec->dev = 0;
	return P_OK;
}

enum parse_result trace_parse_line(enum trace_format fmt, char *line,
				   struct parse_state *st,
				   struct trace_rec *rec, const char **why)
{
	char *s = trim(line);

	if (!*s || *s == '#')
		return P_SKIP;
	switch (fmt) {
	case FMT_BLKPARSE:
		return parse_blkparse(s, st, rec, why);
	case FMT_MSR:
		return parse_msr(s, st, rec, why);
	case FMT_SPC:
		return parse_spc(s, st, rec, why);
	case FMT_CSV:
		return parse_csv(s, st, rec, why);
	default:
		*why = "no format";
		return P_BAD;
	}
}

/*
 * Try every format on the first 64 non-empty lines; the one that parses
 * most of them (P_OK or P_SKIP) wins, P_OK lines counting double so that a
 * file of blkparse lines for another event does not win as anything else.
 */
enum trace_format trace_sniff(const char *path, char blk_event)
{
	int score[FMT_CSV + 1] = { 0 }, lines = 0, fmt, best = FMT_AUTO;
	char buf[4096], copy[4096];
	struct parse_state st[FMT_CSV + 1];
	gzFile gz = gzopen(path, "rb");

	if (!gz)
		return FMT_AUTO;
	for (fmt = FMT_BLKPARSE; fmt <= FMT_CSV; fmt++)
		st[fmt] = (struct parse_state){ .header_allowed = true,
						.blk_event = blk_event };
	while (lines < 64 && gzgets(gz, buf, sizeof(buf))) {
		struct trace_rec rec;
		const char *why;

		if (!*trim(strcpy(copy, buf)))
			continue;
		lines++;
		for (fmt = FMT_BLKPARSE; fmt <= FMT_CSV; fmt++) {
			enum parse_result r;

			strcpy(copy, buf);
			r = trace_parse_line(fmt, copy, &st[fmt], &rec, &why);
			score[fmt] += r == P_OK ? 2 : r == P_SKIP ? 1 : 0;
		}
	}
	gzclose(gz);
	for (fmt = FMT_BLKPARSE; fmt <= FMT_CSV; fmt++)
		if (score[fmt] > (best == FMT_AUTO ? 0 : score[best]))
			best = fmt;
	return (enum trace_format)best;
}
