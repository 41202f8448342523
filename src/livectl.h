/* livectl.h - putting the payload into a live process and taking it out again, through the injector. */
#ifndef HEAPSNAP_LIVECTL_H
#define HEAPSNAP_LIVECTL_H

#include <stdbool.h>
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
int livectl_start(int pid, uint64_t rate, int timeout_ms, bool *already, bool *left_loaded,
		  char reason[LIVECTL_REASONLEN]);

/*
 * Stops the payload in pid (hsp_prepare_unload: hooks out, drained, control
 * thread ended) and dlcloses it, only when that succeeded.  Returns 0,
 * -ENOENT (not loaded), -EBUSY (it must stay: reason says why; it is inert
 * then), or -errno; *left_loaded as above.
 */
int livectl_unload(int pid, int timeout_ms, bool *left_loaded, char reason[LIVECTL_REASONLEN]);

/* A hint line for a failed attach (Yama, another tracer, static binary),
 * or NULL. */
const char *livectl_hint(int err, const char *reason);

#endif
