# watch.sh - `heapsnap watch`: N files at an interval with the documented names, --on-growth writes only after growth, SIGTERM stops and unloads, the files open with `heapsnap top`.
source "$TESTLIB"
source "$SRCDIR/tests/e2e/leaky_lib.bash"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$TARGETS/sh_leaky" ] || skip "sh_leaky not built"
trap 'kill -9 $TGT_PID $WPID 2>/dev/null' EXIT
WPID=

start_target "$TARGETS/sh_leaky"
# wait_files DIR N: until DIR holds N files (20 s max)
wait_files() {
	local i
	for i in $(seq 1 200); do
		[ "$(ls "$1" 2>/dev/null | wc -l)" -ge "$2" ] && return 0
		kill -0 "$WPID" 2>/dev/null || break
		sleep 0.1
	done
	[ "$(ls "$1" 2>/dev/null | wc -l)" -ge "$2" ] || fail "$1 has not $2 files: $(ls "$1")"
}
# wait_exit: wait (20 s max) for the watch in the background, status in $WRC
wait_exit() {
	local i
	for i in $(seq 1 200); do
		kill -0 "$WPID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$WPID" 2>/dev/null && fail "watch did not end"
	wait "$WPID"
	WRC=$?
}
name_re="^heapsnap\.$TGT_PID\.[0-9]{8}T[0-9]{6}Z\.[0-9]+\.pb\.gz$"

## interval mode: --count files, named as documented, then unloaded
run_hs watch "$TGT_PID" --interval 0.1 --count 3 -o every --rate 4096
expect_eq "$rc" 0 "watch --count 3: $err"
expect_eq "$(ls every | wc -l)" 3 "files written"
for f in every/*; do
	basename "$f" | grep -Eq "$name_re" || fail "bad file name $f"
done
expect_eq "$(ls every | sed -E 's/.*Z\.([0-9]+)\.pb\.gz/\1/' | sort -n | tr '\n' ' ')" "1 2 3 " "sequence numbers"
[ "$(wc -l <<<"$out")" = 3 ] || fail "one line per file expected: $out"
expect_match "$out" '^every/heapsnap\..*\.1\.pb\.gz: .* in use \(\+0, first\)' "first line"
expect_match "$out" 'interval\)$' "interval lines"
payload_in && fail "watch left heapsnap loaded"
for f in every/*; do
	run_hs top "$f"
	expect_eq "$rc" 0 "top $f: $err"
	expect_match "$out" 'Showing nodes accounting for' "top $f"
done

## --on-growth: the base, then nothing until the heap grows by 1 MiB
"$HEAPSNAP" -j watch "$TGT_PID" --interval 0.1 --on-growth 1M --count 2 -o growth --rate 4096 >growth.out 2>growth.err &
WPID=$!
wait_files growth 1
# Many intervals pass with no growth: still one file.  (This cannot fail
# by timing: without growth there is nothing to write.)
sleep 1
expect_eq "$(ls growth | wc -l)" 1 "files before growth"
grow
wait_exit
expect_eq "$WRC" 0 "watch --on-growth: $(cat growth.err)"
expect_eq "$(ls growth | wc -l)" 2 "files after growth"
python3 - growth.out <<'PY' || fail "watch -j lines: $(cat growth.out)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["seq"] for r in rows] == [1, 2], rows
assert rows[0]["reason"] == "first" and rows[1]["reason"] == "growth", rows
assert rows[1]["growth"] > 1 << 20, rows
PY
second=$(ls growth/*.2.pb.gz)
# The 4 MiB leak is 64 allocations: a busy machine can preempt the target
# part-way, and the snapshot then holds the part past 1 MiB that set it off.
run_hs top "$second"
expect_match "$out" '[1-4](\.[0-9]+)?MB .*leak_on_signal' "the growth file holds the leak"
run_hs diff growth/*.1.pb.gz "$second"
expect_match "$out" '\+[1-4](\.[0-9]+)?MB .*leak_on_signal' "diff of the watch files"
payload_in && fail "watch --on-growth left heapsnap loaded"

## SIGTERM stops and unloads; --on-peak writes the first only while flat
"$HEAPSNAP" watch "$TGT_PID" --interval 0.1 --on-peak -o peak >peak.out 2>peak.err &
WPID=$!
wait_files peak 1
payload_in || fail "watch did not load heapsnap"
kill -TERM "$WPID"
wait_exit
expect_eq "$WRC" 0 "watch after SIGTERM: $(cat peak.err)"
payload_in && fail "SIGTERM left heapsnap loaded"

## usage
run_hs watch "$TGT_PID" --interval 1
expect_eq "$rc" 64 "no -o"
run_hs watch "$TGT_PID" -o x --interval 0
expect_eq "$rc" 64 "zero interval"
true
