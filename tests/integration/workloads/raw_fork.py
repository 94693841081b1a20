# A fork that bypasses Python's after-fork hook (Python 2.7 and 3.x): libc's fork()
# called through ctypes, from the main thread (RAW_FORK_FROM=main) or from a thread named
# "forking-thread" (RAW_FORK_FROM=thread; it first waits until the main thread is
# blocked in join(), so no thread of the parent holds the GIL across the fork).  The child
# burns $CPU seconds (default 0.5) of CPU in child_burn(), writes its pid to the file
# $RAW_FORK_OUT and leaves with os._exit(0); the parent waits for it.
import ctypes
import os
import threading
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

CPU = float(os.environ.get("CPU", "0.5"))
libc = ctypes.CDLL(None, use_errno=True)


def child_burn():
    end = cpu_clock() + CPU
    x = 0
    while cpu_clock() < end:
        for i in range(10000):
            x += i
    return x


def forker():
    pid = libc.fork()
    if pid == 0:
        child_burn()
        with open(os.environ["RAW_FORK_OUT"], "w") as f:
            f.write("%d\n" % os.getpid())
        os._exit(0)
    os.waitpid(pid, 0)


if os.environ.get("RAW_FORK_FROM", "main") == "main":
    forker()
else:
    def later():
        time.sleep(0.3)
        forker()
    t = threading.Thread(target=later, name="forking-thread")
    t.start()
    t.join()
print("done")
