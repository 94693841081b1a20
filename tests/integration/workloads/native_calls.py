"""Python -> C -> Python -> C, for the native-frame tests.

    native_calls.py EXTDIR SECONDS

Runs until the process has used SECONDS of CPU time (so the samples a CPU-clock sampler
takes do not depend on how busy the machine is) and prints how many calls it made and
the CPU time it used.  EXTDIR holds the native_chain extension built for this interpreter
(tests/helpers/native_chain.c).  outer() calls chain_call in C, which calls callback()
back, which spins in C: nearly every sample ends in chain_spin_loop under that chain.
"""
import sys
import time

cpu_clock = getattr(time, "process_time", None) or time.clock

sys.path.insert(0, sys.argv[1])
import native_chain  # noqa: E402


def callback():
    return native_chain.spin(3000000)


def outer():
    return native_chain.call(callback)


def main():
    end = cpu_clock() + float(sys.argv[2])
    n = 0
    while cpu_clock() < end:
        outer()
        n += 1
    print("calls %d cpu %.3f" % (n, cpu_clock()))


main()
