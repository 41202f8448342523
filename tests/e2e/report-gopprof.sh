# report-gopprof.sh - heapsnap's top/tree/peek/diff against `go tool pprof` on real gperftools and jemalloc dumps of a program with known sites.
. "$TESTLIB"

need_cmd go python3
libpath() { ldconfig -p | awk -v l="$1" '$1 == l { print $NF; exit }'; }
TCMALLOC=$(libpath libtcmalloc.so.4)
JEMALLOC=$(libpath libjemalloc.so.2)
[ -n "$TCMALLOC" ] || skip "libtcmalloc.so.4 not installed (google-perftools)"
PROG=$TARGETS/rep_sites
[ -x "$PROG" ] || fail "$PROG not built"
export PPROF_TMPDIR=$PWD HOME=$PWD
pprof() { go tool pprof -symbolize=none "$@" 2>pprof.err || fail "go tool pprof $*: $(cat pprof.err)"; }

# Two exact dumps (HEAPPROFILE records every allocation): after the first
# sites, then after later_site and a second big_alloc round.
LD_PRELOAD=$TCMALLOC HEAPPROFILE=$PWD/g "$PROG" gperf 2 >expect.txt 2>prog.err ||
	fail "rep_sites gperf: $(cat prog.err)"
[ -s g.0001.heap ] && [ -s g.0002.heap ] || fail "no heap dumps: $(ls)"
[ "$(grep -c '^expect ' expect.txt)" -ge 6 ] || fail "rep_sites printed no expectations"

