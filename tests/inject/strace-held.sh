#!/bin/bash
# strace-held.sh - while strace -f -p holds the target, heapsnap refuses with
# "already traced by pid N (strace)" and does not touch it; once strace has
# let go the target is intact and a normal injection works.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need
need_cmd strace

inj_start inj_regs --threads 2
inj_baseline
strace -f -qq -o /dev/null -p "$TGT_PID" &
spid=$!
inj_track "$spid"
for i in $(seq 1 500); do
	[ "$(awk '/^TracerPid:/{print $2}' "/proc/$TGT_PID/status")" = "$spid" ] && break
	sleep 0.01
done
[ "$(awk '/^TracerPid:/{print $2}' "/proc/$TGT_PID/status")" = "$spid" ] || fail "strace did not attach"

inj_traced_by_strace trace.log
inj_run 30 -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg 1 --timeout 5
INJ_WRAP=()
[ "$rc" = 1 ] || fail "expected exit 1 while strace holds the target, got $rc: $out $err"
expect_match "$err" "heapsnap: cannot attach to pid $TGT_PID: .*already traced by pid $spid \\(strace\\)" "refusal reason"
inj_untouched trace.log "target held by strace"

kill -INT "$spid"
for i in $(seq 1 500); do
	[ -z "$(inj_thread_states "$TGT_PID" | awk '$3 != 0')" ] && break
	sleep 0.01
done
wait "$spid" 2>/dev/null
inj_check_after "strace let go"
inj_cycle 1
inj_check_after "injection after strace" unloaded
inj_finish
