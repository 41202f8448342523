#!/bin/sh
# demo.sh - `make demo`: start the bundled demo service, dump its heap, show top, diff two dumps, stop.
#
# Expects a built tree (`make demo` builds first).  Environment:
#   B          build directory (default build)
#   DEMO_DIR   where the profiles go (default $B/demo)
#   DEMO_WAIT  seconds between the two dumps (default 5)
# Needs no terminal; exits non-zero when a step fails.
set -eu

B=${B:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
HS=$B/heapsnap
SERVICE=$B/tests/targets/demo_service
DIR=${DEMO_DIR:-$B/demo}
WAIT=${DEMO_WAIT:-5}
# Run from the build tree: the payload is beside the binary.
HEAPSNAP_PAYLOAD=${HEAPSNAP_PAYLOAD:-$B/libheapsnap-payload.so}
export HEAPSNAP_PAYLOAD

for f in "$HS" "$SERVICE" "$HEAPSNAP_PAYLOAD"; do
	[ -e "$f" ] || { echo "demo: $f is missing; run 'make demo' (or make B=$B all test-build)" >&2; exit 1; }
done
mkdir -p "$DIR"
rm -f "$DIR/demo.pb.gz" "$DIR/demo2.pb.gz"

# show CMD...: print the command as a user would type it, then run it
show() {
	echo
	echo "\$ $*" | sed "s|$B/heapsnap|heapsnap|; s|$DIR/||g"
	"$@"
}

"$SERVICE" 60 >"$DIR/service.log" 2>&1 &
pid=$!
cleanup() {
	"$HS" -q stop "$pid" >/dev/null 2>&1 || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

i=0
until grep -q '^ready' "$DIR/service.log" 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 100 ] || { echo "demo: the demo service did not start: $(cat "$DIR/service.log")" >&2; exit 1; }
	kill -0 "$pid" 2>/dev/null || { echo "demo: the demo service died: $(cat "$DIR/service.log")" >&2; exit 1; }
	sleep 0.05
done
echo "demo: started the demo service (pid $pid; it leaks in cache_insert, churns elsewhere)"
sleep 1

# Load heapsnap and sample for 3 s (one sample per 32 KiB allocated); --keep leaves it sampling so the second
# dump is a snapshot of the same session and the diff shows what stayed.
show "$HS" dump "$pid" -o "$DIR/demo.pb.gz" --duration 3 --rate 32K --keep
show "$HS" top -n 8 "$DIR/demo.pb.gz"
echo
echo "demo: waiting $WAIT s for the leak to grow"
sleep "$WAIT"
show "$HS" dump "$pid" -o "$DIR/demo2.pb.gz"
show "$HS" diff -n 8 "$DIR/demo.pb.gz" "$DIR/demo2.pb.gz"
echo
echo "demo: churn allocates far more than the leak, but frees it again:"
show "$HS" top -n 5 --sample-index alloc_space "$DIR/demo2.pb.gz"
show "$HS" stop "$pid"
echo
echo "demo: the profiles are in $DIR (try: heapsnap list cache_insert $DIR/demo2.pb.gz)"
