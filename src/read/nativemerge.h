/*
 * nativemerge: one sample's Python stack and native stack into one stack, outermost
 * first.  Pure: it sees frames already turned into the model's (profile_frame) and the
 * class of each native frame (symbols.h's SYM_EVAL, SYM_INTERP, SYM_LIBC,
 * SYM_PROFILER), and owns no
 * state.  docs/NATIVE.md, "Reading native frames", states the rules:
 *
 *   - m eval-loop frames in the native stack, k Python runs (the STACK record's runs,
 *     else one per frame).  If m == k or m == k + 1 and the Python stack is whole (no cut
 *     or unreadable marker), the i-th eval frame from the root is replaced by the i-th
 *     run's frames; with m == k + 1 the innermost eval frame is unpaired and stays a
 *     native frame.
 *   - Otherwise the sample is unmerged: the whole Python stack, then the native frames
 *     leafward of the innermost eval frame (all of them when there is none).
 *   - Glue folding (unless show_glue): native frames of the interpreter that are not eval
 *     frames, and the profiler's own (its interposed entry points), are hidden, except the
 *     sample's innermost native frame; so is every native frame rootward of the first
 *     Python frame (process and thread start, the program's main), and, in an unmerged
 *     sample without eval frames, frames of the C library, the interpreter or the
 *     profiler before the first frame shown.
 *
 * Interface: nm_native, nm_input, nativemerge.  Tool-side only.
 */
#ifndef PYPROF_NATIVEMERGE_H
#define PYPROF_NATIVEMERGE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* One native address: its frames (the function, then what was inlined into it, outer to
 * inner) and its class (SYM_* flags). */
typedef struct nm_native {
    const profile_frame *frames;
    uint32_t nframes;
    unsigned flags;
} nm_native;

typedef struct nm_input {
    const profile_frame *py; /* the Python stack, outermost first */
    uint32_t npy;
    const uint32_t *runs; /* run lengths, outermost first; NULL/0: one frame per run */
    uint32_t nruns;
    int py_broken;        /* the Python stack holds a cut or unreadable marker */
    const nm_native *nat; /* the native stack, outermost first */
    uint32_t nnat;
    int show_glue; /* --native-glue: hide nothing */
} nm_input;

/* Writes the merged stack into *out (grown as needed; capacity *cap).  Returns its
 * number of frames, or -1 when out of memory.  *paired is set to 1 when the Python runs
 * were paired with eval frames (or there were neither), 0 for an unmerged sample. */
long nativemerge(const nm_input *in, profile_frame **out, size_t *cap, int *paired);

#endif
