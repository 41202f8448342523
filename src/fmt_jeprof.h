/* fmt_jeprof.h - helpers the two heap text formats share (jemalloc heap_v2
 * in fmt_jeprof.c, gperftools "heap profile:" in fmt_gperf.c). */
#ifndef HEAPSNAP_FMT_JEPROF_H
#define HEAPSNAP_FMT_JEPROF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "format.h"

/* Sets p->drop_frames to the allocator entry points heapsnap's reports drop
 * (rep_drop_frames_regex) plus `extra` (a regex or NULL), as Go pprof's
 * legacy heap reader does, so a pprof file written from a text profile makes
 * `go tool pprof` drop them too.  0 or -ENOMEM with err set. */
int jeprof_set_drop_frames(struct profile *p, const char *extra, char err[FMT_ERRLEN]);

/* Line cursor over buf[0..len): lines without their '\n' and a trailing '\r'. */
struct jeprof_lines {
	const char *p, *end;
	size_t lineno;            /* number of the line last returned, from 1 */
};

void jeprof_lines_init(struct jeprof_lines *c, const void *buf, size_t len);
/* Returns false at the end of the buffer, else the line in [*s, *e). */
bool jeprof_next_line(struct jeprof_lines *c, const char **s, const char **e);

/* Skips blank lines to the header line: false when there is none (then
 * c->lineno is the line it was expected on). */
bool jeprof_header_line(struct jeprof_lines *c, const char **s, const char **e);

/* Token helpers on [*s, e): skip blanks (space, tab); parse a decimal
 * uint64 / a hex address with optional 0x.  The parsers return 0 and advance
 * *s, -EINVAL when no number is there, -ERANGE on overflow. */
const char *jeprof_skip_ws(const char *s, const char *e);
int jeprof_parse_dec(const char **s, const char *e, uint64_t *out);
int jeprof_parse_hex(const char **s, const char *e, uint64_t *out);

/* Parses "objs: bytes [objs: bytes]" at *s (blanks allowed around every
 * token) into n[0..3] (inuse objs, inuse bytes, alloc objs, alloc bytes),
 * each <= INT64_MAX.  0 and *s past ']', or -EINVAL with err set ("line N:
 * ..."). */
int jeprof_parse_counts(const char **s, const char *e, size_t lineno,
			uint64_t n[4], char err[FMT_ERRLEN]);

/* Locates the memory map section ("MAPPED_LIBRARIES:" or "--- Memory map:"
 * at the start of a line) and parses what follows with prof_parse_maps_ex
 * (NUL bytes refused).  *body_len gets the length of the part before the
 * marker (len without one).  0, or -EINVAL/-ENOMEM with err set. */
int jeprof_read_maps(struct profile *p, const char *buf, size_t len,
		     size_t *body_len, char err[FMT_ERRLEN]);

/* Turns a sampled (objs, bytes) pair into unbiased estimates the way jeprof
 * and Go pprof do: scale both by 1/p(average size).  period <= 1 is exact.
 * 0, or -ERANGE when the result does not fit an int64. */
int jeprof_unbias(uint64_t objs, uint64_t bytes, int64_t period,
		  int64_t *est_objs, int64_t *est_bytes);

/* The inverse for writers: the raw sampled counts that jeprof's average-size
 * correction turns back into (objs, bytes) - exactly when such integers
 * exist, else the nearest.  size > 0 is the object size (label "bytes"),
 * tried before the pair's average.  Values must be >= 0.  0, or -ERANGE
 * when no raw counts would read back (estimates near INT64_MAX). */
int jeprof_raw_counts(int64_t objs, int64_t bytes, double size, int64_t period,
		      int64_t *raw_objs, int64_t *raw_bytes);

/* Raw counts of every sample of p for `period` (rows: inuse objects, inuse
 * bytes, alloc objects, alloc bytes; alloc zero without has_alloc) into a
 * new array *raw (free it), their sums into tot.  0, or -ENOMEM/-ERANGE with
 * err set; `fmt` names the format in messages. */
int jeprof_raw_samples(const struct profile *p, int64_t period, const char *fmt,
		       int64_t (**raw)[4], int64_t tot[4], char err[FMT_ERRLEN]);

/* Returns -EINVAL with err set when some value of p is negative (a diff),
 * which heap text formats cannot hold; `fmt` names the format. */
int jeprof_check_writable(const struct profile *p, const char *fmt,
			  char err[FMT_ERRLEN]);

/* Lookup pc -> address as written in the file: callers (i > 0) get +1. */
uint64_t jeprof_file_addr(uint64_t pc, bool caller);
/* Address from a file -> lookup pc: callers get -1 (0 stays 0). */
uint64_t jeprof_lookup_pc(uint64_t addr, bool caller);

/* Writes "MAPPED_LIBRARIES:\n" and p->maps_text, or lines synthesized from
 * p->maps in /proc/PID/maps syntax ("r-xp", a newline in a path as \012). */
void jeprof_write_maps(const struct profile *p, FILE *out);

/* A stack of location indexes, leaf first, reused from line to line. */
struct jeprof_stack {
	uint32_t *v;
	size_t n, cap;
};

/* Parses the blank-separated hex addresses in [s, e) into st (at least one),
 * adding a location per lookup pc: the leaf as is unless all_callers, callers
 * - 1.  0, or -EINVAL/-ENOMEM with err set. */
int jeprof_read_stack(struct profile *p, const char *s, const char *e, size_t lineno,
		      bool all_callers, struct jeprof_stack *st, char err[FMT_ERRLEN]);

/* Adds one block n[] (raw "objs: bytes [objs: bytes]") on stack st, unbiased
 * for `period`, labelled "bytes" = the average object size, rounded.  When
 * the live and the cumulative pair have different average sizes, they
 * become two samples on the same stack, each with its own label.  All-zero
 * blocks are skipped.  0, or -EINVAL/-ENOMEM with err set. */
int jeprof_add_block(struct profile *p, const struct jeprof_stack *st, const uint64_t n[4],
		     int64_t period, size_t lineno, char err[FMT_ERRLEN]);

/* Size of sample s's objects: its numeric label "bytes" when > 0, else 0. */
double jeprof_sample_size(const struct profile *p, size_t s);

#endif
