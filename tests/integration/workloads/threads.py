# Threads workload (Python 2.7 and 3.x): two threads named "alpha" and "beta" run the
# same CPU-bound loop, alpha until it has used twice the CPU time beta uses
# ($THREAD_CPU seconds, default 0.6, for beta), while the main thread waits.  The
# profile must show both threads, with their names, in proportion to the CPU each used
# (about 2:1).  Each thread stops on its own CPU time, not on a number of iterations,
# so the samples a CPU-clock sampler takes are the same on any machine, however busy.
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

CPU = float(os.environ.get("THREAD_CPU", "0.6"))


def thread_cpu_ns(tid):
    # The thread's CPU time so far: what a CPU-clock sampler sees of it (2.7 and 3.6
    # have no time.thread_time).
    with open("/proc/self/task/%d/schedstat" % tid) as f:
        return int(f.read().split()[0])


def spin(seconds):
    tid = ctypes.CDLL(None).syscall(186)  # gettid on x86_64, for 2.7 and 3.6 too
    end = thread_cpu_ns(tid) + int(seconds * 1e9)
    s = 0
    while thread_cpu_ns(tid) < end:
        for i in xrange(20000):
            s += i & 7
    out = os.environ.get("THREAD_TIDS")
    if out:
        with open(os.path.join(out, str(os.getpid())), "a") as f:
            f.write("%s %d %d\n" % (threading.current_thread().name, tid,
                                    thread_cpu_ns(tid)))
    return s


alpha = threading.Thread(target=spin, args=(2 * CPU,), name="alpha")
beta = threading.Thread(target=spin, args=(CPU,), name="beta")
alpha.start()
beta.start()
alpha.join()
beta.join()
print("threads workload: done")
