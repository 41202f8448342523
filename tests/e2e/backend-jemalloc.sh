# backend-jemalloc.sh - `--backend jemalloc` drives the target's own jemalloc profiler (Debian's libjemalloc2): exact sites with lg_prof_sample:0, allocations made before heapsnap came, activation at runtime, and the plain fallback to interpose when opt.prof is false.
source "$TESTLIB"
source "$SRCDIR/tests/e2e/fmt_lib.bash"
source "$SRCDIR/tests/e2e/be_lib.bash"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$TARGETS/be_sites" ] || skip "be_sites not built"
JE=$(lib_path libjemalloc.so.2)
[ -n "$JE" ] || skip "libjemalloc.so.2 not installed (Debian libjemalloc2)"
trap 'kill -9 $TGT_PID 2>/dev/null' EXIT

tmpdirs() { ls -d /tmp/heapsnap-je.* 2>/dev/null | wc -l; }
loaded() { grep -c libheapsnap-payload "/proc/$TGT_PID/maps"; }

# --- profiling active since start: the dump covers what came before us ------
t0=$(tmpdirs)
LD_PRELOAD=$JE MALLOC_CONF=prof:true,lg_prof_sample:0 start_target "$TARGETS/be_sites"
run_hs dump --backend jemalloc "$TGT_PID" -o early.pb.gz
expect_eq "$rc" 0 "dump --backend jemalloc: $err"
expect_match "$err" "active before heapsnap came" "dump says the profile covers earlier allocations"
expect_site early.pb.gz site_early
expect_site early.pb.gz site_big
run_hs top early.pb.gz
expect_match "$out" "backend=jemalloc" "file names the backend"
expect_match "$out" "profiling was active before heapsnap came" "file says it covers earlier allocations"
printf '%s\n' "$out" | grep -q libjemalloc && fail "jemalloc frames left in top: $out"
expect_eq "$(tmpdirs)" "$t0" "jemalloc's dump directory removed"
expect_eq "$(loaded)" 0 "payload unloaded after the jemalloc dump"
# auto picks jemalloc too (opt.prof is true), and sees what came later.
late
run_hs dump "$TGT_PID" -o auto.pb.gz
expect_eq "$rc" 0 "dump (auto): $err"
expect_site auto.pb.gz site_late
expect_site auto.pb.gz site_early
stop_target KILL

# --- prof_active:false at start: heapsnap activates it -------------------------
LD_PRELOAD=$JE MALLOC_CONF=prof:true,prof_active:false,lg_prof_sample:0 start_target "$TARGETS/be_sites"
run_hs start --backend jemalloc "$TGT_PID"
expect_eq "$rc" 0 "start --backend jemalloc: $err"
expect_match "$out" "jemalloc's profiler active" "start activates the profiler"
run_hs status "$TGT_PID"
expect_match "$out" "jemalloc's profiler is on, switched on by heapsnap" "status shows the jemalloc backend"
late
run_hs dump --backend jemalloc "$TGT_PID" -o activated.pb.gz
expect_eq "$rc" 0 "dump after start: $err"
expect_site activated.pb.gz site_late
[ -z "$(top_flat activated.pb.gz inuse_space site_early)" ] ||
	fail "site_early (before activation) in the profile"
# stop switches off what start switched on (and says so), nothing stays.
run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop after start --backend jemalloc: $err"
expect_match "$out" "jemalloc's profiler \(switched on by heapsnap\) switched off" "stop switches it off"
run_hs stats "$TGT_PID"
expect_match "$out" "prof.active +0" "prof.active after stop"
[ -e "/proc/$TGT_PID/root/tmp/heapsnap-je-active.$TGT_PID" ] && fail "marker left after stop"
expect_eq "$(loaded)" 0 "payload not left behind by stop"
stop_target KILL

# --- the program's own prof_active:true: stop leaves it on -------------------
LD_PRELOAD=$JE MALLOC_CONF=prof:true,lg_prof_sample:0 start_target "$TARGETS/be_sites"
run_hs start --backend jemalloc "$TGT_PID"
expect_eq "$rc" 0 "start on an active profiler: $err"
run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop: $err"
run_hs stats "$TGT_PID"
expect_match "$out" "prof.active +1" "the program's own prof.active stays on"
stop_target KILL

# --- opt.prof false (the usual case): say so, fall back to interpose -----------
LD_PRELOAD=$JE start_target "$TARGETS/be_sites"
run_hs start --backend jemalloc --rate 1 "$TGT_PID"
expect_eq "$rc" 0 "start with opt.prof false: $err"
expect_match "$err" "jemalloc's profiler is off \(opt.prof false; it can only be enabled at start with MALLOC_CONF=prof:true\); using interpose" "fallback message"
expect_match "$out" "interpose backend" "start fell back to interpose"
late
run_hs dump --backend jemalloc "$TGT_PID" -o fallback.pb.gz
expect_eq "$rc" 0 "dump with opt.prof false: $err"
expect_match "$err" "using interpose" "dump says it falls back"
expect_site fallback.pb.gz site_late
run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop: $err"
expect_eq "$(loaded)" 0 "payload unloaded after stop"
kill -0 "$TGT_PID" || fail "target died"
stop_target KILL

# --- no jemalloc at all ------------------------------------------------------
start_target "$TARGETS/be_sites"
run_hs dump --backend jemalloc "$TGT_PID" -o none.pb.gz
expect_eq "$rc" 1 "dump --backend jemalloc without jemalloc"
expect_match "$err" "does not use jemalloc" "no-jemalloc message"
expect_eq "$(loaded)" 0 "payload not left behind"
stop_target KILL
exit 0
