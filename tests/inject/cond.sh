#!/bin/bash
# cond.sh - pthread_cond_wait waiter + signaller (every signal acknowledged),
# two threads contending for a mutex, main in sigsuspend() with a temporary
# mask: after each injection no signal lost, the mutex count exact, main's
# mask its own; the injector may hijack any of them.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

inj_start inj_cond
inj_baseline
for i in 1 2 3 4 5; do
	inj_cycle "$i"
	inj_check_after "injection $i" unloaded
done
inj_finish
grep '^cond ok' "$TGT_OUT"
