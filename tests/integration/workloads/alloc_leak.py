"""A daemon that leaks: every iteration keeps one 2,000-byte block in leak_site and
allocates and frees 50 times as many bytes in churn_site.  Run with PYPROF_SIGNAL=USR2:
it opens its own profiling window (a USR2 to itself, then waits until the library says
it is active), runs ITERATIONS iterations, closes the window the same way, and exits.
The window's log then holds the leak as what is still in use at its end.

With STEP_FILE set it is a daemon instead: no window of its own (profiled from its
start), one iteration a millisecond, the iterations done so far written to STEP_FILE
every 100, until STOP_FILE exists; `pyprof ctl PID heap` then shows the leak growing."""
import ctypes
import os
import signal
import sys
import time

ITERATIONS = int(os.environ.get("ITERATIONS", "2000"))
leaked = []


def leak_site():
    leaked.append(bytearray(2000))


def churn_site():
    for _ in range(10):
        b = bytearray(10000)
        del b


def toggle(lib, want):
    os.kill(os.getpid(), signal.SIGUSR2)
    deadline = time.time() + 60   # a hang guard only
    while bool(lib.pyprof_active()) != want:
        if time.time() > deadline:
            sys.exit("the window did not %s" % ("open" if want else "close"))
        time.sleep(0.01)


def daemon(step_file, stop_file):
    n = 0
    while not os.path.exists(stop_file):
        leak_site()
        churn_site()
        n += 1
        if n % 100 == 0:
            with open(step_file + ".tmp", "w") as f:
                f.write("%d\n" % n)
            os.rename(step_file + ".tmp", step_file)
        time.sleep(0.001)
    sys.stdout.write("leaked %d\n" % sum(len(b) for b in leaked))


def main():
    if os.environ.get("STEP_FILE"):
        return daemon(os.environ["STEP_FILE"], os.environ["STOP_FILE"])
    lib = ctypes.CDLL(None)
    toggle(lib, True)
    for _ in range(ITERATIONS):
        leak_site()
        churn_site()
    toggle(lib, False)
    sys.stdout.write("leaked %d\n" % sum(len(b) for b in leaked))


main()
