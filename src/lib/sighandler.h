/*
 * sighandler: the sampling signal handler.  The state it reads is sigstate.h's, the
 * records it commits to the rings are rrec.h's.  What the handler reaches is in modules
 * of its own: the frame walk (walk.h), code ids and CODE records (codeid.h), the code
 * table and its generations (codetable.h), the interpreter's readers (pyread.h), the
 * records' reserve and commit and the counters (sampleout.h).  The wall-clock pass,
 * which reads the same way from the sampler's own thread, is wall.h.
 */
#ifndef PYPROF_SIGHANDLER_H
#define PYPROF_SIGHANDLER_H

#include <signal.h>
#include <stdint.h>

/* [sigsafe] The SA_SIGINFO handler for the sampling signals. */
void sighandler_on_signal(int sig, siginfo_t *info, void *uc);

/* [sigsafe] An allocation sample (allocsample.c): the calling thread's own Python stack
 * (no frame when it runs none), and in native mode its native chain from `ret` (the
 * return address of the allocator's caller) outwards, committed as an RREC_ALLOC of
 * `size` bytes at `addr`.
 * Returns 1 when committed, 0 when sampling is off (no log is written), -1 when the
 * record was lost (the ring is full, or the thread is inside the sampling handler). */
int sighandler_sample_alloc(uint64_t size, uintptr_t addr, int domain, int flags,
                            uintptr_t ret);

/* [sigsafe] The calling thread's kernel thread id, cached. */
uint32_t sighandler_tid(void);

/* [sigsafe] 1 when the calling thread is inside the handler.  Code that runs nested in
 * it (a program's own signal handler that calls _exit, say) must not wait for it. */
int sighandler_inside(void);

/* [not sigsafe] Forgets the cached thread id (in a fork child). */
void sighandler_reset_tid(void);

#endif
