/*
 * doorbell: the cron thread's wake-up (doorbell.h).  doorbell_ring runs in signal
 * handlers and allocation hooks: an atomic load, getpid and sem_post.
 */
#include "doorbell.h"

#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

static sem_t bell;
static _Atomic pid_t open_in; /* the process whose writer answers; 0 closed */

void doorbell_open(void)
{
    atomic_store(&open_in, 0);
    sem_init(&bell, 0, 0);
    atomic_store(&open_in, getpid());
}

void doorbell_close(void) { atomic_store(&open_in, 0); }

void doorbell_ring(void)
{
    if (atomic_load(&open_in) == getpid())
        sem_post(&bell);
}

void doorbell_wait(uint64_t ns)
{
    struct timespec dl = clock_mono_deadline(ns);
    sem_clockwait(&bell, CLOCK_MONOTONIC, &dl);
}
