"""A CPU-bound program whose hottest function is known: hottest() takes about nine
tenths of the CPU, cooler() the rest.  Prints "ready", runs until killed.
Python 2.7 and 3.x."""
from __future__ import print_function

import sys


def hottest():
    x = 0
    for i in range(90000):
        x += i * i
    return x


def cooler():
    x = 0
    for i in range(10000):
        x += i
    return x


def main():
    print("ready")
    sys.stdout.flush()
    while True:
        hottest()
        cooler()


main()
