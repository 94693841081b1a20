# Fork from a thread other than main (Python 2.7 and 3.x), as CPython's own
# test_threading.ThreadJoinOnShutdown.test_3_join_in_forked_from_thread does.  The child's
# only thread is the forking one; when it returns from its start routine the C library
# ends the child with exit(0), so the library's own threads must not keep it alive.  The
# child burns CPU in child_burn() first so its log has samples; the parent waits for it.
import os
import sys
import threading
import time
import warnings

# 3.12+ warns about a fork with threads, with the pid in the text; this one is on purpose.
warnings.simplefilter("ignore", DeprecationWarning)

cpu_clock = getattr(time, "process_time", None) or time.clock


def child_burn(seconds):
    """Burns `seconds` of CPU (not of wall time: on a busy machine that could be little
    CPU, and few samples)."""
    t0 = cpu_clock()
    s = 0
    while cpu_clock() - t0 < seconds:
        for i in range(1000):
            s += i
    return s


def worker():
    pid = os.fork()
    if pid:
        _, status = os.waitpid(pid, 0)
        print("child status %d" % status)
        sys.stdout.flush()
        return
    child_burn(0.3)
    t = threading.Thread(target=child_burn, args=(0.05,))
    t.start()
    t.join()
    sys.stdout.write("child done\n")
    sys.stdout.flush()


w = threading.Thread(target=worker)
w.start()
w.join()
