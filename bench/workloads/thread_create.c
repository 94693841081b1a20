/*
 * thread_create.c: the C loop of thread_create.py (bench/parts/threads.py compiles it
 * with cc -O2 -shared -fPIC -pthread and the workload loads it through ctypes).
 *
 *     int create_join(int n)
 *
 * creates n pthreads one at a time, each with a start routine that returns at once, and
 * joins each before making the next.  Returns 0, or -1 when a thread could not be made.
 */
#include <pthread.h>
#include <stddef.h>

static void *nothing(void *arg) { return arg; }

int create_join(int n);

int create_join(int n)
{
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) != 0)
            return -1;
        pthread_join(t, NULL);
    }
    return 0;
}
