# bench.mk - the benchmark workloads (bench/workloads/) and `make bench` (bench/run.py).
# Not part of `make check`; knobs: BENCH_SECONDS (per measured phase),
# BENCH_RUNS (interleaved A/B runs per comparison), BENCH_ONLY (figures).

BENCH_DIR := $(B)/bench
BENCH_ALLOCS := glibc jemalloc tcmalloc mimalloc
BENCH_LIBS_glibc :=
BENCH_LIBS_jemalloc := -ljemalloc
BENCH_LIBS_tcmalloc := -ltcmalloc
BENCH_LIBS_mimalloc := -lmimalloc
BENCH_BINS := $(BENCH_ALLOCS:%=$(BENCH_DIR)/mh_%) $(BENCH_DIR)/cxx_churn $(BENCH_DIR)/heap \
	$(BENCH_DIR)/symbench

# The allocator is linked (--no-as-needed: mh calls only malloc/free, which
# would otherwise bind to whichever library the linker met first).
$(BENCH_DIR)/mh_%: bench/workloads/mh.c bench/workloads/probe.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -o $@ $< \
		-Wl,--no-as-needed $(BENCH_LIBS_$*) -Wl,--as-needed -lpthread

$(BENCH_DIR)/heap: bench/workloads/heap.c bench/workloads/probe.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -o $@ $< -lpthread

$(BENCH_DIR)/cxx_churn: bench/workloads/cxx_churn.cc bench/workloads/probe.h
	$(call msg,CXX,$@)
	@mkdir -p $(@D)
	$(Q)$(CXX) -std=gnu++17 -O2 -g -Wall -Wextra -o $@ $< -lpthread

# Figure 4's measuring program: heapsnap's own symbolizer, linked as the
# unit tests are.
$(BENCH_DIR)/symbench: bench/symbench.c $(CORE_LIB) $(INJ_LIB)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(CORE_LIB) $(INJ_LIB) $(LIBS)

# Built by test-build too: tests/e2e/bench-smoke.sh runs the driver briefly.
EXTRA_TEST_BINS += $(BENCH_BINS)

bench-build: all $(BENCH_BINS)

bench: bench-build
	@HEAPSNAP_BUILD=$(CURDIR)/$(B) python3 bench/run.py

.PHONY: bench-build
