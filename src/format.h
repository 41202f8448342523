/* format.h - readers and writers of profile files, and choosing a format. */
#ifndef HEAPSNAP_FORMAT_H
#define HEAPSNAP_FORMAT_H

#include <stdio.h>
#include "profile.h"

enum fmt {
	FMT_UNKNOWN = -1,
	FMT_PPROF,      /* profile.proto, gzipped (.pb.gz, .pb, .pprof) */
	FMT_JEPROF,     /* jemalloc heap_v2 text (.heap, .jeprof) */
	FMT_GPERF,      /* gperftools "heap profile:" text (.hprof, .gperf) */
	FMT_COLLAPSED,  /* folded stacks (.folded, .collapsed, .txt) - write only */
	FMT_SPEEDSCOPE, /* speedscope JSON (.speedscope.json, .json) - write only */
	FMT_SVG,        /* flame graph (.svg) - write only */
	FMT_NFORMATS
};

/* Errors: readers return 0 or -errno and, on error, put "<what and where>"
 * in err (e.g. "line 12: expected '@' before the stack", "truncated gzip
 * stream at byte 4096") without the file name: the caller prints
 * "heapsnap: cannot read 'FILE': <err>".  They never print, exit or abort,
 * whatever the input. */
#define FMT_ERRLEN 256

/* Name <-> format: "pprof", "jeprof", "gperf", "collapsed", "speedscope", "svg". */
const char *fmt_name(enum fmt f);
enum fmt fmt_parse(const char *name);
/* Format implied by a file name's suffix, or FMT_UNKNOWN. */
enum fmt fmt_from_filename(const char *path);
/* Format recognised from the first bytes of a file, or FMT_UNKNOWN. */
enum fmt fmt_sniff(const void *buf, size_t len);
bool fmt_can_read(enum fmt f);

/* Reads a whole file (any readable format, sniffed from its content) into
 * *out.  0 or -errno with err filled. */
int fmt_read_file(const char *path, struct profile **out, char err[FMT_ERRLEN]);
/* Parses buf[0..len) in format f (FMT_UNKNOWN: sniff). */
int fmt_read_buf(enum fmt f, const void *buf, size_t len, struct profile **out,
		 char err[FMT_ERRLEN]);

/* Writes p to path (atomically: a temporary file renamed into place) in
 * format f; FMT_UNKNOWN picks from the suffix, then pprof.  `type` selects
 * the value single-valued formats write (collapsed, speedscope, svg).
 * 0 or -errno with err filled. */
int fmt_write_file(const struct profile *p, const char *path, enum fmt f,
		   enum prof_type type, char err[FMT_ERRLEN]);
int fmt_write(const struct profile *p, FILE *out, enum fmt f, enum prof_type type,
	      char err[FMT_ERRLEN]);

/* Per-format entry points (fmt_<name>.c). */
int pprof_read(const void *buf, size_t len, struct profile **out, char err[FMT_ERRLEN]);
int pprof_write(const struct profile *p, FILE *out, char err[FMT_ERRLEN]);
int jeprof_read(const void *buf, size_t len, struct profile **out, char err[FMT_ERRLEN]);
int jeprof_write(const struct profile *p, FILE *out, char err[FMT_ERRLEN]);
int gperf_read(const void *buf, size_t len, struct profile **out, char err[FMT_ERRLEN]);
int gperf_write(const struct profile *p, FILE *out, char err[FMT_ERRLEN]);
int collapsed_write(const struct profile *p, FILE *out, enum prof_type type,
		    char err[FMT_ERRLEN]);
int speedscope_write(const struct profile *p, FILE *out, enum prof_type type,
		     char err[FMT_ERRLEN]);
int svg_write(const struct profile *p, FILE *out, enum prof_type type,
	      char err[FMT_ERRLEN]);

#endif
