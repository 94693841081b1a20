"""Small allocations at two sites in alternating phases, for the allocation windows:
site_burst makes 100-byte bytes objects as fast as it can, site_quiet the same with a
spin between two (about a tenth of the rate).  PHASE_MS sets each phase's length
(1: shorter than a window; 40: longer), DURATION the run's seconds.  Writes to OUT
(JSON) the bytes each site allocated (its objects' sizes, counted exactly) and the
seconds it ran.  Python 2.7 and 3.x."""
import json
import os
import sys
import time

PHASE = float(os.environ.get("PHASE_MS", "40")) / 1000.0
DURATION = float(os.environ.get("DURATION", "5"))
CHECK = 64  # allocations between two looks at the clock
BIG = b"x" * 4096
STARTS = list(range(0, 3000, 7))[:CHECK]
SIZE = sys.getsizeof(BIG[0:100])
SPIN = 40


def site_burst(until):
    n, x = 0, None
    while time.time() < until:
        for a in STARTS:
            x = BIG[a:a + 100]
        n += len(STARTS)
    del x
    return n * SIZE


def site_quiet(until):
    n, x = 0, None
    while time.time() < until:
        for a in STARTS:
            x = BIG[a:a + 100]
            i = 0
            while i < SPIN:
                i += 1
        n += len(STARTS)
    del x
    return n * SIZE


def main():
    got = {"site_burst": 0, "site_quiet": 0}
    spent = {"site_burst": 0.0, "site_quiet": 0.0}
    start = time.time()
    end = start + DURATION
    while time.time() < end:
        for name, fn in (("site_burst", site_burst), ("site_quiet", site_quiet)):
            t0 = time.time()
            got[name] += fn(min(t0 + PHASE, end))
            spent[name] += time.time() - t0
    with open(os.environ["OUT"], "w") as f:
        json.dump({"bytes": got, "seconds": spent, "duration": time.time() - start}, f)
    print("done")


main()
