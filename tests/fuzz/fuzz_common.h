/* fuzz_common.h - what every reader harness does with a profile it read: validate it, then run every writer on it. */
#ifndef HEAPSNAP_FUZZ_COMMON_H
#define HEAPSNAP_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include "format.h"

/* Checks rc/err/p after a reader ran on data[0..size) (traps on a broken
 * contract: success without a valid profile, failure without a message or
 * with a profile left behind), then writes p in every format and reads the
 * pprof, jeprof and gperf outputs back (traps when heapsnap cannot read
 * what it wrote).  Frees p. */
void fuzz_check(int rc, struct profile *p, const char *err);

#endif
