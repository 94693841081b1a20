/*
 * doorbell: the semaphore the writer thread sleeps on between two drains, and who is
 * listening to it.  Whoever has something for the writer rings it: the writer's own
 * requests (writer.c) and a burst of allocation samples filling the sample ring
 * (allocsample.c).  It lives below both, so that the allocation path wakes the writer
 * without calling into the module that drains and sweeps allocation sampling.
 *
 * A ring reaches the writer only while its thread runs in this process: a fork child
 * (which has no writer thread until it starts its own) and a vfork child (which shares
 * the parent's memory) ring nobody's.
 *
 * Interface:
 *   doorbell_reset()     [not sigsafe] no listener, nothing pending (sem_init); before
 *                        the writer thread starts, or once it is forgotten
 *   doorbell_listen()    [not sigsafe] the writer thread of this process now runs
 *   doorbell_unlisten()  [sigsafe] it no longer does (joined, or gone on its own)
 *   doorbell_ring()      [sigsafe] wakes the listener, if there is one in this process
 *                        (sem_post and getpid, both on signal-safety(7))
 *   doorbell_wait(dl)    [writer thread] sleeps until rung or CLOCK_MONOTONIC deadline dl
 */
#ifndef PYPROF_DOORBELL_H
#define PYPROF_DOORBELL_H

#include <time.h>

void doorbell_reset(void);
void doorbell_listen(void);
void doorbell_unlisten(void);
void doorbell_ring(void);
void doorbell_wait(const struct timespec *dl);

#endif
