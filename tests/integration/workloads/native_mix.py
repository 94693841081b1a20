# Native-mode workload (Python 2.7 and 3.x): for $NATIVE_SECONDS of wall time (default
# 3), threads started after the profiler compress and hash with zlib and hashlib (C
# code, many native frames under the eval loop) under a Python recursion, while the
# main thread does the same.  Prints "ok" at the end, whatever the timing.
import hashlib
import os
import threading
import time
import zlib

SECONDS = float(os.environ.get("NATIVE_SECONDS", "3"))
DATA = os.urandom(1 << 16)


def work(depth):
    if depth:
        return work(depth - 1)
    z = zlib.compress(DATA, 6)
    return len(zlib.decompress(z)) + len(hashlib.sha256(DATA).digest())


def loop(end):
    while time.time() < end:
        work(40)


def main():
    end = time.time() + SECONDS
    # Threads come and go all along, each starting after the profiler.
    while time.time() < end:
        ts = [threading.Thread(target=loop, args=(min(end, time.time() + 0.3),))
              for _ in range(3)]
        for t in ts:
            t.start()
        loop(min(end, time.time() + 0.3))
        for t in ts:
            t.join()
    print("ok")


main()
