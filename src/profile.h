/* profile.h - the in-memory heap profile every reader fills and every writer and report reads. */
#ifndef HEAPSNAP_PROFILE_H
#define HEAPSNAP_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The model follows pprof's profile.proto (FORMATS.md section 1) with the
 * heap's four sample types fixed, so reports never look types up by name.
 *
 * Values are stored unbiased (estimates of the true totals), as pprof files
 * store them.  Readers of sampled formats (heap_v2, heap profile: @ heap_v2/N)
 * unbias on read; writers of those formats turn estimates back into raw
 * sampled counts using the object size (label "bytes") where known.
 *
 * Addresses: a location's address is the *lookup pc*.  For the leaf frame as
 * a format delivers it that is the address itself, for caller frames (return
 * addresses) it is return address - 1, exactly what pprof stores.  Readers and
 * writers convert at the edge (heap_v2 leaves the leaf alone and subtracts 1
 * from callers; gperftools text: Go pprof subtracts 1 from every address).
 *
 * Everything hangs off one `struct profile`; indexes (not pointers) link
 * samples -> locations -> functions and locations -> mappings, so arrays can
 * grow.  Strings are interned in the profile and live as long as it does.
 */

enum prof_type {
	PT_ALLOC_OBJECTS,
	PT_ALLOC_SPACE,
	PT_INUSE_OBJECTS,
	PT_INUSE_SPACE,
	PT_NTYPES
};

#define PROF_NONE UINT32_MAX  /* "no mapping" / "no function" index */

struct prof_function {
	const char *name;         /* demangled, e.g. "ns::Foo::bar(int)" */
	const char *system_name;  /* mangled, "" when the same or unknown */
	const char *filename;     /* source file, "" unknown */
	int64_t start_line;
};

struct prof_line {
	uint32_t function;        /* index into functions */
	int64_t line;             /* 0 unknown */
	int64_t column;
};

struct prof_mapping {
	uint64_t start, limit;    /* [start, limit) in the process */
	uint64_t offset;          /* file offset of start */
	const char *file;         /* path as the process saw it, "" anonymous */
	const char *build_id;     /* lowercase hex of NT_GNU_BUILD_ID, "" unknown */
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct prof_location {
	uint64_t address;         /* lookup pc (see above); 0 for synthetic */
	uint32_t mapping;         /* index into mappings or PROF_NONE */
	uint32_t nlines;          /* 0 = not symbolized */
	struct prof_line *lines;  /* [0] innermost inlined function, last = outermost */
	bool is_folded;
};

struct prof_label {
	const char *key;          /* interned */
	const char *str;          /* interned, NULL for a numeric label */
	int64_t num;
	const char *num_unit;     /* interned or NULL */
};

struct prof_sample {
	uint32_t nlocs;
	uint32_t *locs;           /* indexes into locations, leaf first */
	int64_t v[PT_NTYPES];
	uint32_t nlabels;
	struct prof_label *labels;
};

struct prof_strtab;             /* private: interning and the string arena */

struct profile {
	struct prof_sample *samples;
	size_t nsamples;
	struct prof_location *locs;
	size_t nlocs;
	struct prof_function *funcs;
	size_t nfuncs;
	struct prof_mapping *maps;
	size_t nmaps;               /* maps[0] is the main executable when known */

	bool has_alloc;             /* alloc_objects/alloc_space are meaningful */
	int64_t period;             /* sampling rate in bytes: 1 exact, 0 unknown */
	int64_t time_nanos;         /* when the snapshot was taken, 0 unknown */
	int64_t duration_nanos;     /* how long sampling ran, 0 unknown */
	const char **comments;      /* interned, e.g. "pid=4242", "backend=interpose" */
	size_t ncomments;
	const char *drop_frames;    /* regex of frames readers should drop, or NULL */
	const char *maps_text;      /* verbatim /proc/PID/maps when known, or NULL */

