# gperf-real.sh - a program with known allocation sites runs under gperftools'
# heap profiler (libtcmalloc, HEAPPROFILE); its dumps are exact ("@
# heapprofile": every allocation is recorded), so heapsnap `top` must name
# every site with its exact inuse and alloc bytes and objects.
source "$TESTLIB"
source "$SRCDIR/tests/e2e/fmt_lib.bash"

TC=$(lib_path libtcmalloc.so.4)
[ -n "$TC" ] || skip "libtcmalloc.so.4 not installed (Debian libgoogle-perftools4)"

# HeapProfilerDump writes hp.0001.heap; exiting writes hp.0002.heap.
timeout 30 env LD_PRELOAD="$TC" HEAPPROFILE="$PWD/hp" "$FMT_SITES" gperf >expect.txt 2>run.err ||
	fail "fmt_sites under tcmalloc failed: $(cat run.err)"
[ -s hp.0001.heap ] || fail "no heap profile written: $(ls) $(cat run.err)"
expect_match "$(head -n 1 hp.0001.heap)" '^heap profile: +[0-9]+: +[0-9]+ \[ +[0-9]+: +[0-9]+\] @ heapprofile$' "exact header"
grep -q '^MAPPED_LIBRARIES:' hp.0001.heap || fail "no MAPPED_LIBRARIES in the dump"

check_expect hp.0001.heap expect.txt
check_expect hp.0001.heap expect.txt alloc
run_hs top hp.0001.heap
[ $rc -eq 0 ] || fail "heapsnap top: $err"
expect_eq "$(first_row "$out")" site_b "top row"
[ -z "$(top_flat hp.0001.heap inuse_space site_d)" ] || fail "site_d (freed) shows in inuse_space"

# The header totals are what heapsnap adds up.
read -r io ib ao ab < <(head -n 1 hp.0001.heap | tr -d '[]:' | awk '{ print $3, $4, $5, $6 }')
run_hs -j top hp.0001.heap
expect_match "$out" "\"total\":$ib," "inuse_space total = header"
run_hs -j top hp.0001.heap --sample-index alloc_objects
expect_match "$out" "\"total\":$ao," "alloc_objects total = header"

# The dump at exit reads as well.
[ -s hp.0002.heap ] && { run_hs top hp.0002.heap; [ $rc -eq 0 ] || fail "exit dump: $err"; }
echo "gperftools dump: exact sites and totals match"
