# fuzz.mk - libFuzzer harnesses of every profile reader, built with clang
# under ASan+UBSan from the sources themselves (not the gcc-built libhscore.a).
#
#   make test-build   builds them when clang is there; tests/e2e/fuzz-replay.sh
#                     (run by `make check`) replays tests/fuzz/corpus/ with them
#   make fuzz         fuzzes each reader for FUZZ_SECONDS (default 60); new
#                     inputs go to $(B)/fuzz/new/<reader>/, crashes to
#                     $(B)/fuzz/crash-* (copy the good ones into the corpus)

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_NAMES   := pprof jeprof gperf sniff
FUZZ_DIR     := $(B)/fuzz
FUZZ_BINS    := $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz_%)
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
                -fno-omit-frame-pointer -g -O1
FUZZ_OBJS    := $(SRC_CORE:%.c=$(FUZZ_DIR)/%.o) $(FUZZ_DIR)/gen/profile.pb-c.o

# Built by test-build only where clang has its libFuzzer runtime
# (libclang-rt-14-dev); fuzz-replay.sh skips otherwise.
FUZZ_RT := $(shell $(FUZZ_CC) -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-$(ARCH).a
ifneq ($(wildcard $(FUZZ_RT)),)
EXTRA_TEST_BINS += $(FUZZ_BINS)
endif

$(FUZZ_DIR)/src/%.o: src/%.c $(B)/gen/profile.pb-c.h
	$(call msg,FUZZCC,$<)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(PKG_CFLAGS) -std=gnu11 $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
		-MMD -MP -c -o $@ $<

$(FUZZ_DIR)/gen/profile.pb-c.o: $(B)/gen/profile.pb-c.c
	$(call msg,FUZZCC,$<)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(PKG_CFLAGS) -std=gnu11 $(FUZZ_SAN) -c -o $@ $<

# An archive, so a harness links only what the readers and writers use (not,
# say, the live-process code that needs the injector).
$(FUZZ_DIR)/libhscore-fuzz.a: $(FUZZ_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.c tests/fuzz/fuzz_common.h $(FUZZ_DIR)/libhscore-fuzz.a
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(PKG_CFLAGS) -Itests/fuzz -std=gnu11 $(FUZZ_SAN) -fsanitize=fuzzer \
		-o $@ $< tests/fuzz/fuzz_common.c $(FUZZ_DIR)/libhscore-fuzz.a $(LIBS) -lm

# Objects reached only through the pattern rule above would count as
# intermediate and be deleted after every link.
.SECONDARY: $(FUZZ_OBJS)

-include $(wildcard $(FUZZ_DIR)/src/*.d)

# Each reader in turn, its repo corpus as seeds; the first directory given
# to libFuzzer receives the new inputs, so the repo corpus stays untouched.
fuzz: $(FUZZ_BINS)
	@set -e; for n in $(FUZZ_NAMES); do \
		mkdir -p $(FUZZ_DIR)/new/$$n; \
		seeds=tests/fuzz/corpus/$$n; [ $$n = sniff ] && seeds="$$(echo tests/fuzz/corpus/*)"; \
		echo "fuzz: $$n for $(FUZZ_SECONDS) s"; \
		ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(FUZZ_DIR)/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
			-timeout=10 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/ \
			$(FUZZ_DIR)/new/$$n $$seeds; \
	done
