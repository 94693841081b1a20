# Threads workload (Python 2.7 and 3.x): two threads named "alpha" and "beta" run the
# same CPU-bound loop, alpha twice as many iterations as beta, while the main thread
# waits.  The profile must show both threads, with their names, about 2:1.
#
# When THREAD_TIDS names a directory, each thread appends "name tid" (its OS thread id)
# to the file named by the process id there, so a test can find the threads without
# relying on names; stdout stays the same.
import ctypes
import os
import threading

try:
    xrange
except NameError:
    xrange = range

N = int(os.environ.get("THREAD_ITERATIONS", "10000000"))


def spin(n):
    out = os.environ.get("THREAD_TIDS")
    if out:
        tid = ctypes.CDLL(None).syscall(186)  # gettid on x86_64, for 2.7 and 3.6 too
        with open(os.path.join(out, str(os.getpid())), "a") as f:
            f.write("%s %d\n" % (threading.current_thread().name, tid))
    s = 0
    for i in xrange(n):
        s += i & 7
    return s


alpha = threading.Thread(target=spin, args=(2 * N,), name="alpha")
beta = threading.Thread(target=spin, args=(N,), name="beta")
alpha.start()
beta.start()
alpha.join()
beta.join()
print("threads workload: done")
