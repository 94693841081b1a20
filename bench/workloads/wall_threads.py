"""Threads that each work a fifth of the time: what wall mode costs with 1, 8 or 64.

usage: wall_threads.py THREADS ROUNDS
Each of THREADS threads does ROUNDS // THREADS rounds of the CPU-bound mix (cpu.py), and
after each round sleeps four times as long as the round took, so the total work is that
of `cpu.py ROUNDS` (rounded down to a multiple of THREADS) and every thread keeps
changing between running and sleeping, as a daemon's workers do.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu  # noqa: E402


def worker(rounds):
    for _ in range(rounds):
        t0 = time.time()
        cpu.main(1)
        time.sleep(4 * (time.time() - t0))


def main(nthreads, rounds):
    threads = [threading.Thread(target=worker, args=(rounds // nthreads,),
                                name="worker-%d" % i) for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
