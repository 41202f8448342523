#!/bin/bash
# stopped.sh - a target stopped with kill -STOP before heapsnap comes: heapsnap
# may refuse (saying so) or work, but must not resume it: afterwards every
# thread is still in T, none traced, and no application code ran (the
# compute loop's counter did not move).  After kill -CONT it runs fine.
# Then SIGSTOP arrives while heapsnap works (random offsets over one run,
# seeded): the stop must not be swallowed: once heapsnap is done, the
# target is stopped, and runs fine after SIGCONT.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

all_stopped() {
	local tid st tr
	while read -r tid st tr; do [ "$st" = T ] || return 1; done < <(inj_thread_states "$TGT_PID")
}

inj_start inj_regs --threads 2
inj_baseline
kill -STOP "$TGT_PID"
for i in $(seq 1 500); do all_stopped && break; sleep 0.01; done
all_stopped || fail "target not stopped 5 s after SIGSTOP"
p0=$(inj_progress)

inj_run 30 -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg 1 --unload --timeout 5
case $rc in
0) note "heapsnap worked on the stopped target" ;;
1) expect_match "$err" "heapsnap: cannot (attach to|inject into) pid $TGT_PID: .*stopped" "refusal reason" ;;
*) fail "unexpected exit $rc: $err" ;;
esac
sleep 0.3
all_stopped || fail "target no longer stopped after heapsnap: $(inj_thread_states "$TGT_PID" | tr '\n' '|')"
inj_check_untraced "heapsnap on a stopped target" stopped-ok
[ "$(inj_progress)" = "$p0" ] || fail "the stopped target ran application code: counter $p0 -> $(inj_progress)"

kill -CONT "$TGT_PID"
inj_check_after "SIGCONT"
[ "$rc" = 0 ] && inj_check_unmapped "SIGCONT"
first_rc=$rc

# SIGSTOP during the injection
N=5
[ "${HEAPSNAP_LONG:-}" = 1 ] && N=30
SEED=${HEAPSNAP_SEED:-1234}
RANDOM=$SEED
inj_cycle 1
WALL=$((INJ_T1 - INJ_T0))
note "seed $SEED; one run takes $WALL us; SIGSTOP at random offsets in it"
for k in $(seq 1 "$N"); do
	d=$(( (RANDOM * 32768 + RANDOM) % (WALL + 1) ))
	( sleep "$(printf '%d.%06d' $((d / 1000000)) $((d % 1000000)))"; kill -STOP "$TGT_PID" ) &
	stopper=$!
	inj_track "$stopper"
	# a short --timeout: a run that meets the stop waits for it in vain
	inj_run 30 -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg "$k" --unload --timeout 2
	wait "$stopper"
	case $rc in
	0 | 1 | 2) [ "$rc" = 0 ] || expect_match "$err" "^heapsnap: cannot (attach to|inject into) pid $TGT_PID: " "error line" ;;
	esac
	note "SIGSTOP after $d us: heapsnap exit $rc"
	for i in $(seq 1 100); do all_stopped && break; sleep 0.01; done
	all_stopped || fail "SIGSTOP sent $d us into the run was lost: threads $(inj_thread_states "$TGT_PID" | tr '\n' '|')"
	inj_check_untraced "SIGSTOP during the run" stopped-ok
	p0=$(inj_progress)
	sleep 0.1
	[ "$(inj_progress)" = "$p0" ] || fail "the target runs although stopped (SIGSTOP after $d us)"
	kill -CONT "$TGT_PID"
	inj_check_after "SIGCONT after a SIGSTOP $d us into the run"
done
# a run cut short by the stop may have left the library in: one more run
inj_run 30 -j inject "$TGT_PID" "$INJ_LIB" --unload --timeout 10
[ "$rc" = 0 ] || fail "final unload failed (exit $rc): $err"
inj_check_after "the final unload" unloaded
inj_finish
echo "stopped target left stopped (heapsnap exit $first_rc), runs fine after SIGCONT; $N SIGSTOPs during runs all kept"
