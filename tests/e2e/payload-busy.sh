# payload-busy.sh - start/dump/stop cycles on a busy 8-thread target (thread and dlopen churn) leave it healthy.
source "$TESTLIB"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$TARGETS/pl_busy" ] || skip "pl_busy not built"

cycles=5
[ "${HEAPSNAP_LONG:-}" = 1 ] && cycles=50

start_target "$TARGETS/pl_busy" "$TARGETS/libpl_dynlib.so"
trap 'kill -9 $TGT_PID 2>/dev/null' EXIT
progress() { awk '/^progress/ {p = $2} END {print p + 0}' "$TGT_OUT"; }
sleep 0.5

for i in $(seq 1 "$cycles"); do
	before=$(progress)
	run_hs start "$TGT_PID" --rate 64K
	expect_eq "$rc" 0 "cycle $i: start: $err"
	run_hs dump "$TGT_PID" -o "c$i.pb.gz"
	expect_eq "$rc" 0 "cycle $i: dump: $err"
	[ -s "c$i.pb.gz" ] || fail "cycle $i: empty dump"
	run_hs stop "$TGT_PID"
	expect_eq "$rc" 0 "cycle $i: stop: $err"
	grep -q libheapsnap-payload "/proc/$TGT_PID/maps" && fail "cycle $i: payload still mapped"
	kill -0 "$TGT_PID" 2>/dev/null || fail "cycle $i: target died: $(tail -3 "$TGT_OUT")"
	sleep 0.3
	after=$(progress)
	[ "$after" -gt "$before" ] || fail "cycle $i: target stopped progressing ($before -> $after)"
done
# The dumps saw the workers' allocations.
run_hs top c1.pb.gz -n 5
expect_eq "$rc" 0 "top: $err"
expect_match "$out" "worker" "top of a busy dump"

stop_target TERM
trap - EXIT
expect_eq "$TGT_RC" 0 "target's own heap check ($(tail -1 "$TGT_OUT"))"
note "$cycles cycles, $(progress) operations"
