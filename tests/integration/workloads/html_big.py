# For the HTML viewer's one-million-sample measurement: $THREADS busy threads (default 4)
# call down a chain of alternating functions to a depth that changes with every call, so
# consecutive samples rarely share a stack, while $IDLE threads (default 4) sleep and the
# main thread allocates and frees memory (RSS moves).  Runs $RUN_SECONDS (default 10).
# tests/integration/html_million.py runs it until the logs hold a million samples.
import os
import threading
import time

SECONDS = float(os.environ.get("RUN_SECONDS", "10"))
deadline = time.time() + SECONDS


SLEEP = os.environ.get("SLEEP", "1") != "0"


def leaf(n):
    # Every other call sleeps briefly at the bottom of its stack (unless $SLEEP is 0):
    # other threads run, and a sampler that reads every thread (wall clock) sees this
    # one's stack change too.
    if SLEEP and n % 100:
        time.sleep(0.0002)
        return 0
    s = 0
    for i in range(n):
        s += i * i
    return s


def down_a(d, n):
    return leaf(n) if d == 0 else down_b(d - 1, n)


def down_b(d, n):
    return leaf(n) if d == 0 else down_a(d - 1, n)


def worker(k):
    i = 0
    while time.time() < deadline:
        down_a((i * 7 + k) % 40, 200 + (i % 13) * 25)
        i += 1


def idle():
    while time.time() < deadline:
        time.sleep(0.05)


threads = [threading.Thread(target=worker, args=(k,), name="busy-%d" % k)
           for k in range(int(os.environ.get("THREADS", "4")))]
threads += [threading.Thread(target=idle, name="idle-%d" % k)
            for k in range(int(os.environ.get("IDLE", "4")))]
for t in threads:
    t.start()
blobs = []
while time.time() < deadline:
    blobs.append(bytearray(1 << 20))
    if len(blobs) > 64:
        blobs = []
    time.sleep(0.02)
for t in threads:
    t.join()
