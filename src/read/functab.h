/*
 * functab: the one interning of functions.  A function is (name, file, first line,
 * kind); each distinct one gets one index into the caller's array of profile_func,
 * which grows here.  The model's functions (profile.c: Python code objects, native
 * symbols, the markers) and `pyprof top`'s are interned here.  Not thread-safe;
 * tool-side only.
 *
 * Interface: functab, functab_init, functab_intern, functab_free.
 */
#ifndef PYPROF_FUNCTAB_H
#define PYPROF_FUNCTAB_H

#include <stddef.h>
#include <stdint.h>

#include "idmap.h"
#include "profile.h"

typedef struct functab {
    profile_func **funcs; /* the caller's array, its count and capacity */
    size_t *n, *cap;
    idtab index;
} functab;

/* Interns into *funcs (*n entries, room for *cap), which must start empty or hold only
 * functions this table interned, and must outlive it. */
void functab_init(functab *t, profile_func **funcs, size_t *n, size_t *cap);

/* The index of the function (name, file, line, kind), added with copies of `name` and
 * `file` when new.  IDMAP_EMPTY when out of memory, or when the table holds
 * IDMAP_EXCLUDED functions already. */
uint32_t functab_intern(functab *t, const char *name, const char *file, int64_t line, int kind);

/* Frees the index; the functions and their strings are the caller's to free. */
void functab_free(functab *t);

#endif
