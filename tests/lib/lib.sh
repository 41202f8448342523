# lib.sh - helpers shared by the shell tests; source "$TESTLIB".
# Conventions: a test exits 0 on pass, 77 on skip (last line says why),
# anything else on failure.  Every wait is bounded.

set -u

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
note() { echo "# $*" >&2; }

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() { [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; }

# expect_match TEXT REGEX WHAT
expect_match() { printf '%s\n' "$1" | grep -Eq -- "$2" || fail "$3: '$2' not found in: $1"; }

# run_hs ARGS... : run heapsnap, capture stdout/stderr/status in $out $err $rc
run_hs() {
	local o e
	o=$(mktemp) e=$(mktemp)
	"$HEAPSNAP" "$@" >"$o" 2>"$e"
	rc=$?
	out=$(cat "$o") err=$(cat "$e")
	rm -f "$o" "$e"
}

# start_target PROG [ARGS...]: start a test target in the background with
# its stdout in $TGT_OUT, wait (5 s max) until it prints "ready", set $TGT_PID.
start_target() {
	TGT_OUT=$(mktemp)
	"$@" >"$TGT_OUT" 2>&1 &
	TGT_PID=$!
	local i
	for i in $(seq 1 500); do
		grep -q '^ready' "$TGT_OUT" 2>/dev/null && return 0
		kill -0 "$TGT_PID" 2>/dev/null || fail "target $1 died before ready: $(cat "$TGT_OUT")"
		sleep 0.01
	done
	fail "target $1 not ready after 5 s: $(cat "$TGT_OUT")"
}

# stop_target [SIGNAL]: stop the target, return its exit status in $TGT_RC
stop_target() {
	kill -"${1:-TERM}" "$TGT_PID" 2>/dev/null
	wait "$TGT_PID"
	TGT_RC=$?
}

# need_cmd CMD...: skip unless every command exists
need_cmd() { local c; for c in "$@"; do command -v "$c" >/dev/null || skip "$c not installed"; done; }
