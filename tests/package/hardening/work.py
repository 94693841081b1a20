# The work of a hardened unit under the profiler (tests/package/hardening_test.sh).
#   python3 work.py CASE            toggles sampling on (the drop-in starts it paused),
#                                   spends half a second of the process's CPU
#                                   (time.process_time) in spin on two threads at
#                                   once, allocates, prints the CPU each thread spent
#                                   in spin (its own user and system time, which
#                                   check.py holds the samples to), exits
#   python3 work.py CASE --daemon   the same, then stays until it is stopped, so that
#                                   `pyprof ctl` can reach it
import os
import resource
import signal
import sys
import threading
import time

os.kill(os.getpid(), signal.SIGUSR2)


spent = []  # (user, system) seconds of a thread's own CPU in spin


def spin(seconds):
    before = resource.getrusage(resource.RUSAGE_THREAD)
    start = time.process_time()
    x = 0
    while time.process_time() - start < seconds:
        x += sum(range(1000))
    after = resource.getrusage(resource.RUSAGE_THREAD)
    spent.append((after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime))
    return x


th = threading.Thread(target=spin, args=(0.5,))
th.start()
keep = [bytearray(4096) for _ in range(2000)]
spin(0.5)
th.join()
print("work done: %s spin_user_ns=%d spin_system_ns=%d" % (
    sys.argv[1], sum(u for u, _ in spent) * 1e9, sum(s for _, s in spent) * 1e9))
sys.stdout.flush()
if "--daemon" in sys.argv:
    while True:
        time.sleep(0.1)
