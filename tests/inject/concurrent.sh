#!/bin/bash
# concurrent.sh - two heapsnap runs (load, call, unload) on the same target
# at once, the second started at a random offset over one run's wall time
# (seeded), 20 rounds (100 with HEAPSNAP_LONG=1).  Each run must succeed or
# fail cleanly (exit 1/2 with heapsnap's error line); the target must survive
# every round with all invariants, and end with the library unloaded.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

N=20
[ "${HEAPSNAP_LONG:-}" = 1 ] && N=100
SEED=${HEAPSNAP_SEED:-4711}
RANDOM=$SEED
note "seed $SEED, $N rounds"

inj_start inj_regs --threads 2
inj_baseline
inj_cycle 1
WALL=$((INJ_T1 - INJ_T0))
note "one run takes $WALL us"
inj_check_after "the first run" unloaded

# run_bg NAME ARG: one heapsnap run in the background, output in NAME.out/.err
run_bg() {
	"$HEAPSNAP" -v -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg "$2" --unload \
		--timeout 10 >"$1.out" 2>"$1.err" &
}
# check_run NAME STATUS ROUND: a clean outcome
check_run() {
	case $2 in
	0) ;;
	1 | 2) grep -Eq "^heapsnap: cannot (attach to|inject into) pid $TGT_PID: " "$1.err" ||
		fail "round $3: run $1 exit $2 without heapsnap's error line: $(cat "$1.err")" ;;
	*) fail "round $3: run $1 ended with status $2: $(cat "$1.err")" ;;
	esac
	[ "$2" = 0 ] && OUTCOMES="${OUTCOMES}0: ok
" && return 0
	OUTCOMES="$OUTCOMES$2:$(grep -m1 '^heapsnap: cannot' "$1.err" | sed 's/.*pid [0-9]*: //; s/pid [0-9]*/pid N/g')
"
}

OUTCOMES=""
for k in $(seq 1 "$N"); do
	d=$(( (RANDOM * 32768 + RANDOM) % (WALL + 1) ))
	t0=$(inj_now_us)
	run_bg a 1
	a=$!
	inj_track "$a"
	sleep "$(printf '%d.%06d' $((d / 1000000)) $((d % 1000000)))"
	run_bg b 2
	b=$!
	inj_track "$b"
	for i in $(seq 1 3000); do inj_running "$a" || inj_running "$b" || break; sleep 0.01; done
	inj_running "$a" && fail "round $k: run a still running after 30 s"
	inj_running "$b" && fail "round $k: run b still running after 30 s"
	wait "$a"; sa=$?
	wait "$b"; sb=$?
	note "round $k: offset $d us, exits $sa $sb, both done after $(( ($(inj_now_us) - t0) / 1000 )) ms$(
		grep -h '^heapsnap: [a-z]' a.err b.err | grep -v -e hint: -e debug: | sed 's/^/; /' | tr -d '\n')"
	inj_alive || inj_dead "in round $k (second run started $d us after the first; exits $sa $sb: $(cat a.err b.err | tr '\n' '|'))"
	check_run a "$sa" "$k"
	check_run b "$sb" "$k"
	inj_check_after "round $k (offset $d us, exits $sa $sb)"
done
echo "outcomes (count, heapsnap exit status: reason):"
printf '%s' "$OUTCOMES" | sort | uniq -c

# whatever the rounds left, one more run puts the library out
inj_run 30 -j inject "$TGT_PID" "$INJ_LIB" --unload --timeout 10
[ "$rc" = 0 ] || fail "final unload failed (exit $rc): $err"
inj_check_after "the final unload" unloaded
inj_finish
