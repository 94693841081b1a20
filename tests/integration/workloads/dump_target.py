"""Threads in the places `pyprof dump` must show: two threads deadlocked on two locks,
a thread inside a C function that keeps the GIL (argv[1]: tests/helpers/busy_loop.c
built as a shared object, called through ctypes.PyDLL), a thread blocked in select.
Prints "ready" once the first three are in place, then starts the C one; runs until
killed.  The MARK comments are where each thread's innermost Python frame must be.
Python 2.7 and 3.x."""
from __future__ import print_function

import ctypes
import os
import select
import sys
import threading
import time

lock_a = threading.Lock()
lock_b = threading.Lock()
has_a = threading.Event()
has_b = threading.Event()
in_select = threading.Event()


def take_a_then_b():
    with lock_a:
        has_a.set()
        has_b.wait()
        lock_b.acquire()  # MARK: deadlock-a
        lock_b.release()


def take_b_then_a():
    with lock_b:
        has_b.set()
        has_a.wait()
        lock_a.acquire()  # MARK: deadlock-b
        lock_a.release()


def wait_in_select(fd):
    in_select.set()
    select.select([fd], [], [])  # MARK: select


def spin_in_c(lib):
    lib.busy_loop(600.0)  # MARK: spin


def main():
    lib = ctypes.PyDLL(sys.argv[1])
    lib.busy_loop.restype = ctypes.c_double
    lib.busy_loop.argtypes = [ctypes.c_double]
    r, w = os.pipe()
    threads = [threading.Thread(target=take_a_then_b, name="deadlock-a"),
               threading.Thread(target=take_b_then_a, name="deadlock-b"),
               threading.Thread(target=wait_in_select, args=(r,), name="selector")]
    for t in threads:
        t.daemon = True
        t.start()
    has_a.wait()
    has_b.wait()
    in_select.wait()
    time.sleep(0.2)
    print("ready")
    sys.stdout.flush()
    spinner = threading.Thread(target=spin_in_c, args=(lib,), name="c-spinner")
    spinner.daemon = True
    spinner.start()  # MARK: main-start
    spinner.join()  # MARK: main-join


main()
