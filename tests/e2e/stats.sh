# stats.sh - `heapsnap stats` and `heapsnap trim` against real processes under glibc, jemalloc, tcmalloc and mimalloc.
source "$TESTLIB"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$TARGETS/st_hold" ] || skip "st_hold not built"
need_cmd python3
trap 'kill -9 $TGT_PID 2>/dev/null' EXIT
LIBDIR=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

# json EXPR: evaluates a Python expression on the JSON in $out (as j).
json() { printf '%s' "$out" | python3 -c "import json,sys; j=json.load(sys.stdin); print($1)" ||
	fail "not valid JSON or no $1: $out"; }

# check ALLOCATOR LIVE_KEY [LD_PRELOAD]: stats and trim on a target holding
# 20000 x 4000 bytes with 256 KB holes freed in the middle.
check() {
	local alloc=$1 key=$2 pre=$3 live maps0
	LD_PRELOAD=$pre start_target "$TARGETS/st_hold" 20000 1
	live=$(sed -n 's/^ready live=//p' "$TGT_OUT")
	maps0=$(grep -c libheapsnap-payload "/proc/$TGT_PID/maps")

	run_hs stats "$TGT_PID"
	expect_eq "$rc" 0 "$alloc: stats: $err"
	expect_match "$out" "^allocator: $alloc " "$alloc: stats names the allocator"
	expect_match "$out" "^pid $TGT_PID: RSS [0-9.]+ MiB" "$alloc: stats shows RSS"
	expect_match "$out" "^gap: " "$alloc: stats explains the gap"
	expect_match "$out" "^  ${key#*.} +[0-9]+" "$alloc: stats shows $key"
	# Loaded for the moment only.
	expect_eq "$(grep -c libheapsnap-payload "/proc/$TGT_PID/maps")" "$maps0" "$alloc: payload unloaded after stats"

	run_hs stats -j "$TGT_PID"
	expect_eq "$rc" 0 "$alloc: stats -j: $err"
	expect_eq "$(json 'j["allocator"]')" "$alloc" "$alloc: JSON allocator"
	local v rss
	v=$(json "j['figures']['$key']")
	rss=$(json "j['process']['rss']")
	note "$alloc: $key=$v live=$live rss=$rss"
	[ "$v" -ge "$live" ] || fail "$alloc: $key $v < the $live bytes the target holds"
	# Allocator overhead aside, not absurdly more than held (4000-byte objects).
	[ "$v" -le $((live * 2)) ] || fail "$alloc: $key $v > twice the $live live bytes"
	[ "$(json 'j["live_bytes"]')" -ge "$live" ] || fail "$alloc: live_bytes below the known live bytes"

	run_hs trim -j "$TGT_PID"
	expect_eq "$rc" 0 "$alloc: trim -j: $err"
	local before after
	before=$(json 'j["before"]["rss"]')
	after=$(json 'j["after"]["rss"]')
	note "$alloc: trim RSS $before -> $after"
	# ~38 MiB sit in freed 256 KB holes: every allocator here returns most of it.
	[ "$after" -lt $((before - 16 * 1048576)) ] || fail "$alloc: trim did not lower RSS enough: $before -> $after"
	run_hs trim "$TGT_PID"
	expect_eq "$rc" 0 "$alloc: trim: $err"
	expect_match "$out" "^pid $TGT_PID: RSS [0-9.]+ MiB -> [0-9.]+ MiB" "$alloc: trim prints before/after"
	expect_match "$out" "asked $alloc " "$alloc: trim says what it asked"
	kill -0 "$TGT_PID" || fail "$alloc: target died"
	expect_eq "$(grep -c libheapsnap-payload "/proc/$TGT_PID/maps")" "$maps0" "$alloc: payload unloaded after trim"
	stop_target KILL
}

check glibc glibc.uordblks ""
[ -r "$LIBDIR/libjemalloc.so.2" ] && check jemalloc jemalloc.stats.allocated "$LIBDIR/libjemalloc.so.2" ||
	note "libjemalloc.so.2 not installed: jemalloc part skipped"
[ -r "$LIBDIR/libtcmalloc.so.4" ] && check tcmalloc tcmalloc.generic.current_allocated_bytes "$LIBDIR/libtcmalloc.so.4" ||
	note "libtcmalloc.so.4 not installed: tcmalloc part skipped"

# A loaded, sampling payload answers the same way and stays loaded.
start_target "$TARGETS/st_hold" 1000
run_hs start "$TGT_PID"
expect_eq "$rc" 0 "start: $err"
run_hs stats "$TGT_PID"
expect_eq "$rc" 0 "stats while sampling: $err"
expect_match "$out" "^allocator: glibc " "stats while sampling"
run_hs status "$TGT_PID"
expect_match "$out" "sampling" "still sampling after stats"
run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop: $err"
stop_target KILL

# Errors: a process that is gone; usage.
run_hs stats 999999999
[ "$rc" = 1 ] || [ "$rc" = 64 ] || fail "stats of no process: rc $rc"
run_hs stats
expect_eq "$rc" 64 "stats without PID"
run_hs trim 1 extra
expect_eq "$rc" 64 "trim with an extra operand"
exit 0
