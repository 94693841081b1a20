# pyprof — build, test, demo, bench.  `make help` lists the targets.
#
# The tree is the build: each folder is one layer, and a layer uses only those below it
# (docs/ARCHITECTURE.md; `make check-layout` enforces it).
#
#   include/pyprof/  the log format and the reader's API (public headers)
#   src/common/      record codec, line tables, configuration: both programs
#   src/lib/         runs inside the profiled process (libpyprof.so only)
#   preload/         the library's entry points, interposed symbols and exports
#   src/read/        reading logs into a profile, and its aggregates (the tool only)
#   utils/           the pyprof command

CC       ?= gcc
BUILD    ?= build
PREFIX   ?= /usr/local
# The library's directory: a Debian package passes /usr/lib/$(DEB_HOST_MULTIARCH).
LIBDIR   ?= $(PREFIX)/lib
SAN      ?=
OPT      ?= -O2 -g
PYTEST   ?= /usr/bin/python3 -m pytest

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-missing-field-initializers
CPPFLAGS += -D_GNU_SOURCE -Iinclude -Isrc -I.
CFLAGS   += -std=gnu11 $(OPT) $(WARN) -fvisibility=hidden -fPIC $(SANFLAGS)
ifneq ($(SAN),)
SANFLAGS := -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

