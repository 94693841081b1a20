# Workload for the kill tests (Python 2.7 and 3.x): prints "until_killed: started", burns
# CPU in burn_until_killed() and, once it has used $READY_CPU seconds (default 1) of CPU,
# prints "until_killed: ready" and burns on until a signal ends it (or $MAX_SECONDS of
# wall time, default 60, have passed: then it prints "until_killed: not killed" and exits
# with status 9).  With SIGINT_DFL=1 it first restores the default action of SIGINT
# (python's own handler raises KeyboardInterrupt instead; it is installed even when the
# program was started with SIGINT ignored).
import os
import signal
import sys
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

if os.environ.get("SIGINT_DFL") == "1":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
elif signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    # Started with SIGINT ignored (a background job of a shell without job control,
    # nohup), python leaves it ignored: install the handler it installs otherwise.
    signal.signal(signal.SIGINT, signal.default_int_handler)


def burn_until_killed(ready_cpu, limit):
    t0 = time.time()
    c0 = cpu_clock()
    ready = False
    s = 0
    while time.time() - t0 < limit:
        for i in range(2000):
            s += i & 3
        if not ready and cpu_clock() - c0 >= ready_cpu:
            ready = True
            sys.stdout.write("until_killed: ready\n")
            sys.stdout.flush()
    return s


print("until_killed: started")
sys.stdout.flush()
burn_until_killed(float(os.environ.get("READY_CPU", "1")),
                  float(os.environ.get("MAX_SECONDS", "60")))
print("until_killed: not killed")
sys.exit(9)
