# unwinder.sh - start --unwinder: libgcc adds no library; auto loads libunwind, which stays (NODELETE) and survives thread exits after stop.
source "$TESTLIB"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$TARGETS/pl_busy" ] || skip "pl_busy not built"
ls /usr/lib/*/libunwind.so.8 /lib/*/libunwind.so.8 >/dev/null 2>&1 || skip "libunwind8 not installed"

# pl_busy: allocating workers plus a thread that keeps creating
# short-lived allocating threads: every one of them unwinds while sampling
# and ends afterwards, running libunwind's thread-exit destructor.
start_target "$TARGETS/pl_busy"
trap 'kill -9 $TGT_PID 2>/dev/null' EXIT
progress() { awk '/^progress/ {p = $2} END {print p + 0}' "$TGT_OUT"; }
has_lib() { grep -q "$1" "/proc/$TGT_PID/maps"; }
sleep 0.3
has_lib libunwind.so && skip "pl_busy links libunwind: nothing to tell apart"

run_hs start "$TGT_PID" --unwinder foo
expect_eq "$rc" 64 "unknown unwinder"
expect_match "$err" "unknown unwinder 'foo'" "unknown unwinder"

run_hs start "$TGT_PID" --rate 64K --unwinder libgcc
expect_eq "$rc" 0 "start --unwinder libgcc: $err"
run_hs status "$TGT_PID"
expect_match "$out" "captured with libgcc" "status with --unwinder libgcc"
sleep 0.3
run_hs dump "$TGT_PID" -o gcc.pb.gz
expect_eq "$rc" 0 "dump with libgcc: $err"
run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop: $err"
has_lib libunwind.so && fail "--unwinder libgcc loaded libunwind"

run_hs start "$TGT_PID" --rate 64K
expect_eq "$rc" 0 "start (auto): $err"
run_hs status "$TGT_PID"
expect_match "$out" "captured with libunwind" "status with the default unwinder"
sleep 0.3
run_hs dump "$TGT_PID" -o lu.pb.gz
expect_eq "$rc" 0 "dump with libunwind: $err"
run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop: $err"
has_lib libheapsnap-payload && fail "payload still mapped after stop"
has_lib libunwind.so || fail "libunwind was unloaded: threads that used it would crash at exit"

# Threads that unwound while sampling keep ending after stop.
before=$(progress)
sleep 1
kill -0 "$TGT_PID" 2>/dev/null || fail "target died after stop: $(tail -3 "$TGT_OUT")"
[ "$(progress)" -gt "$before" ] || fail "target stopped progressing after stop"

# Both stack sources name the same workers.
for f in gcc lu; do
	run_hs top "$f.pb.gz" -n 3
	expect_eq "$rc" 0 "top $f: $err"
	expect_match "$out" "worker" "top of the $f dump"
done

stop_target TERM
trap - EXIT
expect_eq "$TGT_RC" 0 "target's own heap check ($(tail -1 "$TGT_OUT"))"
