#!/bin/bash
# run.sh - run every test: unit binaries, then injector, CLI and e2e scripts.
# A test passes with exit 0, is skipped with exit 77 (its last stderr line
# says why), fails otherwise.  Logs go to tests/logs/<name>.log.
# Usage: tests/run.sh [PATTERN...]   (substring filters on test names)
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
export HEAPSNAP_BUILD=${HEAPSNAP_BUILD:-$ROOT/build}
export HEAPSNAP=$HEAPSNAP_BUILD/heapsnap
export HEAPSNAP_PAYLOAD=${HEAPSNAP_PAYLOAD:-$HEAPSNAP_BUILD/libheapsnap-payload.so}
export TARGETS=$HEAPSNAP_BUILD/tests/targets
export TESTLIB=$ROOT/tests/lib/lib.sh
export SRCDIR=$ROOT
LOGDIR=$ROOT/tests/logs
mkdir -p "$LOGDIR"

tests=()
for t in "$HEAPSNAP_BUILD"/tests/unit/test_*; do [ -x "$t" ] && tests+=("$t"); done
for d in inject cli e2e; do
	for t in tests/$d/*.sh; do [ -f "$t" ] && tests+=("$ROOT/$t"); done
done

pass=0 fail=0 skip=0 failed=()
for t in "${tests[@]}"; do
	name=${t#"$HEAPSNAP_BUILD"/}; name=${name#"$ROOT"/}
	if [ $# -gt 0 ]; then
		m=0; for p in "$@"; do [[ $name == *"$p"* ]] && m=1; done
		[ $m = 1 ] || continue
	fi
	log=$LOGDIR/$(echo "$name" | tr / _).log
	start=$(date +%s)
	# Each test gets its own scratch dir and a generous ceiling; tests bound
	# their own waits, this only stops a runaway from eating the CI budget.
	tmp=$(mktemp -d /tmp/hs-test.XXXXXX)
	( cd "$tmp" && TMPDIR=$tmp timeout -k 10 600 bash -c '
		case "$1" in *.sh) exec bash "$1" ;; *) exec "$1" ;; esac' _ "$t" ) >"$log" 2>&1 </dev/null
	rc=$?
	rm -rf "$tmp"
	secs=$(( $(date +%s) - start ))
	case $rc in
	0)  pass=$((pass + 1)); printf 'PASS  %-50s %3ss\n' "$name" "$secs" ;;
	77) skip=$((skip + 1)); printf 'SKIP  %-50s %s\n' "$name" "$(tail -n 1 "$log")" ;;
	*)  fail=$((fail + 1)); failed+=("$name")
	    printf 'FAIL  %-50s %3ss (exit %d)\n' "$name" "$secs" "$rc"
	    tail -n 25 "$log" | sed 's/^/      | /' ;;
	esac
done

echo
[ ${#failed[@]} -gt 0 ] && printf 'failed: %s\n' "${failed[@]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
