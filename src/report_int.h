/* report_int.h - private to the report engine (report*.c): the view's layout. */
#ifndef HEAPSNAP_REPORT_INT_H
#define HEAPSNAP_REPORT_INT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* A node of the graph: one function, line, file or address depending on the
 * granularity.  Key fields are interned in the view's string table, so keys
 * compare by pointer. */
struct rnode {
	const char *name;       /* function name, NULL when unsymbolized */
	const char *file;       /* cleaned source path, NULL unknown/unused */
	int64_t line;
	uint64_t addr;
	const char *obj;        /* mapping file for unsymbolized frames */
	const char *pname;      /* printable name */
	int64_t start_line;     /* function's first line, 0 unknown */
	int64_t flat, cum;
	uint32_t stamp;         /* last sample that added cum */
	bool in_graph;          /* kept and with a non-zero flat or cum */
};

struct redge {
	uint32_t src, dst;      /* caller -> callee */
	int64_t w;
	uint32_t stamp;
	bool inl;               /* every contribution was an inlined call */
	bool residual;          /* skips over nodes that were trimmed */
	bool trimmed;           /* below the edge cutoff */
};

/* A stack after dropping frames and filtering: frames[off..off+n) root
 * first. */
struct rsample {
	int64_t w;
	uint32_t off, n;
};

struct rline {
	int64_t line;
	int64_t flat, cum;
	const char *text;       /* NULL when the source was not found */
};

struct rroutine {
	const char *name;
	const char *file;       /* NULL: no source information at all */
	int64_t flat, cum;
	bool found;             /* source file was readable */
	struct rline *lines;
	size_t nlines;
};

/* In/out edge lists of a shown node, sorted like pprof's. */
struct rlinks {
	uint32_t *in, *out;     /* indexes into edges */
	size_t nin, nout;
};

struct rep_view {
	struct rep_opts o;          /* regex strings point into strs */
	const struct profile *p;    /* the profile named in the header */
	struct profile *net;        /* owned: p - base for --base */
	struct profile *strs;       /* string interner for names */
	const char *unit;           /* "bytes" or "count" */
	/* Header of the report: the profile's, merged with the base's the way
	 * pprof merges them (earliest time, summed durations, all comments). */
	int64_t time_nanos, duration_nanos;
	const char **comments;
	size_t ncomments;
	int64_t total;              /* percentages are of this */
	int64_t new_total, base_total; /* REP_DIFF */

	struct rnode *nodes;
	size_t nnodes, cnodes;
	uint32_t *nhash;            /* open addressing, UINT32_MAX empty */
	size_t nhcap;

	struct rsample *samples;
	size_t nsamples, csamples;
	struct rframe {
		uint32_t node;
		bool inl;           /* an inlined call (not its location's
				       outermost line) */
	} *frames;
	size_t nframes, cframes;

	struct redge *edges;
	size_t nedges, cedges;
	uint32_t *ehash;
	size_t ehcap;
	uint32_t stamp;

	/* The final graph: shown nodes in order. */
	uint32_t *order;
	size_t norder;
	size_t orig_count;          /* nodes before the nodecount cut */
	size_t dropped_nodes;
	enum rep_unit out_unit;     /* resolved: never REP_UNIT_MINIMUM */
	bool count_unit;            /* values are counts, not bytes */

	struct rep_row *rows;       /* REP_TOP, REP_DIFF: one per order[] */
	struct rlinks *links;       /* REP_TREE, REP_PEEK: one per order[] */
	bool *matched;              /* REP_PEEK: order[i] matches symbol */
	struct rroutine *routines;  /* REP_LIST */
	size_t nroutines;
};

/* report_drop.c: which kind of allocator frame a function name is. */
enum { REP_ALLOC_NONE, REP_ALLOC_INTERNAL, REP_ALLOC_ENTRY };
int rep_alloc_class(const char *name);
/* pprof's simplifyFunc (argument list removed) into buf;
 * returns the full length. */
size_t rep_simplify_name(const char *name, char *buf, size_t len);
/* regexec on the simplified name; false for NULL or "". */
bool rep_match_simplified(const regex_t *rx, const char *name);

/* report.c: grows *arrp (of *cap elements of elem bytes) to hold need.
 * 0 or -ENOMEM. */
int rep_grow(void *arrp, size_t *cap, size_t need, size_t elem);

/* report_graph.c, in the order rep_build uses them.  All return 0 or
 * -ENOMEM. */
/* pprof's newGraph over v->samples: flat/cum of every node (kept == NULL:
 * all nodes kept), edges once per sample, in_graph flags. */
int rep_graph_build(struct rep_view *v, const bool *kept);
/* v->order = in-graph nodes sorted by |flat| (or |cum|), then name. */
int rep_graph_sort(struct rep_view *v);
/* pprof's newTrimmedGraph: build, node cutoff, sort, nodecount, edge
 * cutoff; sets order, orig_count, dropped_nodes. */
int rep_graph_trim(struct rep_view *v);
/* Sorted in/out edges of every shown node (tree, peek). */
int rep_graph_links(struct rep_view *v);
/* v->rows with pprof's inline labels (top, diff). */
int rep_graph_rows(struct rep_view *v);
/* Resolves REP_UNIT_MINIMUM from the shown nodes and the total. */
void rep_pick_unit(struct rep_view *v);

/* report_fmt.c: formats v with the view's resolved unit. */
char *rep_value(const struct rep_view *v, char *buf, size_t len, int64_t val);

/* report_list.c: reads the source lines of every routine. */
int rep_build_list(struct rep_view *v, const regex_t *symbol);

#endif
