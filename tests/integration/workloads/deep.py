# Deep-recursion workload (Python 2.7 and 3.x): descend() recurses $DEPTH (default 5000)
# frames deep, and innermost() burns CPU at the bottom, so nearly every sample has a
# stack far deeper than PYPROF_MAX_DEPTH.  The profile must keep both ends of those
# stacks: innermost() at the top, <module> at the bottom, and a [cut] marker between.
import os
import sys
import time

cpu_clock = getattr(time, "process_time", None) or time.clock
DEPTH = int(os.environ.get("DEPTH", "5000"))
sys.setrecursionlimit(DEPTH + 1000)


def innermost():
    t0 = cpu_clock()
    s = 0
    while cpu_clock() - t0 < 0.6:
        for i in range(2000):
            s += i & 3
    return 1


def descend(n):
    if n == 0:
        return innermost()
    return descend(n - 1) + 1


print("deep workload: %d" % descend(DEPTH))
