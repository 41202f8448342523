/* livejem.h - the jemalloc backend: drive the target's own jemalloc profiler (mallctl prof.*) through the payload and read its heap_v2 dumps back. */
#ifndef HEAPSNAP_LIVEJEM_H
#define HEAPSNAP_LIVEJEM_H

#include <stdbool.h>
#include <stdint.h>

#include "livectl.h"
#include "profile.h"

/* What jemalloc in the target says about its profiler. */
struct livejem_info {
	bool present;           /* the process has mallctl (or je_mallctl) */
	bool config_prof;       /* built with --enable-prof */
	bool opt_prof;          /* started with prof:true (else it can never profile) */
	bool prof_active;
	int lg_sample;          /* opt.lg_prof_sample, -1 unknown */
	char version[64];
};

/* Does pid look like it uses jemalloc (a jemalloc library mapped)?  Cheap,
 * /proc only; a statically linked jemalloc is not seen. */
bool livejem_maybe(int pid);

/* Asks jemalloc in pid (loads the payload for the moment).  0 and *info
 * (present false when there is no mallctl), or -errno with a reason;
 * *left_loaded as in livectl.h. */
int livejem_probe(int pid, int timeout_ms, struct livejem_info *info, bool *left_loaded,
		  char reason[LIVECTL_REASONLEN]);

/* Sets prof.active to `on`; with on and lg_sample >= 0, prof.reset with
 * that lg_sample first (discards what was recorded).  0 or -errno. */
int livejem_activate(int pid, int timeout_ms, bool on, int lg_sample, bool *left_loaded,
		     char reason[LIVECTL_REASONLEN]);

/*
 * Remembers, across heapsnap commands, that heapsnap switched pid's
 * jemalloc profiler on (so `stop` switches it off again, and never one the
 * program switched on): a marker in the process's own /tmp, named after
 * the pid and holding its start time (a recycled pid does not match).
 * livejem_mark returns 0 or -errno; livejem_marked tells whether it is there.
 */
int livejem_mark(int pid, bool on);
bool livejem_marked(int pid);

/* lg_sample for a mean sampling rate in bytes: round(log2(rate)). */
int livejem_lg(uint64_t rate);

/*
 * prof.dump in pid into a private directory, read back through
 * /proc/PID/root, removed, parsed by the heap_v2 reader (jemalloc's own
 * unbiasing) into *out, with comments pid=, exe=, backend=jemalloc and
 * whether profiling was active before heapsnap came (since_start).  Not
 * symbolized.  0 or -errno with a reason.
 */
int livejem_dump(int pid, int timeout_ms, bool since_start, struct profile **out, bool *left_loaded,
		 char reason[LIVECTL_REASONLEN]);

#endif
