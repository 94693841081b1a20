"""Threads started the moment sampling is toggled on (run with PYPROF_SIGNAL=USR2).

usage: toggle_threads.py ROUNDS SPIN
ROUNDS times: toggles sampling on, starts a thread named spinN that spins SPIN seconds
of its own CPU (time.thread_time) and joins it, toggles sampling off, and waits 50 ms.
Each toggle-on starts a window and so a log, and the library arms the timers of the
threads there are; round N starts its thread N x 100 us after its toggle, so that the
rounds start theirs at every point of that arming.  Python 3.3+.
"""
import os
import signal
import sys
import threading
import time

rounds, spin_s = int(sys.argv[1]), float(sys.argv[2])


def spin():
    end = time.thread_time() + spin_s
    x = 0
    while time.thread_time() < end:
        x += 1


for i in range(rounds):
    os.kill(os.getpid(), signal.SIGUSR2)
    end = time.monotonic() + i * 0.0001
    while time.monotonic() < end:
        pass
    th = threading.Thread(target=spin, name="spin%d" % i)
    th.start()
    th.join()
    os.kill(os.getpid(), signal.SIGUSR2)
    time.sleep(0.05)
print("done")