# heapsnap reads the gperftools text and names each site with its exact
# bytes, the allocator frames dropped.
run_hs -j top -n 0 g.0001.heap
expect_eq "$rc" 0 "top g.0001.heap: $err"
printf '%s' "$out" > top1.json
grep '^expect ' expect.txt | while read -r _ fn bytes; do
	got=$(python3 -c 'import json,sys; d=json.load(open("top1.json"))
print(next((r["flat"] for r in d["rows"] if r["name"] == sys.argv[1]), "missing"))' "$fn")
	expect_eq "$got" "$bytes" "flat of $fn"
done || exit 1
python3 - <<'EOF' || fail "top1.json: allocator frames or totals wrong"
import json
d = json.load(open("top1.json"))
names = [r["name"] for r in d["rows"]]
for bad in ("malloc", "calloc", "realloc", "tc_malloc", "operator new(unsigned long)"):
    assert bad not in names, bad
rec = next(r for r in d["rows"] if r["name"] == "recurse")
# five nested levels, each allocating 4 KiB: counted once per sample
assert rec["cum"] == rec["flat"] == 5 * 4096, rec
EOF

# The same profiles as pprof files: heapsnap and go tool pprof print the
# same report, byte for byte.
run_hs convert g.0001.heap -o g1.pb.gz
expect_eq "$rc" 0 "convert g.0001.heap: $err"
run_hs convert g.0002.heap -o g2.pb.gz
expect_eq "$rc" 0 "convert g.0002.heap: $err"

# same REPORT PPROF-ARGS -- HEAPSNAP-ARGS
same() {
	local what=$1 pa=() ha=()
	shift
	while [ "$1" != "--" ]; do pa+=("$1"); shift; done
	shift
	ha=("$@")
	pprof "${pa[@]}" > pprof.out
	"$HEAPSNAP" "${ha[@]}" > heapsnap.out 2>heapsnap.err || fail "heapsnap ${ha[*]}: $(cat heapsnap.err)"
	[ -s pprof.out ] || fail "$what: pprof printed nothing"
	diff -u pprof.out heapsnap.out >&2 || fail "$what: heapsnap ${ha[*]} differs from pprof ${pa[*]}"
}

same "top" -top g2.pb.gz -- top -n 0 g2.pb.gz
same "top -cum" -top -cum g2.pb.gz -- top -n 0 --cum g2.pb.gz
same "top -nodecount" -top -nodecount=3 g2.pb.gz -- top -n 3 g2.pb.gz
same "focus" -top -focus=alloc g2.pb.gz -- top -n 0 --focus alloc g2.pb.gz
same "ignore" -top -ignore='big|later' g2.pb.gz -- top -n 0 --ignore 'big|later' g2.pb.gz
same "focus+ignore" -top -focus=main -ignore=recurse g2.pb.gz -- top -n 0 --focus main --ignore recurse g2.pb.gz
same "inuse_objects" -top -sample_index=inuse_objects g2.pb.gz -- top -n 0 --sample-index inuse_objects g2.pb.gz
same "alloc_space" -top -sample_index=alloc_space g2.pb.gz -- top -n 0 --sample-index alloc_space g2.pb.gz
same "lines" -top -lines g2.pb.gz -- top -n 0 --granularity lines g2.pb.gz
same "addresses" -top -addresses g2.pb.gz -- top -n 0 --granularity addresses g2.pb.gz
same "unit" -top -unit=B g2.pb.gz -- top -n 0 --unit B g2.pb.gz
same "base" -top -base=g1.pb.gz g2.pb.gz -- top -n 0 --base g1.pb.gz g2.pb.gz
same "tree" -tree g2.pb.gz -- tree g2.pb.gz
same "peek" -peek='alloc$|recurse' g2.pb.gz -- peek 'alloc$|recurse' g2.pb.gz

# heapsnap on the text dump and on its pprof conversion agree
"$HEAPSNAP" top -n 0 g.0002.heap > text.out || fail "top g.0002.heap"
"$HEAPSNAP" top -n 0 g2.pb.gz > proto.out || fail "top g2.pb.gz"
diff -u text.out proto.out >&2 || fail "top of the text dump and of its conversion differ"

# diff: the sites that grew by the amounts the program reports, matching
# pprof -diff_base (values in bytes, nothing trimmed)
run_hs -j diff -n 0 g1.pb.gz g2.pb.gz
expect_eq "$rc" 0 "diff: $err"
printf '%s' "$out" > diff.json
pprof -top -diff_base=g1.pb.gz -nodefraction=0 -unit=B g2.pb.gz > pdiff.out
grep '^grow ' expect.txt > grow.txt
python3 - <<'EOF' || fail "diff disagrees with the program or with pprof -diff_base"
import json, re
d = json.load(open("diff.json"))
rows = {r["name"]: r for r in d["rows"]}
grow = {l.split()[1]: int(l.split()[2]) for l in open("grow.txt")}
flat = {n: r["flat"] for n, r in rows.items() if r["flat"] != 0}
assert flat == grow, (flat, grow)
assert d["delta"] == sum(grow.values()), d["delta"]
assert d["new"]["total"] - d["base"]["total"] == d["delta"]
# percentages are of the base total
for r in d["rows"]:
    assert abs(r["flat_pct"] - 100.0 * r["flat"] / d["base"]["total"]) < 0.01, r
# pprof -diff_base: same rows, same values
p = {}
for l in open("pdiff.out"):
    m = re.match(r"\s*(-?\d+)B?\s+\S+\s+\S+\s+(-?\d+)B?\s+\S+\s+(.*)$", l)
    if m:
        p[m.group(3)] = (int(m.group(1)), int(m.group(2)))
h = {n: (r["flat"], r["cum"]) for n, r in rows.items()}
assert p == h, (p, h)
EOF

# jemalloc: an exact prof.dump (lg_prof_sample:0) read as heap_v2 names the
# same sites, and its conversion matches pprof too.
if [ -n "$JEMALLOC" ]; then
	LD_PRELOAD=$JEMALLOC MALLOC_CONF=prof:true,lg_prof_sample:0 "$PROG" jemalloc j1.heap j2.heap \
		>jexpect.txt 2>prog.err || fail "rep_sites jemalloc: $(cat prog.err)"
	run_hs -j top -n 0 j1.heap
	expect_eq "$rc" 0 "top j1.heap: $err"
	printf '%s' "$out" > jtop.json
	grep '^expect ' jexpect.txt | while read -r _ fn bytes; do
		got=$(python3 -c 'import json,sys; d=json.load(open("jtop.json"))
print(next((r["flat"] for r in d["rows"] if r["name"] == sys.argv[1]), "missing"))' "$fn")
		expect_eq "$got" "$bytes" "jemalloc: flat of $fn"
	done || exit 1
	run_hs convert j2.heap -o j2.pb.gz
	expect_eq "$rc" 0 "convert j2.heap: $err"
	same "jemalloc top" -top j2.pb.gz -- top -n 0 j2.pb.gz
	same "jemalloc tree" -tree j2.pb.gz -- tree j2.pb.gz
else
	note "libjemalloc.so.2 not installed: jemalloc part skipped"
fi
exit 0
