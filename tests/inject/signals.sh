#!/bin/bash
# signals.sh - injections during a signal storm: SIGUSR1 sent one at a time
# and acknowledged, SIGRTMIN+1 queued in bursts, SIGSEGV and SIGTRAP raised
# and handled every millisecond.  No signal may be lost or swallowed, no
# handler reset (the target checks counts and its SigCgt at exit).
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

inj_start inj_signals
inj_baseline
for i in 1 2 3 4 5; do
	inj_cycle "$i"
	inj_check_after "injection $i" unloaded
done
inj_finish
grep '^signals ok' "$TGT_OUT"
