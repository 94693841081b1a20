/*
 * keep: what a filter that runs after the load (--span, --task) leaves of a profile's
 * samples, and the per-thread and per-process counts that follow.  Tool-side only.
 *
 * Interface: keep_samples.
 */
#ifndef PYPROF_KEEP_H
#define PYPROF_KEEP_H

#include <stdint.h>

#include "profile.h"

/* Keeps the samples whose keep[] is set, in order, and counts each thread's and
 * process's samples again. */
void keep_samples(profile *p, const uint8_t *keep);

#endif
