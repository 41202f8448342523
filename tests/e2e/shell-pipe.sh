# shell-pipe.sh - the heapsnap shell read from a pipe: attach scripts (detach, EOF = quit, start/stop twice), offline `heapsnap shell FILE...` with top/list/diff/export, errors that keep it going, -j.
source "$TESTLIB"
source "$SRCDIR/tests/e2e/leaky_lib.bash"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$TARGETS/sh_leaky" ] || skip "sh_leaky not built"
trap 'kill -9 $TGT_PID 2>/dev/null' EXIT

start_target "$TARGETS/sh_leaky"
# hs_in INPUT ARGS...: run heapsnap ARGS with INPUT on stdin ($out $err $rc)
hs_in() {
	local input=$1
	shift
	run_hs "$@" <<<"$input"
}

## attach from a script: two commands on a line, start/stop twice, detach
hs_in 'snapshot base; top 5
start; start
stop ; stop; start
save base a.pb.gz
detach' attach "$TGT_PID" --rate 4096
expect_eq "$rc" 0 "attach script: $err"
expect_match "$out" '^base: [0-9]+ stacks' "snapshot with a name"
expect_match "$out" 'Showing nodes accounting for' "top"
[ "$(grep -c 'already sampling' <<<"$out")" = 2 ] || fail "start twice should say 'already sampling' (twice here): $out"
expect_match "$out" 'already stopped' "stop twice"
expect_match "$out" 'wrote a.pb.gz \(base, pprof\)' "save"
expect_match "$out" 'detached, heapsnap left sampling' "detach"
[ -z "$err" ] || fail "attach script wrote to stderr: $err"
payload_in || fail "detach unloaded heapsnap"
case $out in *'(heapsnap)'*) fail "prompt printed on a pipe: $out" ;; esac

grow

## attach again (already sampling), EOF = quit
hs_in 'snapshot grown; save grown b.pb.gz; diff base grown' attach "$TGT_PID"
expect_eq "$rc" 1 "diff of an unknown snapshot fails the script"
expect_match "$out" 'already sampling' "second attach finds it sampling"
expect_match "$out" '^grown: .*4MB in use' "snapshot after growth"
expect_match "$err" "no snapshot named 'base'" "snapshots belong to their session"
expect_match "$out" 'sampling stopped, heapsnap unloaded' "EOF does what quit does"
payload_in && fail "payload still loaded after EOF"

## SIGINT cancels a command; SIGTERM ends the session as quit does
mkfifo in
exec 8<>in
"$HEAPSNAP" attach "$TGT_PID" <in >term.out 2>term.err &
HPID=$!
echo 'snapshots; sleep 3600' >&8
for i in $(seq 1 200); do
	grep -q 'no snapshots' term.out && break
	sleep 0.1
done
grep -q 'no snapshots' term.out || fail "attach from a fifo: $(cat term.out term.err)"
kill -INT "$HPID"
echo 'status' >&8
for i in $(seq 1 200); do
	grep -q 'rate ' term.out && break
	sleep 0.1
done
expect_match "$(cat term.err)" '^heapsnap: interrupted$' "SIGINT during sleep"
expect_match "$(cat term.out)" 'sampling \(interpose' "status after SIGINT"
payload_in || fail "heapsnap not loaded while attached"
kill -TERM "$HPID"
for i in $(seq 1 200); do
	kill -0 "$HPID" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$HPID" 2>/dev/null && fail "attach did not end on SIGTERM"
wait "$HPID"
expect_eq "$?" 1 "exit status after SIGTERM (a command was interrupted)"
expect_match "$(cat term.out)" 'sampling stopped, heapsnap unloaded' "SIGTERM does what quit does"
payload_in && fail "payload still loaded after SIGTERM"
exec 8>&-

## offline on the files
hs_in 'snapshots
top 3
bogus command
snapshots extra
top 3 -cum
diff
list leak_on
peek leak_on_signal
diff b a
focus nomatch_at_all; top; focus; top 1
sample_index alloc_space; top 2; sample_index inuse_space
export b b.folded; export b flame.svg --format svg; export a a.heap --format jeprof
save b b.svg
load b.pb.gz
snapshot' shell a.pb.gz b.pb.gz
expect_eq "$rc" 1 "offline script with errors"
expect_match "$out" '^  a +[0-9]+ +[0-9.a-zA-Z]+ +a\.pb\.gz' "files are named after their base names"
expect_match "$out" '^\* b ' "the last loaded is current"
expect_match "$err" "unknown command 'bogus'" "bad command"
expect_match "$err" "too many operands; usage: snapshots$" "operands checked from the table"
[ "$(grep -c 'Showing nodes accounting for' <<<"$out")" -ge 4 ] || fail "reports after the error missing: $out"
expect_match "$out" 'New: +b, inuse_space total 4MB' "diff defaults to the last two"
expect_match "$out" '^ +\+4MB .* leak_on_signal$' "diff shows the growth"
expect_match "$out" '^ +-4MB .* leak_on_signal$' "diff b a shows the shrink"
expect_match "$out" 'ROUTINE =+ leak_on_signal' "list"
expect_match "$out" 'focus cleared' "focus without an argument clears"
expect_match "$out" 'sample_index: alloc_space' "sample_index"
expect_match "$out" 'wrote b.folded \(b, collapsed\)' "export by suffix"
expect_match "$out" 'wrote flame.svg \(b, svg\)' "export --format"
expect_match "$err" "save writes profiles heapsnap can load again" "save refuses svg"
expect_match "$err" "no live process" "snapshot offline"
expect_match "$out" '^s[0-9]+: .*b\.pb\.gz' "load of a taken name gets a default name"
grep -q ';main;leak_on_signal [0-9]' b.folded || fail "b.folded has no leak stack: $(head -3 b.folded)"
grep -q '<svg' flame.svg || fail "flame.svg is not an svg"
run_hs top a.heap
expect_eq "$rc" 0 "exported jeprof reads back: $err"

## files that do not load do not stop the shell
hs_in 'top 1' shell missing.pb.gz b.pb.gz
expect_eq "$rc" 1 "missing file"
expect_match "$err" "cannot read 'missing.pb.gz'" "missing file message"
expect_match "$out" 'leak_on_signal' "the other file still works"

## -j: each report is one JSON document
hs_in 'top 3' -j shell b.pb.gz
expect_eq "$rc" 0 "-j shell: $err"
sed -n '/^[{[]/,$p' <<<"$out" | python3 -c 'import json,sys; json.load(sys.stdin)' ||
	fail "-j top is not JSON: $out"
true
