#!/bin/bash
# exits.sh - the target changes under heapsnap's feet: it exit()s, execve()s
# or is SIGKILLed at a random instant of the injection (delays uniform over
# 1.2 x one injection's wall time, seeded), or keeps forking children.
# heapsnap must end cleanly (exit 0, or 1/2 with a "cannot ..." line), never
# hang or crash; an exiting target exits with its own status 0, an exec'd
# program runs untraced and unstopped to its normal end, forked children
# exit normally.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

N=6
[ "${HEAPSNAP_LONG:-}" = 1 ] && N=30
SEED=${HEAPSNAP_SEED:-20240603}
RANDOM=$SEED
note "seed $SEED, $N runs per mode"
rand_us() { echo $(( (RANDOM * 32768 + RANDOM) % ($1 + 1) )); }

# the failure line must be one of heapsnap's, naming the pid
check_outcome() {
	[ "$rc" -le 2 ] || fail "heapsnap exit $rc ($1)"
	[ "$rc" = 0 ] || expect_match "$err" "^heapsnap: cannot (attach to|inject into) pid $TGT_PID: " "error line ($1)"
	OUTCOMES="$OUTCOMES$rc:$(printf '%s\n' "$err" | grep -m1 '^heapsnap: cannot' | sed 's/.*pid [0-9]*: //')
"
}

# status of the target once it ended (5 s max)
reap() {
	local i
	for i in $(seq 1 50); do inj_alive || break; sleep 0.1; done
	inj_alive && fail "target still running 5 s after it should have ended ($1)"
	wait "$TGT_PID" 2>/dev/null
	TGT_RC=$?
}

# reference: the wall time of one injection into this target
inj_start inj_exit exit 1000000000
inj_cycle 1
WALL=$((INJ_T1 - INJ_T0))
kill -KILL "$TGT_PID"; wait "$TGT_PID" 2>/dev/null
note "one injection takes $WALL us; delays drawn from [0, $((WALL * 12 / 10))] us"

OUTCOMES=""
for mode in exit exec; do
	for k in $(seq 1 "$N"); do
		d=$(rand_us $((WALL * 12 / 10)))
		inj_start inj_exit "$mode" "$d"
		kill -USR2 "$TGT_PID"
		inj_run 30 -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg "$k" --unload --timeout 5
		check_outcome "$mode after $d us"
		if [ "$mode" = exec ]; then
			for i in $(seq 1 100); do grep -q '^exec' "$TGT_OUT" && break; sleep 0.01; done
			sleep 0.1
			inj_alive && inj_check_untraced "exec after $d us"
		fi
		reap "$mode after $d us"
		[ "$TGT_RC" = 0 ] || fail "$mode after $d us: target ended with status $TGT_RC: $(tail -n 2 "$TGT_OUT" | tr '\n' '|')"
	done
done

for k in $(seq 1 "$N"); do
	d=$(rand_us $((WALL * 12 / 10)))
	inj_start inj_exit exit 1000000000
	( sleep "$(printf '0.%06d' "$d")"; kill -KILL "$TGT_PID" ) &
	killer=$!
	inj_track "$killer"
	inj_run 30 -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg "$k" --unload --timeout 5
	check_outcome "SIGKILL after $d us"
	wait "$killer"
	reap "SIGKILL"
done
echo "outcomes (count, heapsnap exit status: reason):"
printf '%s' "$OUTCOMES" | sort | uniq -c

inj_start inj_exit fork
inj_baseline
for i in 1 2 3; do
	inj_cycle "$i"
	inj_check_after "injection $i into a forking target" unloaded
done
inj_finish
grep '^fork ok' "$TGT_OUT"
