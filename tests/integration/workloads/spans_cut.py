"""Workload of test_spans_e2e.py: a span (cut-outer) and one inside it (cut-inner) that
never end: inside them it burns CPU in burn_forever until it is killed.  Once it has
burnt 100 ms of its thread's CPU time inside them it prints one JSON line (the CPU it
burnt there, measured on its thread's CPU clock, in ms) and goes on burning.  Debian's
python3 (time.thread_time), utils/python on PYTHONPATH.
"""

import json
import sys
import time

import pyprof


def burn_forever():
    t0 = time.thread_time()
    said = False
    s = 0
    while True:
        for i in range(2000):
            s += i * i
        if not said and time.thread_time() - t0 >= 0.1:
            sys.stdout.write(json.dumps({"burnt_ms": (time.thread_time() - t0) * 1000.0})
                             + "\n")
            sys.stdout.flush()
            said = True


with pyprof.span("cut-outer", request="GET /slow"):
    with pyprof.span("cut-inner"):
        burn_forever()
