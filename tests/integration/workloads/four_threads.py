"""Four threads doing 1, 2, 3 and 4 units of CPU work.  Each writes its OS thread id and
the CPU time it really used (nanoseconds, from /proc/thread-self/schedstat) to the file
named by argv[1], one line per thread: NAME TID CPU_NS."""
import os
import sys
import threading

UNIT = int(os.environ.get("UNIT", "400000"))
results = []
lock = threading.Lock()


def me():
    # /proc/thread-self -> "PID/task/TID"
    return int(os.readlink("/proc/thread-self").split("/")[-1])


def cpu_ns():
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[0])


def work(units):
    x = 0
    for i in range(units * UNIT):
        x += i % 7
    return x


def body(units):
    work(units)
    line = "%s %d %d\n" % (threading.current_thread().name, me(), cpu_ns())
    with lock:
        results.append(line)


threads = [threading.Thread(target=body, args=(n,), name="w%d" % n) for n in (1, 2, 3, 4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with open(sys.argv[1], "w") as f:
    f.write("".join(results))
print("done")
