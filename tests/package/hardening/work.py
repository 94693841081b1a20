# The work of a hardened unit under the profiler (tests/package/hardening_test.sh).
#   python3 work.py CASE            toggles sampling on (the drop-in starts it paused),
#                                   spends half a second of the process's CPU
#                                   (time.process_time) in spin on two threads at
#                                   once, allocates, exits
#   python3 work.py CASE --daemon   the same, then stays until it is stopped, so that
#                                   `pyprof ctl` can reach it
import os
import signal
import sys
import threading
import time

os.kill(os.getpid(), signal.SIGUSR2)


def spin(seconds):
    start = time.process_time()
    x = 0
    while time.process_time() - start < seconds:
        x += sum(range(1000))
    return x


th = threading.Thread(target=spin, args=(0.5,))
th.start()
keep = [bytearray(4096) for _ in range(2000)]
spin(0.5)
th.join()
print("work done:", sys.argv[1])
sys.stdout.flush()
if "--daemon" in sys.argv:
    while True:
        time.sleep(0.1)
