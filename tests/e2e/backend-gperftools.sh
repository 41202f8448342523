# backend-gperftools.sh - `--backend gperftools` against a program linked with -ltcmalloc: a heap profiler started with HEAPPROFILE is reused and left running; one heapsnap starts, heapsnap stops; exact sites.
source "$TESTLIB"
source "$SRCDIR/tests/e2e/fmt_lib.bash"
source "$SRCDIR/tests/e2e/be_lib.bash"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$TARGETS/be_sites_tc" ] || skip "be_sites_tc (needs libgoogle-perftools-dev) not built"
trap 'kill -9 $TGT_PID 2>/dev/null' EXIT

ourdirs() { ls -d /tmp/heapsnap-gp.* 2>/dev/null | wc -l; }
loaded() { grep -c libheapsnap-payload "/proc/$TGT_PID/maps"; }
running() {
	run_hs stats -j "$TGT_PID"
	expect_eq "$rc" 0 "stats: $err"
	printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["figures"]["gperftools.heap_profiler_running"])'
}
d0=$(ourdirs)

# --- HEAPPROFILE at start: reused, never stopped ---------------------------
HEAPPROFILE=$PWD/hp start_target "$TARGETS/be_sites_tc"
expect_eq "$(running)" 1 "profiler running from start"
run_hs dump "$TGT_PID" -o reuse.pb.gz
expect_eq "$rc" 0 "dump (auto picks the running profiler): $err"
expect_match "$err" "was running before heapsnap came \(reused, left running\)" "dump says it reused it"
expect_site reuse.pb.gz site_early
expect_site reuse.pb.gz site_big
run_hs top reuse.pb.gz -n 50
expect_match "$out" "backend=gperftools" "file names the backend"
printf '%s\n' "$out" | grep -Eq 'libtcmalloc|0x[0-9a-f]{8,} *$' && fail "allocator or heapsnap frames in top: $out"
run_hs start --backend gperftools "$TGT_PID"
expect_eq "$rc" 0 "start on a running profiler: $err"
expect_match "$out" "running already \(reused; heapsnap will not stop it\)" "start reuses it"
run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop: $err"
expect_eq "$(running)" 1 "the program's own profiler left running after stop"
expect_eq "$(loaded)" 0 "payload not left behind"
stop_target KILL

# --- no HEAPPROFILE: heapsnap starts it and stops it ---------------------------
start_target "$TARGETS/be_sites_tc"
expect_eq "$(running)" 0 "profiler off at start"
run_hs start --backend gperftools "$TGT_PID"
expect_eq "$rc" 0 "start --backend gperftools: $err"
expect_match "$out" "heap profiler started" "start starts it"
expect_eq "$(running)" 1 "profiler running after start"
run_hs status "$TGT_PID"
expect_match "$out" "gperftools' heap profiler is running, started by heapsnap" "status shows the gperftools backend"
late
run_hs dump --backend gperftools "$TGT_PID" -o started.pb.gz
expect_eq "$rc" 0 "dump: $err"
expect_site started.pb.gz site_late
[ -z "$(top_flat started.pb.gz inuse_space site_early)" ] || fail "site_early (before start) in the profile"
run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop: $err"
expect_match "$out" "heap profiler \(started by heapsnap\) stopped" "stop stops what heapsnap started"
expect_eq "$(running)" 0 "profiler off after stop"
expect_eq "$(ourdirs)" "$d0" "heapsnap's profiler directory removed"
# A one-shot dump starts and stops it by itself.
run_hs dump --backend gperftools --duration 0.2 "$TGT_PID" -o oneshot.pb.gz
expect_eq "$rc" 0 "one-shot dump: $err"
expect_match "$err" "started by heapsnap for this dump, stopped again" "one-shot dump message"
expect_eq "$(running)" 0 "profiler off after the one-shot dump"
expect_eq "$(ourdirs)" "$d0" "no directory left after the one-shot dump"
expect_eq "$(loaded)" 0 "payload not left behind"
kill -0 "$TGT_PID" || fail "target died"
stop_target KILL

# --- a program without the heap profiler -------------------------------------
start_target "$TARGETS/be_sites"
run_hs dump --backend gperftools "$TGT_PID" -o none.pb.gz
expect_eq "$rc" 1 "dump --backend gperftools without gperftools"
expect_match "$err" "no gperftools heap profiler" "message"
stop_target KILL
exit 0
