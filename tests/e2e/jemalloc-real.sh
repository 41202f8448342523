# jemalloc-real.sh - a program with known allocation sites runs under Debian's
# libjemalloc2 with exact profiling (lg_prof_sample:0); heapsnap reads its
# heap_v2 dumps (mallctl prof.dump, prof_final at exit) and `top` names every
# site with its exact bytes and objects.  A sampled dump (the default rate)
# must give estimates within 5 sigma of the truth.
source "$TESTLIB"
source "$SRCDIR/tests/e2e/fmt_lib.bash"

JE=$(lib_path libjemalloc.so.2)
[ -n "$JE" ] || skip "libjemalloc.so.2 not installed (Debian libjemalloc2)"

# --- prof.dump, exact, with cumulative counts -------------------------------
# (timeout outside the environment: it must not profile itself)
timeout 30 env LD_PRELOAD="$JE" MALLOC_CONF=prof:true,lg_prof_sample:0,prof_accum:true \
	"$FMT_SITES" jemalloc "$PWD/dump.heap" >expect.txt ||
	fail "fmt_sites under jemalloc failed: $(cat expect.txt)"
[ -s dump.heap ] || fail "jemalloc wrote no dump"
expect_eq "$(head -n 1 dump.heap)" "heap_v2/1" "dump header"
grep -q '^MAPPED_LIBRARIES:' dump.heap || fail "no MAPPED_LIBRARIES in the dump"
check_expect dump.heap expect.txt
check_expect dump.heap expect.txt alloc
run_hs top dump.heap
[ $rc -eq 0 ] || fail "heapsnap top: $err"
expect_eq "$(first_row "$out")" site_b "top row"
expect_match "$out" "^Type: inuse_space" "top header"
# Freed memory counts only as allocated.
[ -z "$(top_flat dump.heap inuse_space site_d)" ] || fail "site_d (freed) shows in inuse_space"
# The allocator's own frames are gone: nothing from libjemalloc in the rows.
run_hs top dump.heap -n 100
printf '%s\n' "$out" | grep -q 'libjemalloc' && fail "jemalloc frames in top: $out"

# --- prof_final at exit, exact, no cumulative counts ------------------------
timeout 30 env LD_PRELOAD="$JE" MALLOC_CONF=prof:true,lg_prof_sample:0,prof_final:true,prof_prefix:$PWD/final \
	"$FMT_SITES" exit >expect2.txt || fail "fmt_sites exit under jemalloc failed"
final=$(ls final.*.heap 2>/dev/null)
[ "$(echo "$final" | wc -w)" = 1 ] || fail "expected one prof_final dump, got: $(ls)"
check_expect "$final" expect2.txt
run_hs top "$final" --sample-index alloc_space
[ $rc -eq 1 ] || fail "alloc_space of a dump without prof_accum: exit $rc, expected 1"
expect_match "$err" "^heapsnap: .*alloc_space" "message for missing alloc_space"

# --- sampled at jemalloc's default rate (2^19) -------------------------------
timeout 30 env LD_PRELOAD="$JE" MALLOC_CONF=prof:true \
	"$FMT_SITES" jemalloc "$PWD/sampled.heap" >expect3.txt || fail "sampled run failed"
expect_eq "$(head -n 1 sampled.heap)" "heap_v2/524288" "sampled dump header"
while read -r t fn count size; do
	[ "$t" = live ] || continue
	est=$(top_flat sampled.heap inuse_space "$fn")
	awk -v e="${est:-0}" -v n="$count" -v s="$size" -v fn="$fn" 'BEGIN {
		p = 1 - exp(-s / 524288); truth = n * s
		sigma = s * sqrt(n * (1 - p) / p)
		d = e - truth; if (d < 0) d = -d
		printf "# %s: estimate %d, truth %d, sigma %.0f\n", fn, e, truth, sigma
		exit (d <= 5 * sigma) ? 0 : 1
	}' >&2 || fail "$fn: estimate ${est:-0} more than 5 sigma from the truth"
done <expect3.txt
echo "jemalloc dumps: exact sites match, sampled estimates within 5 sigma"
