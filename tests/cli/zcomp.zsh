# zcomp.zsh LINE - print the matches zsh's completion offers for LINE, one a line.
# Drives a real interactive zsh (compinit, fpath=($COMPDIR ...)) through
# zsh/zpty: TAB at the end of LINE, every compadd reported, then exit.
zmodload zsh/zpty || exit 2
zpty z zsh -f -i
zpty -w z "PROMPT= RPROMPT= ; unsetopt zle_bracketed_paste; fpath=(${(q)COMPDIR} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a __h; builtin compadd -A __h "$@"; (( $#__h )) || return 1; print -r -l -- ${__h/#/MATCH:}; builtin compadd "$@"; }'
zpty -w z 'comppostfuncs=(_zct_done); _zct_done() { print -r -- ENDMATCHES; exit }'
zpty -w z 'bindkey "^I" complete-word; print -r -- READY'
zpty -r -m z line '*READY*'   # the echo of the command
zpty -r -m z line '*READY*'   # its output
zpty -n -w z "$1"$'\t'
while zpty -r z line; do
	line=${${line//$'\r'}//$'\n'}
	[[ $line == *ENDMATCHES* ]] && break
	[[ $line == *MATCH:* ]] && print -r -- "${line##*MATCH:}"
done
zpty -d z
