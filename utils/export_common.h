/*
 * export_common: the helpers every export writer (utils/export_FORMAT.c) may share.
 * They live apart from cmd_export.c, the command that calls the writers, so that the
 * writers call down into this module and never back up into the command.
 *
 * Interface: export_oom, export_memory_weights.
 */
#ifndef PYPROF_EXPORT_COMMON_H
#define PYPROF_EXPORT_COMMON_H

#include <stdint.h>

#include "read/profile.h"

/* Prints "out of memory" and returns -1, for writers' failure paths. */
int export_oom(void);

/* --memory: per stack, the bytes its sampled allocations stand for by measure `by`
 * (ALLOCS_BY_*; allocs_stack_weights), p->nstacks entries; NULL when out of memory. */
uint64_t *export_memory_weights(const profile *p, int by);

#endif
