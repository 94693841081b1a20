# Helpers of the short-thread workloads (short_threads.py, short_server.py; Python 2.7
# and 3.x): precise CPU clocks, a CPU burner, and the measurements file.
#
# thread_cpu()   this thread's CPU time in seconds, from CLOCK_THREAD_CPUTIME_ID (exact
#                to the microsecond: the kernel adds the running slice): time.thread_time
#                on 3.7+, time.clock_gettime on 3.3-3.6, libc's clock_gettime through
#                ctypes on 2.7 (a PyDLL function, which keeps the GIL: a burner reading its
#                clock does not hand the GIL to the other threads at every read)
# process_cpu()  the process's CPU time (user + system, every thread, dead ones too) from
#                getrusage(RUSAGE_SELF), exact to about a scheduler tick
# profiler_cpu() the CPU time of the profiler's own threads (named "pyprof-*", which it
#                never samples), from their /proc schedstat; 0 without the profiler
# spin(s)        burns s seconds of this thread's CPU; returns what it burnt (measured)
# run_delay()    how long this thread has waited, runnable, for a CPU (seconds, from
#                /proc/thread-self/schedstat): what other programs took from it
# Spent          per-name sums of measured CPU and of the run-queue wait beside it,
#                filled from any thread
# write_result   the measurements as JSON to $SHORT_RESULT (stdout is left alone, so it is
#                the same with and without the profiler)
import json
import os
import resource
import threading
import time

try:
    xrange
except NameError:
    xrange = range


def _thread_clock():
    if hasattr(time, "thread_time"):
        return time.thread_time
    if hasattr(time, "clock_gettime") and hasattr(time, "CLOCK_THREAD_CPUTIME_ID"):
        cid = time.CLOCK_THREAD_CPUTIME_ID

        def clock():
            return time.clock_gettime(cid)
        return clock
    import ctypes

    class timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    gettime = ctypes.PyDLL(None).clock_gettime
    gettime.argtypes = [ctypes.c_int, ctypes.POINTER(timespec)]
    gettime.restype = ctypes.c_int
    CLOCK_THREAD_CPUTIME_ID = 3

    def clock():
        ts = timespec()
        if gettime(CLOCK_THREAD_CPUTIME_ID, ctypes.byref(ts)) != 0:
            raise OSError("clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed")
        return ts.tv_sec + ts.tv_nsec * 1e-9
    return clock


thread_cpu = _thread_clock()


def process_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def spin(seconds):
    clock = thread_cpu
    t0 = clock()
    s = 0
    while True:
        for i in xrange(40):
            s += i & 3
        spent = clock() - t0
        if spent >= seconds:
            return spent


MEASURE_WAIT = os.environ.get("MEASURE_WAIT") == "1"


def run_delay():
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


class Spent(object):
    """Measured CPU seconds by name, added to from any thread; `waited`, for what spin()
    burnt through burn(), the seconds its thread meanwhile waited for a CPU."""

    def __init__(self):
        self._lock = threading.Lock()
        self.cpu = {}
        self.calls = {}
        self.waited = {}

    def add(self, name, seconds, waited=0.0):
        with self._lock:
            self.cpu[name] = self.cpu.get(name, 0.0) + seconds
            self.calls[name] = self.calls.get(name, 0) + 1
            self.waited[name] = self.waited.get(name, 0.0) + waited

    def burn(self, name, seconds):
        """spin(seconds); with MEASURE_WAIT=1 in the environment, also the run-queue
        wait meanwhile, the CPU of reading it counted as the burn's (on 2.7 the reads
        add about 40 % to a 1 ms burn)."""
        if not MEASURE_WAIT:
            self.add(name, spin(seconds))
            return
        c0 = thread_cpu()
        w0 = run_delay()
        spin(seconds)
        w1 = run_delay()
        self.add(name, thread_cpu() - c0, w1 - w0)


def profiler_cpu():
    total = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                if not f.read().startswith("pyprof-"):
                    continue
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                total += int(f.read().split()[0])
        except (IOError, OSError):
            pass   # ended meanwhile
    return total / 1e9


class Window(object):
    """The process CPU time used between start() and stop(), and how much of it the
    profiler's own threads used."""

    def start(self):
        self.cpu0 = process_cpu()
        self.own0 = profiler_cpu()
        return self

    def stop(self):
        self.cpu = process_cpu() - self.cpu0
        self.profiler = profiler_cpu() - self.own0
        return self.cpu

    def result(self):
        return {"window_cpu": self.cpu, "profiler_cpu": self.profiler}


def wait_threads_gone(baseline, limit=10.0):
    """Waits (sleeping) until only `baseline` threads are alive: a handler thread that
    answered may still be on its way out, and its last CPU belongs to the window."""
    deadline = time.time() + limit
    while threading.active_count() > baseline and time.time() < deadline:
        time.sleep(0.001)
    return threading.active_count()


def write_result(result, path=None):
    path = path or os.environ.get("SHORT_RESULT")
    if path:
        with open(path, "w") as f:
            json.dump(result, f, sort_keys=True)
