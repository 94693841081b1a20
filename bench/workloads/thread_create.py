"""Thread creation and exit: create and join N threads that do nothing, one at a time.

usage: thread_create.py N OUT.json [CLIB.so]
Times the loop itself (time.perf_counter around it, and the process's CPU time,
time.process_time, around it) and writes both, with N, to OUT.json.  Without CLIB the
threads are threading.Thread objects whose target returns at once; with CLIB (compiled
by bench/parts/threads.py from thread_create.c) the loop is C's: create_join(N) makes N
pthreads whose start routine returns at once, each joined before the next is made, called
through ctypes (which lets go of the GIL), so the figure is pthread_create + thread exit +
pthread_join with no Python thread state in them.
"""
import json
import sys
import threading
import time


def nothing():
    pass


def python_loop(n):
    for _ in range(n):
        t = threading.Thread(target=nothing)
        t.start()
        t.join()
    return 0


def main(n, out, clib):
    if clib:
        import ctypes
        fn = ctypes.CDLL(clib).create_join
        fn.argtypes = [ctypes.c_int]
        fn.restype = ctypes.c_int
    else:
        fn = python_loop
    c0 = time.process_time()
    t0 = time.perf_counter()
    rc = fn(n)
    t1 = time.perf_counter()
    c1 = time.process_time()
    with open(out, "w") as fh:
        json.dump({"threads": n, "loop": "pthread" if clib else "threading",
                   "loop_s": t1 - t0, "loop_cpu_s": c1 - c0}, fh)
    return rc


if __name__ == "__main__":
    sys.exit(1 if main(int(sys.argv[1]), sys.argv[2],
                       sys.argv[3] if len(sys.argv) > 3 else None) else 0)
