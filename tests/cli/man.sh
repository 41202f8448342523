# man.sh - the man page renders without warnings; `make install DESTDIR=... PREFIX=/usr` puts every file in its place.
. "$TESTLIB"
need_cmd man groff make

MAN=$SRCDIR/man/heapsnap.1
w=$(MANWIDTH=80 man --warnings -l "$MAN" 2>&1 >/dev/null)
[ -z "$w" ] || fail "man --warnings -l man/heapsnap.1: $w"
w=$(groff -man -ww -z "$MAN" 2>&1)
[ -z "$w" ] || fail "groff -man -ww: $w"
text=$(MANWIDTH=80 man -l "$MAN" 2>/dev/null | col -b)
for s in NAME SYNOPSIS DESCRIPTION COMMANDS FORMATS "SAMPLE INDEXES" "EXIT STATUS" ENVIRONMENT FILES SAFETY EXAMPLES "SEE ALSO"; do
	printf '%s\n' "$text" | grep -q "^$s" || fail "man page has no $s section"
done
# every exit status of src/hs.h is documented
for st in $(sed -n 's/^\s*HS_[A-Z_]* = \([0-9]*\),.*/\1/p' "$SRCDIR/src/hs.h"); do
	printf '%s\n' "$text" | grep -qE "^ +$st( |\$)" || fail "exit status $st of src/hs.h not in the man page"
done
# every environment variable the sources read is documented
for v in $(grep -ohE 'getenv\("[A-Z_]+"\)|split_dirs\(c, "[A-Z_]+"\)' "$SRCDIR"/src/*.c | grep -oE '"[A-Z_]+"' | tr -d '"' | sort -u); do
	printf '%s\n' "$text" | grep -q "^ *$v" || fail "environment variable $v not in the man page"
done

# make install into a scratch root
root=$PWD/root
make -s -C "$SRCDIR" B="$HEAPSNAP_BUILD" DESTDIR="$root" PREFIX=/usr install >install.log 2>&1 ||
	fail "make install failed: $(tail -n 20 install.log)"
for f in usr/bin/heapsnap usr/lib/heapsnap/libheapsnap-payload.so usr/share/man/man1/heapsnap.1 \
	usr/share/bash-completion/completions/heapsnap usr/share/zsh/vendor-completions/_heapsnap; do
	[ -f "$root/$f" ] || fail "make install did not install /$f: $(cd "$root" && find . -type f)"
done
[ -x "$root/usr/bin/heapsnap" ] || fail "installed heapsnap is not executable"
"$root/usr/bin/heapsnap" --version | grep -q '^heapsnap ' || fail "installed heapsnap --version"
cmp -s "$root/usr/share/man/man1/heapsnap.1" "$MAN" || fail "installed man page differs"
MANWIDTH=80 man -M "$root/usr/share/man" heapsnap 2>/dev/null | grep -q 'heapsnap' ||
	fail "man -M DESTDIR/usr/share/man heapsnap does not find the page"
# the installed bash completion completes commands from the installed binary
out=$(bash -c 'source "$1"; COMP_WORDS=("$2" to); COMP_CWORD=1; _heapsnap; echo "${COMPREPLY[@]}"' _ \
	"$root/usr/share/bash-completion/completions/heapsnap" "$root/usr/bin/heapsnap")
expect_eq "$out" "top" "installed bash completion"
exit 0
