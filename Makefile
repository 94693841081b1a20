# pyprof — build, test, demo, bench.
#
#   make            build/libpyprof.so and build/pyprof
#   make demo       install dependencies, build, profile examples/daemon.py, print the report
#   make test       install dependencies, build, run every test (what .ci/run calls)
#   make asan       the same tests against an AddressSanitizer build (build/asan/)
#   make ubsan      the same tests against an UndefinedBehaviorSanitizer build (build/ubsan/)
#   make test-transparency  CPython's own tests of signals, threads, subprocesses, os, time,
#                   select and sockets, plain and under LD_PRELOAD at 1 kHz: same outcomes
#                   (part of make test)
#   make test-repeat N=3  make test N times, each in a fresh clone, with every core
#                   hogged by a busy loop; lists every test that failed in any run
#   make bench      benchmarks: overhead, accuracy, cost per sample; table + build/bench.json
#   make install PREFIX=/usr/local

CC       ?= gcc
BUILD    ?= build
PREFIX   ?= /usr/local
SAN      ?=
OPT      ?= -O2 -g
PYTEST   ?= /usr/bin/python3 -m pytest

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-missing-field-initializers
CPPFLAGS += -D_GNU_SOURCE -Iinclude -Isrc -Ipreload
CFLAGS   += -std=gnu11 $(OPT) $(WARN) -fvisibility=hidden -fPIC $(SANFLAGS)
ifneq ($(SAN),)
SANFLAGS := -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

# The library: entry points, interposed symbols, configuration, and the core it needs.
LIB_SRCS  := $(wildcard preload/*.c) \
             src/sighandler.c src/sampler.c src/pyabi.c src/ring.c src/writer.c \
             src/record.c src/linetable.c src/safe_read.c src/diag.c \
             src/pynames.c src/pthread_tid.c src/ownthreads.c src/threadtimer.c
LIB_LIBS  := -llz4 -ldl -lpthread
# The tool: the subcommands, the reader and the profile model.
TOOL_SRCS := $(wildcard utils/*.c) src/reader.c src/record.c src/linetable.c \
             src/profile.c preload/config.c
TOOL_LIBS := -llz4 -lm -lz
# Pure modules the unit tests link against.
UNIT_SRCS := src/record.c src/linetable.c src/ring.c src/reader.c preload/config.c
UNIT_LIBS := -lcmocka -llz4 -lpthread -lm

LIB       := $(BUILD)/libpyprof.so
TOOL      := $(BUILD)/pyprof
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/lib/%.o)
TOOL_OBJS := $(TOOL_SRCS:%.c=$(BUILD)/tool/%.o)
UNIT_TESTS:= $(patsubst tests/unit/%.c,$(BUILD)/unit/%,$(wildcard tests/unit/test_*.c))
HELPERS   := $(patsubst tests/helpers/%.c,$(BUILD)/helpers/%,$(wildcard tests/helpers/*.c))

.PHONY: all deps demo test unit integration fuzz-replay asan ubsan bench install clean \
        check-exports test-core consumers test-transparency test-repeat

all: $(LIB) $(TOOL)

$(BUILD)/lib/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/tool/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS) preload/exports.map
	$(CC) -shared $(CFLAGS) -Wl,--version-script=preload/exports.map -Wl,-z,defs \
	    -Wl,-z,nodelete -o $@ $(LIB_OBJS) $(LIB_LIBS)

# The HTML viewer's page is embedded in cmd_html.o by an .incbin of this file.
$(BUILD)/tool/utils/cmd_html.o: utils/html/viewer.html

$(TOOL): $(TOOL_OBJS)
	$(CC) $(CFLAGS) -o $@ $(TOOL_OBJS) $(TOOL_LIBS)

$(BUILD)/unit/%: tests/unit/%.c $(UNIT_SRCS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-parameter -o $@ $< $(UNIT_SRCS) $(UNIT_LIBS)

# Test programs written in C (the embedding host and its plugin) are built per Python
# version by the integration tests themselves, which know the interpreters.

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- dependencies -------------------------------------------------------------------
# Debian packages the build and the tests need.  Installed with apt-get when missing and
# running as root; otherwise the exact command is printed and make stops.
DEB_PKGS := liblz4-dev libunwind-dev libcmocka-dev python3-pytest lz4 pkg-config \
            zlib1g-dev golang-go valgrind python3-jsonschema chromium python3-yappi \
            libpython3.11-testsuite
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

# ---- tests --------------------------------------------------------------------------
unit: $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; $$t; done

check-exports: $(LIB)
	@tests/check_exports.sh $(LIB)

integration: all consumers
	PYPROF_LIB=$(abspath $(LIB)) PYPROF_TOOL=$(abspath $(TOOL)) PYPROF_SAN=$(SAN) \
	    PYPROF_CONSUMERS=$(abspath $(CONSUMERS)) \
	    $(PYTEST) -q -p no:cacheprovider tests/integration $(PYTEST_ARGS)

fuzz-replay: $(BUILD)/fuzz_replay
	$(BUILD)/fuzz_replay tests/fuzz/corpus tests/fixtures

$(BUILD)/fuzz_replay: tests/fuzz/fuzz_reader.c tests/fuzz/replay_main.c src/reader.c src/record.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $^ -llz4

# Debian's libpython3.11-testsuite for /usr/bin/python3.11, run plain and preloaded; every
# test case must have the same outcome (tests/transparency/run.py says how flaky ones are
# re-run).  Outputs and logs stay in $(BUILD)/transparency.
test-transparency: all
	PYPROF_LIB=$(abspath $(LIB)) PYPROF_TOOL=$(abspath $(TOOL)) PYPROF_SAN=$(SAN) \
	    /usr/bin/python3 tests/transparency/run.py --workdir $(BUILD)/transparency \
	    $(TRANSPARENCY_ARGS)

test-core: all unit check-exports fuzz-replay integration test-transparency

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

bench: deps all
	python3 bench/run.py --lib $(abspath $(LIB)) --tool $(abspath $(TOOL)) --out $(BUILD)/bench.json

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libpyprof.so
	install -m 0755 $(TOOL) $(DESTDIR)$(PREFIX)/bin/pyprof
	install -m 0644 docs/pyprof.1 $(DESTDIR)$(PREFIX)/share/man/man1/pyprof.1

clean:
	rm -rf build
