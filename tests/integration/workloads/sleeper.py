"""Wall-clock mode: one thread only sleeps (SLEEP seconds, in nap()), one burns CPU for
the same time, the main thread joins them.  Prints how long the sleep really took."""
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


threads = [threading.Thread(target=nap, name="napper"), threading.Thread(target=spin)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("slept %.3f" % took[0])
