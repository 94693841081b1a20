/*
 * tasks: asyncio task frames in a loaded profile (tasks.h).
 */
#include "tasks.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "keep.h"

#define PREFIX "<task "

int tasks_name(const profile_func *f, const char **name, size_t *len)
{
    size_t n = strlen(f->name), pre = sizeof PREFIX - 1;
    if (f->kind != PROFILE_FUNC_TASK || n < pre + 1 || strncmp(f->name, PREFIX, pre) != 0)
        return 0;
    *name = f->name + pre;
    *len = n - pre - 1;
    return 1;
}

char *tasks_fold(const char *name, size_t len, char *out)
{
    size_t digits = 0;
    while (digits < len && name[len - 1 - digits] >= '0' && name[len - 1 - digits] <= '9')
        digits++;
    memcpy(out, name, len);
    if (digits && digits < len) {
        out[len - digits] = '*';
        out[len - digits + 1] = 0;
    } else {
        out[len] = 0;
    }
    return out;
}

int64_t tasks_running(const profile *p, uint32_t s)
{
    const profile_stack *st = &p->stacks[s];
    for (uint32_t k = st->nframes; k-- > 0;)
        if (p->funcs[p->frames[st->first + k].func].kind == PROFILE_FUNC_TASK)
            return (int64_t)(st->first + k);
    return -1;
}

/* Does stack s hold a task frame whose name matches one of the globs? */
static int stack_matches(const profile *p, uint32_t s, char *buf)
{
    const profile_stack *st = &p->stacks[s];
    for (uint32_t k = 0; k < st->nframes; k++) {
        const char *name;
        size_t len;
        if (!tasks_name(&p->funcs[p->frames[st->first + k].func], &name, &len))
            continue;
        memcpy(buf, name, len);
        buf[len] = 0;
        for (size_t g = 0; g < p->filter.ntask_globs; g++)
            if (fnmatch(p->filter.task_globs[g], buf, 0) == 0)
                return 1;
    }
    return 0;
}

int tasks_filter(profile *p)
{
    if (!p->filter.ntask_globs || !p->nsamples)
        return 0;
    uint8_t *keep = malloc(p->nsamples);
    uint8_t *by_stack = calloc(p->nstacks ? p->nstacks : 1, 1); /* 0 unknown, 1 no, 2 yes */
    size_t longest = 0;
    for (size_t f = 0; f < p->nfuncs; f++) {
        size_t n = strlen(p->funcs[f].name);
        if (n > longest)
            longest = n;
    }
    char *buf = malloc(longest + 1);
    if (!keep || !by_stack || !buf) {
        free(keep);
        free(by_stack);
        free(buf);
        return -1;
    }
    for (size_t i = 0; i < p->nsamples; i++) {
        uint32_t s = p->samples[i].stack;
        if (!by_stack[s])
            by_stack[s] = stack_matches(p, s, buf) ? 2 : 1;
        keep[i] = by_stack[s] == 2;
    }
    keep_samples(p, keep);
    free(keep);
    free(by_stack);
    free(buf);
    return 0;
}
