#!/bin/bash
# loop-unload.sh - load, call and unload the test library N times in a row
# (10; 100 with HEAPSNAP_LONG=1) into 16 threads hammering the allocator with
# a dlopen/dlclose loop and thread churn beside them.  After every round: all
# invariants, library gone, fds and threads back to the baseline; at the end
# the target's heap checks passed (exit 0).  Prints the pause figures.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

N=10
[ "${HEAPSNAP_LONG:-}" = 1 ] && N=100
INJ_GAP_US=1000		# 16 threads on few cores: shorter stalls are plain scheduling
inj_start inj_malloc --threads 16
inj_baseline
for i in $(seq 1 "$N"); do
	inj_cycle "$i"
	inj_check_after "round $i of $N" unloaded
done
inj_finish
grep '^malloc ok' "$TGT_OUT"
echo "$N load/call/unload rounds into the 16-thread allocator target"
