# demo.sh - `make demo`'s script against the current build: the leak (cache_insert) tops top and the diff, the churn tops alloc_space.
. "$TESTLIB"

[ -x "$TARGETS/demo_service" ] || skip "demo_service not built (make test-build)"
B=$HEAPSNAP_BUILD DEMO_DIR=$PWD DEMO_WAIT=3 timeout -k 5 60 sh "$SRCDIR/scripts/demo.sh" >demo.out 2>&1 </dev/null
rc=$?
cat demo.out >&2
expect_eq "$rc" 0 "scripts/demo.sh exit status"
[ -s demo.pb.gz ] && [ -s demo2.pb.gz ] || fail "the demo wrote no profiles"

# first_row CMD-PREFIX: the name in the first row of the report after "$ heapsnap CMD-PREFIX"
first_row() {
	awk -v c="\$ heapsnap $1" '
		index($0, c) == 1 { on = 1; next }
		on && /flat%/ { getline; print $NF, $1; exit }' demo.out
}
row=$(first_row "top -n 8")
expect_match "$row" '^cache_insert ' "the demo's top: first row"
row=$(first_row "diff")
expect_match "$row" '^cache_insert \+' "the demo's diff: first row"
row=$(first_row "top -n 5 --sample-index alloc_space")
expect_match "$row" '^render_response ' "the demo's alloc_space top: first row"
expect_match "$(cat demo.out)" 'sampling stopped, heapsnap unloaded' "the demo stops and unloads"

# the files are real pprof profiles: heapsnap reads them back, and the leak grew
"$HEAPSNAP" -j top demo2.pb.gz >top.json || fail "heapsnap top -j demo2.pb.gz failed"
grep -q '"cache_insert"' top.json || fail "cache_insert not in top -j of demo2.pb.gz"
pgrep -f "$TARGETS/demo_service" >/dev/null && fail "the demo service is still running"
exit 0
