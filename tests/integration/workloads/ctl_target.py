"""A daemon for the control socket's tests: a thread keeps the CPU busy (so every window
has samples) until a line arrives on stdin; then the program prints what it read and
exits with status 3.  It prints "ready" once running.  Python 2.7 and 3.x."""
from __future__ import print_function

import sys
import threading


def busy(stop):
    n = 0
    while not stop.is_set():
        n += sum(i * i for i in range(1000))
    return n


def main():
    stop = threading.Event()
    th = threading.Thread(target=busy, args=(stop,), name="busy")
    th.start()
    print("ready")
    sys.stdout.flush()
    line = sys.stdin.readline()
    stop.set()
    th.join()
    print("got %r" % line.strip())
    sys.stdout.flush()
    sys.exit(3)


main()
