# Short-lived threads (Python 2.7 and 3.x), each using less CPU than one sampling
# period, for test_short_threads.py.  $SHORT_MODE:
#
#   threads   $THREADS threads (default 5000), $BATCH (default 4) at a time, started then
#             joined; even ones burn $CPU_A seconds of their CPU in burn_a(), odd ones
#             $CPU_B in burn_b(); with $JITTER (default 0) = j, each burns that times a
#             random factor between 1-j and 1+j (seeded: the same run after run), so
#             that the threads do not come at a fixed rhythm
#   mixed     two long-lived threads burn up to $LONG_CPU seconds of CPU each in
#             long_burn_a() / long_burn_b() (slices of $LONG_SLICE seconds, each followed
#             by a $LONG_SLEEP sleep, so that they leave the GIL to the others) while the
#             main thread starts and joins $THREADS short threads, one at a time, each
#             burning $CPU_A in short_burn(); then the long threads are told to stop (and
#             end, when they have not burnt all theirs yet)
#   fork      the main thread forks a child that does what `threads` does (writing its
#             measurements to $SHORT_RESULT.child) and leaves with os._exit; the parent
#             waits for it
#   cthreads  the shared library $CTHREADS_LIB (workloads/cthreads.c) creates $THREADS
#             pthreads, $BATCH at a time; each calls a ctypes callback that burns $CPU_A
#             in callback_burn()
#
# Everything measured happens inside phase() in the main thread (in the child for
# `fork`); the measurements go as JSON to $SHORT_RESULT: "window_cpu", the process CPU
# time used during phase(), and "profiler_cpu", how much of it the profiler's own threads
# used; "cpu", the CPU each burn function used (its thread's CPU clock around every call,
# summed); "waited", how long their threads meanwhile waited for a CPU; "calls", how
# often each ran.  stdout only says what was done.
import os
import random
import sys
import threading
import time

from short_common import Spent, Window, thread_cpu, wait_threads_gone, write_result

MODE = os.environ.get("SHORT_MODE", "threads")
THREADS = int(os.environ.get("THREADS", "5000"))
BATCH = int(os.environ.get("BATCH", "4"))
CPU_A = float(os.environ.get("CPU_A", "0.0002"))
CPU_B = float(os.environ.get("CPU_B", "0.0002"))
JITTER = float(os.environ.get("JITTER", "0"))
LONG_CPU = float(os.environ.get("LONG_CPU", "0.35"))
LONG_SLICE = float(os.environ.get("LONG_SLICE", "0.001"))
LONG_SLEEP = float(os.environ.get("LONG_SLEEP", "0.002"))

spent = Spent()


def burn_a(seconds):
    spent.burn("burn_a", seconds)


def burn_b(seconds):
    spent.burn("burn_b", seconds)


def short_burn(seconds):
    spent.burn("short_burn", seconds)


def long_burn_a(seconds):
    spent.burn("long_burn_a", seconds)


def long_burn_b(seconds):
    spent.burn("long_burn_b", seconds)


def callback_burn(seconds):
    spent.burn("callback_burn", seconds)


def run_threads():
    rng = random.Random(1)
    started = 0
    while started < THREADS:
        group = []
        for i in range(started, min(started + BATCH, THREADS)):
            target, cpu = (burn_a, CPU_A) if i % 2 == 0 else (burn_b, CPU_B)
            if JITTER:
                cpu *= rng.uniform(1 - JITTER, 1 + JITTER)
            group.append(threading.Thread(target=target, args=(cpu,)))
        for th in group:
            th.start()
        for th in group:
            th.join()
        started += len(group)
    return "%d threads started and joined" % started


def long_worker(burn, stop):
    t0 = thread_cpu()
    while not stop.is_set() and thread_cpu() - t0 < LONG_CPU:
        burn(LONG_SLICE)
        time.sleep(LONG_SLEEP)
    stop.wait()


def run_mixed():
    stop = threading.Event()
    longs = [threading.Thread(target=long_worker, args=(b, stop))
             for b in (long_burn_a, long_burn_b)]
    for th in longs:
        th.start()
    for _ in range(THREADS):
        th = threading.Thread(target=short_burn, args=(CPU_A,))
        th.start()
        th.join()
    stop.set()
    for th in longs:
        th.join()
    return "2 long threads and %d short ones" % THREADS


def run_cthreads():
    import ctypes
    lib = ctypes.CDLL(os.environ["CTHREADS_LIB"])
    CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int)

    def on_thread(i):
        callback_burn(CPU_A)
    cb = CALLBACK(on_thread)
    lib.run_threads.argtypes = [CALLBACK, ctypes.c_int, ctypes.c_int]
    lib.run_threads.restype = ctypes.c_int
    rc = lib.run_threads(cb, THREADS, BATCH)   # a CDLL call: the GIL is released
    if rc != 0:
        raise RuntimeError("run_threads failed: %d" % rc)
    return "%d C threads ran the callback" % THREADS


def phase(work):
    baseline = threading.active_count()
    w = Window().start()
    what = work()
    alive = wait_threads_gone(baseline)
    w.stop()
    return what, dict(w.result(), cpu=spent.cpu, calls=spent.calls, waited=spent.waited,
                  threads_left=alive - baseline)


def fork_child():
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            what, result = phase(run_threads)
            result["pid"] = os.getpid()
            write_result(result, os.environ["SHORT_RESULT"] + ".child")
            status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    return "child forked, exit status %d" % status, {"child": pid}


def main():
    if MODE == "fork":
        what, result = fork_child()
    else:
        work = {"threads": run_threads, "mixed": run_mixed, "cthreads": run_cthreads}[MODE]
        what, result = phase(work)
    write_result(result)
    print("short_threads %s: %s" % (MODE, what))


if __name__ == "__main__":
    main()
