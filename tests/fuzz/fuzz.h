/*
 * fuzz.h: what every fuzz target shares: libFuzzer's entry point, which each
 * tests/fuzz/fuzz_<name>.c defines (and replay_main.c calls), and CHECK, a broken
 * promise of the code under test: abort() at once, for the fuzzer or the replay to report.
 */
#ifndef PYPROF_FUZZ_H
#define PYPROF_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond))                                                                           \
            abort();                                                                           \
    } while (0)

#endif
