# Run as the first process of a new pid namespace (Python 2.7 and 3.x): prints its pid,
# burns $CPU seconds (default 0.8) of user CPU in spin(), then sleeps 0.3 s in nap().
import os
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

CPU = float(os.environ.get("CPU", "0.8"))


def spin():
    # User CPU: the clock is read once per 10000 additions (reading it is a system call,
    # which a timer counting user time only would not see).
    end = cpu_clock() + CPU
    x = 0
    while cpu_clock() < end:
        for i in range(10000):
            x += i
    return x


def nap():
    time.sleep(0.3)


print("pid %d" % os.getpid())
spin()
nap()
