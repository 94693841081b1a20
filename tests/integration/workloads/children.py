# Process-tree workload (Python 2.7 and 3.x).  The parent burns CPU in parent_burn(),
# then starts children as $CHILDREN_MODE says and waits for them:
#
#   fork3   three children made with os.fork(); child i burns CPU in worker_<i>() and
#           leaves with os._exit(0)
#   mixed   one child made by multiprocessing with the 'fork' start method (mp_worker),
#           then one Python child run with subprocess (workloads/child_prog.py, which
#           burns CPU in exec_child_burn)
#
# then burns again in parent_after().  $BURN_SECONDS (default 0.3) sets each burn.  When
# $CHILD_PIDS names a directory, every process writes a file there named after its role
# ("parent", "worker_0", ..., "mp_worker"; child_prog.py writes "exec_child") holding
# "pid ppid", so a test can match logs to processes; stdout does not depend on pids.
import os
import subprocess
import sys
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

BURN = float(os.environ.get("BURN_SECONDS", "0.3"))
HERE = os.path.dirname(os.path.abspath(__file__))


def note(role):
    out = os.environ.get("CHILD_PIDS")
    if out:
        with open(os.path.join(out, role), "w") as f:
            f.write("%d %d\n" % (os.getpid(), os.getppid()))


def spin(seconds):
    t0 = cpu_clock()
    s = 0
    while cpu_clock() - t0 < seconds:
        for i in range(2000):
            s += i & 3
    return s


def parent_burn():
    return spin(BURN)


def parent_after():
    return spin(BURN / 3)


def worker_0():
    return spin(BURN)


def worker_1():
    return spin(BURN)


def worker_2():
    return spin(BURN)


WORKERS = [worker_0, worker_1, worker_2]


def mp_worker():
    note("mp_worker")
    spin(BURN)


def fork3():
    pids = []
    for i, fn in enumerate(WORKERS):
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                note("worker_%d" % i)
                fn()
                status = 0
            finally:
                os._exit(status)
        pids.append(pid)
    bad = 0
    for pid in pids:
        _, st = os.waitpid(pid, 0)
        if st != 0:
            bad += 1
    print("fork3: %d children, %d failed" % (len(pids), bad))
    return bad


def mixed():
    import multiprocessing
    if hasattr(multiprocessing, "get_context"):
        proc = multiprocessing.get_context("fork").Process(target=mp_worker)
    else:
        proc = multiprocessing.Process(target=mp_worker)   # 2.7: always fork
    sys.stdout.flush()
    proc.start()
    proc.join()
    print("multiprocessing child: exit code %s" % proc.exitcode)
    sys.stdout.flush()
    rc = subprocess.call([sys.executable, os.path.join(HERE, "child_prog.py")])
    print("subprocess child: exit code %d" % rc)
    return int(proc.exitcode != 0) + int(rc != 0)


def main():
    note("parent")
    mode = os.environ.get("CHILDREN_MODE", "fork3")
    print("children workload: mode %s" % mode)
    parent_burn()
    bad = {"fork3": fork3, "mixed": mixed}[mode]()
    parent_after()
    print("children workload: done")
    return 3 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
