"""The CPU-bound workload of cpu.py, measuring its own work rate with sampling off and on
in turn, in one process.

usage: work_rate.py WARMUP SECONDS CYCLES RESULT_JSON
Under the library, with its control socket: first a warm-up window of WARMUP seconds of
this thread's CPU with sampling on (the library measures what a signal costs once it has
profiled for a second, in slices that take at most half a per cent of the process's CPU:
long enough a warm-up has that done before the windows that count), then CYCLES times a window with sampling
paused and one with it running again, and a last paused one, each SECONDS of this
thread's CPU (after SETTLE_S not measured: the pause or resume's own work).  In every window
it counts cpu.py's rounds and measures this thread's CPU and the process's (every thread,
the library's writer among them).  Writes to RESULT_JSON the windows, in
order: {"on": 0/1, "rounds", "thread_cpu_s", "process_cpu_s"}.

Comparing windows of one process, rather than separate runs with and without the
library, leaves out what differs from process to process (memory layout, start-up),
which on a virtual machine moves a whole run's CPU by several per cent.
"""
import json
import os
import socket
import sys
import time

import cpu


def control(request):
    """One request to this process's pyprof control socket; returns the reply."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0pyprof.%d" % os.getpid())
        s.sendall(request.encode() + b"\n")
        out = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            out += b
    finally:
        s.close()
    reply = out.decode()
    if not reply.startswith("ok"):
        raise SystemExit("work_rate.py: %s: %s" % (request, reply.strip()))
    return reply


SETTLE_S = 0.05  # of this thread's CPU at a window's start, not measured


def window(seconds):
    settle = time.thread_time() + SETTLE_S
    while time.thread_time() < settle:
        cpu.one_round()
    p0, c0 = time.process_time(), time.thread_time()
    end = c0 + seconds
    rounds, c = 0, c0
    while c < end:
        cpu.one_round()
        rounds += 1
        c = time.thread_time()
    return {"rounds": rounds, "thread_cpu_s": c - c0,
            "process_cpu_s": time.process_time() - p0}


def main(warmup, seconds, cycles, out):
    window(warmup)
    wins = []
    for _ in range(cycles):
        control("pause")
        w = window(seconds)
        w["on"] = 0
        wins.append(w)
        control("resume")
        w = window(seconds)
        w["on"] = 1
        wins.append(w)
    control("pause")
    w = window(seconds)
    w["on"] = 0
    wins.append(w)
    with open(out, "w") as fh:
        json.dump({"windows": wins}, fh)


if __name__ == "__main__":
    main(float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
