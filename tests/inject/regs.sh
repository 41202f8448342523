#!/bin/bash
# regs.sh - compute threads that keep known values in every GPR they can,
# in all vector registers (zmm0-31/k0-7 with AVX-512, else ymm or xmm), MXCSR,
# the x87 control word and RFLAGS.DF, checked after every ~20000 spins: the
# thread hijacked mid-loop must get all of it back.  Run with the widest
# register set the CPU has, then with AVX and SSE only (other XSAVE
# components in their init state).  Prints the pause figures.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

INJ_GAP_US=100
variants=("best:6")
grep -qw avx512f /proc/cpuinfo && grep -qw avx /proc/cpuinfo && variants+=("avx:3")
variants+=("sse:3")
for v in "${variants[@]}"; do
	isa=${v%:*} n=${v#*:}
	if [ "$isa" = best ]; then inj_start inj_regs --threads 2
	else inj_start inj_regs --threads 2 --isa "$isa"
	fi
	inj_baseline
	for i in $(seq 1 "$n"); do
		inj_cycle "$i"
		inj_check_after "injection $i ($isa)" unloaded
	done
	inj_finish
	grep '^regs ok' "$TGT_OUT"
done
