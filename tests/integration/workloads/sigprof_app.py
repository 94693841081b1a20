# A program with a profiler of its own (Python 2.7 and 3.x): it installs a SIGPROF
# handler (count_tick) and arms ITIMER_PROF every 2 ms, burns $BURN_SECONDS (default 1)
# of CPU in app_burn(), disarms the timer and says whether its handler ran as often as
# it should (at least a quarter of the expected ticks).  The exact count goes to the
# file $TICKS_OUT when set.
import os
import signal
import sys
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

ticks = [0]


def count_tick(signum, frame):
    ticks[0] += 1


def app_burn(seconds):
    t0 = cpu_clock()
    s = 0
    while cpu_clock() - t0 < seconds:
        for i in range(2000):
            s += i & 3
    return s


BURN = float(os.environ.get("BURN_SECONDS", "1"))
INTERVAL = 0.002
signal.signal(signal.SIGPROF, count_tick)
signal.setitimer(signal.ITIMER_PROF, INTERVAL, INTERVAL)
app_burn(BURN)
signal.setitimer(signal.ITIMER_PROF, 0, 0)
# ITIMER_PROF fires on scheduler ticks: 250 Hz here, so ~BURN * 250 ticks.
expected = BURN / max(INTERVAL, 0.004)
print("sigprof_app: handler ran enough: %s" % (ticks[0] >= expected / 4))
out = os.environ.get("TICKS_OUT")
if out:
    with open(out, "w") as f:
        f.write("%d\n" % ticks[0])
sys.exit(0)
