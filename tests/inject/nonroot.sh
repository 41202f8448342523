#!/bin/bash
# nonroot.sh - an unprivileged user (created for the test, removed after):
# injecting into root's process is refused with the reason (uid) and does
# not touch it; injecting into the user's own process works.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need
[ "$(id -u)" = 0 ] || skip "needs root to create a user"
need_cmd useradd userdel setpriv

user=hsinj$$
useradd -M -N -s /usr/sbin/nologin -d /nonexistent "$user" 2>useradd.err ||
	skip "useradd failed: $(cat useradd.err)"
INJ_ATEXIT="userdel $user 2>/dev/null; rm -rf \"\${USERDIR:-/nonexistent-dir}\""
uid=$(id -u "$user") gid=$(id -g "$user")
AS_USER=(setpriv --reuid="$uid" --regid="$gid" --clear-groups --)

# 1. root's process
inj_start inj_regs --threads 2
inj_baseline
INJ_WRAP=("${AS_USER[@]}")
command -v strace >/dev/null && inj_traced_by_strace trace.log
inj_run 30 -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg 1 --timeout 5
INJ_WRAP=()
[ "$rc" = 1 ] || fail "expected exit 1 for another user's process, got $rc: $out $err"
expect_match "$err" "heapsnap: cannot attach to pid $TGT_PID: .*(not permitted|permission denied)" "refusal"
expect_match "$err" "uid" "refusal names the uid mismatch"
[ -f trace.log ] && inj_untouched trace.log "another user's process"
REFUSAL=$(printf '%s' "$err" | head -n 1)
inj_check_after "refusal as uid $uid"
inj_finish

# 2. the user's own process: its files must be reachable by the user
"${AS_USER[@]}" test -r "$INJ_LIB" -a -x "$TARGETS/inj_regs" -a -x "$HEAPSNAP" ||
	skip "uid $uid cannot reach $HEAPSNAP_BUILD (part 1 passed)"
USERDIR=$(mktemp -d /tmp/hsinj.XXXXXX)
chmod 777 "$USERDIR"
cd "$USERDIR"
INJ_START_WRAP=("${AS_USER[@]}")
inj_start inj_regs --threads 2
INJ_START_WRAP=()
[ "$(awk '/^Uid:/{print $2}' "/proc/$TGT_PID/status")" = "$uid" ] || fail "target does not run as uid $uid"
inj_baseline
INJ_WRAP=("${AS_USER[@]}")
inj_cycle 1
INJ_WRAP=()
inj_check_after "injection as uid $uid into its own process" unloaded
inj_finish
echo "uid $uid: refused on root's process with '$REFUSAL'; own process injected"
