#!/bin/bash
# basic.sh - `heapsnap inject` end to end on a plain two-thread target: load,
# call, find it already loaded, JSON, unload (maps, threads, fds back to
# baseline, nothing left traced, the blocked read() gets its data), then the
# preflight refusals (no such pid, static binary), usage errors and exit 2.
source "$TESTLIB"

LIB=$HEAPSNAP_BUILD/tests/inject/libinjtest.so
[ -x "$HEAPSNAP" ] || fail "no heapsnap binary at $HEAPSNAP"
[ -f "$LIB" ] || fail "no $LIB (make test-build)"
[ -x "$TARGETS/inj_basic" ] || fail "no $TARGETS/inj_basic"
LIB=$(realpath "$LIB")

cleanup() { [ -n "${TGT_PID:-}" ] && kill -9 "$TGT_PID" 2>/dev/null; [ -n "${ST_PID:-}" ] && kill -9 "$ST_PID" 2>/dev/null; }
trap cleanup EXIT

mkfifo fifo
exec 3<>fifo
# Not start_target: a background job's stdin would be /dev/null, and the
# target must sit in read(2) on the FIFO.
TGT_OUT=$PWD/basic.out
"$TARGETS/inj_basic" <&3 >"$TGT_OUT" 2>&1 &
TGT_PID=$!
for i in $(seq 1 500); do grep -q '^ready' "$TGT_OUT" && break; sleep 0.01; done
grep -q '^ready' "$TGT_OUT" || fail "inj_basic not ready: $(cat "$TGT_OUT")"
P=$TGT_PID

nthreads() { ls "/proc/$1/task" | wc -l; }
nfds() { ls "/proc/$1/fd" | wc -l; }
# Signal masks and dispositions of every thread, one line each.
sigs() { local t; for t in /proc/$1/task/*; do grep -E '^(SigBlk|SigIgn|SigCgt)' "$t/status" | tr '\n' ' '; echo; done; }
untraced() {
	local t
	grep -q '^TracerPid:[[:space:]]*0$' "/proc/$1/status" || fail "pid $1 still traced: $(grep TracerPid /proc/$1/status)"
	for t in /proc/$1/task/*; do
		grep -q '^State:[[:space:]]*t' "$t/status" && fail "thread ${t##*/} left in tracing stop"
	done
	return 0
}
mapped() { grep -qF "$LIB" "/proc/$1/maps"; }

T0=$(nthreads $P) F0=$(nfds $P) S0=$(sigs $P)
mapped $P && fail "library mapped before the test"

# 1. load + call
run_hs inject $P "$LIB" --call hsp_test_ping --arg 41
[ $rc = 0 ] || fail "inject exited $rc: $err"
expect_eq "$out" "loaded $LIB into pid $P
hsp_test_ping returned 42" "first inject output"
mapped $P || fail "library not in /proc/$P/maps after the load"
untraced $P
kill -0 $P || fail "target died"

# 2. second load finds it; the constructor ran once; the call runs in the target
run_hs inject $P "$LIB" --call hsp_test_loads
[ $rc = 0 ] || fail "second inject exited $rc: $err"
expect_eq "$out" "$LIB already loaded in pid $P
hsp_test_loads returned 1" "second inject output"
run_hs inject $P "$LIB" --call hsp_test_pid
expect_eq "$out" "$LIB already loaded in pid $P
hsp_test_pid returned $P" "hsp_test_pid runs inside the target"

# 3. JSON
run_hs -j inject $P "$LIB" --call hsp_test_ping --arg -8
[ $rc = 0 ] || fail "json inject exited $rc: $err"
printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
pid = int(sys.argv[1])
assert d["pid"] == pid, d
assert d["library"] == sys.argv[2], d
assert d["already_loaded"] is True, d
assert d["handle"].startswith("0x") and int(d["handle"], 16) != 0, d
assert d["call"] == {"symbol": "hsp_test_ping", "returned": -7}, d
assert d["unloaded"] is False, d
assert d["threads_tried"] >= 1 and d["hijacked_tid"] > 0, d
assert d["stopped_us"] >= 0 and d["wall_us"] > 0, d
' $P "$LIB" || fail "bad JSON: $out"
note "json: $out"

