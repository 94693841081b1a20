/*
 * pthread_tid: the kernel thread id of a thread known only by its pthread_t.
 *
 * CPython records a thread by its pthread_t (PyThreadState.thread_id before 3.11, and
 * the keys of threading._active), which in glibc is the address of the thread's
 * descriptor, `struct pthread`, whose `tid` field holds the kernel thread id.  Its offset
 * is private to glibc, so it is found at run time, by asking glibc itself which word of a
 * descriptor it reads as the tid (pthread_tid.c says how).
 */
#ifndef PYPROF_PTHREAD_TID_H
#define PYPROF_PTHREAD_TID_H

#include <stdint.h>

#include "safe_read.h"

/* [not sigsafe] The offset of `tid` in glibc's thread descriptor; 0 when it is not within
 * the first 2 KB, when the caller's own descriptor does not hold the caller's tid there,
 * or when the descriptor does not start with glibc's x86_64 header (tcb, dtv, self),
 * whose `self` pointer at +16 lets a reader check that an address is a descriptor (see
 * PTHREAD_TID_SELF). */
int pthread_tid_offset(void);

/* Where a glibc descriptor points to itself. */
#define PTHREAD_TID_SELF 16

/* [sigsafe] Inside a guarded region: the kernel tid in the descriptor at `pt` (a
 * pthread_t), with `off` from pthread_tid_offset; 0 when `pt` is not a descriptor or its
 * thread is gone (glibc clears the field when a thread ends, and in a fork child for the
 * threads the child does not have). */
SAFE_NO_SANITIZE static inline uint32_t pthread_tid_read(uintptr_t pt, int off)
{
    if (!pt || off <= 0 || safe_ptr(pt + PTHREAD_TID_SELF) != pt)
        return 0;
    int32_t tid = safe_i32(pt + (uintptr_t)off);
    return tid > 0 ? (uint32_t)tid : 0;
}

#endif
