/*
 * tasks: the asyncio task frames of a loaded profile (PROFILE_FUNC_TASK, named
 * "<task NAME>"): a task frame's name, a name folded with its siblings ("orders-12" and
 * "orders-7" are "orders-*"), the running task of a stack (its innermost task frame), and
 * the --task filter over the samples.  Tool-side only.
 *
 * Interface: tasks_name, tasks_fold, tasks_running, tasks_filter.
 */
#ifndef PYPROF_TASKS_H
#define PYPROF_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* 1 when f is a task frame, with *name and *len its task's name (inside f->name). */
int tasks_name(const profile_func *f, const char **name, size_t *len);

/* Writes the task name (len bytes) into out (room for len + 2), with a number it ends
 * in replaced by "*": a family of tasks started in a loop is one row.  Returns out. */
char *tasks_fold(const char *name, size_t len, char *out);

/* The index in p->frames of the innermost task frame of stack s, or -1: the task a
 * sample of that stack was running. */
int64_t tasks_running(const profile *p, uint32_t s);

/* --task: keeps the samples whose stack holds a task frame whose name matches one of the
 * filter's globs (fnmatch).  0, or -1 when out of memory. */
int tasks_filter(profile *p);

#endif
