"""Four CPU-bound threads and two sleeping ones.

usage: threads.py ROUNDS
Each CPU thread does ROUNDS // 4 rounds of the CPU-bound mix (cpu.py), so the total work
is that of `cpu.py ROUNDS`; the two other threads sleep 20 ms at a time until the CPU
threads are done.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu  # noqa: E402

stop = threading.Event()


def sleeper():
    while not stop.is_set():
        time.sleep(0.02)


def main(rounds):
    sleepers = [threading.Thread(target=sleeper, name="sleeper-%d" % i) for i in range(2)]
    workers = [threading.Thread(target=cpu.main, args=(rounds // 4,), name="cpu-%d" % i)
               for i in range(4)]
    for t in sleepers + workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    for t in sleepers:
        t.join()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
