#!/bin/bash
# unload-busy.sh - an unload requested while another heapsnap run's call is
# still executing inside the library (hsp_test_slow sleeps 1.5 s in its own
# code): heapsnap must wait for the call or refuse to unload ("busy"), never
# unmap code a thread will return to.  The call must return normally, the
# target survive, and a later unload must remove the library.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need
SLOW=$TARGETS/inj_slowlib
[ -f "$SLOW" ] || fail "no $SLOW"
INJ_LIB=$SLOW INJ_LIBNAME=inj_slowlib

inj_start inj_regs --threads 2
inj_baseline

inj_run 30 inject "$TGT_PID" "$SLOW" --timeout 10
[ "$rc" = 0 ] || fail "load failed (exit $rc): $err"

# a second run calls into the already loaded library and sleeps there
"$HEAPSNAP" -j inject "$TGT_PID" "$SLOW" --call hsp_test_slow --arg 1500 --timeout 10 >slow.out 2>slow.err &
slow=$!
inj_track "$slow"
# the regs threads never sleep: a thread in nanosleep is the call
for i in $(seq 1 500); do
	grep -qE '^(230|219|35) ' /proc/"$TGT_PID"/task/*/syscall 2>/dev/null && break
	inj_running "$slow" || break
	sleep 0.01
done
grep -qE '^(230|219|35) ' /proc/"$TGT_PID"/task/*/syscall 2>/dev/null ||
	fail "the call never started sleeping: $(cat slow.err)"

# unload while the call sleeps in the library
inj_run 30 -j inject "$TGT_PID" "$SLOW" --unload --timeout 10
unload_rc=$rc unload_err=$err
case $rc in
0) note "the unload succeeded: it must have waited for the call (unloaded: $(inj_json unloaded))" ;;
1 | 2) expect_match "$err" "^heapsnap: cannot (attach to|inject into) pid $TGT_PID: " "refused unload" ;;
esac

for i in $(seq 1 1000); do inj_running "$slow" || break; sleep 0.01; done
inj_running "$slow" && fail "the slow call did not end within 10 s"
wait "$slow"
src=$?
inj_alive || inj_dead "after an unload during a call into the library (unload exit $unload_rc: $unload_err)"
[ "$src" = 0 ] || fail "the slow call's run failed (exit $src): $(cat slow.err)"
out=$(cat slow.out)
[ "$(inj_json returned)" = 1501 ] || fail "hsp_test_slow(1500) returned '$(inj_json returned)'"
inj_check_after "an unload during a call"

# now nothing runs in it: the library must go
inj_run 30 -j inject "$TGT_PID" "$SLOW" --unload --timeout 10
[ "$rc" = 0 ] || fail "unload of the idle library failed (exit $rc): $err"
inj_check_after "the final unload" unloaded
inj_finish
echo "unload during a running call: exit $unload_rc ($(printf '%s' "$unload_err" | head -n 1)); the call returned; library removed after"
