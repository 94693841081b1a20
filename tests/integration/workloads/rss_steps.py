"""Memory in steps: grows by 8 MiB every 150 ms to 48 MiB, holds, lets it all go, then
spins with a steady RSS for argv[1] seconds.  Prints the largest RSS it read itself
(bytes, from /proc/self/statm), so a test can compare the log's peak with it."""
import os
import sys
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def main():
    steady = float(sys.argv[1])
    peak = rss()
    blocks = []
    for _ in range(6):
        blocks.append(bytearray(8 << 20))  # zero-filled: every page touched
        time.sleep(0.15)
        peak = max(peak, rss())
    time.sleep(0.3)
    peak = max(peak, rss())
    del blocks[:]
    t = time.time()
    while time.time() - t < steady:
        sum(range(1000))
    print(peak)


main()
