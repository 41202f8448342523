#!/bin/bash
# targets-selfcheck.sh - the injector test targets, without heapsnap: each
# passes on its own, and each notices the damage it is there to notice
# (EINTR from read, a shortened or restarted sleep, a clobbered GPR, vector
# register, flag or MXCSR), so the inject tests cannot pass vacuously.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }

# expect_target_fail REGEX WHAT: the target exits 1 with "FAIL: REGEX"
expect_target_fail() {
	local i
	for i in $(seq 1 100); do inj_alive || break; sleep 0.1; done
	inj_alive && fail "$2: target still running 10 s later"
	wait "$TGT_PID" 2>/dev/null
	TGT_RC=$?
	[ "$TGT_RC" = 1 ] || fail "$2: target exited $TGT_RC, expected 1: $(tail -n 2 "$TGT_OUT" | tr '\n' '|')"
	expect_match "$(cat "$TGT_OUT")" "^FAIL: $1" "$2"
	note "$2 detected: $(grep -m1 '^FAIL' "$TGT_OUT")"
}

mkfifo fifo
exec 3<>fifo

# 1. every target passes alone
for t in "inj_regs" "inj_cond" "inj_signals" "inj_malloc --threads 4" "inj_exit fork" "inj_epoll $PWD/fifo"; do
	inj_start $t
	sleep 0.5
	inj_expect_progress "$t alone"
	inj_finish >/dev/null
done
MSG=0
feed() { MSG=$((MSG + 1)); echo "msg $MSG" >&3; }
inj_start inj_read "$PWD/fifo" restart
INJ_POKE=feed
inj_expect_progress "first message"
inj_wait_blocked "$TGT_PID" 0
kill -USR1 "$TGT_PID"
inj_expect_progress "SIGUSR1 with SA_RESTART"
INJ_POKE=""
inj_finish >/dev/null
expect_match "$(cat "$TGT_OUT")" "read ok: 2 messages" "read target alone"

# 2. read() without SA_RESTART: a signal while blocked gives EINTR
inj_start inj_read "$PWD/fifo" norestart
inj_wait_blocked "$TGT_PID" 0
kill -USR1 "$TGT_PID"
expect_target_fail "EINTR from read" "EINTR in read()"

# 3. nanosleep cut short by a handled signal
inj_start inj_sleep 2 --handler
inj_wait_blocked "$TGT_PID" 230
kill -USR1 "$TGT_PID"
expect_target_fail "nanosleep returned EINTR" "interrupted nanosleep"

# 4-8. a debugger changing state it should not (gdb restores everything
# else correctly, which is itself the control case)
if command -v gdb >/dev/null; then
	inj_start inj_sleep 2
	inj_wait_blocked "$TGT_PID" 230
	sleep 0.6	# so that starting over overshoots the 0.2 s tolerance clearly
	gdb -p "$TGT_PID" -batch -ex 'set $rax = $orig_rax' -ex 'set $pc = $pc - 2' \
		-ex 'set $orig_rax = -1' >gdb.log 2>&1
	expect_target_fail "slept [0-9.]+ s, expected 2" "nanosleep restarted from scratch"

	# clobber EXPR: stop the compute thread inside its checked spin loop
	# (where every checked value is live) and change one thing
	clobber() {
		inj_start inj_regs --threads 1
		gdb -p "$TGT_PID" -batch -ex 'break *inj_spin_sse' -ex 'break *inj_spin_avx' \
			-ex 'break *inj_spin_avx512' -ex continue -ex "$1" -ex delete >gdb.log 2>&1
	}
	inj_start inj_regs --threads 1
	gdb -p "$TGT_PID" -batch -ex 'info registers rip' >gdb.log 2>&1
	sleep 0.2
	inj_alive || fail "plain gdb attach/detach hurt inj_regs: $(cat "$TGT_OUT")"
	inj_finish >/dev/null

	clobber 'set $r12 = 1'
	expect_target_fail "r12 changed" "clobbered r12"
	clobber 'set $xmm3.v2_int64[1] = 1'
	expect_target_fail "[xyz]mm3 changed" "clobbered xmm3"
	clobber 'set $eflags = 0x202'
	expect_target_fail "RFLAGS.DF cleared" "cleared DF"
	clobber 'set $mxcsr = 0x1f80'
	expect_target_fail "mxcsr changed" "reset MXCSR"
else
	note "gdb not installed: register clobber checks skipped"
fi
echo "targets pass alone and detect EINTR, short/restarted sleeps, register/flag/MXCSR damage"
