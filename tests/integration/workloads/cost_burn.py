"""Burns CPU in Python for argv[1] seconds of this process's CPU time; with argv[2], then
forks a child that burns argv[2] seconds in turn and waits for it.  Prints the CPU time
it used itself (the parent, when it forked)."""
import os
import sys
import time


def cpu():
    if hasattr(time, "process_time"):
        return time.process_time()
    t = os.times()  # 2.7
    return t[0] + t[1]


def burn(seconds):
    end = cpu() + seconds
    n = 0
    while cpu() < end:
        n += sum(i * i for i in range(500))
    return n


def main():
    burn(float(sys.argv[1]))
    if len(sys.argv) > 2:
        pid = os.fork()
        if pid == 0:
            burn(float(sys.argv[2]))
            sys.stdout.flush()
            os._exit(0)
        os.waitpid(pid, 0)
    print("%.6f" % cpu())


if __name__ == "__main__":
    main()
