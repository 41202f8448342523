/* report.h - the report engine: top, tree, peek, list and diff views of a profile, printed in Go pprof's layout or as JSON. */
#ifndef HEAPSNAP_REPORT_H
#define HEAPSNAP_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/*
 * Use: fill a struct rep_opts (rep_opts_init gives the defaults of a kind),
 * rep_build() a view from a profile, then rep_print() or rep_print_json() it
 * to any FILE*, as often as wanted; rep_free() it.  The CLI commands and the
 * shell share this; the engine never prints on its own and never exits.
 *
 * Semantics follow Go pprof (FORMATS.md section 5), checked against
 * `go tool pprof` 1.19's sources and output:
 * - flat = value of samples whose leaf is the node; cum = value of samples
 *   containing the node, once per sample even under recursion.
 * - Allocator and heapsnap frames are dropped from the leaf end of every
 *   stack (see rep_is_alloc_frame), and the profile's drop_frames regex is
 *   applied as pprof applies it, so flat lands on malloc's caller.
 * - The total is the sum of |value| over all samples before --focus and
 *   --ignore, so percentages stay relative to the unfiltered profile; with
 *   a base to subtract, of the net profile; for REP_DIFF, of the base.
 * - top/tree drop nodes whose |cum| is below nodefraction of the shown
 *   total (pprof's "Dropped N nodes (cum <= X)"), sort by |flat| (or |cum|),
 *   keep nodecount rows.
 * - Frames that stay unsymbolized are named "module+0xoffset" (or "0xaddr"
 *   without a mapping), one node per address; pprof would fold them into
 *   "[module]".
 * - Granularity "files" gives one node per source file; pprof 1.19 also
 *   splits a file by its functions' start lines (same name on several
 *   rows), which heapsnap does not copy.
 * Everything else prints byte for byte what `go tool pprof -symbolize=none`
 * prints for the same file (tests/e2e/report-gopprof.sh, report-list.sh);
 * list differs only where the source is missing (heapsnap still shows the
 * sampled lines).
 */

enum rep_kind {
	REP_TOP,        /* flat/cum table (pprof -top) */
	REP_TREE,       /* callers and callees of every node (pprof -tree) */
	REP_PEEK,       /* the same for nodes matching `symbol` (pprof -peek) */
	REP_LIST,       /* per-source-line values of functions matching `symbol` */
	REP_DIFF,       /* top of new - base, percentages of the base total */
};

enum rep_gran {
	REP_GRAN_FUNCTIONS,
	REP_GRAN_FILES,
	REP_GRAN_LINES,
	REP_GRAN_ADDRESSES,
};

enum rep_unit {
	REP_UNIT_MINIMUM,  /* pprof's default: one unit for the whole report,
			      picked from the smallest shown value */
	REP_UNIT_AUTO,     /* each value in its own unit (steps of 1024) */
	REP_UNIT_B,
	REP_UNIT_KB,
	REP_UNIT_MB,
	REP_UNIT_GB,
};

struct rep_opts {
	enum rep_kind kind;
	enum prof_type type;        /* sample index; PT_INUSE_SPACE by default */
	const char *focus;          /* POSIX ERE or NULL: keep samples with a frame
				       whose function name, file name or mapping
				       file matches */
	const char *ignore;         /* POSIX ERE or NULL: drop such samples (wins) */
	const char *symbol;         /* REP_PEEK (node names), REP_LIST (function
				       names): POSIX ERE, required */
	enum rep_gran gran;         /* REP_LIST always uses lines */
	enum rep_unit unit;
	int nodecount;              /* rows to keep, 0 = all */
	bool cum_sort;              /* sort by cum instead of flat */
	double nodefraction;        /* drop nodes with |cum| < this * total */
	double edgefraction;        /* drop edges below this * total (tree) */
	bool keep_alloc_frames;     /* do not drop allocator frames */
	/* Subtracted from the profile: for REP_DIFF the base of the diff,
	 * otherwise pprof's -base (percentages of the net total).  May be NULL
	 * except for REP_DIFF. */
	const struct profile *base;
	const char *name;           /* file names for the REP_DIFF header */
	const char *base_name;
};

