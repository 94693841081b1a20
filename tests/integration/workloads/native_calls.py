"""Python -> C -> Python -> C, for the native-frame tests.

    native_calls.py EXTDIR SECONDS

EXTDIR holds the native_chain extension built for this interpreter
(tests/helpers/native_chain.c).  outer() calls chain_call in C, which calls callback()
back, which spins in C: nearly every sample ends in chain_spin_loop under that chain.
"""
import sys
import time

sys.path.insert(0, sys.argv[1])
import native_chain  # noqa: E402


def callback():
    return native_chain.spin(3000000)


def outer():
    return native_chain.call(callback)


def main():
    end = time.time() + float(sys.argv[2])
    n = 0
    while time.time() < end:
        outer()
        n += 1
    print("calls %d" % n)


main()
