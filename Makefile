# heapsnap - one plain GNU Makefile.  `make V=1` shows the commands.
#
# Layout (DESIGN.md):  src/ -> build/heapsnap,  injector/ -> build/libinjector.a,
# payload/ -> build/libheapsnap-payload.so.  Test programs and fragments for
# special builds live beside their sources in */*.mk files, included below.

.DELETE_ON_ERROR:
.SUFFIXES:

VERSION   := 0.1.0
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
LIBDIR    ?= $(PREFIX)/lib
MANDIR    ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/vendor-completions
DESTDIR   ?=

CC        ?= gcc
CXX       ?= g++
ARCH      ?= $(shell uname -m)
B         ?= build

CFLAGS    ?= -O2 -g
WARN      := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CPPFLAGS  += -D_GNU_SOURCE -DHEAPSNAP_VERSION='"$(VERSION)"' \
             -DHEAPSNAP_LIBDIR='"$(LIBDIR)"' -Isrc -Iinjector -Ipayload -I$(B)/gen
ALL_CFLAGS = -std=gnu11 $(WARN) $(CFLAGS)

PKGS      := libdw libelf zlib libprotobuf-c readline libunwind-ptrace
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
LIBS      := $(PKG_LIBS) -lpthread -lm -lstdc++

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2)
endif

