#!/bin/bash
# sleep.sh - a single thread in nanosleep(5 s), hijacked twice during the
# sleep: the sleep must return 0 after 5 s +/- 0.2 (a restart that starts
# the sleep over, or an EINTR, fails the target's own check).
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

inj_start inj_sleep 5
INJ_NOPROGRESS=1	# it only counts once, when the sleep ends
inj_baseline
for i in 1 2; do
	# after a stop the sleep goes on in restart_syscall (219)
	inj_wait_blocked "$TGT_PID" "230|219"
	sleep 0.5
	inj_cycle "$i"
	[ "$(inj_json hijacked_tid)" = "$TGT_PID" ] || fail "hijacked_tid is not the sleeping thread $TGT_PID"
	inj_check_after "injection $i" unloaded
done
inj_wait_exit 10
echo "$(grep '^sleep ok' "$TGT_OUT") after 2 injections"
