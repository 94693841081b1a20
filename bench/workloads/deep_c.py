"""CPU-bound work under a stack that alternates Python and C frames.

usage: deep_c.py DEPTH ROUNDS
Recurses DEPTH times through the C builtin map() (each level is a Python frame called
from C, so the native stack grows by the interpreter's call path at every level), then
spins in a loop that calls no function: every sample taken in the loop has the same
native depth, which the native-frame figures are broken down by.
"""
import sys


def spin(rounds):
    s = 0
    for i in range(rounds * 1000):
        s += (i * i) % 7
        if i & 3 == 0:
            s ^= i
    return s


def down(args):
    left, rounds = args
    if left > 1:
        return list(map(down, [(left - 1, rounds)]))[0]
    return spin(rounds)


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    down((int(sys.argv[1]), int(sys.argv[2])))