COMMON_SRCS := $(wildcard src/common/*.c)
CORE_SRCS   := $(wildcard src/lib/*.c)
READ_SRCS   := $(wildcard src/read/*.c)
# The library: its entry points, the code that runs in the host, and the common layer.
LIB_SRCS  := $(wildcard preload/*.c) $(CORE_SRCS) $(COMMON_SRCS)
LIB_LIBS  := -llz4 -ldl -lpthread -lm
# The tool: the subcommands, the reader and the profile model, and the common layer.
TOOL_SRCS := $(wildcard utils/*.c) $(READ_SRCS) $(COMMON_SRCS)
TOOL_LIBS := -llz4 -lm -lz -ldw -lelf

LIB       := $(BUILD)/libpyprof.so
TOOL      := $(BUILD)/pyprof
obj        = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB_OBJS  := $(call obj,$(LIB_SRCS))
TOOL_OBJS := $(call obj,$(TOOL_SRCS))
# Unit tests link the layers as archives: each takes only the modules it uses.
ARCHIVES  := $(BUILD)/libread.a $(BUILD)/libcore.a $(BUILD)/libcommon.a
UNIT_LIBS := -lcmocka -llz4 -ldl -lpthread -lm -ldw -lelf
UNIT_TESTS:= $(patsubst tests/unit/%.c,$(BUILD)/unit/%,$(wildcard tests/unit/test_*.c))

.PHONY: all help check check-layout check-sigsafe lint-python print-layout deps demo test unit integration fuzz-replay fuzz test-package \
        fuzz-build asan ubsan \
        bench install install-python clean check-exports test-core consumers test-transparency test-repeat \
        sid-root check-interpreters format format-check deb

all: $(LIB) $(TOOL)

help:
	@echo "make              build $(LIB) and $(TOOL)"
	@echo "make check        build, unit tests, layout, exports and format checks (about a minute)"
	@echo "make test         install dependencies, then every test (what CI runs)"
	@echo "make demo         profile examples/daemon.py and print its report"
	@echo "make asan|ubsan   the tests against a sanitizer build (build/asan, build/ubsan)"
	@echo "make fuzz         every fuzz target (clang, libFuzzer, ASan, UBSan) for FUZZ_SECONDS=300 in all;"
	@echo "                  corpus grows in $(BUILD)/fuzz-corpus, reproducers in $(BUILD)/fuzz-findings"
	@echo "make fuzz-replay  every fuzz target over its saved inputs, with ASan and UBSan (in check)"
	@echo "make test-transparency  CPython's own tests, plain and preloaded at 1 kHz"
	@echo "make test-repeat N=3    make test N times in fresh clones, cores hogged"
	@echo "make bench        overhead, accuracy and cost per sample: table + $(BUILD)/bench.json"
	@echo "make check-layout fail on an include, a link or a call against the layer direction,"
	@echo "                  or a cycle within a layer not listed as known (CYCLES=report|fail)"
	@echo "make check-sigsafe  fail on a call the signal path makes that src/lib/sigsafe.list"
	@echo "                  does not allow (from the objects; in check)"
	@echo "make lint-python  pyflakes over every Python file (in check)"
	@echo "make format       reformat every tracked C source with .clang-format (clang-format 14)"
	@echo "make format-check list the C sources that differ from .clang-format (in check)"
	@echo "make install PREFIX=/usr/local    make clean (removes $(BUILD))"
	@echo "make install-python PY_SITE=DIR   the Python package and its OSProfiler hook only"
	@echo "make deb          the Debian package (debian/), checked by lintian, in $(BUILD)/deb"
	@echo "make test-package make deb, then install it into a clean Debian root, use it there, remove it;\n                  then in sandboxed units under a booted systemd (systemd-nspawn)"

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS) preload/exports.map
	$(CC) -shared $(CFLAGS) $(LDFLAGS) -Wl,--version-script=preload/exports.map -Wl,-z,defs \
	    -Wl,-z,nodelete -o $@ $(LIB_OBJS) $(LIB_LIBS)

# The tool looks for the library in the directory it was built for, too.
$(BUILD)/obj/utils/cli.o: CPPFLAGS += -DPYPROF_LIBDIR='"$(LIBDIR)"'

# The HTML pages: each template of utils/html/ with its /*PYPROF_INCLUDE name*/ lines
# replaced by the parts the pages share (the head, common.js, flame.js), into
# $(BUILD)/html/, which cmd_html.o, cmd_trace.o and cmd_diff.o embed with an .incbin
# (docs/HTML.md, "How it is made").
HTML_PARTS := utils/html/head.html utils/html/common.js utils/html/flame.js
$(BUILD)/html/%.html: utils/html/%.html $(HTML_PARTS) utils/html/include.awk
	@mkdir -p $(dir $@)
	LC_ALL=C awk -v dir=utils/html -f utils/html/include.awk $< > $@.tmp || \
	    { rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@
$(BUILD)/obj/utils/cmd_html.o: $(BUILD)/html/viewer.html
$(BUILD)/obj/utils/cmd_trace.o: $(BUILD)/html/trace.html
$(BUILD)/obj/utils/cmd_diff.o: $(BUILD)/html/diff.html
$(BUILD)/obj/utils/cmd_html.o $(BUILD)/obj/utils/cmd_trace.o $(BUILD)/obj/utils/cmd_diff.o: \
    CPPFLAGS += -DPYPROF_HTML_DIR='"$(BUILD)/html"'

$(TOOL): $(TOOL_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(TOOL_OBJS) $(TOOL_LIBS)

$(BUILD)/libcommon.a: $(call obj,$(COMMON_SRCS))
$(BUILD)/libcore.a: $(call obj,$(CORE_SRCS))
$(BUILD)/libread.a: $(call obj,$(READ_SRCS))
$(ARCHIVES):
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/unit/%: tests/unit/%.c $(ARCHIVES)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-parameter -o $@ $< $(ARCHIVES) $(UNIT_LIBS)

# The tool's JSON writer is pure logic too, outside the archives (utils/ is a program).
$(BUILD)/unit/test_jsonw: tests/unit/test_jsonw.c $(BUILD)/obj/utils/jsonw.o $(ARCHIVES)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-parameter -o $@ $< $(BUILD)/obj/utils/jsonw.o \
	    $(ARCHIVES) $(UNIT_LIBS)

# Test programs written in C (the embedding host and its plugin) are built per Python
# version by the integration tests themselves, which know the interpreters.

# Only the compiler's dependency files: the sid root (tests/sid) under build/ holds
# directories named *.d.
-include $(shell find $(BUILD)/obj $(BUILD)/unit -name '*.d' -type f 2>/dev/null)

# ---- dependencies -------------------------------------------------------------------
# Debian packages the build and the tests need.  Installed with apt-get when missing and
# running as root; otherwise the exact command is printed and make stops.
DEB_PKGS := liblz4-dev libunwind-dev libcmocka-dev python3-pytest lz4 pkg-config \
            zlib1g-dev golang-go valgrind python3-jsonschema chromium python3-yappi \
            libpython3.11-testsuite libpython3.11-dev libdw-dev elfutils tmux clang \
            libclang-rt-dev python3-osprofiler python3-graphviz clang-format-14 systemd \
            systemd-container pyflakes3 python3-uvloop
# `make deb` needs only the package's Build-Depends (debian/control) and the packaging
# tools: it runs this rule with DEB_PKGS set to PACKAGE_PKGS.
PACKAGE_PKGS := debhelper dh-python lintian python3 liblz4-dev libdw-dev zlib1g-dev libcmocka-dev
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ]; then \
	        echo "installing:$$missing"; \
	        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null || exit 1; \
	    else \
	        echo "missing packages; run: sudo apt-get install -y$$missing"; exit 1; \
	    fi; \
	fi

# The consumers the export tests open files with that Debian does not package:
# speedscope's file-format schema, from the npm package.  npm comes with the nodejs
# package of NodeSource (which conflicts with Debian's npm) or from Debian's npm.
CONSUMERS ?= build/consumers
SPEEDSCOPE_VERSION := 1.25.0
SPEEDSCOPE_SCHEMA := $(CONSUMERS)/node_modules/speedscope/dist/release/file-format-schema.json
consumers: $(SPEEDSCOPE_SCHEMA)
$(SPEEDSCOPE_SCHEMA):
	@if ! command -v npm >/dev/null; then \
	    if [ "$$(id -u)" = 0 ]; then \
	        echo "installing: nodejs npm"; \
	        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) >/dev/null || exit 1; \
	    else \
	        echo "npm is missing; run: sudo apt-get install -y nodejs npm"; exit 1; \
	    fi; \
	fi
	@mkdir -p $(CONSUMERS)
	npm install --silent --no-audit --no-fund --prefix $(CONSUMERS) speedscope@$(SPEEDSCOPE_VERSION)
	@test -f $@ || { echo "speedscope $(SPEEDSCOPE_VERSION) has no $@"; exit 1; }

# CPython 3.14 and 3.15 come from Debian unstable, in a root file system of their own
# (tests/sid/sid-root.sh: about a minute and 400 MB once, then well under a second).  It
# stays in build/sid for every build directory (asan, ubsan); `make clean` removes it.
SID ?= build/sid
sid-root:
	@sh tests/sid/sid-root.sh $(SID) >/dev/null

# ---- tests --------------------------------------------------------------------------
unit: $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; $$t; done

check-exports: $(LIB)
	@tests/check_exports.sh $(LIB)

# The symbol check reads the built objects: they are built first.  CYCLES=report lists
# every cycle among the objects of a layer and fails on none; CYCLES=fail fails on each,
# even those tests/check_layout.py lists as known (by default only the others fail).
check-layout: all
	@python3 tests/check_layout.py --self-test --cycles=$(or $(CYCLES),allow) --objects $(BUILD)/obj .

# The signal path: from each entry point src/lib/sigsafe.list names, every call the
# library's objects can make outside the library is one the list allows (with --san, the
# sanitizers' own calls too); the self-test plants a printf on a cold path first.
check-sigsafe: $(LIB)
	@python3 tests/check_sigsafe.py --self-test $(if $(SAN),--san) src/lib/sigsafe.list $(LIB_OBJS)

# Every Python file of the tree (tests, bench, the Python package, examples) through
# pyflakes: unused imports and names, undefined names, shadowed loop variables.
PY_FILES = $(shell find . -name '*.py' -not -path './build/*' -not -path './.git/*')
lint-python:
	@/usr/bin/python3 -m pyflakes $(PY_FILES) && echo "lint-python: OK ($(words $(PY_FILES)) files)"

# The style is .clang-format's, as clang-format 14 lays it out (tests/check_format.sh).
format:
	@tests/check_format.sh --fix

format-check:
	@tests/check_format.sh

print-layout:
	@echo "LIB_SRCS = $(LIB_SRCS)"
	@echo "TOOL_SRCS = $(TOOL_SRCS)"
	@echo "UNIT_SRCS = $(CORE_SRCS) $(READ_SRCS) $(COMMON_SRCS)"

# Build, unit tests and the static checks: the quick loop while changing code.
check: all unit check-layout check-sigsafe check-exports fuzz-replay format-check lint-python

integration: all consumers sid-root
	PYPROF_LIB=$(abspath $(LIB)) PYPROF_TOOL=$(abspath $(TOOL)) PYPROF_SAN=$(SAN) \
	    PYPROF_CONSUMERS=$(abspath $(CONSUMERS)) PYPROF_SID=$(abspath $(SID)) \
	    $(PYTEST) -q -p no:cacheprovider --junitxml=$(abspath $(BUILD))/integration.xml \
	    tests/integration $(PYTEST_ARGS)

# ---- fuzzing ------------------------------------------------------------------------
# Every parser of outside data has a libFuzzer target, tests/fuzz/fuzz_<name>.c
# (tests/fuzz/README.md): FUZZ_SRCS_<name> are the sources it is linked with, its seeds
# are in FUZZ_SEEDS_<name> (tests/fuzz/corpus-<name> unless set), and it gets
# FUZZ_WEIGHT_<name> shares of `make fuzz`'s time (1 unless set).
#   make fuzz-replay  each target, built with both sanitizers and replay_main.c instead of
#                     libFuzzer, over its own seeds: every saved input, every time
#   make fuzz         each target built with libFuzzer, ASan and UBSan (clang), fuzzed
#                     for its share of FUZZ_SECONDS; fails on any finding
FUZZ_TARGETS        := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SRCS_reader    := src/read/reader.c src/read/lz4stream.c src/read/logdec.c src/common/record.c
FUZZ_SRCS_linetable := src/common/linetable.c
FUZZ_SRCS_config    := src/common/config.c
FUZZ_SRCS_ctlcmd    := src/lib/ctlcmd.c src/lib/ctlsock.c src/lib/ownfd.c src/common/config.c
FUZZ_SRCS_jsonscan  := src/read/jsonscan.c
FUZZ_LIBS_reader    := -llz4
FUZZ_SEEDS_reader   := tests/fuzz/corpus tests/fixtures
FUZZ_WEIGHT_reader  := 3
fuzz_seeds           = $(or $(FUZZ_SEEDS_$(1)),tests/fuzz/corpus-$(1))
FUZZ_SECONDS ?= 300
FUZZ_RSS_MB  ?= 2048
CLANG        ?= clang
# The replay is built with clang when there is one, else with gcc (same sanitizers).
REPLAY_CC    ?= $(if $(shell command -v $(CLANG) 2>/dev/null),$(CLANG),gcc)
FUZZ_CFLAGS  := -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN)
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_HEADERS := $(wildcard include/pyprof/*.h src/*/*.h tests/fuzz/*.h)

define fuzz_target_rules
$(BUILD)/replay/fuzz_$(1): tests/fuzz/fuzz_$(1).c tests/fuzz/replay_main.c $(FUZZ_SRCS_$(1)) $(FUZZ_HEADERS)
	@mkdir -p $$(dir $$@)
	$$(REPLAY_CC) $$(CPPFLAGS) $$(FUZZ_CFLAGS) $$(FUZZ_SAN) -o $$@ $$(filter %.c,$$^) $(FUZZ_LIBS_$(1))
$(BUILD)/fuzz/fuzz_$(1): tests/fuzz/fuzz_$(1).c $(FUZZ_SRCS_$(1)) $(FUZZ_HEADERS)
	@mkdir -p $$(dir $$@)
	$$(CLANG) $$(CPPFLAGS) $$(FUZZ_CFLAGS) $$(FUZZ_SAN) -fsanitize=fuzzer -o $$@ $$(filter %.c,$$^) $(FUZZ_LIBS_$(1))
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_target_rules,$(t))))

fuzz-replay: $(foreach t,$(FUZZ_TARGETS),$(BUILD)/replay/fuzz_$(t))
	@set -e; $(foreach t,$(FUZZ_TARGETS),echo "== fuzz-replay $(t)"; \
	    $(BUILD)/replay/fuzz_$(t) $(call fuzz_seeds,$(t));)

fuzz-build: $(foreach t,$(FUZZ_TARGETS),$(BUILD)/fuzz/fuzz_$(t))

# clang and its fuzzer runtime come from `make deps` when a probe cannot link a target.
fuzz:
	@echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' | \
	    $(CLANG) -fsanitize=fuzzer,address,undefined -x c - -o /dev/null 2>/dev/null || \
	    $(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory fuzz-build
	@tests/fuzz/run_fuzz.sh $(BUILD) $(FUZZ_SECONDS) $(FUZZ_RSS_MB) \
	    $(foreach t,$(FUZZ_TARGETS),$(t)=$(or $(FUZZ_WEIGHT_$(t)),1)=$(subst $(eval) ,:,$(strip $(call fuzz_seeds,$(t)))))

# Debian's libpython3.11-testsuite for /usr/bin/python3.11, run plain and preloaded; every
# test case must have the same outcome (tests/transparency/run.py says how flaky ones are
# re-run).  Outputs and logs stay in $(BUILD)/transparency.
test-transparency: all
	PYPROF_LIB=$(abspath $(LIB)) PYPROF_TOOL=$(abspath $(TOOL)) PYPROF_SAN=$(SAN) \
	    /usr/bin/python3 tests/transparency/run.py --workdir $(BUILD)/transparency \
	    $(TRANSPARENCY_ARGS)

# Every interpreter the integration tests run on, said once at the start: missing ones are
# listed with how to get them; with CI=true that stops here (tests/check_interpreters.py).
check-interpreters: sid-root
	@PYPROF_SAN=$(SAN) PYPROF_SID=$(abspath $(SID)) /usr/bin/python3 tests/check_interpreters.py

test-core: check-interpreters all unit check-layout check-sigsafe check-exports fuzz-replay lint-python \
           integration test-transparency test-package

# The Debian package built, installed into a clean Debian root, used there and removed
# (tests/package/install_test.sh; the root is made once, under build/package-test); then
# installed into a copy of that root with systemd, booted with systemd-nspawn, and used
# by units sandboxed the usual ways (tests/package/hardening_test.sh).
test-package: deb
	bash tests/package/install_test.sh
	bash tests/package/hardening_test.sh

test: deps
	$(MAKE) test-core

N ?= 3
test-repeat:
	tests/repeat.sh $(N)

asan: deps
	$(MAKE) BUILD=build/asan SAN=address OPT="-O1 -g" test-core

ubsan: deps
	$(MAKE) BUILD=build/ubsan SAN=undefined OPT="-O1 -g" test-core

demo: deps
	$(MAKE) all
	@echo "== profiling examples/daemon.py under LD_PRELOAD"
	@rm -rf $(BUILD)/demo && mkdir -p $(BUILD)/demo
	PYPROF_OUTPUT=$(BUILD)/demo LD_PRELOAD=$(abspath $(LIB)) python3 examples/daemon.py
	$(TOOL) report $(BUILD)/demo

# The sid root with python3-memray too (the alloc part's comparison; a failed install
# leaves the bench to say memray is not available).
bench: deps all
	-@$(MAKE) --no-print-directory sid-root SID_EXTRA_PACKAGES="python3-memray"
	python3 bench/run.py --lib $(abspath $(LIB)) --tool $(abspath $(TOOL)) --out $(BUILD)/bench.json

# The Python package `pyprof` (utils/python) and its .pth hook go where Debian's python3
# looks for locally installed packages ($(PREFIX)/lib/pythonX.Y/dist-packages).
DEB_PYTHON ?= /usr/bin/python3
PY_SITE ?= $(PREFIX)/lib/python$(shell $(DEB_PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3)/dist-packages

install: all install-python
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(LIB) $(DESTDIR)$(LIBDIR)/libpyprof.so
	install -m 0755 $(TOOL) $(DESTDIR)$(PREFIX)/bin/pyprof
	install -m 0644 docs/pyprof.1 $(DESTDIR)$(PREFIX)/share/man/man1/pyprof.1

# The Python package and its OSProfiler hook alone (nothing to build; the OSProfiler tests
# install them with this rule into a site directory of their own).
install-python:
	install -d $(DESTDIR)$(PY_SITE)/pyprof
	install -m 0644 utils/python/pyprof/*.py $(DESTDIR)$(PY_SITE)/pyprof/
	install -m 0644 utils/python/pyprof-osprofiler.pth $(DESTDIR)$(PY_SITE)/

clean:
	rm -rf $(BUILD)

# ---- the Debian package -------------------------------------------------------------
# debian/ holds the packaging (debian/rules says where each file goes and which tests
# run).  dpkg-buildpackage builds in debian/build, never in $(BUILD), cleans the tree
# afterwards (-tc) and leaves its files beside the checkout; they are moved to
# $(BUILD)/deb, and lintian fails make on any error or warning (each override in
# debian/*.lintian-overrides says why).  The package's version is the project's:
# debian/changelog must name PYPROF_VERSION_STRING.
VERSION = $(shell sed -n 's/^\#define PYPROF_VERSION_STRING "\(.*\)"/\1/p' include/pyprof/pyprof.h)
deb:
	@$(MAKE) --no-print-directory deps DEB_PKGS="$(PACKAGE_PKGS)"
	@v=$$(dpkg-parsechangelog -S Version); [ "$$v" = "$(VERSION)" ] || { \
	    echo "debian/changelog is at $$v, include/pyprof/pyprof.h at $(VERSION): add a changelog entry"; \
	    exit 1; }
	dpkg-buildpackage -us -uc -b -Jauto -tc
	@rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb
	mv ../pyprof*_$(VERSION)_* $(BUILD)/deb/
	lintian --fail-on error,warning --display-info $(BUILD)/deb/pyprof_$(VERSION)_*.changes
	@ls $(BUILD)/deb/*.deb
