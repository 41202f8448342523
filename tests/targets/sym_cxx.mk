# sym_cxx.mk - the symbolizer's C++ target once more, built by clang (DWARF 5
# with decl_file 0 and no .debug_aranges); test_symbolize skips it when absent.
CLANGXX ?= $(shell command -v clang++ 2>/dev/null)
ifneq ($(CLANGXX),)
EXTRA_TEST_BINS += $(B)/tests/targets/sym_cxx_clang

$(B)/tests/targets/sym_cxx_clang: tests/targets/sym_cxx.cc
	$(call msg,CLANGXX,$<)
	@mkdir -p $(@D)
	$(Q)$(CLANGXX) -std=gnu++17 -O2 -g -Wall -o $@ $< -lpthread -ldl
endif
