# shell-pty.sh - `heapsnap attach` driven through a real terminal (tmux): snapshot, top, diff, Tab completion, history across sessions, Ctrl-C, Ctrl-D, a target that dies.
source "$TESTLIB"
source "$SRCDIR/tests/e2e/leaky_lib.bash"
need_cmd tmux
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$TARGETS/sh_leaky" ] || skip "sh_leaky not built"

NSESS=0
export XDG_STATE_HOME=$PWD/state
tm() { tmux -S "$PWD/tmux.$NSESS.sock" "$@"; }
trap 'tm kill-server 2>/dev/null; kill -9 $TGT_PID 2>/dev/null' EXIT

# open_shell: heapsnap attach in a fresh tmux session "hs"; the pane stays
# after heapsnap ends and shows its exit status as "EXIT=N".
open_shell() {
	# a tmux server of its own per session: a server whose last session
	# was just killed may still be going away
	tm kill-server 2>/dev/null
	NSESS=$((NSESS + 1))
	tm new-session -d -s hs -x 160 -y 50 \
		"env TERM=xterm HEAPSNAP_PAYLOAD='$HEAPSNAP_PAYLOAD' XDG_STATE_HOME='$XDG_STATE_HOME' \
		 '$HEAPSNAP' attach $TGT_PID --rate 4096; echo EXIT=\$?; sleep 600" ||
		fail "cannot start tmux session $NSESS"
	wait_screen '^\(heapsnap\) ?$' "the first prompt"
}
screen() { tm capture-pane -p -S -200 -t hs; }
# wait_screen REGEX WHAT: until the pane shows REGEX (20 s max)
wait_screen() {
	local i
	for i in $(seq 1 200); do
		screen | grep -Eq -- "$1" && return 0
		sleep 0.1
	done
	fail "$2: '$1' never appeared on screen:
$(screen)"
}
# count_screen REGEX: how many lines match now
count_screen() { screen | grep -Ec -- "$1"; }
# run_cmd CMD REGEX: type CMD and Enter, wait for REGEX and a fresh prompt
run_cmd() {
	local n
	n=$(count_screen '^\(heapsnap\)')
	tm send-keys -t hs -l "$1"
	tm send-keys -t hs Enter
	wait_screen "$2" "'$1'"
	local i
	for i in $(seq 1 200); do
		[ "$(count_screen '^\(heapsnap\)')" -gt "$n" ] && screen | grep . | tail -n 1 | grep -Eq '^\(heapsnap\) ?$' && return 0
		sleep 0.1
	done
	fail "no prompt after '$1':
$(screen)"
}

start_target "$TARGETS/sh_leaky"

## session 1: snapshot, top, grow, snapshot, diff, Tab, Ctrl-C, Ctrl-D
open_shell
payload_in || fail "attach did not load heapsnap"
run_cmd "snapshot" '^s1: '
grow
run_cmd "snapshot" '^s2: .*4MB in use'
run_cmd "top 5" 'leak_on_signal'
run_cmd "diff" '\+4MB +n/a.*leak_on_signal|\+4MB .*leak_on_signal'
expect_match "$(screen)" '^New: +s2' "diff names the snapshots"

# Tab completes a function name of the current snapshot.
tm send-keys -t hs -l "list leak_on_s"
tm send-keys -t hs Tab
wait_screen '^\(heapsnap\) list leak_on_signal ?$' "Tab completion of a function"
tm send-keys -t hs Enter
wait_screen 'ROUTINE ======================== leak_on_signal' "list after completion"
tm send-keys -t hs -l "snapsh"
tm send-keys -t hs Tab
wait_screen '^\(heapsnap\) snapshot$' "Tab completion of a command (prefix of two)"
tm send-keys -t hs -l "s"
tm send-keys -t hs Enter
wait_screen '^  NAME +STACKS' "completed command runs"

# Ctrl-C cancels a long command, not the session.
# (snapshots first: its output proves the line was read, so the Ctrl-C
# cannot land at the prompt instead; a Ctrl-C after Enter cancels the
# command whenever it starts.)
n=$(count_screen '^  NAME +STACKS')
tm send-keys -t hs -l "snapshots; sleep 3600"
tm send-keys -t hs Enter
for i in $(seq 1 200); do
	[ "$(count_screen '^  NAME +STACKS')" -gt "$n" ] && break
	sleep 0.1
done
tm send-keys -t hs C-c
wait_screen '^heapsnap: interrupted$' "Ctrl-C during sleep"
run_cmd "snapshots" '^\* s2 '
# Ctrl-C at the prompt drops the line being typed.
tops=$(screen | grep -c 'Showing nodes')
tm send-keys -t hs -l "top 999 garbage"
wait_screen '^\(heapsnap\) top 999 garbage$' "typed line"
tm send-keys -t hs C-c
run_cmd "status" 'sampling \(interpose backend\)'
expect_eq "$(screen | grep -c 'Showing nodes')" "$tops" "the dropped line did not run"

# Ctrl-D quits like quit: heapsnap leaves the target.
tm send-keys -t hs C-d
wait_screen '^EXIT=0$' "Ctrl-D exit status"
expect_match "$(screen)" 'sampling stopped, heapsnap unloaded' "Ctrl-D unloads"
payload_in && fail "payload still mapped after Ctrl-D"
kill -0 "$TGT_PID" || fail "the target died"

## history file: private, holds session 1's commands
[ -f "$XDG_STATE_HOME/heapsnap/history" ] || fail "no history file"
expect_eq "$(stat -c %a "$XDG_STATE_HOME/heapsnap/history")" 600 "history file mode"
grep -q '^status$' "$XDG_STATE_HOME/heapsnap/history" || fail "status not in the history"

## session 2: Up recalls session 1's last command; the target dies
open_shell
tm send-keys -t hs Up
wait_screen '^\(heapsnap\) status$' "Up recalls the last command of the previous session"
tm send-keys -t hs C-u
grow
run_cmd "snapshot before" '^before: '
kill -9 "$TGT_PID"
wait "$TGT_PID" 2>/dev/null
run_cmd "top 3" 'leak_on_signal'
expect_match "$(screen)" 'target pid [0-9]+ exited; snapshots kept for analysis' "death is reported"
run_cmd "snapshot" 'has exited; only the snapshots are left'
run_cmd "top 3 -cum" 'main'
# Tab completes snapshot names too.
tm send-keys -t hs -l "use bef"
tm send-keys -t hs Tab
wait_screen '^\(heapsnap\) use before ?$' "Tab completion of a snapshot name"
tm send-keys -t hs Enter
wait_screen '^before: ' "use after completion"
[ "$(screen | grep -c 'exited; snapshots kept')" = 1 ] || fail "the death message was not said exactly once"
tm send-keys -t hs C-d
wait_screen '^EXIT=0$' "Ctrl-D after the target died"
