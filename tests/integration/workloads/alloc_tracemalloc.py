"""Starts and stops tracemalloc again and again while it allocates, as a program that
measures its own memory does: each round traces a list of 2,000 bytes objects of 200
bytes, prints what tracemalloc saw on the line that made them (its size and count, the
same in every run of the same interpreter), and stops; between two rounds it churns
small objects untraced for 10 to 40 milliseconds.  ROUNDS sets how many (default 60)."""
import os
import time
import tracemalloc

ROUNDS = int(os.environ.get("ROUNDS", "60"))
BIG = b"y" * 4096


def churn(seconds):
    end = time.time() + seconds
    while time.time() < end:
        for a in range(0, 2000, 5):
            x = BIG[a:a + 150]
    del x


def traced_round():
    tracemalloc.start()
    kept = [BIG[i % 1000:i % 1000 + 200] for i in range(2000)]
    snap = tracemalloc.take_snapshot()
    tracemalloc.stop()
    here = [s for s in snap.statistics("lineno")
            if s.traceback[0].filename == __file__ and s.count >= 2000]
    del kept
    return [(s.traceback[0].lineno, s.size, s.count) for s in here]


for r in range(ROUNDS):
    print(r, traced_round())
    churn(0.01 + 0.005 * (r % 7))
print("done")
