/*
 * export_speedscope: speedscope's own JSON file format
 * (https://www.speedscope.app/file-format-schema.json).  One frame per function in
 * shared.frames (name, file, first line); one "sampled" profile per thread of each
 * process, named "pid P tid T (NAME)", whose samples are stacks of frame indices from
 * the outermost frame in, in time order, each with its weight in microseconds (the time
 * the sample stands for).  Consecutive samples with the same stack become one sample of
 * their summed weight: speedscope draws them the same way and the file stays small.  The
 * busiest thread is the one speedscope opens on.
 *
 * With --memory (logs written with PYPROF_ALLOC) the file holds one "sampled" profile in
 * bytes instead: each stack of the sampled allocations once, weighted by the bytes it
 * allocated (or holds in use at the end, or at the peak), as the folded export weighs it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <pyprof/pyprof.h>

#include "read/allocs.h"

#include "export.h"
#include "jsonw.h"

#define NO_FRAME UINT32_MAX

/* Gives the functions of stack `stack` their frame numbers, from *n on. */
static void number_stack(const profile *p, uint32_t stack, uint32_t *frame_of, uint32_t *n)
{
    const profile_stack *st = &p->stacks[stack];
    for (uint32_t k = 0; k < st->nframes; k++) {
        uint32_t f = p->frames[st->first + k].func;
        if (frame_of[f] == NO_FRAME)
            frame_of[f] = (*n)++;
    }
}

/* Numbers the functions that appear in some kept stack: the samples', or with `weights`
 * those of the stacks with a weight.  Returns the count. */
static uint32_t number_frames(const profile *p, const uint64_t *weights, uint32_t *frame_of)
{
    for (size_t f = 0; f < p->nfuncs; f++)
        frame_of[f] = NO_FRAME;
    uint32_t n = 0;
    if (weights) {
        for (size_t st = 0; st < p->nstacks; st++)
            if (weights[st])
                number_stack(p, (uint32_t)st, frame_of, &n);
        return n;
    }
    for (size_t i = 0; i < p->nsamples; i++)
        number_stack(p, p->samples[i].stack, frame_of, &n);
    return n;
}

static int put_frames(jsonw *j, const profile *p, const uint32_t *frame_of, uint32_t n)
{
    uint32_t *func_at = malloc((n ? n : 1) * sizeof *func_at);
    if (!func_at)
        return -1;
    for (size_t f = 0; f < p->nfuncs; f++)
        if (frame_of[f] != NO_FRAME)
            func_at[frame_of[f]] = (uint32_t)f;
    for (uint32_t i = 0; i < n; i++) {
        const profile_func *f = &p->funcs[func_at[i]];
        jsonw_break(j, 2);
        jsonw_begin_object(j);
        jsonw_key_string(j, "name", f->name);
        if (f->file[0]) {
            jsonw_key_string(j, "file", f->file);
            jsonw_key_i64(j, "line", f->line);
        }
        jsonw_end_object(j);
    }
    free(func_at);
    return 0;
}

static void put_stack(jsonw *j, const profile *p, uint32_t stack, const uint32_t *frame_of)
{
    const profile_stack *st = &p->stacks[stack];
    jsonw_begin_array(j);
    for (uint32_t k = 0; k < st->nframes; k++)
        jsonw_u64(j, frame_of[p->frames[st->first + k].func]);
    jsonw_end_array(j);
}

/* "pid P tid T (NAME)" as a JSON string. Returns 0 or -1 (out of memory). */
static int put_thread_name(jsonw *j, const profile *p, const profile_thread *t)
{
    size_t len = strlen(t->name) + 64;
    char *name = malloc(len);
    if (!name)
        return -1;
    snprintf(name, len, "pid %" PRIu64 " tid %" PRIu64 " (%s)", p->procs[t->process].pid,
             t->tid, t->name);
    jsonw_string(j, name);
    free(name);
    return 0;
}

/* The end of the samples of the thread of order[i], in `order`. */
static size_t thread_end(const profile *p, const uint32_t *order, size_t i)
{
    uint32_t thread = p->samples[order[i]].thread;
    while (i < p->nsamples && p->samples[order[i]].thread == thread)
        i++;
    return i;
}

/* The profile of the thread whose samples are order[begin .. end): its stacks and
 * weights are compact arrays, one line for the whole profile. */
static int put_thread_profile(jsonw *j, const profile *p, const uint32_t *order, size_t begin,
                              size_t end, const uint32_t *frame_of)
{
    jsonw_begin_object(j);
    jsonw_key_string(j, "type", "sampled");
    jsonw_key(j, "name");
    if (put_thread_name(j, p, &p->threads[p->samples[order[begin]].thread]) < 0)
        return -1;
    jsonw_key_string(j, "unit", "microseconds");
    jsonw_key_u64(j, "startValue", 0);
    jsonw_key(j, "samples");
    jsonw_begin_array(j);
    jsonw_set_compact(j, 1);
    for (size_t k = begin; k < end;) {
        uint32_t stack = p->samples[order[k]].stack;
        put_stack(j, p, stack, frame_of);
        while (k < end && p->samples[order[k]].stack == stack)
            k++;
    }
    jsonw_set_compact(j, 0);
    jsonw_end_array(j);
    jsonw_key(j, "weights");
    jsonw_begin_array(j);
    jsonw_set_compact(j, 1);
    uint64_t sum = 0;
    for (size_t k = begin; k < end;) {
        uint32_t stack = p->samples[order[k]].stack;
        uint64_t w = 0;
        for (; k < end && p->samples[order[k]].stack == stack; k++)
            w += aggregate_sample_us(p, &p->samples[order[k]]);
        jsonw_u64(j, w);
        sum += w;
    }
    jsonw_set_compact(j, 0);
    jsonw_end_array(j);
    jsonw_key_u64(j, "endValue", sum);
    jsonw_end_object(j);
    return 0;
}

