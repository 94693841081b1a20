"""Allocates known numbers of bytes at four sites, each through another allocator, and
writes what it allocated at each to ALLOC_OUT (JSON): the truth the allocation samples
are held to.

  site_small      bytes objects of 100 bytes (pymalloc's pools on 3.x)
  site_bytearray  bytearrays of 200,000 bytes (the object domain, then malloc)
  site_ext        a C library's own malloc (ALLOC_EXT, through ctypes)
  site_mmap       anonymous mmaps of 1 MiB (mmap.mmap(-1, n))

Every block is freed at once: what is measured is what was allocated.  SITE_MB sets each
site's share in megabytes (the defaults give each a quarter); GROW_SITE (one of the names
above) with GROW_MB gives that one site GROW_MB megabytes instead.  SITES (names,
comma-separated) runs only those: a host that loads libpython RTLD_LOCAL cannot import
extension modules (ctypes, mmap), so it runs the first two.  Python 2.7 and 3.x."""
import json
import os
import sys

MB = 1 << 20
SITE_MB = float(os.environ.get("SITE_MB", "64"))
GROW_SITE = os.environ.get("GROW_SITE", "")
GROW_MB = float(os.environ.get("GROW_MB", "0"))


def setup_small():
    big = b"x" * 4096
    pairs = [(a, a + 100) for a in range(0, 3000, 7)]
    return big, pairs


def site_small(budget, big, pairs):
    size = sys.getsizeof(big[0:100])
    n = int(budget // size) // len(pairs) + 1
    for _ in range(n):
        for a, b in pairs:
            x = big[a:b]
    del x
    return n * len(pairs) * size


def site_bytearray(budget):
    size = sys.getsizeof(bytearray(200000))
    n = int(budget // size) + 1
    for _ in range(n):
        x = bytearray(200000)
        del x
    return n * size


def site_ext(budget, lib):
    n = int(budget // 50000) + 1
    for _ in range(n):
        lib.ext_free(lib.ext_alloc(50000))
    return n * 50000


def site_mmap(budget):
    import mmap
    n = int(budget // MB) + 1
    for _ in range(n):
        m = mmap.mmap(-1, MB)
        m.close()
    return n * MB


def ext_lib():
    import ctypes
    lib = ctypes.CDLL(os.environ["ALLOC_EXT"])
    lib.ext_alloc.restype = ctypes.c_void_p
    lib.ext_alloc.argtypes = [ctypes.c_size_t]
    lib.ext_free.argtypes = [ctypes.c_void_p]
    return lib


def main():
    names = ("site_small", "site_bytearray", "site_ext", "site_mmap")
    wanted = os.environ.get("SITES", ",".join(names)).split(",")
    budgets = dict((s, SITE_MB * MB) for s in names)
    if GROW_SITE:
        assert GROW_SITE in budgets, GROW_SITE
        budgets[GROW_SITE] = GROW_MB * MB
    # Each site called from here: its callers are the same in every run.
    truth = {}
    if "site_small" in wanted:
        big, pairs = setup_small()
        truth["site_small"] = site_small(budgets["site_small"], big, pairs)
    if "site_bytearray" in wanted:
        truth["site_bytearray"] = site_bytearray(budgets["site_bytearray"])
    if "site_ext" in wanted:
        truth["site_ext"] = site_ext(budgets["site_ext"], ext_lib())
    if "site_mmap" in wanted:
        truth["site_mmap"] = site_mmap(budgets["site_mmap"])
    with open(os.environ["ALLOC_OUT"], "w") as f:
        json.dump(truth, f)
    sys.stdout.write("done\n")


main()
