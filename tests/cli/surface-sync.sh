# surface-sync.sh - --help, help --commands, the man page, the README and the bash/zsh completions agree on commands and options.
. "$TESTLIB"

MAN=$SRCDIR/man/heapsnap.1
BASHCOMP=$SRCDIR/completions/heapsnap.bash
for f in "$MAN" "$BASHCOMP" "$SRCDIR/completions/_heapsnap" "$SRCDIR/README.md"; do
	[ -f "$f" ] || fail "missing $f"
done

# same LEFT RIGHT WHAT: the same set of words
same() {
	local l r
	l=$(printf '%s\n' $1 | sort -u) r=$(printf '%s\n' $2 | sort -u)
	[ "$l" = "$r" ] || fail "$3 disagree: [$(echo $l)] vs [$(echo $r)]; only left: [$(comm -23 <(echo "$l") <(echo "$r") | xargs)], only right: [$(comm -13 <(echo "$l") <(echo "$r") | xargs)]"
}

cmds=$("$HEAPSNAP" help --commands) || fail "help --commands failed"
[ -n "$cmds" ] || fail "help --commands lists nothing"

# ---- --help lists the same commands ---------------------------------------
help_cmds=$("$HEAPSNAP" --help | sed -n '/^Commands:/,/^Global options:/p' | sed -n 's/^  \([a-z_][a-z_]*\)  *.*/\1/p')
same "$cmds" "$help_cmds" "help --commands and --help"

# ---- the man page: one .SS per command under COMMANDS, .TP per option -----
man_cmds=$(sed -n '/^\.SH COMMANDS/,/^\.SH /s/^\.SS \([a-z_]*\)$/\1/p' "$MAN")
same "$cmds" "$man_cmds" "help --commands and the man page's COMMANDS"

# man_opts CMD: the options of the .TP items in CMD's .SS block
man_opts() {
	awk -v c="$1" '
		/^\.S[HS] / { inblk = ($0 == ".SS " c) }
		inblk && tp { print; tp = 0; next }
		inblk && /^\.TP/ { tp = 1 }' "$MAN" |
		sed 's/\\-/-/g' | grep -oE '(^|[ "])--?[a-zA-Z][a-zA-Z-]*' | sed 's/^[ "]//' | grep -v '^-$'
}
for c in $cmds; do
	opts=$("$HEAPSNAP" help --options "$c") || fail "help --options $c failed"
	same "$opts" "$(man_opts "$c")" "help --options $c and the man page"
	# what --help documents, the command accepts
	for o in $opts; do
		e=$(timeout 10 "$HEAPSNAP" "$c" "$o" </dev/null 2>&1 >/dev/null)
		case $e in *"unknown option"*) fail "$c --help lists $o but $c rejects it: $e" ;; esac
	done
	# and the usage line names the long options too
	u=$("$HEAPSNAP" "$c" --help | head -n 1)
	for o in $(printf '%s\n' $opts | grep '^--'); do
		case $o in --json) continue ;; esac
		# or its short form ("-o, --output FILE")
		short=$("$HEAPSNAP" "$c" --help | sed -nE "s/^ +(-[a-zA-Z]), $o( .*|)$/\1/p")
		case $u in *"$o"*) ;; *"${short:-$o}"*) ;; *) fail "$c: $o is in the option list but not in the usage line: $u" ;; esac
	done
done
global_help=$("$HEAPSNAP" --help | sed -n '/^Global options:/,/^$/p' | grep -oE '(^|[ ,])--?[a-z][a-z-]*' | sed 's/^[ ,]//')
global_man=$(sed -n '/^\.SH GLOBAL OPTIONS/,/^\.SH /p' "$MAN" | awk 'tp { print; tp = 0 } /^\.TP/ { tp = 1 }' |
	sed 's/\\-/-/g' | grep -oE '(^|[ "])--?[a-zA-Z][a-zA-Z-]*' | sed 's/^[ "]//')
same "$global_help" "$global_man" "global options of --help and the man page"

# ---- value lists: what help names, the completions offer ------------------
# help_values CMD OPTION: the comma-separated words after "OPTION X" in CMD's help
help_values() {
	"$HEAPSNAP" "$1" --help | grep -E -- "^ +(-., )?$2 " | head -n 1 |
		sed -E "s/^ +(-., )?$2 +[A-Z]+ +//; s/\([^)]*\)//g; s/,/ /g"
}
bcomp() {
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
		_heapsnap && printf "%s\n" "${COMPREPLY[@]}"' _ "$BASHCOMP" "$HEAPSNAP" "$@"
}
formats=$(help_values convert --format; "$HEAPSNAP" convert --help | grep -A1 -- '--format' | tail -n 1 | sed -E 's/\(.*//; s/,/ /g')
same "$formats" "pprof jeprof gperf collapsed speedscope svg" "convert --help's formats and the list here"
same "$(help_values top --sample-index)" "$(bcomp top --sample-index '')" "top --help's sample indexes and bash completion"
same "$(help_values top --granularity)" "$(bcomp top --granularity '')" "top --help's granularities and bash completion"
same "$(help_values top --unit | sed 's/one unit like pprof//')" "$(bcomp top --unit '')" "top --help's units and bash completion"
same "$formats" "$(bcomp convert x --format '')" "formats and bash completion"
for v in --format --sample-index --unit --granularity --backend; do
	b=$(bcomp top "$v" '' | sort | xargs)
	z=$(sed -n "s/^	$v) compadd -- \([^;]*\);.*/\1/p" "$SRCDIR/completions/_heapsnap" | xargs -n1 | sort | xargs)
	same "$b" "$z" "bash and zsh values of $v"
done

# every option that takes a value is known as such to both completions (so
# its value is not counted as an operand)
for c in $cmds; do
	for o in $("$HEAPSNAP" "$c" --help | sed -nE 's/^ +(-[a-zA-Z], )?(--[a-z-]+) [A-Z]+( .*|)$/\2/p'); do
		for f in "$BASHCOMP" "$SRCDIR/completions/_heapsnap"; do
			grep -qE -- "(^|[[:space:]|(])$o([[:space:]]|\||\))" "$f" ||
				fail "$c $o takes a value but $(basename "$f") does not know it"
		done
	done
done

# ---- the completions: commands and each command's options -----------------
same "$cmds help" "$(bcomp '')" "help --commands and bash completion"
for c in $cmds; do
	same "$("$HEAPSNAP" help --options "$c") --help" "$(bcomp "$c" -)" "help --options $c and bash completion"
done
if command -v zsh >/dev/null; then
	zcomp() { COMPDIR=$SRCDIR/completions timeout 20 zsh -f "$SRCDIR/tests/cli/zcomp.zsh" "$HEAPSNAP $*"; }
	same "$cmds help" "$(zcomp '')" "help --commands and zsh completion"
	for c in $cmds; do
		same "$("$HEAPSNAP" help --options "$c") --help" "$(zcomp "$c" -)" "help --options $c and zsh completion"
	done
else
	note "zsh not installed: zsh completion compared by its values only"
fi

# ---- the README's command list --------------------------------------------
for c in $cmds; do
	grep -q "^heapsnap $c " "$SRCDIR/README.md" || fail "README.md's command list lacks 'heapsnap $c'"
done
exit 0
