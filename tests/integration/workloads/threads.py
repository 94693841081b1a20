# Threads workload (Python 2.7 and 3.x): two threads named "alpha" and "beta" run the
# same CPU-bound loop, alpha twice as many iterations as beta, while the main thread
# waits.  The profile must show both threads, with their names, in proportion to the CPU
# each used (about 2:1).
#
# When THREAD_TIDS names a directory, each thread appends "name tid cpu_ns" (its OS
# thread id and the CPU time it used, from its schedstat, once done) to the file named
# by the process id there, so a test can find the threads without relying on names and
# compare with what they really used; stdout stays the same.
import ctypes
import os
import threading

try:
    xrange
except NameError:
    xrange = range

N = int(os.environ.get("THREAD_ITERATIONS", "10000000"))


def spin(n):
    s = 0
    for i in xrange(n):
        s += i & 7
    out = os.environ.get("THREAD_TIDS")
    if out:
        tid = ctypes.CDLL(None).syscall(186)  # gettid on x86_64, for 2.7 and 3.6 too
        # The thread's CPU time so far, in ns: what a CPU-clock sampler sees of it (the
        # two threads share the GIL, so the iterations alone do not say).
        with open("/proc/self/task/%d/schedstat" % tid) as f:
            cpu_ns = int(f.read().split()[0])
        with open(os.path.join(out, str(os.getpid())), "a") as f:
            f.write("%s %d %d\n" % (threading.current_thread().name, tid, cpu_ns))
    return s


alpha = threading.Thread(target=spin, args=(2 * N,), name="alpha")
beta = threading.Thread(target=spin, args=(N,), name="beta")
alpha.start()
beta.start()
alpha.join()
beta.join()
print("threads workload: done")
