# payload-cxx.sh - C++ allocations (every operator new form, vector/string/map growth) under their names, exact at rate 1.
source "$TESTLIB"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$TARGETS/pl_known_cxx" ] || skip "pl_known_cxx not built"

mkfifo cmds
exec 7<>cmds
start_target bash -c 'exec "$0" cmd <cmds' "$TARGETS/pl_known_cxx"
trap 'kill -9 $TGT_PID 2>/dev/null' EXIT
send() {
	local verb=${1%% *} i
	echo "$1" >&7
	for i in $(seq 1 600); do
		grep -q "^done $verb\$" "$TGT_OUT" && return 0
		sleep 0.1
	done
	fail "target did not finish '$1'"
}

run_hs start "$TGT_PID" --rate 1
expect_eq "$rc" 0 "start: $err"
send alloc
run_hs dump "$TGT_PID" -o cxx.pb.gz
expect_eq "$rc" 0 "dump: $err"
run_hs stop "$TGT_PID"
expect_eq "$rc" 0 "stop: $err"

run_hs convert cxx.pb.gz -o cxx.folded --format collapsed
expect_eq "$rc" 0 "convert: $err"
# Bytes of the stacks passing through function $1 (frames are ;-separated,
# C++ names carry their parameter list).
through() {
	awk -v f="$1" '{ v = $NF; $NF = ""; sub(/ $/, ""); n = split($0, fr, ";");
		for (i = 1; i <= n; i++) if (fr[i] == f || index(fr[i], f "(") == 1) { s += v; break } }
		END { print s + 0 }' cxx.folded
}
for site in cnew carr cal cnt vec str map; do
	want=$(awk -v s="$site" '$1 == "expect" && $2 == s {print $3}' "$TGT_OUT")
	expect_eq "$(through "site_$site")" "$want" "inuse bytes under site_$site"
done
expect_eq "$(through site_cdel)" 0 "inuse bytes under site_cdel (all deleted)"
# The growth happens inside the standard library's own functions.
grep -q 'std::vector<int, std::allocator<int> >::_M_realloc_insert' cxx.folded ||
	fail "no std::vector growth frame: $(cut -c1-200 cxx.folded)"
grep -q 'std::_Rb_tree<' cxx.folded || fail "no std::map node frame"
grep -q 'std::__cxx11::basic_string<' cxx.folded || fail "no std::string growth frame"

echo quit >&7
wait "$TGT_PID"
expect_eq "$?" 0 "target's own heap check"
trap - EXIT
