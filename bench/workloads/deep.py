"""CPU-bound work at a fixed Python stack depth.

usage: deep.py DEPTH ROUNDS
Recurses until DEPTH Python frames are on the stack (the module's frame included), then
spins in a loop that calls no Python function, so every sample taken in the loop has
exactly DEPTH frames.
"""
import sys


def down(left, rounds):
    if left > 1:
        return down(left - 1, rounds)
    # The work is inline, so that this frame is the deepest one.
    s = 0
    for i in range(rounds * 1000):
        s += (i * i) % 7
        if i & 3 == 0:
            s ^= i
    return s


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    # <module> is frame 1; down() is frames 2..DEPTH.
    down(int(sys.argv[1]) - 1, int(sys.argv[2]))
