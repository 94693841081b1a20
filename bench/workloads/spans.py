"""The cost of one span: N start+stop pairs of the pyprof package (utils/python on
PYTHONPATH), timed by the workload around each loop.

usage: spans.py N OUT.json
Writes ns per pair to OUT.json, best of 5 loops each: `with pyprof.span("x")`,
pyprof.start("x") + pyprof.stop(), a call of a @pyprof.span-decorated function less a
plain call, the library's two C functions alone through ctypes (when the process has
them: 0 otherwise), and the empty loop, with whether spans were being recorded.  Without
the library every one is the package's no-op.
"""
import json
import sys
import time

import pyprof

clock = getattr(time, "perf_counter", time.time)


def best(fn, n):
    out = []
    for _ in range(5):
        t0 = clock()
        fn(n)
        out.append(clock() - t0)
    return min(out) / n * 1e9


def empty(n):
    for _ in range(n):
        pass


def with_span(n):
    span = pyprof.span
    for _ in range(n):
        with span("x"):
            pass


def start_stop(n):
    start, stop = pyprof.start, pyprof.stop
    for _ in range(n):
        start("x")
        stop()


@pyprof.span("x")
def decorated():
    pass


def plain():
    pass


def call_decorated(n):
    for _ in range(n):
        decorated()


def call_plain(n):
    for _ in range(n):
        plain()


def c_only(n):
    start, stop = pyprof._lib[0], pyprof._lib[1]
    for _ in range(n):
        stop(start(b"x", None, None, None, None, 0), None)


def main(n, out):
    res = {"n": n, "recording": pyprof.active(), "empty_ns": best(empty, n),
           "with_span_ns": best(with_span, n), "start_stop_ns": best(start_stop, n),
           "decorated_extra_ns": best(call_decorated, n) - best(call_plain, n),
           "c_functions_ns": best(c_only, n) if pyprof._lib else 0.0}
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
