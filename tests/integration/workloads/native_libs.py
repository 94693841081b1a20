"""Time spent in real C libraries, for the native-frame tests.

    native_libs.py WHAT SECONDS

Runs until the process has used SECONDS of CPU time, then prints how many rounds it
made and the CPU time it used.  WHAT is one of:
  zlib     compress_it() calls zlib.compress (libz's deflate does the work)
  hashlib  hash_it() calls hashlib.sha256 (libcrypto's digest)
  qsort    sort_it() sorts through libc's qsort with a Python comparator, cmp_keys(),
           called back through ctypes
"""
import ctypes
import ctypes.util
import hashlib
import os
import sys
import time
import zlib

cpu_clock = getattr(time, "process_time", None) or time.clock

DATA = os.urandom(1 << 18) + b"pyprof" * 40000


def compress_it():
    return len(zlib.compress(DATA, 9))


def hash_it():
    h = hashlib.sha256()
    for _ in range(16):
        h.update(DATA)
    return h.hexdigest()


LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                       ctypes.POINTER(ctypes.c_int))


def cmp_keys(a, b):
    x, y = a[0], b[0]
    return (x > y) - (x < y)


CMP_C = CMP(cmp_keys)


def sort_it():
    n = 2000
    arr = (ctypes.c_int * n)(*[(i * 7919) % n for i in range(n)])
    LIBC.qsort(arr, n, ctypes.sizeof(ctypes.c_int), CMP_C)
    return arr[0]


def main():
    work = {"zlib": compress_it, "hashlib": hash_it, "qsort": sort_it}[sys.argv[1]]
    end = cpu_clock() + float(sys.argv[2])
    n = 0
    while cpu_clock() < end:
        work()
        n += 1
    print("rounds %d cpu %.3f" % (n, cpu_clock()))


main()