	struct prof_strtab *strtab; /* private */
	void *priv;                 /* private: capacities and dedup tables */
};

/* Sample type names in pprof spelling ("inuse_space") and their units
 * ("bytes" or "count").  prof_type_parse returns the type or -1. */
const char *prof_type_name(enum prof_type t);
const char *prof_type_unit(enum prof_type t);
int prof_type_parse(const char *name);

/* Returns a new empty profile, or NULL on ENOMEM. */
struct profile *prof_new(void);
/* Frees p and everything it owns; NULL is fine. */
void prof_free(struct profile *p);

/* Interns s in p (NULL -> ""); returns the profile-owned copy or NULL on ENOMEM. */
const char *prof_intern(struct profile *p, const char *s);
/* Interns s[0..len). */
const char *prof_intern_n(struct profile *p, const char *s, size_t len);

/* Adds a mapping; strings are interned.  Returns its index or -ENOMEM. */
int64_t prof_add_mapping(struct profile *p, uint64_t start, uint64_t limit,
			 uint64_t offset, const char *file, const char *build_id);
/* Index of the mapping containing addr, or PROF_NONE (the lowest index when
 * mappings overlap).  It keeps a sorted index rebuilt when nmaps changes:
 * do not edit a mapping's start/limit in place after lookups began. */
uint32_t prof_find_mapping(const struct profile *p, uint64_t addr);

/* Finds or adds the function with these names (deduplicated on all four
 * fields).  Returns its index or -ENOMEM. */
int64_t prof_add_function(struct profile *p, const char *name,
			  const char *system_name, const char *filename,
			  int64_t start_line);

/* Finds or adds the location for (address, mapping); mapping PROF_NONE means
 * "look it up with prof_find_mapping".  Returns its index or -ENOMEM. */
int64_t prof_add_location(struct profile *p, uint64_t address, uint32_t mapping);
/* Adds a location that is never deduplicated (readers that carry their own
 * location ids, synthetic frames).  Returns its index or -ENOMEM. */
int64_t prof_new_location(struct profile *p, uint64_t address, uint32_t mapping);
/* Replaces loc's lines with a copy of lines[0..n).  0 or -ENOMEM. */
int prof_set_lines(struct profile *p, uint32_t loc, const struct prof_line *lines,
		   uint32_t n);

/* Appends a sample with a copy of locs and labels (label strings must already
 * be interned in p).  Returns its index or -ENOMEM.  Does not merge with an
 * equal stack: call prof_compact for that. */
int64_t prof_add_sample(struct profile *p, const uint32_t *locs, uint32_t nlocs,
			const int64_t v[PT_NTYPES], const struct prof_label *labels,
			uint32_t nlabels);

/* Adds a numeric label to sample s.  0 or -ENOMEM. */
int prof_add_num_label(struct profile *p, size_t s, const char *key, int64_t num,
		       const char *unit);
/* Returns the numeric label `key` of sample s in *num: 0, or -ENOENT. */
int prof_get_num_label(const struct profile *p, size_t s, const char *key, int64_t *num);

/* Appends a printf-formatted comment.  0 or -ENOMEM. */
int prof_add_comment(struct profile *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Returns the value of the first comment "key=value", or NULL. */
const char *prof_get_comment(const struct profile *p, const char *key);

/* Merges src into dst, multiplying src's values by `scale` (rounded to the
 * nearest integer; -1 gives dst - src, the diff).  Locations are matched by
 * (mapping file + build-id, address relative to the mapping) when both have
 * mappings, else by function names and lines, else by address.  dst keeps
 * its own metadata; has_alloc becomes the AND of both.  src's samples are
 * appended (call prof_compact to fold equal stacks).  0 or -ENOMEM. */
int prof_merge(struct profile *dst, const struct profile *src, double scale);

/* Returns a deep copy of p, or NULL on ENOMEM. */
struct profile *prof_clone(const struct profile *p);

/* Multiplies every value by `scale`, rounding to nearest. */
void prof_scale(struct profile *p, double scale);

/* Merges samples with identical stacks and labels and drops samples whose
 * values are all zero.  Keeps the first occurrence's order.  0 or -ENOMEM. */
int prof_compact(struct profile *p);

/* Sums value t over all samples. */
int64_t prof_total(const struct profile *p, enum prof_type t);

/* Reads /proc/<pid>/maps (and each file's build-id) into p->maps and
 * p->maps_text.  0 or -errno. */
int prof_load_proc_maps(struct profile *p, int pid);

/* Parses maps text in /proc/PID/maps syntax into p->maps (executable
 * mappings of files only; build-ids read from the files when they still
 * exist) and keeps the text in p->maps_text.  Used by the text readers for
 * MAPPED_LIBRARIES.  0, -EINVAL on a malformed line, -ENOMEM. */
int prof_parse_maps(struct profile *p, const char *text, size_t len);
/* The same; on -EINVAL *bad_line is the 1-based line of text at fault
 * (for messages like "MAPPED_LIBRARIES line 3: ..."), else 0. */
int prof_parse_maps_ex(struct profile *p, const char *text, size_t len, size_t *bad_line);

/* Checks the invariants writers rely on (indexes in range, strings set).
 * 0 or -EINVAL; used by tests and the fuzz harnesses after every reader. */
int prof_validate(const struct profile *p);

/* Sampling maths (FORMATS.md section 6): probability that an allocation of
 * `size` bytes is sampled at mean interval `period`; 1 for period <= 1. */
double prof_sample_prob(double size, double period);

#endif
