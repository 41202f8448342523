# be_sites.mk - be_sites linked with gperftools' full tcmalloc (heap profiler) for the gperftools backend test.
EXTRA_TEST_BINS += $(B)/tests/targets/be_sites_tc

$(B)/tests/targets/be_sites_tc: tests/targets/be_sites.c
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -o $@ $< -Wl,--no-as-needed -ltcmalloc -Wl,--as-needed
