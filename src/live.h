/* live.h - the client side of the payload's control socket: find it, talk to it, turn a snapshot into a profile. */
#ifndef HEAPSNAP_LIVE_H
#define HEAPSNAP_LIVE_H

#include <stdint.h>

#include "abi.h"
#include "profile.h"

/*
 * No ptrace here: a payload that hsp_start()ed in process PID listens on
 * the abstract Unix socket "heapsnap.<pid as the target sees it>" in the
 * target's network namespace (payload/abi.h).  Every function returns 0 or
 * a negative errno and never prints.
 */

struct live_conn;

/* Connects to the payload of pid and asks its status (which also proves
 * the peer is the payload of pid and speaks our ABI).  Returns 0 and *out,
 * or -ESRCH (no such process), -ENOENT (no payload listening), -EACCES (the
 * payload refused us: not root nor the target's uid), -EPERM (the target is
 * in another network namespace and we cannot enter it), -EPROTO (the socket
 * belongs to another process or speaks another ABI version), -errno. */
int live_connect(int pid, struct live_conn **out);
/* Closes c; NULL is fine. */
void live_close(struct live_conn *c);
/* The pid c was opened for. */
int live_pid(const struct live_conn *c);

/* Fresh status in *st.  0 or -errno. */
int live_status(struct live_conn *c, struct hsp_status *st);
/* Resumes sampling, at `rate` bytes when rate != 0.  -EALREADY when already
 * sampling, -ESRCH when the payload is not running. */
int live_start(struct live_conn *c, uint64_t rate);
/* Pauses sampling (hooks stay in).  -EALREADY when already paused. */
int live_stop(struct live_conn *c);
/* Changes the rate (1 = every allocation).  -EINVAL for 0. */
int live_set_rate(struct live_conn *c, uint64_t rate);
/* Clears the cumulative (alloc_*) totals and restarts the duration. */
int live_reset(struct live_conn *c);

/*
 * Takes a snapshot while the target runs and returns it as a new profile in
 * *out: samples per (stack, object size) with unbiased values (FORMATS.md
 * section 6: each sampled allocation of size s at rate T counts 1/p and s/p,
 * p = 1 - exp(-s/T)), has_alloc true, a numeric label "bytes" = object size,
 * period = rate, time_nanos, duration_nanos = time spent sampling, comments
 * pid=, exe=, cmdline=, backend=interpose, rate=, duration=, and the
 * mappings of /proc/PID/maps read while the snapshot streams.  Locations are
 * not symbolized (see symbolize.h); their addresses are return address - 1.
 * 0, or -errno (-EPROTO: malformed stream) with *out untouched.
 */
int live_snapshot(struct live_conn *c, struct profile **out);

/* Adds the comments pid=, exe=, cmdline= (read from /proc) and
 * backend=`backend` to p.  0 or -ENOMEM. */
int live_proc_comments(struct profile *p, int pid, const char *backend);

/* Stops sampling, restores every GOT slot, drains and ends the payload's
 * control thread; the connection is useless afterwards.  0, or -EBUSY
 * (the payload must stay loaded: a thread did not leave a hook in time or
 * the target copied a hook address). */
int live_prepare_unload(struct live_conn *c);

/* "sampling", "paused", ... for enum hsp_state. */
const char *live_state_name(uint32_t state);

#endif
