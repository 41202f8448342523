#!/bin/sh
# deps.sh - install the Debian packages heapsnap needs to build and test.
# As root: installs what is missing. Otherwise: prints the exact apt-get line.
set -eu

# Build: libraries heapsnap links.  Test: the real tools and allocators the
# tests drive (jemalloc, gperftools, mimalloc, go tool pprof, jeprof).
BUILD="gcc make pkg-config libunwind-dev libelf-dev libdw-dev libreadline-dev zlib1g-dev libprotobuf-c-dev protobuf-c-compiler"
TEST="g++ clang libclang-rt-14-dev binutils golang-go libjemalloc-dev libjemalloc2 google-perftools libgoogle-perftools-dev libmimalloc-dev tmux strace procps psmisc zsh redis-server redis-tools"

want="$BUILD"
[ "${1:-}" = "--build-only" ] || want="$want $TEST"

missing=""
for pkg in $want; do
	st=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	case "$st" in
	*"install ok installed"*) ;;
	*) missing="$missing $pkg" ;;
	esac
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
	echo "deps: installing:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q $missing >/dev/null || {
		apt-get update -q >/dev/null && apt-get install -y -q $missing >/dev/null
	}
else
	echo "deps: missing packages; run as root:" >&2
	echo "  apt-get install -y$missing" >&2
	exit 1
fi
