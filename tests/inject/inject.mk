# inject.mk - programs of the basic injector tests: the library they load
# (also used by inj-tests' scripts) and the static target that must be refused.

$(B)/tests/inject/libinjtest.so: tests/inject/libinjtest.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -O2 -g -Wall -fPIC -shared -o $@ $<

EXTRA_TEST_BINS += $(B)/tests/inject/libinjtest.so

TARGET_CFLAGS_inj_static := -static
