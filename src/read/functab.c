/*
 * functab: the one interning of functions.  See functab.h.
 */
#include "functab.h"

#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "common/growarray.h"

void functab_init(functab *t, profile_func **funcs, size_t *n, size_t *cap)
{
    memset(t, 0, sizeof *t);
    t->funcs = funcs;
    t->n = n;
    t->cap = cap;
}

static uint64_t func_hash(const char *name, const char *file, int64_t line, int kind)
{
    uint64_t h = fnv_bytes(FNV_OFFSET, name, strlen(name) + 1);
    h = fnv_bytes(h, file, strlen(file) + 1);
    h = fnv_bytes(h, &kind, sizeof kind);
    return fnv_bytes(h, &line, sizeof line);
}

uint32_t functab_intern(functab *t, const char *name, const char *file, int64_t line, int kind)
{
    uint64_t h = func_hash(name, file, line, kind);
    size_t pos;
    for (uint32_t i = idtab_first(&t->index, h, &pos); i != IDTAB_NONE;
         i = idtab_next(&t->index, h, &pos)) {
        const profile_func *f = &(*t->funcs)[i];
        if (f->line == line && f->kind == kind && !strcmp(f->name, name) &&
            !strcmp(f->file, file))
            return i;
    }
    size_t n = *t->n;
    if (n >= IDMAP_EXCLUDED || idtab_reserve(&t->index, n + 1) ||
        grow_array((void **)t->funcs, t->cap, n + 1, sizeof **t->funcs, 16))
        return IDMAP_EMPTY;
    char *name_copy = strdup(name), *file_copy = strdup(file);
    if (!name_copy || !file_copy) {
        free(name_copy);
        free(file_copy);
        return IDMAP_EMPTY;
    }
    profile_func *f = &(*t->funcs)[n];
    f->name = name_copy;
    f->file = file_copy;
    f->line = line;
    f->kind = kind;
    idtab_add(&t->index, h, (uint32_t)n);
    (*t->n)++;
    return (uint32_t)n;
}

void functab_free(functab *t) { idtab_free(&t->index); }
