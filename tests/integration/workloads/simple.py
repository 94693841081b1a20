# Minimal workload (Python 2.7 and 3.x): a line on stdout, a line on stderr, a CPU
# burn of $BURN_SECONDS (default 0.3) in burn(), then exit status $EXIT_STATUS
# (default 0).
import os
import sys
import time

cpu_clock = getattr(time, "process_time", None) or time.clock


def burn(seconds):
    t0 = cpu_clock()
    s = 0
    while cpu_clock() - t0 < seconds:
        for i in range(2000):
            s += i & 3
    return s


print("simple workload: start")
sys.stdout.flush()
sys.stderr.write("simple workload: a line on stderr\n")
burn(float(os.environ.get("BURN_SECONDS", "0.3")))
print("simple workload: end")
sys.exit(int(os.environ.get("EXIT_STATUS", "0")))
