/* astats.h - allocator and RSS figures of a live process: the payload's "key value" text, /proc/PID/smaps_rollup and status, and what they mean together. */
#ifndef HEAPSNAP_ASTATS_H
#define HEAPSNAP_ASTATS_H

#include <stdbool.h>
#include <stdint.h>

struct astats_kv {
	char *key;
	char *val;
};

/* Kernel's view of the process, bytes (0 when the kernel did not say). */
struct astats_proc {
	uint64_t rss, rss_anon, rss_file, rss_shmem, hwm, vm_size;
	uint64_t pss, private_dirty, private_clean, shared_clean, shared_dirty, swap;
	uint64_t anonymous;     /* smaps_rollup Anonymous */
	uint64_t heap_rss;      /* Rss of the [heap] mapping (brk area) */
};

/* The summary heapsnap draws from the allocator's figures. */
struct astats_summary {
	const char *allocator;  /* "glibc", "jemalloc", "tcmalloc", "mimalloc", "unknown" */
	bool have_live;
	uint64_t live;          /* bytes the program holds (allocated, not freed) */
	uint64_t held;          /* bytes the allocator holds from the OS (resident or committed) */
	uint64_t free_inside;   /* free bytes inside the allocator (fragmentation, caches) */
	uint64_t releasable;    /* part of free_inside a trim can give back right away, if known */
};

struct astats {
	struct astats_kv *kv;
	size_t n;
	struct astats_proc proc;
	struct astats_summary sum;
};

/* Parses the payload's "key value" lines into a (kv, n); 0 or -ENOMEM (a
 * is then empty).  Malformed lines are skipped. */
int astats_parse(struct astats *a, const char *text);
/* Reads /proc/PID/status, smaps_rollup and smaps' [heap]: 0 or -errno
 * (-ESRCH: gone). */
int astats_read_proc(int pid, struct astats_proc *p);
/* The value of key, NULL if absent. */
const char *astats_get(const struct astats *a, const char *key);
/* The numeric value of key in *v; false if absent or not a number. */
bool astats_num(const struct astats *a, const char *key, uint64_t *v);
/* Fills a->sum from the parsed figures. */
void astats_summarize(struct astats *a);
/* Calls `long sym(op, arg)` of the payload in pid through livectl_ask and
 * parses its lines into *a (free with astats_free).  0 or -errno with a
 * reason; *left_loaded as in livectl.h. */
int astats_ask(int pid, const char *sym, uint64_t op, uint64_t arg, int timeout_ms, struct astats *a,
	       bool *left_loaded, char reason[256]);

/* Frees what astats_parse allocated (a is zeroed). */
void astats_free(struct astats *a);

#endif
