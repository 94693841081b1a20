# Stress workload (Python 2.7 and 3.x): until the process has used $STRESS_SECONDS of
# CPU time (default 10; CPU, so that a CPU-clock sampler sees as much of it on a busy
# machine as on an idle one) it repeats a round of everything that makes frames appear
# and vanish quickly: calls and returns, exceptions raised through frames, generators (and ones closed
# half-way), lambdas, code compiled with exec and freed again (functions gen_fn_<i>,
# each a fresh code object), 5000-deep recursion, asyncio gather of coroutines (3.5+),
# and short-lived threads.  At the end a daemon thread is left spinning in Python while
# the interpreter finalizes.
#
# Every round computes the same number; the output is that number and a verdict, never
# a count of rounds, so stdout is identical however long it ran, with or without the
# profiler.
#
# The exec'd functions are compiled with the file name GENERATED_FILE, and gen_fn_<i>
# starts on line 1 + i % 37: the test checks that every function the profile shows for
# that file is a gen_fn_<i> at its own first line (names read while the code object
# was alive, not garbage from freed memory).
import os
import sys
import threading
import time

cpu_clock = getattr(time, "process_time", None) or time.clock
try:
    xrange
except NameError:
    xrange = range

SECONDS = float(os.environ.get("STRESS_SECONDS", "10"))
# $STRESS_STATS: a file that gets, at the end, how many gen_fn_<i> ran and the CPU they
# took ("gen_fns N cpu_s S"), for the test's bound on how many a sampler can see.
STATS = os.environ.get("STRESS_STATS")
gen_cpu = [0.0]
GENERATED_FILE = "<pyprof-stress-generated>"
DEEP = 5000
sys.setrecursionlimit(DEEP + 1000)
MOD = (1 << 61) - 1


def mix(acc, x):
    return (acc * 1000003 + x) % MOD


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def thrower(n):
    if n == 0:
        raise ValueError(n)
    return thrower(n - 1)


def raises():
    caught = 0
    for i in xrange(300):
        try:
            thrower(i % 8)
        except ValueError:
            caught += 1
    return caught


def gen(n):
    for i in xrange(n):
        yield i * i


def generators():
    total = sum(x & 15 for x in gen(500))
    g = gen(1000)
    for _ in xrange(10):
        total += next(g)
    g.close()                      # closed half-way: its frame is cleared
    return total


def lambdas():
    fns = [(lambda x, k=k: x * k + 1) for k in xrange(200)]
    return sum(f(3) for f in fns)


def deep(n):
    return 0 if n == 0 else 1 + deep(n - 1)


counter = [0]


def exec_code():
    """Compiles, runs and frees 5 fresh functions."""
    total = 0
    for _ in xrange(5):
        i = counter[0]
        counter[0] += 1
        src = ("\n" * (i % 37) + "def gen_fn_%d():\n"
               "    s = 0\n"
               "    for j in range(3000):\n"
               "        s += j & 7\n"
               "    return s\n") % i
        ns = {}
        exec(compile(src, GENERATED_FILE, "exec"), ns)
        t0 = cpu_clock()
        total += ns["gen_fn_%d" % i]()
        gen_cpu[0] += cpu_clock() - t0
    return total


def thread_work(results, slot):
    results[slot] = fib(12) + raises()


def threads():
    results = [0] * 4
    ts = [threading.Thread(target=thread_work, args=(results, k)) for k in xrange(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(results)


if sys.version_info >= (3, 5):
    # Coroutine syntax does not parse on 2.7: compiled only where it exists.
    exec("""
import asyncio

async def leaf(i):
    await asyncio.sleep(0)
    return deep(30) + i

async def gather_all():
    return sum(await asyncio.gather(*[leaf(i) for i in range(20)]))

loop = asyncio.new_event_loop()

def coroutines():
    return loop.run_until_complete(gather_all())

def close_loop():
    loop.close()
""")
else:
    def coroutines():
        return 0

    def close_loop():
        pass


def one_round():
    acc = 0
    for part in (fib(15), raises(), generators(), lambdas(), deep(DEEP), exec_code(),
                 coroutines(), threads()):
        acc = mix(acc, part)
    return acc


def spin_forever():
    # Only local variables: during finalization module globals may be torn down.
    x = 0
    while 1:
        x = (x * 31 + 7) % 1000003


def main():
    first = one_round()
    ok = True
    end = cpu_clock() + SECONDS
    while cpu_clock() < end:
        if one_round() != first:
            ok = False
    close_loop()
    if STATS:
        with open(STATS, "w") as f:
            f.write("gen_fns %d cpu_s %.6f\n" % (counter[0], gen_cpu[0]))
    print("stress result: %d" % first)
    print("stress rounds agree: %s" % ok)
    d = threading.Thread(target=spin_forever)
    d.daemon = True
    d.start()
    time.sleep(0.05)
    return 0 if ok else 1


sys.exit(main())
