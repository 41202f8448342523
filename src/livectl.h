/* livectl.h - putting the payload into a live process and taking it out again, through the injector. */
#ifndef HEAPSNAP_LIVECTL_H
#define HEAPSNAP_LIVECTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LIVECTL_REASONLEN 256

/* The payload to load: $HEAPSNAP_PAYLOAD, else the installed one. */
const char *livectl_payload_path(void);

/* Is a payload (a file named like ours) mapped in pid?  Its path as the
 * target sees it goes to path (may be NULL).  /proc/PID/maps only. */
bool livectl_payload_mapped(int pid, char *path, size_t len);

/*
 * Loads the payload into pid (or finds it there) and calls
 * hsp_start(rate, 0) in it.  Returns 0 (sampling, or already was: *already),
 * or -errno with a one-line reason; *left_loaded says whether the payload
 * may remain in the target after the failure (exit status 2 territory).
 * Never prints.  timeout_ms bounds each injector step.
 */
struct inj_stats;
/* (*stats, when not NULL, gets the injector's figures: how long the
 * hijacked thread was kept from its own code, wall times.) */
int livectl_start(int pid, uint64_t rate, unsigned unwinder, int timeout_ms, bool *already,
		  bool *left_loaded, char reason[LIVECTL_REASONLEN], struct inj_stats *stats);

/*
 * Stops the payload in pid (hsp_prepare_unload: hooks out, drained, control
 * thread ended) and dlcloses it, only when that succeeded.  Returns 0,
 * -ENOENT (not loaded), -EBUSY (it must stay: reason says why; it is inert
 * then), or -errno; *left_loaded as above.
 */
int livectl_unload(int pid, int timeout_ms, bool *left_loaded, char reason[LIVECTL_REASONLEN]);

/*
 * Calls `long sym(args...)` of the payload in pid (hsp_alloc_stats,
 * hsp_jemalloc: functions that return the payload's stats buffer, see
 * abi.h): loads the payload when it is not there (no hooks, no sampling)
 * and unloads it again afterwards.  On 0, *text is a malloc'd
 * NUL-terminated copy of the buffer's "key value" lines (free it).  -errno
 * with a one-line reason otherwise (the function's own -errno included);
 * *left_loaded as above.
 */
int livectl_ask(int pid, const char *sym, const uint64_t *args, int nargs, int timeout_ms,
		char **text, bool *left_loaded, char reason[LIVECTL_REASONLEN]);

/* Reads the file the payload wrote at `file` (a path in pid's mount
 * namespace that must start with dir_prefix, a private directory) through
 * /proc/PID/root into a malloc'd *buf, then removes the file and its
 * directory.  0 or -errno with a reason. */
int livectl_fetch(int pid, const char *file, const char *dir_prefix, char **buf, size_t *len,
		  char reason[LIVECTL_REASONLEN]);

/* Does pid map a file whose name starts with `prefix` (and does not
 * contain `unless`, when not NULL)?  /proc/PID/maps only. */
bool livectl_lib_mapped(int pid, const char *prefix, const char *unless);

/* A hint line for a failed attach (Yama, another tracer, static binary),
 * or NULL. */
const char *livectl_hint(int err, const char *reason);

#endif
