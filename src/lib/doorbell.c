/*
 * doorbell: the writer's wake-up semaphore and its listener (doorbell.h).
 * SIGNAL-HANDLER RULES for doorbell_ring and doorbell_unlisten: they run in allocation
 * hooks that may be inside the program's own signal handlers, so they only load or
 * store an atomic, call getpid and sem_post (all async-signal-safe), and never wait.
 */
#include "doorbell.h"

#include <semaphore.h>
#include <stdatomic.h>
#include <unistd.h>

static sem_t bell;
/* The process whose writer thread listens, 0 for none.  A pid rather than a flag, so
 * that a child's copy of it, which names the parent, rings nothing. */
static _Atomic pid_t listener;

void doorbell_reset(void)
{
    atomic_store(&listener, 0);
    sem_init(&bell, 0, 0);
}

void doorbell_listen(void) { atomic_store(&listener, getpid()); }

void doorbell_unlisten(void) { atomic_store(&listener, 0); }

void doorbell_ring(void)
{
    if (atomic_load(&listener) == getpid())
        sem_post(&bell);
}

void doorbell_wait(const struct timespec *dl) { sem_clockwait(&bell, CLOCK_MONOTONIC, dl); }
