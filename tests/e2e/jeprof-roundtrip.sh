# jeprof-roundtrip.sh - a real jemalloc dump through heapsnap and back out to
# the real tools: heapsnap's pprof file in `go tool pprof -top`, its heap_v2
# file in `jeprof --text`, its gperftools file in `google-pprof --text` and
# `go tool pprof`: every tool shows the same top function and total as
# `heapsnap top`.
source "$TESTLIB"
source "$SRCDIR/tests/e2e/fmt_lib.bash"

JE=$(lib_path libjemalloc.so.2)
[ -n "$JE" ] || skip "libjemalloc.so.2 not installed (Debian libjemalloc2)"
need_cmd go jeprof google-pprof
export HOME=$PWD PPROF_TMPDIR=$PWD GOCACHE=$PWD/gocache GOPATH=$PWD/gopath
export GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local
gopprof() { timeout 120 go tool pprof "$@" 2>&1; }

timeout 30 env LD_PRELOAD="$JE" MALLOC_CONF=prof:true,lg_prof_sample:0,prof_accum:true \
	"$FMT_SITES" jemalloc "$PWD/dump.heap" >expect.txt || fail "fmt_sites under jemalloc failed"

# hs_top FILE INDEX: heapsnap's top row and exact total, "NAME TOTAL".
hs_top() {
	local o
	o=$("$HEAPSNAP" top "$1" --unit B --sample-index "$2") || fail "heapsnap top $1: $o"
	echo "$(first_row "$o") $(top_total "$o" | sed 's/B$//')"
}

# --- jemalloc -> heapsnap -> pprof -> go tool pprof --------------------------
run_hs convert dump.heap -o dump.pb.gz
[ $rc -eq 0 ] || fail "convert to pprof: $err"
for idx in inuse_space inuse_objects alloc_space alloc_objects; do
	read -r name total < <(hs_top dump.heap $idx)
	[ "$name" = site_b ] || [ "$name" = site_c ] || fail "heapsnap top $idx names $name"
	read -r name2 total2 < <(hs_top dump.pb.gz $idx)
	expect_eq "$name2 $total2" "$name $total" "heapsnap top $idx of its own pprof file"
	o=$(gopprof -symbolize=none -top -unit=B -sample_index=$idx dump.pb.gz)
	expect_eq "$(first_row "$o")" "$name" "go tool pprof top function ($idx)"
	expect_eq "$(top_total "$o" | sed 's/B$//')" "$total" "go tool pprof total ($idx)"
done
note "go tool pprof agrees on 4 sample types"

# --- heapsnap -> heap_v2 -> jeprof (from the dump and from the pprof file) ---
read -r name total < <(hs_top dump.heap inuse_space)
for src in dump.heap dump.pb.gz; do
	run_hs convert "$src" -o out.heap --format jeprof
	[ $rc -eq 0 ] || fail "convert $src to heap_v2: $err"
	o=$(timeout 120 jeprof --text --show_bytes "$FMT_SITES" out.heap 2>&1)
	expect_match "$o" "^Total: $total B\$" "jeprof total of heap_v2 from $src"
	first=$(printf '%s\n' "$o" | grep -A1 '^Total:' | tail -n 1 | awk '{ print $NF }')
	expect_eq "$first" "$name" "jeprof top function of heap_v2 from $src"
	read -r n2 t2 < <(hs_top out.heap inuse_space)
	expect_eq "$n2 $t2" "$name $total" "heapsnap top of its own heap_v2 from $src"
done
note "jeprof agrees"

# A sampled dump: jeprof's average-size correction of heapsnap's raw counts
# gives heapsnap's estimates back (to rounding: heapsnap rounds per block).
timeout 30 env LD_PRELOAD="$JE" MALLOC_CONF=prof:true,lg_prof_sample:16 \
	"$FMT_SITES" jemalloc "$PWD/sampled.heap" >/dev/null || fail "sampled run failed"
read -r name total < <(hs_top sampled.heap inuse_space)
run_hs convert sampled.heap -o out2.heap --format jeprof
[ $rc -eq 0 ] || fail "convert sampled: $err"
expect_eq "$(head -n 1 out2.heap)" "heap_v2/65536" "sampled heap_v2 header"
o=$(timeout 120 jeprof --text --show_bytes "$FMT_SITES" out2.heap 2>&1)
jt=$(printf '%s\n' "$o" | sed -n 's/^Total: \([0-9]*\) B$/\1/p')
blocks=$(grep -c '^@' out2.heap)
[ -n "$jt" ] && [ $((jt > total ? jt - total : total - jt)) -le "$blocks" ] ||
	fail "jeprof total of sampled heap_v2: '$jt', heapsnap $total (+-$blocks)"
note "sampled: jeprof $jt, heapsnap $total"

# --- heapsnap -> gperftools text -> google-pprof and go tool pprof ----------
read -r name total < <(hs_top dump.heap inuse_space)
for src in dump.heap dump.pb.gz; do
	run_hs convert "$src" -o out.hprof --format gperf
	[ $rc -eq 0 ] || fail "convert $src to gperf: $err"
	o=$(timeout 120 google-pprof --text --show_bytes "$FMT_SITES" out.hprof 2>&1)
	expect_match "$o" "^Total: $total B\$" "google-pprof total of gperf from $src"
	first=$(printf '%s\n' "$o" | grep -A1 '^Total:' | tail -n 1 | awk '{ print $NF }')
	expect_eq "$first" "$name" "google-pprof top function of gperf from $src"
	o=$(gopprof -top -unit=B "$FMT_SITES" out.hprof)
	expect_eq "$(first_row "$o")" "$name" "go tool pprof top function of gperf from $src"
	expect_eq "$(top_total "$o" | sed 's/B$//')" "$total" "go tool pprof total of gperf from $src"
	read -r n2 t2 < <(hs_top out.hprof inuse_space)
	expect_eq "$n2 $t2" "$name $total" "heapsnap top of its own gperf file from $src"
done
echo "go tool pprof, jeprof and google-pprof agree with heapsnap top"
