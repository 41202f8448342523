# usage.sh - command line contract: usage errors (64), help, version, unreadable files (1), -j documents.
. "$TESTLIB"

# A small exact profile in gperftools text, written here so the test needs
# no other tool: two sites under one caller (unsymbolized: names are 0x...).
cat > t.hprof <<'EOF'
heap profile:      3:     7168 [     5:     9216] @ heapprofile
     2:     4096 [     3:     6144] @ 0x0000000000401234 0x0000000000405678
     1:     3072 [     2:     3072] @ 0x0000000000401300 0x0000000000405678
EOF

# expect_usage ARGS...: exit 64, empty stdout, a "usage:" line on stderr
expect_usage() {
	run_hs "$@"
	expect_eq "$rc" 64 "heapsnap $* exit status"
	expect_eq "$out" "" "heapsnap $* stdout"
	expect_match "$err" '^usage: heapsnap ' "heapsnap $* usage line"
}

# json_ok TEXT WHAT: TEXT is exactly one JSON document
json_ok() {
	printf '%s' "$1" | python3 -c 'import json, sys; json.load(sys.stdin)' ||
		fail "$2: not valid JSON: $1"
}

need_cmd python3

# ---- usage errors -------------------------------------------------------
expect_usage
expect_match "$err" '^heapsnap: no command given$' "no args message"
expect_usage frobnicate
expect_match "$err" "^heapsnap: unknown command 'frobnicate'$" "unknown command"
expect_usage --bogus
expect_usage top
expect_match "$err" '^usage: heapsnap top FILE' "top usage line"
expect_usage top t.hprof --bogus
expect_match "$err" "^heapsnap: unknown option '--bogus'" "unknown long option"
expect_usage top t.hprof -x
expect_match "$err" "^heapsnap: unknown option '-x'" "unknown short option"
expect_usage top t.hprof -n
expect_match "$err" "^heapsnap: option '-n' needs a value" "missing value"
expect_usage top t.hprof -n many
expect_usage top t.hprof t.hprof
expect_usage top --sample-index wrong t.hprof
expect_match "$err" "unknown sample index 'wrong' \(valid: inuse_space, inuse_objects, alloc_space, alloc_objects\)" "sample index names the valid ones"
expect_usage top --unit parsecs t.hprof
expect_usage top --granularity bogus t.hprof
expect_usage top --focus 'a(' t.hprof
expect_match "$err" "bad --focus regex 'a\('" "bad regex"
expect_usage peek t.hprof
expect_usage list t.hprof
expect_usage diff t.hprof
expect_usage convert t.hprof
expect_match "$err" 'no output file' "convert without -o"
expect_usage convert t.hprof -o x --format bogus

# ---- help and version -----------------------------------------------------
run_hs --help
expect_eq "$rc" 0 "--help exit"
expect_match "$out" '^usage: heapsnap ' "--help usage"
run_hs --version
expect_eq "$rc" 0 "--version exit"
expect_match "$out" '^heapsnap [0-9]+\.[0-9]+\.[0-9]+$' "--version output"
run_hs help --commands
expect_eq "$rc" 0 "help --commands exit"
[ -n "$out" ] || fail "help --commands lists nothing"
for c in $out; do
	run_hs "$c" --help
	expect_eq "$rc" 0 "$c --help exit"
	expect_match "$out" "^usage: heapsnap $c" "$c --help usage line"
	run_hs help "$c"
	expect_eq "$rc" 0 "help $c exit"
done
for c in top list peek tree diff convert; do
	run_hs "$c" --help
	expect_match "$out" '--json' "$c --help lists its options"
done

# ---- files that cannot be read ------------------------------------------
for c in top tree; do
	run_hs "$c" nope.pb.gz
	expect_eq "$rc" 1 "$c missing file exit"
	expect_eq "$err" "heapsnap: cannot read 'nope.pb.gz': No such file or directory" "$c missing file message"
	expect_eq "$out" "" "$c missing file stdout"
done
run_hs diff t.hprof nope.pb.gz
expect_eq "$rc" 1 "diff missing file exit"
expect_eq "$err" "heapsnap: cannot read 'nope.pb.gz': No such file or directory" "diff missing file"
run_hs top --base nope.pb.gz t.hprof
expect_eq "$err" "heapsnap: cannot read 'nope.pb.gz': No such file or directory" "missing --base"

printf 'garbage\001\002' > bad.pb.gz
head -c 40 /dev/urandom | gzip -c | head -c 30 > trunc.pb.gz
for f in bad.pb.gz trunc.pb.gz; do
	for j in "" -j; do
		run_hs $j top "$f"
		expect_eq "$rc" 1 "corrupt $f exit"
		expect_eq "$out" "" "corrupt $f: stdout must be empty"
		expect_eq "$(printf '%s\n' "$err" | wc -l)" 1 "corrupt $f: one line"
		expect_match "$err" "^heapsnap: cannot read '$f': .+" "corrupt $f message"
	done
done
run_hs -j peek nosuchfunction t.hprof
expect_eq "$rc" 1 "peek without match"
expect_eq "$out" "" "peek without match: stdout"
expect_match "$err" '^heapsnap: no matches found for regexp: nosuchfunction$' "peek no match message"

# ---- reports and -j -------------------------------------------------------
run_hs top t.hprof -n 1
expect_eq "$rc" 0 "top with options after the file"
expect_match "$out" '^Showing top 1 nodes out of 3$' "top -n 1"
run_hs convert t.hprof -o t.pb.gz
expect_eq "$rc" 0 "convert exit"
[ -s t.pb.gz ] || fail "convert wrote nothing"

for args in "top t.hprof" "top --cum --sample-index inuse_objects t.pb.gz" "tree t.hprof" \
	    "peek 0x405677 t.hprof" "list . t.hprof" "diff t.hprof t.pb.gz" \
	    "top --base t.hprof t.pb.gz" "convert t.hprof -o u.pb.gz"; do
	run_hs -j $args
	expect_eq "$rc" 0 "-j $args exit"
	json_ok "$out" "-j $args"
	run_hs $args -j
	expect_eq "$rc" 0 "$args -j exit"
	json_ok "$out" "$args -j"
done

run_hs -j top t.hprof
printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["type"] == "inuse_space" and d["unit"] == "bytes", d
assert d["total"] == 7168, d["total"]
r = d["rows"]
assert [x["name"] for x in r] == ["0x401233", "0x4012ff", "0x405677"], r
assert [x["flat"] for x in r] == [4096, 3072, 0], r
assert r[2]["cum"] == 7168 and r[2]["cum_pct"] == 100, r
assert abs(r[0]["flat_pct"] - 57.14) < 0.01 and r[1]["sum_pct"] == 100, r
' || fail "top -j content"

run_hs -j diff t.hprof t.pb.gz
printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["base"]["total"] == 7168 and d["new"]["total"] == 7168 and d["delta"] == 0, d
assert d["rows"] == [], d
' || fail "diff -j of a file with itself"
exit 0
