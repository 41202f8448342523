#!/bin/bash
# regs.sh - compute threads that keep known values in every GPR they can,
# in all vector registers (zmm0-31/k0-7 with AVX-512, else ymm or xmm), MXCSR,
# the x87 control word and RFLAGS.DF, checked after every ~20000 spins: the
# thread hijacked mid-loop must get all of it back.  Prints the pause figures.
source "$TESTLIB" && source "$SRCDIR/tests/lib/inject.sh" || { echo "FAIL: cannot load the test helpers" >&2; exit 1; }
inj_need

INJ_GAP_US=100
inj_start inj_regs --threads 2
inj_baseline
for i in 1 2 3 4 5 6; do
	inj_cycle "$i"
	inj_check_after "injection $i" unloaded
done
inj_finish
grep '^regs ok' "$TGT_OUT"
