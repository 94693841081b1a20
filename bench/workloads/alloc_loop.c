/*
 * alloc_loop.c: the C malloc loop of the bench's alloc part (bench/parts/alloc.py
 * compiles it with cc -O2 into the bench's scratch directory; no Python in the process).
 *
 *     alloc_loop N [OUT.json]
 *
 * N times: frees the block in one of 256 slots (the slots taken in a pseudo-random
 * order) and mallocs a new one there, of a pseudo-random size of 16 to 4096 bytes,
 * writing its first and last byte.  The blocks go through the C library's malloc and
 * free as any program calls them (the executable's PLT and GOT), which is what the
 * library would hook.  Times its own loop with the process's CPU clock
 * (CLOCK_PROCESS_CPUTIME_ID) and the monotonic clock, and writes both with N to OUT.json
 * (start-up and exit left out), with the CPU time of each of its CHUNKS equal parts
 * (windows: the bench takes the faster ones as the cleaner measure, bench/stats.py's
 * ratio_q).  Exit status 0, or 1 when a malloc failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SLOTS 256
#define CHUNKS 20

static double secs(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000000;
    static unsigned char *slot[SLOTS];
    uint64_t x = 88172645463325252ull; /* xorshift64 */
    unsigned long sum = 0;
    double chunk[CHUNKS];
    long per = n < CHUNKS ? 1 : n / CHUNKS, left = per;
    int done = 0;
    n = per * CHUNKS;
    double c0 = secs(CLOCK_PROCESS_CPUTIME_ID), w0 = secs(CLOCK_MONOTONIC), cl = c0;
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned k = (unsigned)(x >> 56);             /* 0..255 */
        size_t size = 16 + (size_t)((x >> 8) % 4081); /* 16..4096 */
        free(slot[k]);
        unsigned char *p = malloc(size);
        if (!p)
            return 1;
        p[0] = (unsigned char)i;
        p[size - 1] = (unsigned char)k;
        sum += p[0];
        slot[k] = p;
        if (--left == 0) {
            double c = secs(CLOCK_PROCESS_CPUTIME_ID);
            chunk[done++] = c - cl;
            cl = c;
            left = per;
        }
    }
    double c1 = secs(CLOCK_PROCESS_CPUTIME_ID), w1 = secs(CLOCK_MONOTONIC);
    for (int k = 0; k < SLOTS; k++)
        free(slot[k]);
    if (argc > 2) {
        FILE *f = fopen(argv[2], "w");
        if (!f)
            return 1;
        fprintf(f,
                "{\"n\": %ld, \"loop_cpu_s\": %.9f, \"loop_s\": %.9f, \"check\": %lu, "
                "\"chunk_iterations\": %ld, \"chunk_cpu_s\": [",
                n, c1 - c0, w1 - w0, sum, per);
        for (int c = 0; c < CHUNKS; c++)
            fprintf(f, "%s%.9f", c ? ", " : "", chunk[c]);
        fprintf(f, "]}\n");
        fclose(f);
    }
    return 0;
}