# ---- sources --------------------------------------------------------------
PROTO_C   := $(B)/gen/profile.pb-c.c
SRC_ALL   := $(wildcard src/*.c)
SRC_MAIN  := src/main.c $(wildcard src/cmd_*.c)
SRC_CORE  := $(filter-out $(SRC_MAIN),$(SRC_ALL))
CORE_OBJS := $(SRC_CORE:%.c=$(B)/%.o) $(B)/gen/profile.pb-c.o
MAIN_OBJS := $(SRC_MAIN:%.c=$(B)/%.o)

INJ_SRC   := $(wildcard injector/*.c) $(wildcard injector/arch/$(ARCH).c)
INJ_OBJS  := $(INJ_SRC:%.c=$(B)/%.o)

PAYLOAD_SRC  := $(wildcard payload/*.c)
PAYLOAD_OBJS := $(PAYLOAD_SRC:%.c=$(B)/pic/%.o)
PAYLOAD_SO   := $(B)/libheapsnap-payload.so

HEAPSNAP  := $(B)/heapsnap
CORE_LIB  := $(B)/libhscore.a
INJ_LIB   := $(B)/libinjector.a

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/unit/%)

# Test targets: every tests/targets/*.c and *.cc becomes a program; a *.mk
# beside them may add special rules (static, other allocators, C++ flags).
TARGET_C   := $(wildcard tests/targets/*.c)
TARGET_CC  := $(wildcard tests/targets/*.cc)
TARGET_BINS := $(TARGET_C:tests/targets/%.c=$(B)/tests/targets/%) \
               $(TARGET_CC:tests/targets/%.cc=$(B)/tests/targets/%)
EXTRA_TEST_BINS :=

ALL_BINS := $(HEAPSNAP) $(INJ_LIB) $(if $(PAYLOAD_SRC),$(PAYLOAD_SO))

.PHONY: all check check-long test-build deps demo install uninstall clean bench fuzz
all: $(ALL_BINS)

# ---- rules ----------------------------------------------------------------
$(B)/gen/profile.pb-c.c $(B)/gen/profile.pb-c.h &: src/profile.proto
	$(call msg,PROTOC,$<)
	@mkdir -p $(B)/gen
	$(Q)protoc-c --proto_path=src --c_out=$(B)/gen src/profile.proto

$(B)/gen/%.o: $(B)/gen/%.c
	$(call msg,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(PKG_CFLAGS) -std=gnu11 $(CFLAGS) -c -o $@ $<

$(B)/src/%.o: src/%.c $(B)/gen/profile.pb-c.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(B)/injector/%.o: injector/%.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(CORE_LIB): $(CORE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(INJ_LIB): $(INJ_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(HEAPSNAP): $(MAIN_OBJS) $(CORE_LIB) $(INJ_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(MAIN_OBJS) $(CORE_LIB) $(INJ_LIB) $(LIBS)

# The payload: position independent, hidden by default, only hsp_* exported,
# libc only (DESIGN.md, INJECTION.md "the payload itself").
PAYLOAD_CFLAGS := -fPIC -fvisibility=hidden -fno-omit-frame-pointer -ftls-model=initial-exec
$(B)/pic/payload/%.o: payload/%.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(PAYLOAD_CFLAGS) -MMD -MP -c -o $@ $<

$(PAYLOAD_SO): $(PAYLOAD_OBJS) $(wildcard payload/payload.map)
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared $(CFLAGS) -Wl,-z,now -Wl,-z,relro -Wl,--no-undefined \
		$(if $(wildcard payload/payload.map),-Xlinker --version-script=payload/payload.map) \
		-o $@ $(PAYLOAD_OBJS) -lpthread

$(B)/tests/unit/%: tests/unit/%.c $(CORE_LIB) $(INJ_LIB)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(ALL_CFLAGS) -Itests/lib -MMD -MP -o $@ $< $(CORE_LIB) $(INJ_LIB) $(LIBS)

$(B)/tests/targets/%: tests/targets/%.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall $(TARGET_CFLAGS_$*) -o $@ $< -lpthread -ldl $(TARGET_LIBS_$*)

$(B)/tests/targets/%: tests/targets/%.cc
	$(call msg,CXX,$<)
	@mkdir -p $(@D)
	$(Q)$(CXX) -std=gnu++17 -O2 -g -Wall $(TARGET_CFLAGS_$*) -o $@ $< -lpthread -ldl $(TARGET_LIBS_$*)

# Fragments owned by each part: extra targets, test programs, fuzzers.
-include $(sort $(wildcard tests/*/*.mk bench/*.mk payload/*.mk))
-include $(wildcard $(B)/src/*.d $(B)/injector/*.d $(B)/injector/arch/*.d $(B)/pic/payload/*.d \
	$(B)/tests/unit/*.d)

# ---- tests ----------------------------------------------------------------
test-build: all $(UNIT_BINS) $(TARGET_BINS) $(EXTRA_TEST_BINS)

# The tests drive real tools and allocators: install what is missing first
# (as root; otherwise deps.sh prints the apt-get line and stops).
check:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory B=$(B) test-build
	@HEAPSNAP_BUILD=$(CURDIR)/$(B) tests/run.sh

check-long:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory B=$(B) test-build
	@HEAPSNAP_LONG=1 HEAPSNAP_BUILD=$(CURDIR)/$(B) tests/run.sh

deps:
	@scripts/deps.sh

# The walkthrough of README.md: deps, build, then scripts/demo.sh runs
# heapsnap against tests/targets/demo_service (dump, top, diff, stop).
demo:
	@scripts/deps.sh --build-only
	@$(MAKE) --no-print-directory B=$(B) all $(B)/tests/targets/demo_service
	@B=$(B) scripts/demo.sh

# ---- install --------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/heapsnap
	install -m 755 $(HEAPSNAP) $(DESTDIR)$(BINDIR)/heapsnap
	$(if $(PAYLOAD_SRC),install -m 644 $(PAYLOAD_SO) $(DESTDIR)$(LIBDIR)/heapsnap/)
	$(if $(wildcard man/*.1),install -d $(DESTDIR)$(MANDIR)/man1 && install -m 644 $(wildcard man/*.1) $(DESTDIR)$(MANDIR)/man1/)
	$(if $(wildcard completions/heapsnap.bash),install -d $(DESTDIR)$(BASHCOMPDIR) && install -m 644 completions/heapsnap.bash $(DESTDIR)$(BASHCOMPDIR)/heapsnap)
	$(if $(wildcard completions/_heapsnap),install -d $(DESTDIR)$(ZSHCOMPDIR) && install -m 644 completions/_heapsnap $(DESTDIR)$(ZSHCOMPDIR)/_heapsnap)

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/heapsnap $(DESTDIR)$(MANDIR)/man1/heapsnap.1 \
	      $(DESTDIR)$(BASHCOMPDIR)/heapsnap $(DESTDIR)$(ZSHCOMPDIR)/_heapsnap
	rm -rf $(DESTDIR)$(LIBDIR)/heapsnap

clean:
	rm -rf $(B) tests/logs
