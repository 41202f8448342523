# fmt_lib.bash - helpers for the real-tool format tests (jemalloc-real.sh,
# gperf-real.sh, jeprof-roundtrip.sh); source after $TESTLIB.

FMT_SITES=$TARGETS/fmt_sites
[ -x "$FMT_SITES" ] || fail "test target $FMT_SITES not built"
[ -x "$HEAPSNAP" ] || fail "heapsnap not built ($HEAPSNAP)"

# lib_path NAME: absolute path of a shared library from the loader cache.
lib_path() {
	ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n && /x86-64|AArch64|64bit/ { print $NF; exit }'
}

# top_flat FILE INDEX FUNC: FUNC's flat value in `heapsnap top` (exact, in
# bytes or objects), or nothing when FUNC is not a row.
top_flat() {
	"$HEAPSNAP" top "$1" --unit B -n 1000 --sample-index "$2" 2>top.err |
		awk -v f="$3" '$NF == f { v = $1; sub(/B$/, "", v); print v; exit }'
}

# check_expect FILE EXPECTFILE [alloc]: every `expect FUNC BYTES OBJECTS`
# line (`expect-alloc` with alloc) must be FUNC's flat inuse (alloc) space
# and objects in FILE, exactly.
check_expect() {
	local file=$1 exp=$2 kind=${3:-inuse} tag=expect fn bytes objs got n=0
	[ "$kind" = alloc ] && tag=expect-alloc
	while read -r t fn bytes objs; do
		[ "$t" = "$tag" ] || continue
		got=$(top_flat "$file" ${kind}_space "$fn")
		[ -n "$got" ] || fail "$file: $fn not in heapsnap top --sample-index ${kind}_space: $("$HEAPSNAP" top "$file" --unit B --sample-index ${kind}_space 2>&1)"
		expect_eq "$got" "$bytes" "$file: $fn ${kind}_space"
		got=$(top_flat "$file" ${kind}_objects "$fn")
		expect_eq "$got" "$objs" "$file: $fn ${kind}_objects"
		n=$((n + 1))
	done <"$exp"
	[ $n -gt 0 ] || fail "no '$tag' lines in $exp"
	note "$file: $n sites with exact $kind bytes and objects"
}

# first_row TEXT: the name in the first row of a pprof-style top table.
first_row() { printf '%s\n' "$1" | grep -A1 'flat  flat%' | tail -n 1 | awk '{ print $NF }'; }
# top_total TEXT: T from "... of T total" (pprof and heapsnap top headers).
top_total() { printf '%s\n' "$1" | sed -n 's/.* of \([0-9.]*[a-zA-Z]*\) total.*/\1/p' | head -n 1; }
