# report-list.sh - `heapsnap list` on an exact gperftools dump of an -O2 -g program: the allocating source lines carry their bytes; same output as `go tool pprof -list`.
. "$TESTLIB"

need_cmd python3
TCMALLOC=$(ldconfig -p | awk '$1 == "libtcmalloc.so.4" { print $NF; exit }')
[ -n "$TCMALLOC" ] || skip "libtcmalloc.so.4 not installed (google-perftools)"
PROG=$TARGETS/rep_sites
SRC=$SRCDIR/tests/targets/rep_sites.c
[ -x "$PROG" ] || fail "$PROG not built"

LD_PRELOAD=$TCMALLOC HEAPPROFILE=$PWD/g "$PROG" gperf >expect.txt 2>prog.err ||
	fail "rep_sites gperf: $(cat prog.err)"
[ -s g.0001.heap ] || fail "no heap dump"

# check_line FUNC PATTERN FIELD BYTES: in `list ^FUNC$`, the source line
# containing PATTERN (fixed string) has FIELD (flat or cum) == BYTES.
check_line() {
	local fn=$1 pat=$2 field=$3 bytes=$4
	run_hs -j list "^$fn\$" g.0001.heap
	expect_eq "$rc" 0 "list $fn: $err"
	printf '%s' "$out" > list.json
	python3 - "$fn" "$pat" "$field" "$bytes" "$SRC" <<'EOF' || fail "list $fn: line '$pat' does not hold $field $bytes"
import json, os, sys
fn, pat, field, want, src = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
d = json.load(open("list.json"))
rs = [r for r in d["routines"] if r["name"] == fn]
assert len(rs) == 1, d["routines"]
r = rs[0]
assert os.path.realpath(r["file"]) == os.path.realpath(src), r["file"]
assert r["source_found"], r
want_line = [i + 1 for i, l in enumerate(open(src)) if pat in l]
assert len(want_line) == 1, (pat, want_line)
rows = [l for l in r["lines"] if l["line"] == want_line[0]]
assert rows and pat in rows[0]["text"], (want_line, rows)
assert rows[0][field] == want, (rows[0], want)
# the sampled line is shown with context around it
shown = [l["line"] for l in r["lines"]]
assert want_line[0] - 1 in shown and want_line[0] + 1 in shown, shown
EOF
}

check_line leaf_alloc "hold(malloc(SA), SA, 'a');" flat 524288
check_line big_alloc "hold(malloc(SB), SB, 'b');" flat 1572864
check_line calloc_site "void *p = calloc(1, SC);" flat 20480
check_line grow_site "p = realloc(p, SG2);" flat 655360
check_line grow_site "void *p = malloc(SG1);" flat 0
check_line recurse "hold(malloc(SR), SR, 'r');" flat 20480
# four of the five allocations happen below the recursive call
check_line recurse "recurse(depth - 1);" cum 16384
# the inlined helper's line holds the bytes, its caller's call line the cum
check_line inl_helper "void *p = malloc(n);" flat 102400
check_line inl_caller "hold(inl_helper(SI), SI, 'i');" cum 102400

# Plain output: the pprof layout, byte for byte, on the converted file.
if command -v go >/dev/null; then
	export PPROF_TMPDIR=$PWD HOME=$PWD
	run_hs convert g.0001.heap -o g1.pb.gz
	expect_eq "$rc" 0 "convert: $err"
	for re in leaf_alloc 'recurse|inl_' 'alloc$' grow_site; do
		go tool pprof -symbolize=none -list="$re" g1.pb.gz > pprof.out 2>pprof.err ||
			fail "pprof -list $re: $(cat pprof.err)"
		"$HEAPSNAP" list "$re" g1.pb.gz > heapsnap.out 2>heapsnap.err ||
			fail "heapsnap list $re: $(cat heapsnap.err)"
		diff -u pprof.out heapsnap.out >&2 || fail "list $re differs from go tool pprof -list"
	done
else
	note "go not installed: pprof comparison skipped"
fi

run_hs list '^nosuch$' g.0001.heap
expect_eq "$rc" 1 "list without match"
expect_eq "$err" "heapsnap: no matches found for regexp: ^nosuch\$" "list without match message"
exit 0
