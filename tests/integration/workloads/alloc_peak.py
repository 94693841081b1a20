"""A heap that rises then falls: build_cache builds CACHE_MB MiB of bytearrays (64 KiB
each) and lets them go, then leak_small keeps LEAK_MB MiB (16 KiB blocks) to the end.
The peak of the heap is while the cache is alive; at the end only the small leak is,
with what the interpreter holds: it leaves with os._exit, so no teardown frees the rest
before the log's end."""
import os
import sys

CACHE_MB = int(os.environ.get("CACHE_MB", "32"))
LEAK_MB = int(os.environ.get("LEAK_MB", "4"))
kept = []


def build_cache():
    cache = []
    for _ in range(CACHE_MB * 16):   # not a comprehension: its own frame before 3.12
        cache.append(bytearray(64 << 10))
    total = sum(len(b) for b in cache)
    del cache[:]
    return total


def leak_small():
    for _ in range(LEAK_MB * 64):
        kept.append(bytearray(16 << 10))


def main():
    build_cache()
    leak_small()
    sys.stdout.write("done\n")
    sys.stdout.flush()
    os._exit(0)


main()
