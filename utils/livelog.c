/*
 * livelog: the id maps of a log read as it is written.  See livelog.h.
 */
#include "livelog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/growarray.h"

static char *dup_str(pyprof_str s)
{
    char *d = malloc(s.len + 1);
    if (!d)
        return NULL;
    memcpy(d, s.s, s.len);
    d[s.len] = 0;
    return d;
}

/* The slot for `key` in `map`: the existing one, or a new one at the end of the array
 * (*is_new set).  NULL when out of memory. */
static void *slot(idmap *map, void **arr, size_t *n, size_t *cap, size_t elem, uint64_t key,
                  int *is_new)
{
    uint32_t i = idmap_get(map, key);
    *is_new = 0;
    if (i != IDMAP_EMPTY)
        return (char *)*arr + (size_t)i * elem;
    if (*n >= IDMAP_EMPTY - 1 || grow_array(arr, cap, *n + 1, elem, 64) < 0 ||
        idmap_set(map, key, (uint32_t)*n) < 0)
        return NULL;
    void *s = (char *)*arr + *n * elem;
    memset(s, 0, elem);
    (*n)++;
    *is_new = 1;
    return s;
}

static int add_thread(livelog *l, const pyprof_thread_rec *t)
{
    int is_new;
    livelog_thread *th = slot(&l->thread_map, (void **)&l->threads, &l->nthreads, &l->cthreads,
                              sizeof *th, t->thread_idx, &is_new);
    char *name = dup_str(t->name);
    if (!th || !name) {
        free(name);
        return -1;
    }
    free(th->name);
    th->thread_idx = t->thread_idx;
    th->tid = t->tid;
    th->name = name;
    return 0;
}

static int add_code(livelog *l, const pyprof_code_rec *c)
{
    int is_new;
    livelog_code *co = slot(&l->code_map, (void **)&l->codes, &l->ncodes, &l->ccodes,
                            sizeof *co, c->code_id, &is_new);
    int task = (c->flags & PYPROF_CODE_F_TASK) != 0;
    char *name = dup_str(c->name), *qual = dup_str(c->qualname), *file = dup_str(c->filename);
    if (task && name) {
        /* Named as the reader names a task frame (profile.c). */
        size_t len = strlen(name) + sizeof "<task >";
        char *t = malloc(len);
        if (t)
            snprintf(t, len, "<task %s>", name);
        free(name);
        name = t;
    }
    if (!co || !name || !qual || !file) {
        free(name);
        free(qual);
        free(file);
        return -1;
    }
    free(co->name);
    free(co->qualname);
    free(co->filename);
    co->code_id = c->code_id;
    co->first_line = c->first_line;
    co->name = name;
    co->qualname = qual;
    co->filename = file;
    co->task = task;
    return 0;
}

static int add_stack(livelog *l, const pyprof_stack_rec *s)
{
    int is_new;
    livelog_stack *st = slot(&l->stack_map, (void **)&l->stacks, &l->nstacks, &l->cstacks,
                             sizeof *st, s->stack_id, &is_new);
    pyprof_frame *f = malloc((s->nframes ? s->nframes : 1) * sizeof *f);
    if (!st || !f) {
        free(f);
        return -1;
    }
    if (s->nframes)
        memcpy(f, s->frames, s->nframes * sizeof *f);
    free(st->frames);
    st->stack_id = s->stack_id;
    st->nframes = s->nframes;
    st->frames = f;
    return 0;
}

int livelog_add(livelog *l, const pyprof_record *rec)
{
    switch (rec->type) {
    case PYPROF_REC_THREAD:
        return add_thread(l, &rec->u.thread);
    case PYPROF_REC_CODE:
        return add_code(l, &rec->u.code);
    case PYPROF_REC_STACK:
        return add_stack(l, &rec->u.stack);
    default:
        return 0;
    }
}

const livelog_thread *livelog_get_thread(const livelog *l, uint64_t thread_idx)
{
    uint32_t i = idmap_get(&l->thread_map, thread_idx);
    return i == IDMAP_EMPTY ? NULL : &l->threads[i];
}

const livelog_code *livelog_get_code(const livelog *l, uint64_t code_id)
{
    uint32_t i = idmap_get(&l->code_map, code_id);
    return i == IDMAP_EMPTY ? NULL : &l->codes[i];
}

const livelog_stack *livelog_get_stack(const livelog *l, uint64_t stack_id)
{
    uint32_t i = idmap_get(&l->stack_map, stack_id);
    return i == IDMAP_EMPTY ? NULL : &l->stacks[i];
}

const char *livelog_code_name(const livelog_code *c)
{
    return c->qualname[0] ? c->qualname : c->name;
}

void livelog_free(livelog *l)
{
    for (size_t i = 0; i < l->nthreads; i++)
        free(l->threads[i].name);
    for (size_t i = 0; i < l->ncodes; i++) {
        free(l->codes[i].name);
        free(l->codes[i].qualname);
        free(l->codes[i].filename);
    }
    for (size_t i = 0; i < l->nstacks; i++)
        free(l->stacks[i].frames);
    free(l->threads);
    free(l->codes);
    free(l->stacks);
    idmap_free(&l->thread_map);
    idmap_free(&l->code_map);
    idmap_free(&l->stack_map);
    memset(l, 0, sizeof *l);
}
