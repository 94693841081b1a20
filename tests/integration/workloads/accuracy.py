# Accuracy workload (Python 2.7 and 3.x: no f-strings).
#
# - burn_a, burn_b and burn_c burn about 50/30/20 % of the CPU the three of them use,
#   in interleaved rounds;
# - two_lines burns CPU on two known lines: the first loop about 2/3 of its time, the
#   second 1/3 (same loop body, twice the iterations); each line's CPU is measured too;
# - Worker.run is a method, to check qualified names on 3.11+.
#
# Iteration counts are calibrated here from a short measured run.  The CPU time each
# function really used is measured around every call with the process CPU clock and
# written as JSON to $WORKLOAD_RESULT (when set), with the process's total CPU time at
# the end: that is the truth the test compares the profile with.  stdout carries no
# number, so it is identical with and without the profiler.
import json
import os
import time

cpu_clock = getattr(time, "process_time", None) or time.clock
try:
    xrange
except NameError:
    xrange = range

SECONDS = float(os.environ.get("ACCURACY_SECONDS", "2.5"))
spent = {}


def burn_a(n):
    s = 0
    for i in xrange(n):
        s += i & 7
    return s


def burn_b(n):
    s = 0
    for i in xrange(n):
        s += i & 7
    return s


def burn_c(n):
    s = 0
    for i in xrange(n):
        s += i & 7
    return s


def two_lines(n):
    s = 0
    t0 = cpu_clock()
    for i in xrange(2 * n): s += 1  # noqa: E701  LINE-X: two thirds of the time
    t1 = cpu_clock()
    for i in xrange(n): s += 1  # noqa: E701  LINE-Y: one third
    t2 = cpu_clock()
    # The real split, measured: the CPU is not always as even as the iteration counts.
    spent["LINE-X"] = spent.get("LINE-X", 0.0) + (t1 - t0)
    spent["LINE-Y"] = spent.get("LINE-Y", 0.0) + (t2 - t1)
    return s


class Worker(object):
    def run(self, n):
        s = 0
        for i in xrange(n):
            s += i & 7
        return s


def timed(name, fn, n):
    """Calls fn(n) and adds the CPU time it took to spent[name]."""
    t0 = cpu_clock()
    fn(n)
    spent[name] = spent.get(name, 0.0) + (cpu_clock() - t0)


def calibrate(name, fn):
    """Iterations of fn per CPU second, from a run of at least 30 ms."""
    n = 20000
    while True:
        t0 = cpu_clock()
        timed(name, fn, n)
        dt = cpu_clock() - t0
        if dt >= 0.03:
            return n / dt
        n *= 2


def main():
    funcs = [("burn_a", burn_a, 0.5), ("burn_b", burn_b, 0.3), ("burn_c", burn_c, 0.2)]
    rates = dict((name, calibrate(name, fn)) for name, fn, _ in funcs)
    rounds = 5
    for _ in xrange(rounds):
        for name, fn, share in funcs:
            timed(name, fn, int(rates[name] * SECONDS * share / rounds))
    # two_lines(n) runs 3n loop iterations.
    timed("two_lines", two_lines, int(calibrate("two_lines", two_lines) * 0.6))
    worker = Worker()
    timed("Worker.run", worker.run, int(calibrate("Worker.run", worker.run) * 0.3))
    print("accuracy workload: %d functions done" % len(spent))


main()
result = os.environ.get("WORKLOAD_RESULT")
if result:
    spent["total"] = cpu_clock()
    with open(result, "w") as f:
        json.dump(spent, f)