/* --memory: the one profile, in bytes, of every stack with a weight. */
static void put_memory_profile(jsonw *j, const profile *p, const uint64_t *weights,
                               const uint32_t *frame_of, int by)
{
    jsonw_begin_object(j);
    jsonw_key_string(j, "type", "sampled");
    jsonw_key_string(j, "name",
                     by == ALLOCS_BY_INUSE  ? "bytes in use at the end"
                     : by == ALLOCS_BY_PEAK ? "bytes in use at the peak"
                                            : "bytes allocated");
    jsonw_key_string(j, "unit", "bytes");
    jsonw_key_u64(j, "startValue", 0);
    jsonw_key(j, "samples");
    jsonw_begin_array(j);
    jsonw_set_compact(j, 1);
    for (size_t st = 0; st < p->nstacks; st++)
        if (weights[st])
            put_stack(j, p, (uint32_t)st, frame_of);
    jsonw_set_compact(j, 0);
    jsonw_end_array(j);
    jsonw_key(j, "weights");
    jsonw_begin_array(j);
    jsonw_set_compact(j, 1);
    uint64_t sum = 0;
    for (size_t st = 0; st < p->nstacks; st++)
        if (weights[st]) {
            jsonw_u64(j, weights[st]);
            sum += weights[st];
        }
    jsonw_set_compact(j, 0);
    jsonw_end_array(j);
    jsonw_key_u64(j, "endValue", sum);
    jsonw_end_object(j);
}

/* The index of the profile of the thread with the most samples. */
static size_t busiest_profile(const profile *p, const uint32_t *order)
{
    size_t best = 0, idx = 0, most = 0;
    for (size_t i = 0; i < p->nsamples; idx++) {
        size_t end = thread_end(p, order, i);
        if (end - i > most) {
            most = end - i;
            best = idx;
        }
        i = end;
    }
    return best;
}

/* The program a single-process profile ran (its script when argv has one). */
static const char *profile_name(const profile *p)
{
    if (p->nprocs != 1 || !p->procs[0].argc)
        return "pyprof";
    return p->procs[0].argv[p->procs[0].argc > 1 ? 1 : 0];
}

int export_speedscope(FILE *out, const profile *p, const export_opts *o)
{
    uint32_t *frame_of = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof *frame_of);
    uint32_t *order = o->memory ? NULL : aggregate_samples_by_thread(p);
    uint64_t *weights = o->memory ? export_memory_weights(p, o->by) : NULL;
    int rc = -1;
    if (!frame_of || (o->memory ? !weights : !order))
        goto cleanup;
    uint32_t nframes = number_frames(p, weights, frame_of);
    jsonw j;
    jsonw_init(&j, out, 0);
    jsonw_begin_object(&j);
    jsonw_key_string(&j, "$schema", "https://www.speedscope.app/file-format-schema.json");
    jsonw_break(&j, 1);
    jsonw_key_string(&j, "exporter", "pyprof " PYPROF_VERSION_STRING);
    jsonw_break(&j, 1);
    jsonw_key_string(&j, "name", profile_name(p));
    jsonw_break(&j, 1);
    jsonw_key_u64(&j, "activeProfileIndex", o->memory ? 0 : busiest_profile(p, order));
    jsonw_break(&j, 1);
    jsonw_key(&j, "shared");
    jsonw_begin_object(&j);
    jsonw_key(&j, "frames");
    jsonw_begin_array(&j);
    if (put_frames(&j, p, frame_of, nframes) < 0)
        goto cleanup;
    jsonw_end_array(&j);
    jsonw_end_object(&j);
    jsonw_break(&j, 1);
    jsonw_key(&j, "profiles");
    jsonw_begin_array(&j);
    if (o->memory) {
        jsonw_break(&j, 2);
        put_memory_profile(&j, p, weights, frame_of, o->by);
    }
    for (size_t i = 0; !o->memory && i < p->nsamples;) {
        size_t end = thread_end(p, order, i);
        jsonw_break(&j, 2);
        if (put_thread_profile(&j, p, order, i, end, frame_of) < 0)
            goto cleanup;
        i = end;
    }
    jsonw_end_array(&j);
    jsonw_end_object(&j);
    jsonw_finish(&j);
    rc = 0;
cleanup:
    free(frame_of);
    free(order);
    free(weights);
    return rc < 0 ? export_oom() : 0;
}
