/*
 * doorbell: the cron thread's wake-up (window.c; the thread runs the writer's rounds).
 * The cron sleeps on it between its rounds; whoever has something for it sooner rings: a
 * burst of allocation samples filling the sample ring faster than the rounds would take
 * it (allocsample.c), a request of the control thread (writer.c), the end of a window
 * (window.c).  It lives below them all, so the allocation path wakes the writer without
 * naming it.  A semaphore: sem_post is on signal-safety(7).
 *
 * Interface:
 *   doorbell_open()     [not sigsafe] a new cron thread is about to start: the bell
 *                       empty, and answering rings of this process only (a fork child
 *                       has no cron until it starts its own)
 *   doorbell_close()    [not sigsafe] the cron thread is gone: rings do nothing
 *   doorbell_ring()     [sigsafe] wakes the cron now, when it runs in this process
 *   doorbell_wait(ns)   [not sigsafe] the cron: sleeps until rung, or ns have passed
 */
#ifndef PYPROF_DOORBELL_H
#define PYPROF_DOORBELL_H

#include <stdint.h>

void doorbell_open(void);
void doorbell_close(void);
void doorbell_ring(void);
void doorbell_wait(uint64_t ns);

#endif
