#!/bin/bash
# static-untouched.sh - a statically linked, running program (the register
# checker): heapsnap must refuse it ("static / no dynamic loader") without
# stopping anything: under strace, heapsnap makes no ptrace call on it, sends
# it no signal, writes none of its memory; no thread is ever seen in t/T
# while heapsnap runs; the program keeps computing with intact registers.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need
need_cmd strace

INJ_GAP_US=100
inj_start inj_regs_static --threads 2
inj_baseline
( while :; do inj_thread_states "$TGT_PID"; done ) >states.log 2>/dev/null &
watcher=$!
inj_track "$watcher"
inj_traced_by_strace trace.log
inj_run 30 -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg 1 --timeout 5
INJ_WRAP=()
inj_record	# the pause report then shows the threads' longest stall during the run
kill "$watcher"; wait "$watcher" 2>/dev/null
[ "$rc" = 1 ] || fail "expected exit 1 for a static binary, got $rc: $out $err"
expect_match "$err" "heapsnap: cannot (attach to|inject into) pid $TGT_PID: .*(static|dynamic loader)" "refusal reason"
inj_untouched trace.log "static binary"
stops=$(awk '$2 == "t" || $2 == "T"' states.log | head -n 3)
[ -z "$stops" ] || fail "a thread of the static target was seen stopped while heapsnap ran: $stops"
note "$(wc -l <states.log) thread states sampled during the run, none stopped"
inj_check_after "refusal of a static binary"
inj_finish
