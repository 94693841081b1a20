/*
 * pthread_tid: where glibc keeps a thread's kernel id.  See pthread_tid.h.
 */
#include "pthread_tid.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int pthread_tid_offset(void)
{
    const char *self = (const char *)pthread_self();
    uintptr_t self_ptr;
    memcpy(&self_ptr, self + PTHREAD_TID_SELF, sizeof self_ptr);
    if (self_ptr != (uintptr_t)self)
        return 0;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int found = 0;
    for (int off = 0; off + (int)sizeof(pid_t) <= 2048; off += (int)sizeof(pid_t)) {
        pid_t v;
        memcpy(&v, self + off, sizeof v);
        if (v == tid) {
            if (found)
                return 0;
            found = off;
        }
    }
    return found;
}
