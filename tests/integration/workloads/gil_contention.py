"""GIL contention, measured by the program itself: N threads of pure Python work (they
want the GIL all the time), one thread doing I/O-bound waits (10 ms sleeps), and one
holding the GIL in long C calls (ctypes.PyDLL keeps the GIL across the call: usleep of
20 ms with the GIL held).  Each thread prints, at the end, one line of JSON: its name,
the wall time it ran, its CPU time (thread_time where the version has it), for the
sleeper the time it asked to sleep, and for the holder the time it held the GIL in its C
calls (20 ms each).  Each also gives the time it was ready to run but waited for a CPU
(run_delay, from /proc/self/task/TID/schedstat): a thread holding the GIL while it waits
for a CPU still holds it, and a busy machine makes wall time less CPU time more than
the GIL waits.  Runs on 2.7 and 3.x."""
from __future__ import print_function

import ctypes
import json
import os
import sys
import threading
import time

N_PY = int(os.environ.get("GIL_PY_THREADS", "3"))
if hasattr(sys, "setcheckinterval") and not hasattr(sys, "setswitchinterval"):
    # 2.7 hands the GIL over every 100 bytecodes, releasing and taking its semaphore with
    # system calls while the waiters contend: a thread's CPU time then holds much time
    # spent inside the GIL's own wait.  Every 10000 it is closer to 3.x's 5 ms.
    sys.setcheckinterval(10000)
SECONDS = float(os.environ.get("GIL_SECONDS", "3"))

try:
    thread_time = time.thread_time
except AttributeError:  # 2.7-3.6: the thread's own CPU clock through clock_gettime
    class _TS(ctypes.Structure):
        _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
    _libc = ctypes.CDLL(None, use_errno=True)

    def thread_time():
        ts = _TS()
        _libc.clock_gettime(3, ctypes.byref(ts))  # CLOCK_THREAD_CPUTIME_ID
        return ts.s + ts.ns * 1e-9

_sys = ctypes.CDLL(None, use_errno=True)


def run_delay():
    """Seconds this thread was runnable but not running (its schedstat's second field)."""
    tid = _sys.syscall(186)  # SYS_gettid, x86_64
    with open("/proc/self/task/%d/schedstat" % tid) as f:
        return int(f.read().split()[1]) * 1e-9


now = getattr(time, "monotonic", time.time)
results = []
lock = threading.Lock()
start_evt = threading.Event()


def report(**kw):
    with lock:
        results.append(kw)


def py_work(deadline):
    x = 0
    while now() < deadline:
        for i in range(2000):
            x += i * i
    return x


def py_worker():
    start_evt.wait()
    w0, c0, d0 = now(), thread_time(), run_delay()
    py_work(w0 + SECONDS)
    report(name=threading.current_thread().name, wall=now() - w0, cpu=thread_time() - c0,
           delay=run_delay() - d0)


def io_wait(seconds):
    time.sleep(seconds)


def io_worker():
    start_evt.wait()
    w0, c0, d0 = now(), thread_time(), run_delay()
    asked = 0.0
    while now() < w0 + SECONDS:
        io_wait(0.01)
        asked += 0.01
    report(name="io_sleeper", wall=now() - w0, cpu=thread_time() - c0, asked=asked,
           delay=run_delay() - d0)


pydll = ctypes.PyDLL(None)  # calls keep the GIL held


def hold_gil_in_c():
    pydll.usleep(20000)


def gil_holder():
    start_evt.wait()
    w0, c0, d0 = now(), thread_time(), run_delay()
    calls = 0
    while now() < w0 + SECONDS:
        hold_gil_in_c()
        calls += 1
        time.sleep(0.01)
    report(name="gil_holder", wall=now() - w0, cpu=thread_time() - c0, calls=calls,
           held=calls * 0.020, delay=run_delay() - d0)


threads = [threading.Thread(target=py_worker, name="py_%d" % i) for i in range(N_PY)]
threads.append(threading.Thread(target=io_worker, name="io_sleeper"))
threads.append(threading.Thread(target=gil_holder, name="gil_holder"))
for t in threads:
    t.start()
time.sleep(0.2)
start_evt.set()
for t in threads:
    t.join()
for r in results:
    print(json.dumps(r))
sys.stdout.flush()
