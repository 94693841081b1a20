"""Everything that can go wrong under a native unwinder, at once, for the native-frame
tests: threads loading and unloading libraries with ctypes, C++ exceptions thrown and
caught, fork, subprocess, and C library time, while the main thread runs Python.

    native_stress.py CXXLIB SECONDS

Prints one line per activity with a count that depends only on the work (the same with
and without a profiler), and exits 0.
"""
import ctypes
import ctypes.util
import os
import subprocess
import sys
import threading
import time
import zlib

CXXLIB, SECONDS = sys.argv[1], float(sys.argv[2])
ROUNDS = 40
results = {}


def dl_loop():
    # Load and unload libraries over and over; each load must work the same.
    names = [ctypes.util.find_library("z"), ctypes.util.find_library("bz2") or
             ctypes.util.find_library("z"), CXXLIB]
    ok = 0
    for i in range(ROUNDS * 5):
        lib = ctypes.CDLL(names[i % len(names)])
        handle = lib._handle
        del lib
        ok += 1
        try:
            import _ctypes
            _ctypes.dlclose(handle)
        except (ImportError, AttributeError):
            pass
    results["dlopen"] = ok


def cxx_loop():
    lib = ctypes.CDLL(CXXLIB)
    lib.cxx_throw_catch.restype = ctypes.c_long
    lib.cxx_throw_catch.argtypes = [ctypes.c_long]
    results["cxx"] = sum(lib.cxx_throw_catch(2000) for _ in range(ROUNDS))


def fork_loop():
    statuses = 0
    for i in range(ROUNDS // 4):
        pid = os.fork()
        if pid == 0:
            zlib.compress(b"x" * 100000)
            os._exit(i % 7)
        _, st = os.waitpid(pid, 0)
        statuses += os.WEXITSTATUS(st)
    results["fork"] = statuses


def subprocess_loop():
    out = 0
    for _ in range(ROUNDS // 8):
        out += len(subprocess.check_output([sys.executable, "-c", "print('hi')"]))
    results["subprocess"] = out


def busy(n):
    return n if n < 2 else busy(n - 1) + busy(n - 2)


def main():
    threads = [threading.Thread(target=f) for f in (dl_loop, cxx_loop, fork_loop,
                                                    subprocess_loop)]
    for th in threads:
        th.start()
    end = time.time() + SECONDS
    fibs = 0
    while time.time() < end or any(th.is_alive() for th in threads):
        fibs += busy(18) > 0
        zlib.compress(b"y" * 20000)
    for th in threads:
        th.join()
    for k in sorted(results):
        print("%s %d" % (k, results[k]))


main()
