# Exec workload (Python 2.7 and 3.x): burns $BURN_CPU seconds (default 0.5) of its own
# CPU time, then replaces itself with /bin/echo.  The log must end "exec", complete,
# with the burn's samples; echo's output is the program's output.
import os
import sys
import time

cpu_clock = getattr(time, "process_time", None) or time.clock


def burn(seconds):
    end = cpu_clock() + seconds
    s = 0
    while cpu_clock() < end:
        for i in range(10000):
            s += i
    return s


burn(float(os.environ.get("BURN_CPU", "0.5")))
sys.stdout.flush()
os.execv("/bin/echo", ["echo", "exec workload: echo ran"])
