"""A daemon-like workload for the rotation tests: CPU work in a few functions, with
stacks that vary (recursion of changing depth), for argv[1] seconds, or forever with 0.
With argv[2] == "codes", each round also compiles and runs a new function of its own
name and file, so the log keeps getting new CODE records (a log that grows fast).
Prints one line at the end."""
import sys
import time


def leaf(n):
    s = 0
    for i in range(300):
        s += i * n
    return s


def recurse(depth, n):
    if depth == 0:
        return leaf(n)
    return recurse(depth - 1, n) + 1


def fresh(n):
    name = "generated_%08x" % (n * 2654435761 % 2 ** 32)
    ns = {}
    src = "def %s(n):\n    s = 0\n    for i in range(3000):\n        s += i\n    return s\n" % name
    exec(compile(src, "generated/%s_%d.py" % (name, n), "exec"), ns)
    return ns[name](n)


def main():
    limit = float(sys.argv[1])
    codes = sys.argv[2:] == ["codes"]
    n = 0
    start = time.time()
    while limit == 0 or time.time() - start < limit:
        recurse(n % 40, n)
        if codes:
            fresh(n)
        n += 1
    print("done")


main()
