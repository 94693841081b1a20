"""Threads started the moment sampling is toggled on (run with PYPROF_SIGNAL=USR2).

usage: toggle_threads.py ROUNDS SPIN
ROUNDS times: toggles sampling on and starts a thread named spinN, round N starting it
N x 100 us after its toggle, so that the rounds start theirs at every point of the
window's start, while the library arms the timers of the threads there are.  Once the
library says the window is open (pyprof_active), the thread spins SPIN seconds of its own
CPU (time.thread_time), so that all of it falls in the window; then the main thread
toggles sampling off and waits until the window is closed.  Each window is a log.
Python 3.3+.
"""
import ctypes
import os
import signal
import sys
import threading
import time

rounds, spin_s = int(sys.argv[1]), float(sys.argv[2])
lib = ctypes.CDLL(None)


def spin(go):
    go.wait()
    end = time.thread_time() + spin_s
    x = 0
    while time.thread_time() < end:
        x += 1


def wait_active(want):
    deadline = time.time() + 60  # a hang guard only
    while bool(lib.pyprof_active()) != want:
        if time.time() > deadline:
            sys.exit("the window did not %s" % ("open" if want else "close"))
        time.sleep(0.001)


for i in range(rounds):
    os.kill(os.getpid(), signal.SIGUSR2)
    end = time.monotonic() + i * 0.0001
    while time.monotonic() < end:
        pass
    go = threading.Event()
    th = threading.Thread(target=spin, args=(go,), name="spin%d" % i)
    th.start()
    wait_active(True)
    go.set()
    th.join()
    os.kill(os.getpid(), signal.SIGUSR2)
    wait_active(False)
print("done")
