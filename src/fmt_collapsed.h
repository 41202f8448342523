/* fmt_collapsed.h - stack frames as display names, shared by the writers
 * of folded stacks (fmt_collapsed.c), speedscope JSON and SVG flame graphs. */
#ifndef HEAPSNAP_FMT_COLLAPSED_H
#define HEAPSNAP_FMT_COLLAPSED_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "format.h"

/* One displayed frame: line `line` of location `loc` (0 = innermost inlined
 * function), or line COLLAPSED_NOLINE for a location without function names. */
#define COLLAPSED_NOLINE UINT32_MAX
struct collapsed_frame {
	uint32_t loc, line;
};

#define COLLAPSED_NAMELEN 64   /* enough for "module+0xoffset" of a 32-char module */

/* A sample's frames, root first, after p->drop_frames is applied. */
struct collapsed_stack {
	struct collapsed_frame *v;
	size_t n, cap;
	regex_t drop;
	bool has_drop;
	/* Answers that depend on a name or a mapping only, 0 = not known yet,
	 * 1 = yes, 2 = no: per function "dropped" and "allocator function",
	 * per location "in an allocator library". */
	uint8_t *fdrop, *falloc, *lalloc;
};

/* Prepares st for profile p (compiles p->drop_frames as pprof does: a full
 * match of a function name drops that frame and everything leafward; a
 * regex POSIX cannot compile is ignored).  collapsed_stack_free releases. */
void collapsed_stack_init(struct collapsed_stack *st, const struct profile *p);
void collapsed_stack_free(struct collapsed_stack *st);
/* Fills st with sample s's frames, root first, without dropped frames and
 * without the allocator's frames at the leaf end (rep_is_alloc_frame,
 * rep_is_alloc_module), as heapsnap's reports show stacks.  0 or -ENOMEM. */
int collapsed_stack_fill(struct collapsed_stack *st, const struct profile *p, size_t s);

/* True when location loc belongs to the allocator: its mapping is an
 * allocator library or its (outermost) function an allocator frame. */
bool collapsed_loc_is_alloc(const struct profile *p, uint32_t loc);

/* Display name of frame f: the function name, else "module+0xoffset" (file
 * offset in the mapped file), else "0xaddress".  Returns a profile-owned
 * string or buf. */
const char *collapsed_frame_name(const struct profile *p, struct collapsed_frame f,
				 char buf[COLLAPSED_NAMELEN]);
/* Source file of frame f's function, "" when unknown. */
const char *collapsed_frame_file(const struct profile *p, struct collapsed_frame f);

/* Checks type and the sign of the values a single-valued writer will use:
 * 0, or -EINVAL with err set ("<fmt> cannot show negative values ..."). */
int collapsed_check(const struct profile *p, enum prof_type type, const char *fmt,
		    char err[FMT_ERRLEN]);

/* Length of the valid UTF-8 sequence at s[0..n) (1-4), or 0 when invalid. */
size_t collapsed_utf8_len(const unsigned char *s, size_t n);

/* A string -> index map (strings are copied); indexes count from 0 in
 * insertion order. */
struct collapsed_strmap {
	char **strs;
	size_t n, cap;
	uint32_t *slots;   /* index + 1, 0 empty */
	size_t nslots;
};

/* Index of key[0..len) in m, adding it when absent; -ENOMEM on failure. */
int64_t collapsed_strmap_add(struct collapsed_strmap *m, const char *key, size_t len);
void collapsed_strmap_free(struct collapsed_strmap *m);

#endif
