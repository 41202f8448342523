# completion.sh - drive the bash completion function for real (and zsh's, through a pty, when zsh is installed).
. "$TESTLIB"

BASHCOMP=$SRCDIR/completions/heapsnap.bash
[ -f "$BASHCOMP" ] || fail "missing $BASHCOMP"

touch a.pb.gz b.heap c.hprof notes.txt
mkdir sub
sleep 60 &
SLEEPER=$!
trap 'kill $SLEEPER 2>/dev/null' EXIT

# bcomp WORDS...: the sorted matches of _heapsnap with the cursor on the last
# word, one a line (COMP_WORDS[0] is the heapsnap under test)
bcomp() {
	bash -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_heapsnap || exit 1
		printf "%s\n" "${COMPREPLY[@]}"' _ "$BASHCOMP" "$HEAPSNAP" "$@" | sort
}
# expect_set ACTUAL EXPECTED WHAT: same lines regardless of order
expect_set() {
	[ "$(printf '%s\n' "$1" | sort -u)" = "$(printf '%s\n' "$2" | sort -u)" ] ||
		fail "$3: got [$(echo $1)], expected [$(echo $2)]"
}

cmds=$("$HEAPSNAP" help --commands) || fail "help --commands failed"

# commands: every one, plus help
expect_set "$(bcomp '')" "$cmds
help" "bash: commands"
expect_set "$(bcomp -j '')" "$cmds
help" "bash: commands after a global option"
expect_set "$(bcomp t)" "$(printf '%s\n' $cmds | grep '^t')" "bash: commands starting with t"
expect_set "$(bcomp --v)" "--verbose
--version" "bash: global options"
expect_set "$(bcomp help st)" "$(printf '%s\n' $cmds | grep '^st')" "bash: help CMD"

# options of top: the ones its --help lists, and the options of each command
for c in $cmds; do
	expect_set "$(bcomp "$c" -)" "$("$HEAPSNAP" help --options "$c")
--help" "bash: options of $c"
done
top_opts=$(bcomp top --)
expect_match "$top_opts" '^--sample-index$' "bash: top --sample-index"
expect_match "$top_opts" '^--cum$' "bash: top --cum"

# option values
expect_set "$(bcomp convert a.pb.gz --format '')" "$(printf '%s\n' pprof jeprof gperf collapsed speedscope svg)" "bash: formats"
expect_set "$(bcomp dump 1 --format s)" "speedscope
svg" "bash: formats starting with s"
expect_set "$(bcomp top --sample-index '')" "$(printf '%s\n' inuse_space inuse_objects alloc_space alloc_objects)" "bash: sample indexes"
expect_set "$(bcomp top a.pb.gz --sample-index alloc_)" "alloc_space
alloc_objects" "bash: sample indexes after a file"

# operands: a PID after dump, profile files after top, both files of diff
pids=$(bcomp dump "$SLEEPER")
expect_match "$pids" "^$SLEEPER\$" "bash: the sleeper's PID after 'dump '"
pids=$(bcomp dump '')
expect_match "$pids" "^$$\$" "bash: this shell's PID after 'dump '"
printf '%s\n' "$pids" | grep -qv '^[0-9]*$' && fail "bash: non-PIDs offered after dump: $pids"
expect_set "$(bcomp dump --duration 3 "$SLEEPER")" "$SLEEPER" "bash: a PID after an option with a value"
expect_set "$(bcomp top '')" "a.pb.gz
b.heap
c.hprof
sub" "bash: profile files after top"
expect_set "$(bcomp diff a.pb.gz '')" "a.pb.gz
b.heap
c.hprof
sub" "bash: the second file of diff"
expect_set "$(bcomp top a.pb.gz '')" "" "bash: nothing after top's one FILE"
expect_set "$(bcomp top --base a)" "a.pb.gz" "bash: files after --base"
if printf '%s\n' $cmds | grep -qx shell; then
	expect_set "$(bcomp shell a.pb.gz '')" "a.pb.gz
b.heap
c.hprof
sub" "bash: any number of files after shell"
fi
if printf '%s\n' $cmds | grep -qx watch; then
	expect_match "$(bcomp watch "$SLEEPER")" "^$SLEEPER\$" "bash: a PID after watch"
	expect_set "$(bcomp watch "$SLEEPER" -o s)" "sub" "bash: a directory after watch -o"
	expect_set "$(bcomp watch --count 3 "$SLEEPER")" "$SLEEPER" "bash: a PID after watch --count N"
fi

# zsh: the same through a real interactive zsh, when there is one
if ! command -v zsh >/dev/null; then
	note "zsh not installed: zsh completion not driven"
	exit 0
fi
zcomp() {
	COMPDIR=$SRCDIR/completions timeout 20 zsh -f "$SRCDIR/tests/cli/zcomp.zsh" "$HEAPSNAP $*" | sort -u
}
expect_set "$(zcomp '')" "$cmds
help" "zsh: commands"
expect_set "$(zcomp t)" "$(printf '%s\n' $cmds | grep '^t')" "zsh: commands starting with t"
for c in top dump; do
	expect_set "$(zcomp "$c" -)" "$("$HEAPSNAP" help --options "$c")
--help" "zsh: options of $c"
done
expect_set "$(zcomp convert a.pb.gz --format '')" "$(printf '%s\n' pprof jeprof gperf collapsed speedscope svg)" "zsh: formats"
expect_set "$(zcomp top --sample-index '')" "$(printf '%s\n' inuse_space inuse_objects alloc_space alloc_objects)" "zsh: sample indexes"
expect_match "$(zcomp dump "$SLEEPER")" "^$SLEEPER\$" "zsh: the sleeper's PID after 'dump '"
z=$(zcomp top '')
expect_match "$z" '^a\.pb\.gz$' "zsh: pprof file after top"
expect_match "$z" '^c\.hprof$' "zsh: gperf file after top"
printf '%s\n' "$z" | grep -q '^notes\.txt$' && fail "zsh: non-profile file offered after top: $z"
exit 0
