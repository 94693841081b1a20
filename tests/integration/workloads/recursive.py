# Deep recursion whose shape is known (Python 2.7 and 3.x): recurse() calls itself down
# to depth $DEPTH (default 20, so never more than DEPTH + 1 recurse frames), always
# from <module>, over and over until the process has used $CPU seconds (default 1.5) of
# CPU time.  Every real stack of this program is <module>, then 1 to DEPTH + 1 recurse
# frames, or <module> alone.
import os
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

DEPTH = int(os.environ.get("DEPTH", "20"))
CPU = float(os.environ.get("CPU", "1.5"))


def recurse(x):
    if x == 0:
        return
    recurse(x - 1)


end = cpu_clock() + CPU
while cpu_clock() < end:
    recurse(DEPTH)
print("done")
