# The Python child of workloads/children.py (mode "mixed"), run with subprocess: burns
# CPU in exec_child_burn() and exits normally.  Writes "pid ppid" to $CHILD_PIDS/exec_child
# when $CHILD_PIDS is set.
import os
import sys
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock


def exec_child_burn(seconds):
    t0 = cpu_clock()
    s = 0
    while cpu_clock() - t0 < seconds:
        for i in range(2000):
            s += i & 3
    return s


out = os.environ.get("CHILD_PIDS")
if out:
    with open(os.path.join(out, "exec_child"), "w") as f:
        f.write("%d %d\n" % (os.getpid(), os.getppid()))
exec_child_burn(float(os.environ.get("BURN_SECONDS", "0.3")))
print("child_prog: done")
sys.stdout.flush()
