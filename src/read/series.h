/*
 * series: the files of a rotated series as one process of the model (profile.h says what
 * that means).  Which process a file joins (by its series key and a seq the process does
 * not have yet), its place in the process's list of files (by seq), and what the process
 * is made of its files: its footer (counters and costs summed, how it ended the
 * highest-seq file's), its end, path and last time.  A log that is not rotated is a
 * series of one file.  profile.c calls in here while loading; tool-side only.
 *
 * Interface: series_key, series_process, series_add_file, series_combine.
 */
#ifndef PYPROF_SERIES_H
#define PYPROF_SERIES_H

#include <stdint.h>

#include <pyprof/reader.h>

#include "profile.h"

/* What ties the files of a rotated series together, and where one goes in it. */
typedef struct series_key {
    char *host, *run_id;
    uint64_t pid, window, series_start_unix_ns, seq;
} series_key;

/* The process a file of series `k` joins: one with the same key that does not have its
 * seq yet (the same file given twice is two processes, as any two logs are); else
 * UINT32_MAX. */
uint32_t series_process(const profile *p, const series_key *k);

/* Adds the file `path` (copied) with header `h` to process `proc`'s list, in seq order;
 * returns its index, or -1 when out of memory. */
long series_add_file(profile *p, uint32_t proc, const char *path, const pyprof_header *h);

/* Derives the process's footer, end, path and last time from its files (by seq).  0, or
 * -1 when out of memory. */
int series_combine(profile_process *pr);

#endif