# 4. unload: the library, the helper thread and our pages leave
run_hs inject $P "$LIB" --unload
[ $rc = 0 ] || fail "unload exited $rc: $err"
expect_eq "$out" "$LIB already loaded in pid $P
unloaded $LIB from pid $P" "unload output"
mapped $P && fail "library still mapped after --unload"
untraced $P
expect_eq "$(nthreads $P)" "$T0" "threads after unload"
expect_eq "$(nfds $P)" "$F0" "fds after unload"
expect_eq "$(sigs $P)" "$S0" "signal masks and handlers after unload"
# The main thread sat in read(2) the whole time: it must get this line.
echo hello >&3
for i in $(seq 1 200); do grep -q '^got 6 bytes' "$TGT_OUT" && break; sleep 0.01; done
grep -q '^got 6 bytes' "$TGT_OUT" || fail "read() did not get the data: $(cat "$TGT_OUT")"
grep -q FAIL "$TGT_OUT" && fail "target reported: $(cat "$TGT_OUT")"

# 5. load + call + unload in one go, then again (a fresh load each time)
for i in 1 2; do
	run_hs inject $P "$LIB" --call hsp_test_loads --unload
	[ $rc = 0 ] || fail "load/call/unload $i exited $rc: $err"
	expect_eq "$out" "loaded $LIB into pid $P
hsp_test_loads returned 1
unloaded $LIB from pid $P" "load/call/unload $i"
done
mapped $P && fail "library still mapped"

# 6. a missing symbol fails after the load: exit 2, a hint saying what to run
run_hs inject $P "$LIB" --call no_such_function
expect_eq "$rc" 2 "exit status when --call fails"
expect_match "$err" "^heapsnap: cannot inject into pid $P: symbol 'no_such_function' not found" "missing symbol message"
expect_match "$err" "heapsnap: hint: .*--unload" "hint after a failed call"
run_hs inject $P "$LIB" --unload
[ $rc = 0 ] || fail "cleanup unload exited $rc: $err"
mapped $P && fail "library still mapped after cleanup"

# 7. a library that does not exist: refused, target untouched
run_hs inject $P "$PWD/nonexistent.so"
expect_eq "$rc" 1 "exit status for a missing library"
expect_match "$err" "^heapsnap: cannot inject into pid $P: cannot access" "missing library message"

# 8. usage errors
run_hs inject abc "$LIB"; expect_eq "$rc" 64 "bad PID"
run_hs inject $P; expect_eq "$rc" 64 "missing LIB"
run_hs inject $P "$LIB" --bogus; expect_eq "$rc" 64 "unknown option"
run_hs inject $P "$LIB" --arg 1; expect_eq "$rc" 64 "--arg without --call"

# 9. no such process
nopid=$(( $(cat /proc/sys/kernel/pid_max) - 1 ))
while [ -e /proc/$nopid ]; do nopid=$((nopid - 1)); done
run_hs inject $nopid "$LIB"
expect_eq "$rc" 1 "exit status for a missing pid"
expect_eq "$err" "heapsnap: cannot attach to pid $nopid: no such process" "missing pid message"

# 10. a static binary is refused without being stopped
if [ -x "$TARGETS/inj_static" ]; then
	SAVE_PID=$TGT_PID SAVE_OUT=$TGT_OUT
	start_target "$TARGETS/inj_static"
	ST_PID=$TGT_PID
	run_hs inject $ST_PID "$LIB"
	expect_eq "$rc" 1 "exit status for a static binary"
	expect_match "$err" "^heapsnap: cannot attach to pid $ST_PID: static binary or no dynamic loader$" "static message"
	expect_match "$err" "heapsnap: hint: " "static hint"
	untraced $ST_PID
	grep -q '^State:[[:space:]]*[RS]' /proc/$ST_PID/status || fail "static target not running: $(grep State /proc/$ST_PID/status)"
	stop_target
	expect_eq "$TGT_RC" 0 "static target exit status"
	ST_PID= TGT_PID=$SAVE_PID TGT_OUT=$SAVE_OUT
fi

# The target lived through all of it and ends cleanly.
untraced $P
expect_eq "$(nthreads $P)" "$T0" "threads at the end"
# SIGTERM sets the stop flag; the read(2) restarts (SA_RESTART) until a line comes.
kill -TERM "$TGT_PID"
echo bye >&3
wait "$TGT_PID"
TGT_RC=$?
exec 3>&-
expect_eq "$TGT_RC" 0 "target exit status"
grep -q '^bye' "$TGT_OUT" || fail "target did not finish: $(cat "$TGT_OUT")"
TGT_PID=
echo "basic inject ok"
