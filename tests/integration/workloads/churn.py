# Churn workload (Python 2.7 and 3.x): many short-lived threads or forked children, and
# what they leave behind in the parent.
#
#   CHURN_MODE=threads  $THREADS (default 2000) threads, $BATCH (default 50) at a time,
#                       each running thread_work() ($WORK loop iterations, default 20000)
#                       or, when $TASK_CPU is set, short_task() (that many seconds of
#                       process CPU time), started then joined;
#                       the parent's open file descriptors and RSS are measured after
#                       every number of threads in $MARKS (default "200,1100") and after
#                       the last one (keys fds_<n>, rss_<n>; threads_cpu_us is the CPU
#                       time the process used from the first thread to the last join);
#                       before the first thread, the main thread burns $WARMUP seconds
#                       (default 0) of CPU in warmup(), $WARMUP_DEPTH (default 1) frames
#                       of it deep
#   CHURN_MODE=forks    $CHILDREN (default 50) children made with os.fork(), $BATCH
#                       (default 5) at a time, each burning CPU in child_burn() then
#                       leaving with os._exit(0); the parent's open file descriptors are
#                       counted before the first fork (after burning $WARMUP seconds,
#                       default 0, in warmup()) and after the last child is reaped
#
# The measurements go to the file $CHURN_OUT as "key value" lines (stdout only says
# what was done, so it is the same with and without the library).
import os
import sys
import threading
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

try:
    xrange
except NameError:
    xrange = range

PAGE = os.sysconf("SC_PAGE_SIZE")


def fds():
    """Open file descriptors: the fewest of three counts 10 ms apart.  The library's
    writer thread opens a /proc file for a moment now and then (its periodic checks),
    and on a busy machine it may be caught holding it; a descriptor that stays open, as
    a leaked one does, is in every count."""
    counts = []
    for _ in range(3):
        counts.append(len(os.listdir("/proc/self/fd")))
        time.sleep(0.01)
    return min(counts)


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def thread_work(n):
    s = 0
    for i in xrange(n):
        s += i & 7
    return s


def spin(seconds):
    t0 = cpu_clock()
    s = 0
    while cpu_clock() - t0 < seconds:
        for i in xrange(2000):
            s += i & 3
    return s


def short_task(seconds):
    return spin(seconds)


def warmup(seconds, depth=1):
    if depth > 1:
        return warmup(seconds, depth - 1)
    return spin(seconds)


def child_burn(seconds):
    return spin(seconds)


def threads(out):
    total = int(os.environ.get("THREADS", "2000"))
    batch = int(os.environ.get("BATCH", "50"))
    marks = [int(x) for x in os.environ.get("MARKS", "200,1100").split(",")]
    work = int(os.environ.get("WORK", "20000"))
    task_cpu = float(os.environ.get("TASK_CPU", "0"))
    target, args = (short_task, (task_cpu,)) if task_cpu else (thread_work, (work,))
    warmup(float(os.environ.get("WARMUP", "0")), int(os.environ.get("WARMUP_DEPTH", "1")))
    started = 0
    cpu0 = cpu_clock()
    while started < total:
        group = [threading.Thread(target=target, args=args)
                 for _ in range(min(batch, total - started))]
        for th in group:
            th.start()
        for th in group:
            th.join()
        started += len(group)
        if started in marks or started == total:
            if started == total:
                out["threads_cpu_us"] = int((cpu_clock() - cpu0) * 1e6)
            time.sleep(0.05)   # let the writer catch up before measuring
            out["fds_%d" % started] = fds()
            out["rss_%d" % started] = rss()
    out["threads_alive"] = threading.active_count()
    print("churn: %d threads started and joined" % started)


def forks(out):
    total = int(os.environ.get("CHILDREN", "50"))
    batch = int(os.environ.get("BATCH", "5"))
    burn = float(os.environ.get("CHILD_BURN", "0.05"))
    warmup(float(os.environ.get("WARMUP", "0")))
    time.sleep(0.05)
    out["fds_before"] = fds()
    done = failed = 0
    while done < total:
        pids = []
        for _ in range(min(batch, total - done)):
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                status = 1
                try:
                    child_burn(burn)
                    status = 0
                finally:
                    os._exit(status)
            pids.append(pid)
        for pid in pids:
            if os.waitpid(pid, 0)[1] != 0:
                failed += 1
        done += len(pids)
    time.sleep(0.05)
    out["fds_after"] = fds()
    print("churn: %d children forked, %d failed" % (done, failed))
    return failed


def main():
    mode = os.environ.get("CHURN_MODE", "threads")
    out = {}
    failed = {"threads": threads, "forks": forks}[mode](out) or 0
    path = os.environ.get("CHURN_OUT")
    if path:
        with open(path, "w") as f:
            for k in sorted(out):
                f.write("%s %d\n" % (k, out[k]))
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
