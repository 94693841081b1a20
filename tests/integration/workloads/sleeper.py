"""Wall-clock mode: one thread only sleeps (SLEEP seconds, in nap()), one burns CPU for
the same time, the main thread joins them.  Prints how long the sleep really took.

When $SAMPLER_WAIT names a file, the program last writes there how long the library's
wall-clock sampler thread (pyprof-wall) has waited for a CPU so far, in ns (its
schedstat run delay), or "none" when there is no such thread: a machine too busy to run
the sampler on time makes it skip passes."""
import os
import threading
import time

SLEEP = float(os.environ.get("SLEEP", "2.0"))
took = []


def nap():
    t0 = time.time()
    time.sleep(SLEEP)
    took.append(time.time() - t0)


def spin():
    end = time.time() + SLEEP
    while time.time() < end:
        pass


def sampler_wait():
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                if f.read().strip() != "pyprof-wall":
                    continue
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                return f.read().split()[1]
        except (IOError, OSError):
            continue   # a thread that ended meanwhile
    return "none"


threads = [threading.Thread(target=nap, name="napper"), threading.Thread(target=spin)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("slept %.3f" % took[0])
out = os.environ.get("SAMPLER_WAIT")
if out:
    with open(out, "w") as f:
        f.write(sampler_wait() + "\n")
