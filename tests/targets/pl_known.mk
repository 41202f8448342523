# pl_known.mk - variants of the payload's ground-truth target (full RELRO,
# -fno-plt, non-PIE, frame pointers, linked allocators) and the library it
# dlopens later.  See tests/targets/pl_common.h.

PL_VARIANTS := pl_known_now pl_known_noplt pl_known_nopie pl_known_fp pl_known_tc pl_known_lu
EXTRA_TEST_BINS += $(PL_VARIANTS:%=$(B)/tests/targets/%) $(B)/tests/targets/libpl_dynlib.so

PL_FLAGS_pl_known_now   := -Wl,-z,relro,-z,now
PL_FLAGS_pl_known_noplt := -fno-plt -Wl,-z,relro,-z,now
PL_FLAGS_pl_known_nopie := -fno-pic -no-pie
PL_FLAGS_pl_known_fp    := -fno-omit-frame-pointer
PL_FLAGS_pl_known_tc    := -Wl,--no-as-needed -ltcmalloc -Wl,--as-needed
PL_FLAGS_pl_known_lu    := -Wl,--no-as-needed -lunwind -Wl,--as-needed

$(PL_VARIANTS:%=$(B)/tests/targets/%): $(B)/tests/targets/pl_known_%: tests/targets/pl_known.c tests/targets/pl_common.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -o $@ $< -lpthread -ldl $(PL_FLAGS_pl_known_$*)

$(B)/tests/targets/pl_known $(B)/tests/targets/pl_known_cxx: tests/targets/pl_common.h

$(B)/tests/targets/libpl_dynlib.so: tests/targets/pl_lib/pl_dynlib.c
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -O2 -g -Wall -fPIC -shared -o $@ $<

# The payload benchmark walks its own frame pointers as one candidate.
TARGET_CFLAGS_pl_bench := -fno-omit-frame-pointer
