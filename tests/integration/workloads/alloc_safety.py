"""What allocation sampling must survive, all at once: a C signal handler that maps and
unmaps memory every 500 us, a fork whose child allocates, realloc chains (C and Python),
aligned allocations, many short threads that allocate, and an exec'd child.  Prints
what it checked; any wrong byte or lost thread shows in the output, which the test
compares with an unprofiled run's."""
import ctypes
import os
import subprocess
import sys
import threading


def python_reallocs():
    b = bytearray()
    for i in range(3000):
        b += bytes(bytearray([i % 251])) * 97
    ok = all(b[k] == (k // 97) % 251 for k in range(0, len(b), 89))
    s = []
    for i in range(20000):
        s.append(i)
    return ok and sum(s) == 20000 * 19999 // 2


def worker(out, i):
    blocks = [bytearray(1000 + 37 * k) for k in range(60)]
    text = "".join(str(k) for k in range(300))
    out[i] = sum(len(b) for b in blocks) + len(text)


def short_threads(n):
    out = [0] * n
    threads = [threading.Thread(target=worker, args=(out, i)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(set(out)) == 1 and out[0] > 0


def forked_child():
    pid = os.fork()
    if pid == 0:
        ok = python_reallocs() and short_threads(5)
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    return status == 0


def main():
    lib = ctypes.CDLL(os.environ["ALLOC_EXT"])
    lib.ext_alarm_allocs.argtypes = [ctypes.c_long]
    lib.ext_alarm_stop.restype = ctypes.c_long
    lib.ext_realloc_chain.argtypes = [ctypes.c_int, ctypes.c_size_t]
    lib.ext_aligned.argtypes = [ctypes.c_int, ctypes.c_size_t]
    assert lib.ext_alarm_allocs(500) == 0
    # The fork first, while this process has one thread: 3.12+ warns at a fork with
    # more, and a joined thread may still be leaving the kernel's list.
    results = [
        ("fork", forked_child()),
        ("realloc chains (C)", all(lib.ext_realloc_chain(200, 1000) for _ in range(30))),
        ("aligned (C)", bool(lib.ext_aligned(2000, 3000))),
        ("realloc chains (Python)", python_reallocs()),
        ("short threads", short_threads(100)),
    ]
    out = subprocess.check_output([sys.executable, "-c",
                                   "x = [bytearray(100000) for i in range(50)]; "
                                   "print(sum(len(b) for b in x))"])
    results.append(("exec", out.strip() == b"5000000"))
    runs = lib.ext_alarm_stop()
    results.append(("signal handler ran", runs > 0))
    for name, ok in results:
        sys.stdout.write("%s: %s\n" % (name, "ok" if ok else "WRONG"))


main()
