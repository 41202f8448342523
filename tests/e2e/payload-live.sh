# payload-live.sh - heapsnap start/status/dump/stop against an unmodified target that knows its heap.
source "$TESTLIB"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$TARGETS/pl_known" ] || skip "pl_known not built"

# The target reads commands on a FIFO we keep open (see tests/targets/pl_common.h).
mkfifo cmds
exec 7<>cmds
start_target bash -c 'exec "$0" cmd <cmds' "$TARGETS/pl_known"
trap 'kill -9 $TGT_PID 2>/dev/null' EXIT

# send CMD: one command, wait (60 s max) for its "done" line.
send() {
	local verb=${1%% *} n i
	n=$(grep -c "^done $verb\$" "$TGT_OUT")
	echo "$1" >&7
	for i in $(seq 1 600); do
		[ "$(grep -c "^done $verb\$" "$TGT_OUT")" -gt "$n" ] && return 0
		kill -0 "$TGT_PID" 2>/dev/null || fail "target died during '$1': $(tail -5 "$TGT_OUT")"
		sleep 0.1
	done
	fail "target did not finish '$1'"
}

threads() { awk '/^Threads:/ {print $2}' "/proc/$TGT_PID/status"; }
# (libgcc_s: glibc's backtrace() loads it once and never unloads it;
# libunwind and its liblzma: the payload loads them NODELETE, because
# libunwind frees its per-thread caches in a thread-exit destructor;
# libpl_dynlib: the target dlopens it itself.)
maps_files() { grep ' /' "/proc/$TGT_PID/maps" | grep -v -e libheapsnap-payload -e libgcc_s -e libunwind.so -e liblzma.so -e libpl_dynlib; }
threads0=$(threads)
maps0=$(maps_files)

run_hs status "$TGT_PID"
expect_eq "$rc" 0 "status before start"
expect_match "$out" "not loaded" "status before start"

run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop when not running"
expect_match "$out" "not running" "stop when not running"

run_hs start "$TGT_PID" --rate 1
expect_eq "$rc" 0 "start: $err"
expect_match "$out" "sampling" "start"
run_hs start "$TGT_PID"
expect_eq "$rc" 0 "second start: $err"
expect_match "$out" "already sampling" "second start"

send alloc
send "dlopen $TARGETS/libpl_dynlib.so"

run_hs -j status "$TGT_PID"
expect_eq "$rc" 0 "status -j: $err"
expect_match "$out" '"state": ?"sampling"' "status -j"
expect_match "$out" '"rate": ?1[,}]' "status -j"

run_hs dump "$TGT_PID" -o live.pb.gz
expect_eq "$rc" 0 "dump: $err"
[ -s live.pb.gz ] || fail "dump wrote nothing"

# Every live site under its own name, with exactly what the target said
# (rate 1); freed and realloc'd-away sites hold nothing.  Folded stacks
# keep every sample (top would fold tiny nodes away).
run_hs convert live.pb.gz -o live.folded --format collapsed
expect_eq "$rc" 0 "convert: $err"
flat_of() { # inuse bytes of samples whose leaf is function $1
	awk -v f="$1" '{ v = $NF; $NF = ""; sub(/ $/, ""); n = split($0, fr, ";"); if (fr[n] == f) s += v }
		END { print s + 0 }' live.folded
}
for site in small large mixed calloc r2 align rarr; do
	want=$(awk -v s="$site" '$1 == "expect" && $2 == s {print $3}' "$TGT_OUT" | tail -1)
	expect_eq "$(flat_of "site_$site")" "$want" "inuse bytes of site_$site"
done
for site in freed r1; do
	expect_eq "$(flat_of "site_$site")" 0 "inuse bytes of site_$site"
done
want=$(awk '$1 == "expect" && $2 == "dyn" {print $3}' "$TGT_OUT" | tail -1)
expect_eq "$(flat_of pl_dyn_alloc)" "$want" "inuse bytes of pl_dyn_alloc (dlopened after start)"
# Cumulative totals (one unbiased entry per stack in the payload): at rate
# 1, exactly what the sites that keep nothing allocated (pl_known.c).
run_hs convert live.pb.gz -o live.folded --format collapsed --sample-index alloc_space
expect_eq "$rc" 0 "convert alloc_space: $err"
expect_eq "$(flat_of site_freed)" $((10000 * 256)) "alloc bytes of site_freed"
expect_eq "$(flat_of site_r1)" $((2000 * 100)) "alloc bytes of site_r1"
run_hs -j status "$TGT_PID"
expect_match "$out" '"cost_ns_per_sample": ?[1-9]' "status -j: the sampler's own cost"

# The file stands on its own: comments, and go tool pprof agrees on the top.
run_hs top live.pb.gz -n 1
expect_match "$out" "backend=interpose" "comments"
expect_match "$out" "pid=$TGT_PID" "comments"
expect_match "$out" "rate=1" "comments"
if command -v go >/dev/null; then
	export PPROF_TMPDIR=$PWD HOME=$PWD
	ours=$("$HEAPSNAP" top live.pb.gz -n 1 | awk '/flat%/ {getline; print $NF}')
	theirs=$(go tool pprof -top -symbolize=none live.pb.gz 2>/dev/null | awk '/flat%/ {getline; print $NF}')
	[ -n "$ours" ] || fail "no top row from heapsnap top"
	expect_eq "$theirs" "$ours" "top function, go tool pprof vs heapsnap"
	note "top function: $ours (heapsnap and go tool pprof)"
else
	note "go not installed: pprof comparison skipped"
fi

run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop: $err"
grep -q libheapsnap-payload "/proc/$TGT_PID/maps" && fail "payload still mapped after stop"
expect_eq "$(threads)" "$threads0" "threads after stop"
[ "$(maps_files)" = "$maps0" ] || fail "file mappings differ after stop: $(diff <(echo "$maps0") <(maps_files))"

run_hs status "$TGT_PID"
expect_match "$out" "not loaded" "status after stop"

# dump on a process that is not sampling: load, sample, snapshot, unload.
run_hs dump "$TGT_PID" -o oneshot.pb.gz --duration 0.5
expect_eq "$rc" 0 "one-shot dump: $err"
[ -s oneshot.pb.gz ] || fail "one-shot dump wrote nothing"
grep -q libheapsnap-payload "/proc/$TGT_PID/maps" && fail "payload left after a one-shot dump"
expect_eq "$(threads)" "$threads0" "threads after a one-shot dump"

# A second full cycle in the same process.
run_hs start "$TGT_PID" --rate 4096
expect_eq "$rc" 0 "second start cycle: $err"
run_hs dump "$TGT_PID" -o again.pb.gz --keep
expect_eq "$rc" 0 "second dump: $err"
run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "second stop: $err"

echo quit >&7
wait "$TGT_PID"
expect_eq "$?" 0 "target's own heap check"
trap - EXIT
