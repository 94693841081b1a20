/*
 * procexit: the exit status the program is heading for, and the end of a process whose
 * own threads are all gone (procexit.h).
 */
#include "procexit.h"

#include <stdatomic.h>

#include "libc_next.h"

static _Atomic int status_known, exit_status;

void procexit_note_status(int status)
{
    atomic_store(&exit_status, status);
    atomic_store(&status_known, 1);
}

int procexit_noted_status(int *status)
{
    *status = atomic_load(&exit_status);
    return atomic_load(&status_known);
}

void procexit_forget_status(void) { atomic_store(&status_known, 0); }

void procexit_alone(void)
{
    procexit_note_status(0);
    libc_next_exit(0);
}
