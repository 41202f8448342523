# inj.mk - build details of the injector robustness targets (tests/targets/inj_*.c,
# driven by tests/inject/*.sh).  inj_basic and inj_static belong to inject.mk.

INJ_ROBUST_TARGETS := $(filter-out inj_basic inj_static inj_slowlib,\
	$(patsubst tests/targets/%.c,%,$(wildcard tests/targets/inj_*.c)))

# They share a header the generic target rule does not know about.
$(addprefix $(B)/tests/targets/,$(INJ_ROBUST_TARGETS)): tests/targets/inj_common.h

# The register checker again, linked statically: a live program that must be
# refused without ever being stopped (tests/inject/static-untouched.sh).
$(B)/tests/targets/inj_regs_static: tests/targets/inj_regs.c tests/targets/inj_common.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -static -o $@ $< -lpthread

EXTRA_TEST_BINS += $(B)/tests/targets/inj_regs_static

# Not a program: a shared library with a function that sleeps inside it
# (tests/inject/unload-busy.sh).  This explicit rule replaces the generic one.
$(B)/tests/targets/inj_slowlib: tests/targets/inj_slowlib.c
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -O2 -g -Wall -fPIC -shared -o $@ $<
