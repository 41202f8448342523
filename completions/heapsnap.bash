# heapsnap.bash - bash completion for heapsnap; command and option names come from the binary.
#
# Names have one source: `heapsnap help --commands`, `heapsnap help --options
# CMD` and the usage line of `heapsnap CMD --help` (which operands a command
# takes).  Only the values of a few options are listed here.

# _heapsnap_bin: the heapsnap being completed (the typed one when it runs).
_heapsnap_bin() {
	local b=${COMP_WORDS[0]}
	b=${b/#\~/$HOME}
	if [[ $b == */* && -x $b ]] || command -v -- "$b" >/dev/null 2>&1; then
		printf '%s\n' "$b"
	else
		printf 'heapsnap\n'
	fi
}

# _heapsnap_files CUR: directories and profile files starting with CUR.
_heapsnap_files() {
	local f
	while IFS= read -r f; do
		if [[ -d $f ]]; then
			COMPREPLY+=("$f")
		else
			case $f in
			*.pb.gz | *.pb | *.pprof | *.heap | *.jeprof | *.hprof | *.gperf) COMPREPLY+=("$f") ;;
			esac
		fi
	done < <(compgen -f -- "$1")
}

# _heapsnap_pids CUR: PIDs of running processes starting with CUR.
_heapsnap_pids() {
	local p pids=()
	for p in /proc/[0-9]*; do
		pids+=("${p#/proc/}")
	done
	COMPREPLY+=($(compgen -W "${pids[*]}" -- "$1"))
}

# _heapsnap_operands BIN CMD: the operand names of CMD's usage line, one per
# line ("PID", "FILE", "FILE..."); options and [optional] groups other than
# [X...] are left out.
_heapsnap_operands() {
	local usage w o c depth=0 skipval=0 words=()
	usage=$("$1" "$2" --help 2>/dev/null | sed -n '1s/^usage: heapsnap //p')
	read -ra words <<<"$usage"
	for w in "${words[@]:1}"; do
		if [[ $w == \[*...\] && $depth == 0 ]]; then
			w=${w#[}
			printf '%s\n' "${w%]}"
			continue
		fi
		o=${w//[^\[]/} c=${w//[^\]]/}
		if ((depth > 0 || ${#o} > 0)); then
			depth=$((depth + ${#o} - ${#c}))
			continue
		fi
		if [[ $w == -* ]]; then
			skipval=1
			continue
		fi
		if ((skipval)); then
			skipval=0
			continue
		fi
		printf '%s\n' "$w"
	done
}

_heapsnap() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=
	local bin cmd= ci=0 i w
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()
	bin=$(_heapsnap_bin)

	# The command is the first word after the global options.
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w != -* ]]; then
			cmd=$w
			ci=$i
			break
		fi
	done

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-j --json -q --quiet -v --verbose -h --help --version" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$("$bin" help --commands 2>/dev/null) help" -- "$cur"))
		fi
		return 0
	fi
	if [[ $cmd == help ]]; then
		((COMP_CWORD == ci + 1)) &&
			COMPREPLY=($(compgen -W "$("$bin" help --commands 2>/dev/null)" -- "$cur"))
		return 0
	fi

	# The value of an option.
	case $prev in
	--format)
		COMPREPLY=($(compgen -W "pprof jeprof gperf collapsed speedscope svg" -- "$cur"))
		return 0 ;;
	--sample-index)
		COMPREPLY=($(compgen -W "inuse_space inuse_objects alloc_space alloc_objects" -- "$cur"))
		return 0 ;;
	--unit)
		COMPREPLY=($(compgen -W "minimum auto B kB MB GB" -- "$cur"))
		return 0 ;;
	--granularity)
		COMPREPLY=($(compgen -W "functions lines files addresses" -- "$cur"))
		return 0 ;;
	--backend)
		COMPREPLY=($(compgen -W "auto interpose" -- "$cur"))
		return 0 ;;
	--unwinder)
		COMPREPLY=($(compgen -W "auto libunwind libgcc" -- "$cur"))
		return 0 ;;
	-o | --output | --base)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return 0 ;;
	-n | --nodecount | --rate | --duration | --timeout | --interval | --count | --on-growth | \
	--focus | --ignore | --call | --arg)
		return 0 ;;
	esac

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$("$bin" help --options "$cmd" 2>/dev/null) --help" -- "$cur"))
		return 0
	fi

	# An operand: which one is it?  Count the operands before the cursor.
	local n=0 skip=0 ops kind
	for ((i = ci + 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if ((skip)); then
			skip=0
		elif [[ $w == -o || $w == --* && $w != *=* ]]; then
			# options taking a value: the ones whose value is completed above
			case $w in
			-o | --output | --base | --format | --sample-index | --unit | --granularity | \
			--backend | --nodecount | --rate | --duration | --timeout | --interval | --count | \
			--on-growth | --focus | --ignore | --call | --arg) skip=1 ;;
			esac
		elif [[ $w == -n ]]; then
			skip=1
		elif [[ $w != -* ]]; then
			n=$((n + 1))
		fi
	done
	mapfile -t ops < <(_heapsnap_operands "$bin" "$cmd")
	if ((n < ${#ops[@]})); then
		kind=${ops[n]}
	elif ((${#ops[@]})) && [[ ${ops[-1]} == *... ]]; then
		kind=${ops[-1]}
	else
		return 0
	fi
	case ${kind%...} in
	PID)
		_heapsnap_pids "$cur" ;;
	FILE | BASE | OUT)
		compopt -o filenames 2>/dev/null
		_heapsnap_files "$cur" ;;
	LIB)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur")) ;;
	esac
	return 0
}

complete -F _heapsnap heapsnap
