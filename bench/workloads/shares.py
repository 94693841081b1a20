"""Known CPU shares: four functions whose own CPU time the workload measures.

usage: shares.py ROUNDS OUT.json
share_10 .. share_40 do the same inline loop (no Python calls beneath them), called in
turn with 1, 2, 3 and 4 units of work, so their CPU shares are about 10/20/30/40 %.  Each
call is timed with time.thread_time() (this thread's CPU clock), and the seconds each
function used are written to OUT.json: the shares a profiler should find.
"""
import json
import sys
import time

UNIT = 20000  # loop iterations per unit of work: a few ms per call


def share_10(n):
    s = 0
    for i in range(n):
        s += (i * i) % 7
    return s


def share_20(n):
    s = 0
    for i in range(n):
        s += (i * i) % 7
    return s


def share_30(n):
    s = 0
    for i in range(n):
        s += (i * i) % 7
    return s


def share_40(n):
    s = 0
    for i in range(n):
        s += (i * i) % 7
    return s


PLAN = ((share_10, 1), (share_20, 2), (share_30, 3), (share_40, 4))


def main(rounds, out):
    spent = {f.__name__: 0.0 for f, _ in PLAN}
    clock = time.thread_time
    for _ in range(rounds):
        for f, units in PLAN:
            t0 = clock()
            f(units * UNIT)
            spent[f.__name__] += clock() - t0
    with open(out, "w") as fh:
        json.dump(spent, fh)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
