/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Trace readers for tacsim: blkparse text, MSR Cambridge CSV, SPC, and the
 * plain CSV "time,op,offset_bytes,length_bytes", plain or gzip-compressed.
 * See tools/README for the formats and what is kept from each.
 */
#ifndef TACSIM_TRACE_H
#define TACSIM_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum trace_format {
	FMT_AUTO = 0,
	FMT_BLKPARSE,
	FMT_MSR,
	FMT_SPC,
	FMT_CSV,
};

/* One request: bytes [offset, offset + length) of device @dev. */
struct trace_rec {
	uint64_t offset;
	uint64_t length;
	uint32_t dev;		/* device/ASU/disk id as written in the trace */
	bool write;
};

enum parse_result {
	P_OK,		/* *rec filled */
	/* valid line without a data request (header, flush, other
	 * blkparse event, summary, comment)
	 */
	P_SKIP,
	P_BAD,		/* malformed: *why says how */
};

/* State that lets a parser skip blkparse's closing summary. */
struct parse_state {
	bool in_summary;
	bool header_allowed;	/* first non-empty line of a CSV file */
	char blk_event;		/* blkparse action kept: 'Q' or 'C' */
};

enum parse_result trace_parse_line(enum trace_format fmt, char *line,
				   struct parse_state *st,
				   struct trace_rec *rec, const char **why);

/* Guess from the first lines of @path; FMT_AUTO if nothing fits. */
enum trace_format trace_sniff(const char *path, char blk_event);

const char *trace_format_name(enum trace_format fmt);
enum trace_format trace_format_parse(const char *name);	/* -1 if unknown */

#endif /* TACSIM_TRACE_H */
