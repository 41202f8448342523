# inject.sh - helpers for the injector robustness tests (tests/inject/*.sh);
# source it after "$TESTLIB".  The targets (tests/targets/inj_*.c) keep a
# progress counter in a shared file ($INJ_PROG, 8 bytes) and write a log of
# their threads' stalls ("tid start_us gap_us") to $INJ_GAPS when they exit.
# Every wait here is bounded; every process started here is killed on exit.

INJ_LIB=${INJ_LIB:-$HEAPSNAP_BUILD/tests/inject/libinjtest.so}
INJ_LIBNAME=$(basename "$INJ_LIB")
INJ_TIMEOUT=${INJ_TIMEOUT:-10}		# heapsnap --timeout
INJ_WINDOWS=$PWD/inject-windows		# one line per injection, for the pause report
INJ_PIDS=""
INJ_ATEXIT=""				# shell commands run when the test ends
INJ_WRAP=()				# command prefix for heapsnap (strace, setpriv)
INJ_START_WRAP=()			# command prefix for targets (setpriv)
INJ_NOPROGRESS=""			# set: the target cannot progress now
: >"$INJ_WINDOWS"

inj_cleanup() {
	local p
	for p in $INJ_PIDS; do kill -KILL "$p" 2>/dev/null; done
	[ -z "$INJ_ATEXIT" ] || eval "$INJ_ATEXIT"
}
trap inj_cleanup EXIT

# inj_track PID: kill PID when the test ends, however it ends
inj_track() { INJ_PIDS="$INJ_PIDS $1"; }

