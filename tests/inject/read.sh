#!/bin/bash
# read.sh - a single thread blocked in read() on a FIFO, first without, then
# with an SA_RESTART SIGUSR1 handler (and SIGUSR1s arriving during the
# injection): the injection hijacks that thread, and read() must neither
# fail with EINTR nor lose the data written afterwards.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

mkfifo fifo
exec 3<>fifo		# read-write: writing never blocks on open
MSG=0
feed() { MSG=$((MSG + 1)); echo "msg $MSG" >&3; }

for mode in plain restart; do
	MSG=0
	inj_start inj_read "$PWD/fifo" "$mode"
	INJ_POKE=feed
	inj_baseline
	inj_expect_progress "start"
	for i in 1 2 3; do
		inj_wait_blocked "$TGT_PID" 0
		if [ "$mode" = restart ]; then
			# SIGUSR1 every 2 ms around the whole injection
			( while :; do kill -USR1 "$TGT_PID" 2>/dev/null || exit 0; sleep 0.002; done ) &
			usr=$!
			inj_track "$usr"
		fi
		inj_cycle "$i"
		[ "$mode" = restart ] && { kill "$usr"; wait "$usr" 2>/dev/null; }
		[ "$(inj_json hijacked_tid)" = "$TGT_PID" ] ||
			fail "hijacked_tid is '$(inj_json hijacked_tid)', the only thread is $TGT_PID"
		inj_check_after "injection $i ($mode)" unloaded
	done
	inj_wait_blocked "$TGT_PID" 0
	inj_finish
	expect_match "$(cat "$TGT_OUT")" "read ok: $MSG messages" "messages read by the target"
done
echo "read() target survived 3 injections each without and with an SA_RESTART handler"
