/*
 * cthreads: threads made by C code, not by Python's threading, for test_short_threads.py
 * (compiled there with gcc -shared -fPIC, loaded by workloads/short_threads.py through
 * ctypes).
 *
 *     int run_threads(void (*callback)(int), int n, int batch)
 *
 * creates n pthreads, batch (at most 64) at a time, each calling callback(i) once (a
 * ctypes callback: it takes the GIL and makes a Python thread state itself), and joins
 * them.  Returns 0, or -1 when a thread could not be created.
 */
#include <pthread.h>

#define MAX_BATCH 64

struct job {
    void (*callback)(int);
    int i;
};

static void *thread_main(void *arg)
{
    struct job *j = arg;
    j->callback(j->i);
    return NULL;
}

int run_threads(void (*callback)(int), int n, int batch)
{
    pthread_t th[MAX_BATCH];
    struct job jobs[MAX_BATCH];
    if (batch < 1)
        batch = 1;
    if (batch > MAX_BATCH)
        batch = MAX_BATCH;
    for (int done = 0; done < n;) {
        int k = n - done < batch ? n - done : batch;
        int made = 0;
        for (; made < k; made++) {
            jobs[made].callback = callback;
            jobs[made].i = done + made;
            if (pthread_create(&th[made], NULL, thread_main, &jobs[made]) != 0)
                break;
        }
        for (int m = 0; m < made; m++)
            pthread_join(th[m], NULL);
        if (made < k)
            return -1;
        done += k;
    }
    return 0;
}
