# Native-mode workload (Python 2.7 and 3.x): until the process has used $NATIVE_SECONDS
# of CPU time (default 3; CPU, so a CPU-clock sampler fires as often on a busy machine
# as on an idle one), threads started after the profiler compress and hash with zlib
# and hashlib (C code, many native frames under the eval loop) under a Python
# recursion, while the main thread does the same.  Prints "ok" at the end, whatever the timing.
import hashlib
import os
import threading
import time
import zlib

cpu_clock = getattr(time, "process_time", None) or time.clock
SECONDS = float(os.environ.get("NATIVE_SECONDS", "3"))
DATA = os.urandom(1 << 16)


def work(depth):
    if depth:
        return work(depth - 1)
    z = zlib.compress(DATA, 6)
    return len(zlib.decompress(z)) + len(hashlib.sha256(DATA).digest())


def loop(end):
    while cpu_clock() < end:
        work(40)


def main():
    end = cpu_clock() + SECONDS
    # Threads come and go all along, each starting after the profiler: a new set each
    # 0.6 s of the process's CPU (four threads), however busy the machine, so that the
    # threads' start-up stays as rare against the work as it is on an idle machine.
    while cpu_clock() < end:
        batch = min(end, cpu_clock() + 0.6)
        ts = [threading.Thread(target=loop, args=(batch,)) for _ in range(3)]
        for t in ts:
            t.start()
        loop(batch)
        for t in ts:
            t.join()
    print("ok")


main()
