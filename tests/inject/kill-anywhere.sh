#!/bin/bash
# kill-anywhere.sh - SIGKILL the injecting heapsnap at a random instant, N
# times (20; 200 with HEAPSNAP_LONG=1) per target, delays uniform over 1.2 x
# the wall time of one whole load/call/unload run (seeded: HEAPSNAP_SEED).
# Targets: the register checker (any lost register kills it) and the read()
# target (EINTR or lost data kills it).  After each kill: alive, progressing,
# no thread traced or stopped; a run that ends before its kill must have
# succeeded.  Then one run without a kill must work (whatever half-done state
# the kills left), and the target must end clean.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

N=20
[ "${HEAPSNAP_LONG:-}" = 1 ] && N=200
SEED=${HEAPSNAP_SEED:-8675309}
RANDOM=$SEED
note "seed $SEED, $N kills per target"
rand_us() { echo $(( (RANDOM * 32768 + RANDOM) % ($1 + 1) )); }

mkfifo fifo
exec 3<>fifo
MSG=0
feed() { MSG=$((MSG + 1)); echo "msg $MSG" >&3; }

maps_count() { wc -l <"/proc/$TGT_PID/maps"; }

for target in inj_regs inj_read; do
	if [ "$target" = inj_read ]; then
		inj_start inj_read "$PWD/fifo" restart
		INJ_POKE=feed
	else
		inj_start inj_regs --threads 2
		INJ_POKE=""
	fi
	inj_baseline
	inj_expect_progress "start"
	maps0=$(maps_count)
	# the longest of three runs, so that the delays reach the end of a run
	WALL=0
	for k in 1 2 3; do
		[ "$target" = inj_read ] && inj_wait_blocked "$TGT_PID" 0
		inj_cycle "$k"
		[ $((INJ_T1 - INJ_T0)) -gt "$WALL" ] && WALL=$((INJ_T1 - INJ_T0))
	done
	MAXD=$((WALL * 12 / 10))
	note "$target: one run takes up to $WALL us (heapsnap wall_us $(inj_json wall_us)); kill delays in [0, $MAXD] us"
	killed=0 finished=0
	for k in $(seq 1 "$N"); do
		d=$(rand_us "$MAXD")
		[ "$target" = inj_read ] && inj_wait_blocked "$TGT_PID" 0
		"$HEAPSNAP" -v -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg "$k" --unload \
			--timeout 5 >run.out 2>run.err &
		hp=$!
		inj_track "$hp"
		sleep "$(printf '%d.%06d' $((d / 1000000)) $((d % 1000000)))"
		kill -KILL "$hp" 2>/dev/null
		wait "$hp" 2>/dev/null
		st=$?
		case $st in
		137) killed=$((killed + 1)); note "kill $k after $d us: killed" ;;
		0) finished=$((finished + 1)); note "kill $k after $d us: finished before" ;;
		# a run that ends on its own must succeed, whatever the kills before left
		*) fail "kill $k after $d us: heapsnap ended with $st before the kill: $(cat run.err)" ;;
		esac
		inj_check_after "SIGKILL of heapsnap after $d us (kill $k)"
	done
	note "$target: $killed runs killed, $finished finished before the kill"
	# The kills may have left the library loaded or a worker running: the
	# next normal run must cope.
	inj_run 30 -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg 99 --unload --timeout 10
	[ "$rc" = 0 ] || fail "$target: the run after $N kills failed (exit $rc): $err"
	[ "$(inj_json returned)" = 100 ] || fail "$target: hsp_test_ping(99) after the kills returned '$(inj_json returned)'"
	inj_record
	inj_check_after "the run after the kills" unloaded
	note "$target: maps $maps0 before the kills, $(maps_count) after (heapsnap documents its two anonymous mappings as the trace of a kill)"
	[ "$target" = inj_read ] && inj_wait_blocked "$TGT_PID" 0
	inj_finish
	[ "$target" = inj_read ] && expect_match "$(cat "$TGT_OUT")" "read ok: $MSG messages" "messages read"
done
echo "both targets survived $N SIGKILLs of heapsnap each"
