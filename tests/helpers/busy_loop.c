/*
 * busy_loop: a C function that keeps its thread on the CPU for a while without returning
 * to Python.  Called through ctypes.PyDLL, which does not release the GIL, it makes a
 * thread that runs with the GIL held while its Python stack stands still: the case
 * `pyprof dump` must show as running, holding the GIL, at the line of the call.
 */
#include <time.h>

double busy_loop(double seconds);

double busy_loop(double seconds)
{
    struct timespec a, b;
    volatile double x = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (;;) {
        for (int i = 0; i < 100000; i++)
            x += i * 0.5;
        clock_gettime(CLOCK_MONOTONIC, &b);
        if ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 >= seconds)
            break;
    }
    return x;
}
