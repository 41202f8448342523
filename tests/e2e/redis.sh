# redis.sh - heapsnap on a real service: Debian's redis-server (jemalloc) under redis-benchmark load: dump while it runs, top names redis's allocating functions, the benchmark finishes clean, stop leaves redis serving, stats shows jemalloc's figures.
source "$TESTLIB"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null ||
	skip "redis-server/redis-benchmark not installed (Debian redis-server redis-tools; scripts/deps.sh installs them)"
need_cmd python3

# A free port on 127.0.0.1.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# No persistence, nothing written outside this directory.
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$PWD" \
	--daemonize no --logfile "$PWD/redis.log" &
RPID=$!
BPID=
trap 'kill -9 $RPID $BPID 2>/dev/null' EXIT
for i in $(seq 1 100); do
	[ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
	kill -0 "$RPID" 2>/dev/null || fail "redis-server died: $(cat redis.log)"
	sleep 0.1
done
[ "$(redis-cli -p "$port" ping)" = PONG ] || fail "redis-server not answering after 10 s"

run_hs stats "$RPID"
expect_eq "$rc" 0 "stats: $err"
expect_match "$out" "^allocator: jemalloc " "redis uses jemalloc"
expect_match "$out" "^  stats.allocated +[0-9]+" "stats shows jemalloc's stats.allocated"
expect_match "$out" "^gap: " "stats explains the gap"

# Load in the background while heapsnap samples (the benchmark's own
# timeouts bound it; -n keeps it to seconds).
redis-benchmark -h 127.0.0.1 -p "$port" -q -n 20000 -t set,get,incr,lpush,lpop,sadd,hset,mset >bench.out 2>&1 &
BPID=$!
run_hs dump "$RPID" --duration 2 --rate 64K --keep -o redis.pb.gz
expect_eq "$rc" 0 "dump under load: $err"
run_hs top redis.pb.gz -n 30 --cum
expect_eq "$rc" 0 "top: $err"
note "$(printf '%s\n' "$out" | tail -n 12)"
expect_match "$out" "zmalloc" "top names redis's allocator wrapper"
expect_match "$out" " (createClient|_?sdsMakeRoomFor|sdsnewlen|createStringObject|createObject|dictAdd|quicklistCreate|listCreate|readQueryFromClient|processCommand)$" \
	"top names redis functions that allocate"
run_hs status "$RPID"
expect_match "$out" "sampling" "still sampling after dump --keep"
run_hs stop "$RPID"
expect_eq "$rc" 0 "stop: $err"
grep -c libheapsnap-payload "/proc/$RPID/maps" | grep -qx 0 || fail "payload still mapped after stop"

# The benchmark finishes with no errors.
for i in $(seq 1 600); do
	kill -0 "$BPID" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$BPID" 2>/dev/null && fail "redis-benchmark still running after 60 s"
wait "$BPID"
brc=$?
BPID=
expect_eq "$brc" 0 "redis-benchmark exit status: $(tail -c 2000 bench.out)"
grep -qi 'error' bench.out && fail "redis-benchmark reported errors: $(grep -i error bench.out | head -3)"
grep -q 'requests per second' bench.out || fail "redis-benchmark printed no results"
[ "$(redis-cli -p "$port" ping)" = PONG ] || fail "redis does not answer PING after stop"
[ "$(redis-cli -p "$port" set heapsnap ok)" = OK ] && [ "$(redis-cli -p "$port" get heapsnap)" = ok ] ||
	fail "redis does not serve SET/GET after stop"

run_hs trim "$RPID"
expect_eq "$rc" 0 "trim: $err"
expect_match "$out" "asked jemalloc arena.<all>.purge" "trim purges jemalloc's arenas"
[ "$(redis-cli -p "$port" ping)" = PONG ] || fail "redis does not answer after trim"
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
wait "$RPID" 2>/dev/null
exit 0
