# payload-usage.sh - the live commands' usage errors, exit codes and JSON on simple cases.
source "$TESTLIB"
[ -x "$HEAPSNAP" ] || skip "heapsnap not built"
need_cmd python3

expect_usage() {
	run_hs "$@"
	expect_eq "$rc" 64 "heapsnap $* exit status"
	expect_eq "$out" "" "heapsnap $* stdout"
	expect_match "$err" '^usage: heapsnap ' "heapsnap $* usage line"
}
json_ok() {
	printf '%s' "$1" | python3 -c 'import json, sys; json.load(sys.stdin)' || fail "$2: not valid JSON: $1"
}

for c in start status dump stop; do
	expect_usage $c
	expect_match "$err" "missing PID" "$c without PID"
	expect_usage $c notapid
	expect_usage $c 1 --bogus
done
expect_usage start 1 --rate 0
expect_usage start 1 --rate lots
expect_usage start 1 --backend magic
expect_match "$err" "unknown backend 'magic'" "unknown backend"
expect_usage dump 1 -o x.pb.gz --backend magic
expect_match "$err" "unknown backend 'magic'" "unknown backend (dump)"
expect_usage status 1 --rate 1
expect_usage dump 1
expect_match "$err" "no output file" "dump without -o"
expect_usage dump 1 -o x.pb.gz --format bogus
expect_usage dump 1 -o x.pb.gz --duration -3
expect_usage stop 1 2

# A process that does not exist: exit 1, one line, nothing on stdout.
sleep 0 &
gone=$!
wait "$gone"
[ -d "/proc/$gone" ] && skip "pid $gone was reused at once"

for c in start status stop; do
	run_hs $c "$gone"
	expect_eq "$rc" 1 "$c on a gone pid"
	expect_eq "$out" "" "$c on a gone pid: stdout"
	expect_match "$err" "^heapsnap: .*$gone" "$c on a gone pid: message"
done

# A live process without heapsnap: status and stop say so, exit 0.
sleep 30 &
p=$!
trap 'kill $p 2>/dev/null' EXIT
run_hs status "$p"
expect_eq "$rc" 0 "status of a plain process"
expect_match "$out" "not loaded" "status of a plain process"
run_hs -j status "$p"
json_ok "$out" "status -j"
expect_match "$out" '"loaded": ?false' "status -j of a plain process"
run_hs stop "$p"
expect_eq "$rc" 0 "stop of a plain process"
expect_match "$out" "not running" "stop of a plain process"
run_hs -j stop "$p"
json_ok "$out" "stop -j"
grep -q libheapsnap-payload "/proc/$p/maps" && fail "stop loaded something"
true
