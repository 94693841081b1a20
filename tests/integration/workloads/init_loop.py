# Objects constructed in a loop (Python 2.7 and 3.x): main() builds P instances, whose
# __init__ does the work, until the process has used $CPU seconds (default 1.5) of CPU.
# Python itself shows every stack here as <module>, main[, P.__init__]: 3.13 enters
# __init__ through an internal clean-up frame that no traceback shows.
import os
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

CPU = float(os.environ.get("CPU", "1.5"))


class P(object):
    def __init__(self, n):
        s = 0
        for i in range(n):
            s += i
        self.s = s


def main():
    end = cpu_clock() + CPU
    while cpu_clock() < end:
        P(300)


main()
print("done")
