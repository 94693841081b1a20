/*
 * doorbell: the writer thread's wake-up.  The writer sleeps on it between its rounds;
 * whoever has something for it sooner rings: a burst of allocation samples filling the
 * sample ring faster than the writer's own wake-ups would take it (allocsample.c), a
 * request or the end of the log (writer.c).  It lives below both, so the allocation
 * path wakes the writer without naming it.  A semaphore: sem_post is on signal-safety(7).
 *
 * Interface:
 *   doorbell_open()     [not sigsafe] a new writer thread is about to start: the bell
 *                       empty, and answering rings of this process only (a fork child
 *                       has no writer until it starts its own)
 *   doorbell_close()    [not sigsafe] the writer thread is gone: rings do nothing
 *   doorbell_ring()     [sigsafe] wakes the writer now, when it runs in this process
 *   doorbell_wait(ns)   [not sigsafe] the writer: sleeps until rung, or ns have passed
 */
#ifndef PYPROF_DOORBELL_H
#define PYPROF_DOORBELL_H

#include <stdint.h>

void doorbell_open(void);
void doorbell_close(void);
void doorbell_ring(void);
void doorbell_wait(uint64_t ns);

#endif
