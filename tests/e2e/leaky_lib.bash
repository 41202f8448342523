# leaky_lib.bash - helpers for the tests that drive tests/targets/sh_leaky (shell-pty, shell-pipe, watch); source after $TESTLIB and start_target.

# payload_in: is heapsnap's payload mapped in the target?
payload_in() { grep -q libheapsnap-payload "/proc/$TGT_PID/maps"; }

# grow: make the target leak 4 MiB more, wait (10 s max) until it has
grow() {
	local n i
	n=$(grep -c '^grew' "$TGT_OUT")
	kill -USR1 "$TGT_PID"
	for i in $(seq 1 100); do
		[ "$(grep -c '^grew' "$TGT_OUT")" -gt "$n" ] && return 0
		sleep 0.1
	done
	fail "the target did not grow"
}
