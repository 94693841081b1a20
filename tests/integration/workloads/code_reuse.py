# Code objects freed and their memory reused by new ones that differ (Python 2.7 and
# 3.x).  Each round compiles a fresh recursive function f_d<K>, K = 2 + round % 5, whose
# `def` is on line K (K - 1 blank lines first), calls it so that exactly K frames of it
# are on the stack while it spins on line K + 4, then drops it, so its code object is
# freed and the next round's one is often made at the same address: a profiler that
# took a code object's identity from its address alone would name a stack of K frames
# after the function of another K.  Runs until the process has used $CPU seconds of CPU
# (default 1.5), then prints how many rounds ran and how many made their code object
# where a function of another K had had its own.
import os
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

CPU = float(os.environ.get("CPU", "1.5"))
SPIN = int(os.environ.get("SPIN", "20000"))
SOURCE = ("%s"
          "def f_d%d(k, n):\n"
          "    if k > 1:\n"
          "        return f_d%d(k - 1, n)\n"
          "    i = 0\n"
          "    while i < n: i += 1\n"
          "    return i\n")
FILENAME = "code_reuse_gen.py"

rounds = 0
other = 0  # rounds whose code object took the address of one with another K
where = {}
end = cpu_clock() + CPU
while cpu_clock() < end:
    k = 2 + rounds % 5
    space = {}
    exec(compile(SOURCE % ("\n" * (k - 1), k, k), FILENAME, "exec"), space)
    f = space["f_d%d" % k]
    addr = id(f.__code__)
    if where.get(addr, k) != k:
        other += 1
    where[addr] = k
    f(k, SPIN)
    # The function refers to itself through its globals: clearing them frees it (and
    # its code object) now, without waiting for the cycle collector.
    del f
    space.clear()
    rounds += 1
print("rounds %d other %d" % (rounds, other))
