/* livegp.h - the gperftools backend: start, dump and stop tcmalloc's heap profiler in the target through the payload. */
#ifndef HEAPSNAP_LIVEGP_H
#define HEAPSNAP_LIVEGP_H

#include <stdbool.h>

#include "livectl.h"
#include "profile.h"

/* Does pid map a tcmalloc with the heap profiler (libtcmalloc.so,
 * libtcmalloc_and_profiler.so; not _minimal)?  /proc only. */
bool livegp_maybe(int pid);
/* Has heapsnap started gperftools' heap profiler in pid (its profile
 * directory is in the process's /tmp)?  /proc only. */
bool livegp_ours(int pid);

/* Is the heap profiler running in pid, and did heapsnap start it (its
 * /tmp/heapsnap-gp.<pid>.* directory exists)?  -ENOENT when pid has no heap
 * profiler; 0 or -errno with a reason. */
int livegp_probe(int pid, int timeout_ms, bool *running, bool *ours, bool *left_loaded,
		 char reason[LIVECTL_REASONLEN]);

/* Starts the heap profiler unless it runs (*started says whether this
 * call started it).  0 or -errno. */
int livegp_start(int pid, int timeout_ms, bool *started, bool *left_loaded,
		 char reason[LIVECTL_REASONLEN]);

/* Stops the heap profiler only if heapsnap started it (*stopped), and
 * removes heapsnap's directory for it.  0 or -errno. */
int livegp_stop_ours(int pid, int timeout_ms, bool *stopped, bool *left_loaded,
		     char reason[LIVECTL_REASONLEN]);

/* GetHeapProfile() in pid, read back and parsed by the gperftools reader
 * into *out with comments pid=, exe=, backend=gperftools and whether the
 * profiler ran before heapsnap came.  Not symbolized.  0 or -errno. */
int livegp_dump(int pid, int timeout_ms, bool before_us, struct profile **out, bool *left_loaded,
		char reason[LIVECTL_REASONLEN]);

#endif
