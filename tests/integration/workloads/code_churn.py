# Code objects made and dropped continuously (Python 2.7 and 3.x): each round compiles a
# fresh function f_<n> from a file named churn_<n>_\u00e9t\u00e9.py (non-ASCII, UTF-8
# encoded on 2.7), calls it, and drops it, so its code object and name strings are freed
# while the program runs, until the process has used $CPU seconds (default 1.5) of CPU.
# Every frame of f_<n> belongs to the file of the same <n>.
import os
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

CPU = float(os.environ.get("CPU", "1.5"))
SOURCE = "def f_%d(n):\n    s = 0\n    for i in range(n):\n        s += i * %d\n    return s\n"
SUFFIX = b"_\xc3\xa9t\xc3\xa9.py"

n = 0
end = cpu_clock() + CPU
while cpu_clock() < end:
    name = "churn_%d" % n
    filename = name.encode("ascii") + SUFFIX
    if str is not bytes:
        filename = filename.decode("utf-8")
    space = {}
    exec(compile(SOURCE % (n, n), filename, "exec"), space)
    space["f_%d" % n](200)
    del space
    n += 1
print("done")
