#!/bin/bash
# malloc-lock.sh - a thread asleep inside glibc's allocator holding the main
# arena lock (blocked in write(2) inside malloc_stats()) and main waiting in
# pthread_join(): neither is a safe point.  With one more thread sleeping in
# plain application code, heapsnap must hijack that one and succeed; without
# it, heapsnap must fail "no safe point" within its timeout, never hang, and
# leave the target untouched.  The locker must stay blocked throughout.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

tid_of() { awk -v r="$1" '$1 == r && $2 == "tid" {print $3}' "$TGT_OUT"; }
locker_blocked() {
	[ "$(cut -d' ' -f1 "/proc/$TGT_PID/task/$LOCKER/syscall" 2>/dev/null)" = 1 ] ||
		fail "$1: the locker thread $LOCKER is no longer blocked in write(2)"
}

# 1. one safe thread besides the two unsafe ones
inj_start inj_malloc_lock
LOCKER=$(tid_of locker) SAFE=$(tid_of safe)
[ -n "$LOCKER" ] && [ -n "$SAFE" ] || fail "target did not print its thread ids"
inj_baseline
inj_cycle 1
h=$(inj_json hijacked_tid)
[ "$h" = "$SAFE" ] || fail "hijacked thread $h; the only safe thread is $SAFE (locker $LOCKER, main $TGT_PID)"
inj_check_after "injection with a safe thread" unloaded
locker_blocked "after the injection"
inj_finish

# 2. no safe thread at all
inj_start inj_malloc_lock --no-safe-thread
LOCKER=$(tid_of locker)
INJ_NOPROGRESS=1
inj_baseline
# --timeout 3: anything much longer than that is a hang
inj_run 13 -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg 1 --timeout 3
[ "$rc" = 1 ] || fail "expected exit 1 without a safe point, got $rc: $out $err"
expect_match "$err" "heapsnap: cannot (attach to|inject into) pid $TGT_PID: .*no safe point" "error message"
[ -z "$out" ] || fail "stdout must be empty on failure with -j, got: $out"
inj_check_after "refusal without a safe point" unloaded
locker_blocked "after the refusal"
inj_finish
echo "allocator lock held for seconds: safe thread $SAFE chosen when present; 'no safe point' otherwise"