/* Defaults of a kind: inuse_space, functions, unit minimum, nodecount 20
 * for top and diff (80 for tree, all for peek and list), nodefraction
 * 0.005 / edgefraction 0.001 for top and tree, 0 for the others. */
void rep_opts_init(struct rep_opts *o, enum rep_kind kind);

/* Option values by name: "functions" "files" "lines" "addresses";
 * "minimum" "auto" "B" "kB" "MB" "GB" (case-insensitive).  -1 if unknown. */
int rep_parse_gran(const char *s);
int rep_parse_unit(const char *s);
const char *rep_gran_name(enum rep_gran g);
const char *rep_unit_name(enum rep_unit u);

#define REP_ERRLEN 256

struct rep_view;

/*
 * Builds the view of p described by o.  p (and o->base) must stay alive and
 * unchanged until rep_free.  Returns 0, or on error a negative errno with a
 * message in err:
 *   -EINVAL  bad regex ("bad --focus regex 'a(': ...") or option;
 *   -ENODATA the profile lacks the sample type (no alloc_* values);
 *   -ENOENT  REP_PEEK/REP_LIST: no function matches `symbol`;
 *   -ENOMEM.
 * *out is NULL on error.
 */
int rep_build(const struct profile *p, const struct rep_opts *o,
	      struct rep_view **out, char err[REP_ERRLEN]);
void rep_free(struct rep_view *v);

/* Writes the view in Go pprof's text layout (REP_DIFF: heapsnap's own
 * header with both totals and signed values).  0 or -EIO. */
int rep_print(const struct rep_view *v, FILE *out);
/* Writes the view as one JSON document (values are integers in the sample
 * type's unit, percentages numbers).  0 or -EIO. */
int rep_print_json(const struct rep_view *v, FILE *out);

/* A row of a top/diff view, for the shell and the tests. */
struct rep_row {
	const char *name;           /* printable node name */
	int64_t flat, cum;
	const char *inline_label;   /* "", "(inline)" or "(partial-inline)" */
};
size_t rep_nrows(const struct rep_view *v);
const struct rep_row *rep_row(const struct rep_view *v, size_t i);
/* The total percentages are relative to (see above). */
int64_t rep_total(const struct rep_view *v);

/* Formats v (in `unit`, "bytes" or "count") like pprof's report: "1.50MB",
 * "512kB", "0", "12" for counts; u must not be REP_UNIT_MINIMUM (use
 * rep_minimum_unit to resolve it).  Returns buf. */
char *rep_fmt_value(char *buf, size_t len, int64_t v, const char *unit,
		    enum rep_unit u);
/* pprof's unit choice for "minimum": the unit of the smallest non-zero value
 * min, one step up when max is over 100 times larger. */
enum rep_unit rep_minimum_unit(int64_t min, int64_t max);
/* pprof's percentage: "  100%", "12.34%", " 0.5%" (|v| / |total|). */
char *rep_fmt_pct(char buf[16], int64_t v, int64_t total);

/* True if `name` (a function name, demangled or not) is an allocator entry
 * point or internal, or a heapsnap payload frame: these are dropped from the
 * leaf end of stacks.  Arguments are ignored ("operator new(unsigned long)"
 * matches like "operator new"). */
bool rep_is_alloc_frame(const char *name);
/* True if `path`'s file name is an allocator library (libjemalloc.so.2,
 * libtcmalloc*.so, libmimalloc.so, libheapsnap-payload.so). */
bool rep_is_alloc_module(const char *path);
/* A regex (RE2 and POSIX ERE alike) of allocator entry points, for a pprof
 * file's drop_frames so `go tool pprof` drops what heapsnap drops. */
const char *rep_drop_frames_regex(void);
/* Compiles a profile's drop_frames into rx, anchored as pprof anchors it
 * ("^(RE)$").  The regex comes from an untrusted file: glibc expands bounded
 * repetitions and backtracks on back-references, either of which can take
 * unbounded memory or time, and pprof's own lists never use them, so such a
 * regex (or one over 64 KiB, or not POSIX ERE) is refused.  Returns true
 * when rx was compiled (the caller regfree()s it). */
struct re_pattern_buffer;
bool rep_compile_drop_frames(const char *drop_frames, struct re_pattern_buffer *rx);

#endif