inj_now_us() { local t=${EPOCHREALTIME//[.,]/}; echo "$t"; }

# inj_need: the binary and the test library must exist
inj_need() {
	[ -x "$HEAPSNAP" ] || fail "no heapsnap binary at $HEAPSNAP"
	[ -f "$INJ_LIB" ] || fail "no test library at $INJ_LIB (built by tests/inject/inject.mk)"
}

# inj_start NAME ARGS...: start $TARGETS/NAME as start_target does; sets
# TGT_PID, TGT_OUT, INJ_NAME, INJ_PROG, INJ_GAPS; stalls >= $INJ_GAP_US are logged.
INJ_SEQ=0
inj_start() {
	local name=$1
	shift
	INJ_SEQ=$((INJ_SEQ + 1))
	INJ_NAME=$name
	INJ_PROG=$PWD/$name.$INJ_SEQ.progress
	INJ_GAPS=$PWD/$name.$INJ_SEQ.gaps
	rm -f "$INJ_PROG" "$INJ_GAPS"
	: >"$INJ_WINDOWS"	# the pause report covers one target
	start_target ${INJ_START_WRAP[@]+"${INJ_START_WRAP[@]}"} env INJ_PROGRESS="$INJ_PROG" \
		INJ_GAPLOG="$INJ_GAPS" INJ_GAP_US="${INJ_GAP_US:-200}" "$TARGETS/$name" "$@"
	inj_track "$TGT_PID"
	note "started $name $* as pid $TGT_PID"
}

inj_progress() {
	local v
	v=$(od -An -tu8 -N8 "$INJ_PROG" 2>/dev/null)
	v=${v//[[:space:]]/}
	echo "${v:-0}"
}

# inj_dead: fail with the target's exit status and last output lines
inj_dead() {
	local st
	wait "$TGT_PID" 2>/dev/null
	st=$?
	fail "target $INJ_NAME (pid $TGT_PID) died${1:+ $1} (status $st): $(tail -n 5 "$TGT_OUT" | tr '\n' '|')"
}

# (no forks here and below where it matters: the checks must stay quick
# next to 16 busy target threads on a 2-core machine)
inj_alive() { inj_running "$TGT_PID"; }

# inj_running PID: PID exists and is not a zombie (kill -0 also succeeds on
# an unreaped child that has ended)
inj_running() {
	local l=""
	read -r l 2>/dev/null <"/proc/$1/stat" || return 1
	l=${l##*) }
	l=${l%% *}
	[ -n "$l" ] && [ "$l" != Z ] && [ "$l" != X ]
}

# inj_expect_progress [WHAT]: the counter must move within 5 s.  If
# INJ_POKE names a function, it is called first (targets that only move
# when fed, like the read() target).
INJ_POKE=""
inj_expect_progress() {
	local p0 p i
	[ -n "$INJ_NOPROGRESS" ] && return 0
	p0=$(inj_progress)
	[ -n "$INJ_POKE" ] && $INJ_POKE
	for i in $(seq 1 500); do
		p=$(inj_progress)
		[ "$p" -gt "$p0" ] && return 0
		inj_alive || inj_dead "${1:+after $1}"
		sleep 0.01
	done
	fail "target $INJ_NAME not progressing${1:+ after $1}: counter stuck at $p0 for 5 s"
}

# inj_thread_states PID: "tid state tracerpid" per live thread
inj_thread_states() {
	awk 'FNR == 1 { n = split(FILENAME, a, "/"); t = a[n - 1] }
	     /^State:/ { s[t] = $2 } /^TracerPid:/ { p[t] = $2 }
	     END { for (t in s) print t, s[t], p[t] }' /proc/"$1"/task/*/status 2>/dev/null
}

# inj_check_untraced WHAT [STOPPED_OK]: no thread traced or in tracing stop
# (t); none stopped (T) unless STOPPED_OK is given
inj_check_untraced() {
	local what=$1 ok=${2:-} tid st tr bad=""
	while read -r tid st tr; do
		[ "$tr" = 0 ] || bad="$bad tid $tid has TracerPid $tr;"
		[ "$st" = t ] && bad="$bad tid $tid in tracing stop (t);"
		[ "$st" = T ] && [ -z "$ok" ] && bad="$bad tid $tid stopped (T);"
	done < <(inj_thread_states "$TGT_PID")
	[ -z "$bad" ] || fail "after $what:$bad"
}

# inj_sigs PID: "tid SigBlk SigIgn SigCgt" per live thread
inj_sigs() {
	awk 'FNR == 1 { n = split(FILENAME, a, "/"); t = a[n - 1] }
	     /^SigBlk:/ { b[t] = $2 } /^SigIgn:/ { i[t] = $2 } /^SigCgt:/ { c[t] = $2 }
	     END { for (t in c) print t, b[t], i[t], c[t] }' /proc/"$1"/task/*/status 2>/dev/null | sort -n
}

# glibc installs its internal SIGSETXID (33) and SIGCANCEL (32) handlers at
# the first pthread_create / pthread_cancel: the injector's worker thread may
# be the target's first thread, so these two bits may appear in SigCgt (the
# documented trace of an injection), and leave SigIgn when the target
# inherited them ignored (CI's runner starts processes that way: glibc
# replaces the ignored disposition as it would at the program's own first
# pthread_create); anything else must be unchanged.
INJ_SIGCGT_GLIBC=$(( (1 << 31) | (1 << 32) ))

# inj_baseline: record what must come back after an unload: fd and thread
# counts (minimum over 10 samples: some targets open files or start threads
# for a moment), per-thread signal state
inj_baseline() {
	local i n f t
	INJ_BASE_FDS=999999 INJ_BASE_THREADS=999999
	for i in $(seq 1 10); do
		inj_counts
		f=$INJ_NFDS t=$INJ_NTHREADS
		[ "$f" -lt "$INJ_BASE_FDS" ] && INJ_BASE_FDS=$f
		[ "$t" -lt "$INJ_BASE_THREADS" ] && INJ_BASE_THREADS=$t
		sleep 0.02
	done
	inj_sigs "$TGT_PID" >"$PWD/sigs.base"
	n=$(wc -l <"$PWD/sigs.base")
	note "baseline of $INJ_NAME: $INJ_BASE_FDS fds, $INJ_BASE_THREADS threads, $n thread signal states"
}

# inj_check_sigs WHAT: each thread that existed at the baseline has the same
# SigBlk/SigIgn/SigCgt.  Handlers running at the moment of reading change
# SigBlk for an instant, so a thread passes when one of 20 readings in 2 s
# matches.
inj_check_sigs() {
	local what=$1 i tid b ig c bb bi bc left
	declare -A base ok
	while read -r tid bb bi bc; do base[$tid]="$bb $bi $bc"; done <"$PWD/sigs.base"
	for i in $(seq 1 20); do
		while read -r tid b ig c; do
			[ -n "${base[$tid]:-}" ] || continue
			read -r bb bi bc <<<"${base[$tid]}"
			[ "$b" = "$bb" ] &&
				[ $((0x$ig & ~INJ_SIGCGT_GLIBC)) = $((0x$bi & ~INJ_SIGCGT_GLIBC)) ] &&
				[ $((0x$c & ~INJ_SIGCGT_GLIBC)) = $((0x$bc & ~INJ_SIGCGT_GLIBC)) ] && ok[$tid]=1
		done < <(inj_sigs "$TGT_PID")
		left=""
		for tid in "${!base[@]}"; do
			[ -d "/proc/$TGT_PID/task/$tid" ] && [ -z "${ok[$tid]:-}" ] && left="$left $tid"
		done
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	inj_sigs "$TGT_PID" >"$PWD/sigs.now"
	for tid in $left; do
		left="$left; tid $tid before: ${base[$tid]}, now: $(awk -v t="$tid" '$1 == t {print $2, $3, $4}' "$PWD/sigs.now")"
	done
	fail "after $what: SigBlk/SigIgn/SigCgt changed (thread(s)$left)"
}

# inj_counts: INJ_NFDS, INJ_NTHREADS of the target now
inj_counts() {
	local a
	a=(/proc/"$TGT_PID"/fd/*)
	INJ_NFDS=${#a[@]}
	a=(/proc/"$TGT_PID"/task/*)
	INJ_NTHREADS=${#a[@]}
}

# inj_check_counts WHAT: fd and thread counts back to the baseline within 3 s
inj_check_counts() {
	local what=$1 i f t
	for i in $(seq 1 30); do
		inj_counts
		f=$INJ_NFDS t=$INJ_NTHREADS
		[ "$f" -le "$INJ_BASE_FDS" ] && [ "$t" -le "$INJ_BASE_THREADS" ] && return 0
		sleep 0.1
	done
	fail "after $what: $f fds (baseline $INJ_BASE_FDS), $t threads (baseline $INJ_BASE_THREADS): $(ls -l "/proc/$TGT_PID/fd" 2>/dev/null | awk 'NR>1{print $9, $10, $11}' | tr '\n' '|')"
}

# inj_check_unmapped WHAT: the test library is not mapped any more
inj_check_unmapped() {
	local m
	m=$(grep -F "$INJ_LIBNAME" "/proc/$TGT_PID/maps" 2>/dev/null)
	[ -z "$m" ] || fail "after $what: $INJ_LIBNAME still mapped: $(printf '%s\n' "$m" | head -n 3 | tr '\n' '|')"
}

# inj_check_after WHAT [unloaded]: the invariants after each injection:
# alive, no thread traced / in t / in T, signal state unchanged, progressing;
# with "unloaded" also the library gone from maps, fds and threads back to
# the baseline.
inj_check_after() {
	local what=$1
	inj_alive || inj_dead "after $what"
	inj_check_untraced "$what"
	inj_check_sigs "$what"
	inj_expect_progress "$what"
	if [ "${2:-}" = unloaded ]; then
		inj_check_unmapped "$what"
		inj_check_counts "$what"
	fi
}

# inj_wait_blocked TID NRS: wait (5 s max) until thread TID sits in one of
# the syscalls NRS ("230" or "230|219"; x86_64 numbers: 0 read, 1 write,
# 219 restart_syscall, 230 clock_nanosleep, 232 epoll_wait)
inj_wait_blocked() {
	local i s
	for i in $(seq 1 500); do
		s=$(cut -d' ' -f1 "/proc/$TGT_PID/task/$1/syscall" 2>/dev/null)
		[[ $s =~ ^($2)$ ]] && return 0
		inj_alive || inj_dead "while waiting for it to block"
		sleep 0.01
	done
	fail "thread $1 of $INJ_NAME not blocked in syscall $2 after 5 s (syscall: $s)"
}

# inj_traced_by_strace FILE: set INJ_WRAP so that heapsnap runs under strace
# -f, its ptrace/signal/memory-write calls logged to FILE (see inj_untouched)
inj_traced_by_strace() {
	INJ_WRAP=(strace -f -qq -o "$1" -e trace=ptrace,kill,tkill,tgkill,pidfd_send_signal,process_vm_writev
		${INJ_WRAP[@]+"${INJ_WRAP[@]}"})
}

# inj_untouched FILE WHAT: heapsnap (traced into FILE) never seized,
# interrupted, attached, signalled or wrote to the target
inj_untouched() {
	local tids hits
	tids=" $TGT_PID $(ls "/proc/$TGT_PID/task" 2>/dev/null | tr '\n' ' ')"
	hits=$(awk -v tids="$tids" '
		{ line = $0; sub(/^[0-9]+ +/, "") }
		/^(ptrace|kill|tkill|tgkill|process_vm_writev|pidfd_send_signal)\(/ {
			split($0, a, /[(), ]+/)
			id = (a[1] == "ptrace") ? a[3] : a[2]
			if (a[1] == "pidfd_send_signal" || index(tids, " " id " ")) print line
		}' "$1")
	[ -z "$hits" ] || fail "$2: heapsnap touched the target: $(printf '%s\n' "$hits" | head -n 5 | tr '\n' '|')"
}

# inj_wait_exit SECS: the target must end by itself within SECS with status 0
inj_wait_exit() {
	local i
	for i in $(seq 1 $(($1 * 10))); do inj_alive || break; sleep 0.1; done
	inj_alive && fail "target $INJ_NAME still running after $1 s"
	wait "$TGT_PID" 2>/dev/null
	TGT_RC=$?
	sed 's/^/# target: /' "$TGT_OUT" | tail -n 20 >&2
	[ "$TGT_RC" = 0 ] || fail "target $INJ_NAME exited with status $TGT_RC: $(grep -m1 '^FAIL' "$TGT_OUT")"
	inj_pause_report
}

# inj_hijacked_roles: which kind of thread each recorded injection hijacked
# (from the "stall: tid N (role)" lines the target prints at exit)
inj_hijacked_roles() {
	local t0 t1 h rest role
	[ -s "$INJ_WINDOWS" ] || return 0
	grep -qv '^[0-9]* [0-9]* -1 ' "$INJ_WINDOWS" || return 0
	while read -r t0 t1 h rest; do
		[ "$h" = -1 ] && continue	# a refused run hijacked nothing
		if [ "$h" = "$TGT_PID" ]; then role="main thread"
		else role=$(sed -n "s/^stall: tid $h (\(.*\)):.*/\1/p" "$TGT_OUT" | head -n 1)
		fi
		echo "${role:-tid $h}"
	done <"$INJ_WINDOWS" | sort | uniq -c | awk '{c=$1; $1=""; printf "%s%s x%d", (NR>1 ? "," : ""), $0, c} END{print ""}' |
		sed 's/^/hijacked threads:/'
}

# inj_run SECS ARGS...: run heapsnap ARGS with a deadline of SECS; sets out,
# err, rc and INJ_T0/INJ_T1 (real time, us).  Still running at the deadline
# is a hang, a death by signal a crash: both fail the test.
inj_run() {
	local secs=$1 l
	shift
	INJ_T0=$(inj_now_us)
	timeout -k 2 "$secs" ${INJ_WRAP[@]+"${INJ_WRAP[@]}"} "$HEAPSNAP" "$@" >"$PWD/hs.out" 2>"$PWD/hs.err"
	rc=$?
	INJ_T1=$(inj_now_us)
	out=$(<"$PWD/hs.out") err=$(<"$PWD/hs.err")
	{
		echo "# heapsnap $* -> exit $rc after $(( (INJ_T1 - INJ_T0) / 1000 )) ms"
		while IFS= read -r l; do echo "#   stdout: $l"; done <"$PWD/hs.out"
		while IFS= read -r l; do echo "#   stderr: $l"; done <"$PWD/hs.err"
	} >&2
	case $rc in
	124 | 137) fail "heapsnap $* hung: still running after $secs s" ;;
	esac
	[ "$rc" -lt 128 ] || fail "heapsnap $* died with status $rc"
}

# inj_json KEY: the scalar value of KEY in the JSON object in $out
inj_json() {
	local re="\"$1\"[[:space:]]*:[[:space:]]*\"?([^\",}]*)"
	[[ ${out//$'\n'/ } =~ $re ]] && echo "${BASH_REMATCH[1]}"
}

# inj_cycle [N]: load the test library, call hsp_test_ping(N), unload, all in
# one heapsnap run that must succeed; records the run for the pause report
inj_cycle() {
	local n=${1:-41} ret
	# -v: heapsnap's diagnostics (which threads it tried, why) go to the log
	inj_run $((INJ_TIMEOUT + 20)) -v -j inject "$TGT_PID" "$INJ_LIB" --call hsp_test_ping --arg "$n" \
		--unload --timeout "$INJ_TIMEOUT"
	[ "$rc" = 0 ] || fail "inject into $INJ_NAME failed (exit $rc): $err"
	if command -v jq >/dev/null; then
		printf '%s' "$out" | jq -e 'type == "object"' >/dev/null || fail "stdout is not one JSON object: $out"
	fi
	ret=$(inj_json returned)
	[ "$ret" = $((n + 1)) ] || fail "hsp_test_ping($n) returned '$ret', expected $((n + 1))"
	[ "$(inj_json unloaded)" = true ] || fail "unloaded is not true: $out"
	[ "$(inj_json pid)" = "$TGT_PID" ] || fail "pid in JSON is not $TGT_PID: $out"
	inj_record
}

# inj_record: remember this run's window and figures for the pause report
inj_record() {
	local h w s
	h=$(inj_json hijacked_tid) w=$(inj_json wall_us) s=$(inj_json stopped_us)
	echo "$INJ_T0 $INJ_T1 ${h:--1} ${w:--1} ${s:--1}" >>"$INJ_WINDOWS"
}

# inj_finish: SIGTERM the target; it must exit 0 within 10 s (status 0 means
# its own invariants held); then print the pause report
inj_finish() {
	local i
	kill -TERM "$TGT_PID" 2>/dev/null
	for i in $(seq 1 100); do inj_alive || break; sleep 0.1; done
	if inj_alive; then
		kill -KILL "$TGT_PID" 2>/dev/null
		fail "target $INJ_NAME did not exit within 10 s of SIGTERM: $(tail -n 3 "$TGT_OUT" | tr '\n' '|')"
	fi
	wait "$TGT_PID" 2>/dev/null
	TGT_RC=$?
	sed 's/^/# target: /' "$TGT_OUT" | grep -v '^# target: got msg' | tail -n 40 >&2
	[ "$TGT_RC" = 0 ] || fail "target $INJ_NAME exited with status $TGT_RC: $(grep -m1 '^FAIL' "$TGT_OUT")"
	inj_hijacked_roles
	inj_pause_report
}

# inj_median: median and max of the numbers on stdin ("median max", or "- -")
inj_median() {
	sort -n | awk '{v[NR]=$1} END{if (!NR) print "- -"; else print v[int((NR+1)/2)], v[NR]}'
}

# inj_pause_report: for every recorded injection, the longest stall of the
# hijacked thread and of the other threads that overlaps the heapsnap run
# (from the target's stall log), then median and max over the runs.
inj_pause_report() {
	local hj ot wall harness stopped thr=${INJ_GAP_US:-200} tracked
	[ -s "$INJ_WINDOWS" ] || return 0
	[ -f "$INJ_GAPS" ] || : >"$INJ_GAPS"
	# threads with a measured loop (the others, e.g. blocked in read(), have no stall figure)
	tracked=" $(sed -n 's/^stall: tid \([0-9]*\) .*/\1/p' "$TGT_OUT" | tr '\n' ' ')"
	awk -v gf="$INJ_GAPS" -v tracked="$tracked" '
	     FILENAME == gf { n++; tid[n] = $1; s[n] = $2; g[n] = $3; next }
	     { hm = 0; om = 0
	       for (i = 1; i <= n; i++)
		       if (s[i] <= $2 && s[i] + g[i] >= $1) {
			       if (tid[i] == $3) { if (g[i] > hm) hm = g[i] }
			       else if (g[i] > om) om = g[i]
		       }
	       if (!index(tracked, " " $3 " ")) hm = -1
	       print hm, om, $4, $2 - $1, $5 }' "$INJ_GAPS" "$INJ_WINDOWS" >"$PWD/pauses"
	hj=$(cut -d' ' -f1 "$PWD/pauses" | grep -v -- -1 | inj_median)
	ot=$(cut -d' ' -f2 "$PWD/pauses" | inj_median)
	wall=$(cut -d' ' -f3 "$PWD/pauses" | grep -v -- -1 | inj_median)
	harness=$(cut -d' ' -f4 "$PWD/pauses" | inj_median)
	stopped=$(cut -d' ' -f5 "$PWD/pauses" | grep -v -- -1 | inj_median)
	echo "pause: median ${hj% *} us, max ${hj#* } us (hijacked thread of $INJ_NAME, $(grep -vc '^-1 ' "$PWD/pauses") of $(wc -l <"$PWD/pauses") injections measured; stalls under $thr us are not logged and count as 0)"
	echo "pause of the other threads: median ${ot% *} us, max ${ot#* } us (includes CPU contention with heapsnap on this machine)"
	echo "stopped_us reported by heapsnap: median ${stopped% *}, max ${stopped#* }"
	echo "load wall time: heapsnap wall_us median ${wall% *}, max ${wall#* }; harness (whole command) median ${harness% *} us, max ${harness#* } us"
}
