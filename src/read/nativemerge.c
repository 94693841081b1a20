/*
 * nativemerge: a sample's Python and native stacks into one.  See nativemerge.h.
 *
 * Pairing goes root-first: when the counts differ by one it is always the innermost eval
 * activation that has no Python frame yet (a frame being entered or left), so pairing
 * from the leaf would shift every pair by one level.
 */
#include "nativemerge.h"

#include "common/growarray.h"
#include "symbols.h"

/* Appends n frames; 0, or -1 when out of memory. */
static int put(profile_frame **out, size_t *cap, size_t *len, const profile_frame *f, size_t n)
{
    if (grow_array((void **)out, cap, *len + n, sizeof **out, 64))
        return -1;
    for (size_t i = 0; i < n; i++)
        (*out)[(*len)++] = f[i];
    return 0;
}

/* The runs' lengths are usable: each at least 1, adding up to the Python frames. */
static int runs_valid(const nm_input *in)
{
    if (!in->nruns)
        return 1;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < in->nruns; i++) {
        if (!in->runs[i])
            return 0;
        sum += in->runs[i];
    }
    return sum == in->npy;
}

long nativemerge(const nm_input *in, profile_frame **out, size_t *cap, int *paired)
{
    size_t len = 0;
    uint32_t k = in->nruns ? in->nruns : in->npy;
    uint32_t m = 0, innermost_eval = 0;
    for (uint32_t j = 0; j < in->nnat; j++)
        if (in->nat[j].flags & SYM_EVAL) {
            m++;
            innermost_eval = j;
        }
    int fold = !in->show_glue;
    *paired = !in->py_broken && runs_valid(in) && (m == k || m == k + 1);

    if (*paired) {
        uint32_t run = 0; /* the next run to place */
        size_t at = 0;    /* its first Python frame */
        for (uint32_t j = 0; j < in->nnat; j++) {
            const nm_native *n = &in->nat[j];
            if ((n->flags & SYM_EVAL) && run < k) {
                size_t rlen = in->nruns ? in->runs[run] : 1;
                if (put(out, cap, &len, in->py + at, rlen))
                    return -1;
                at += rlen;
                run++;
                continue;
            }
            if (fold && j + 1 < in->nnat) {
                if (run == 0 && k > 0)
                    continue; /* process or thread start, rootward of Python */
                if ((n->flags & (SYM_INTERP | SYM_PROFILER)) && !(n->flags & SYM_EVAL))
                    continue; /* glue between Python frames: the interpreter's, ours */
            }
            if (put(out, cap, &len, n->frames, n->nframes))
                return -1;
        }
        return (long)len;
    }

    /* Unmerged: the whole Python stack, then the native leaf. */
    if (put(out, cap, &len, in->py, in->npy))
        return -1;
    int leading = m == 0;
    for (uint32_t j = m ? innermost_eval + 1 : 0; j < in->nnat; j++) {
        const nm_native *n = &in->nat[j];
        if (fold && j + 1 < in->nnat) {
            if (leading && (n->flags & (SYM_LIBC | SYM_INTERP | SYM_PROFILER)))
                continue;
            if ((n->flags & (SYM_INTERP | SYM_PROFILER)) && !(n->flags & SYM_EVAL))
                continue;
        }
        leading = 0;
        if (put(out, cap, &len, n->frames, n->nframes))
            return -1;
    }
    return (long)len;
}
