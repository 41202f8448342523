#!/bin/bash
# epoll.sh - main thread in epoll_wait(-1) on a FIFO, another in an
# epoll_wait(100 ms) loop: after each injection every message written
# arrives, no timeout ends early; EINTR is counted and reported (documented
# kernel behaviour after a ptrace stop), not failed.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

mkfifo fifo
exec 3<>fifo
MSG=0
feed() { MSG=$((MSG + 1)); echo "msg $MSG" >&3; }

inj_start inj_epoll "$PWD/fifo"
INJ_POKE=feed
inj_baseline
for i in 1 2 3 4; do
	inj_wait_blocked "$TGT_PID" 232
	inj_cycle "$i"
	inj_check_after "injection $i" unloaded
done
echo quit >&3
inj_wait_exit 10
expect_match "$(cat "$TGT_OUT")" "epoll ok: $MSG messages" "messages received"
inj_hijacked_roles
grep '^epoll ok' "$TGT_OUT"
