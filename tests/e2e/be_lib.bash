# be_lib.bash - helpers for the native backend tests (sourced; needs $TGT_OUT/$TGT_PID from start_target on be_sites and fmt_lib.bash's top_flat).

# expect_site FILE FUNC: FUNC's flat inuse bytes and objects in FILE equal
# the target's "expect FUNC BYTES OBJECTS" line.
expect_site() {
	local want got
	want=$(awk -v f="$2" '$1 == "expect" && $2 == f { print $3 }' "$TGT_OUT")
	got=$(top_flat "$1" inuse_space "$2")
	note "$1: $2 $got bytes (expected $want)"
	expect_eq "$got" "$want" "$1: $2 inuse bytes"
	want=$(awk -v f="$2" '$1 == "expect" && $2 == f { print $4 }' "$TGT_OUT")
	expect_eq "$(top_flat "$1" inuse_objects "$2")" "$want" "$1: $2 inuse objects"
}

# late: make the target allocate site_late (SIGUSR1), wait (10 s max).
late() {
	local i
	kill -USR1 "$TGT_PID"
	for i in $(seq 1 100); do
		grep -q '^late done' "$TGT_OUT" && return 0
		sleep 0.1
	done
	fail "target did not allocate site_late"
}
