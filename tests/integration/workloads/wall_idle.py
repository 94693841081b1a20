"""An idle daemon: eight threads blocked (an Event, a lock, a sleep, a select), none of
which wakes for 2 s.  The main thread reads each idle thread's context switches
(/proc/self/task/TID/status) once they are all blocked and again 2 s later, and prints
one line of JSON per thread: its name and the switches it made in between (0 when
nothing woke it).  Runs on 2.7 and 3.x."""
from __future__ import print_function

import ctypes
import json
import select
import threading
import time

_libc = ctypes.CDLL(None)
tids = {}
ready = threading.Semaphore(0)
stop = threading.Event()
held = threading.Lock()
held.acquire()


def switches(tid):
    out = 0
    with open("/proc/self/task/%d/status" % tid) as f:
        for line in f:
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                out += int(line.split()[1])
    return out


def idle(kind):
    tids[threading.current_thread().name] = _libc.syscall(186)  # SYS_gettid, x86_64
    ready.release()
    if kind == "event":
        stop.wait()
    elif kind == "lock":
        held.acquire()
        held.release()
    elif kind == "sleep":
        time.sleep(6)
    else:
        select.select([], [], [], 6)


kinds = ["event", "lock", "sleep", "select"] * 2
threads = [threading.Thread(target=idle, args=(k,), name="idle_%d_%s" % (i, k))
           for i, k in enumerate(kinds)]
for t in threads:
    t.daemon = True
    t.start()
for _ in threads:
    ready.acquire()
time.sleep(0.5)  # every one of them inside its wait
before = dict((n, switches(tid)) for n, tid in tids.items())
time.sleep(2.0)
after = dict((n, switches(tid)) for n, tid in tids.items())
for n in sorted(tids):
    print(json.dumps({"name": n, "tid": tids[n], "switches": after[n] - before[n]}))
stop.set()
held.release()
