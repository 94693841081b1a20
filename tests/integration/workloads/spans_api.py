"""Workload of test_spans.py: the pyprof package's spans on one interpreter (2.7, 3.6+).

Run with utils/python on PYTHONPATH, under the library or not.  Makes, in this order:
nested `with` spans (outer > middle > inner); decorated functions, methods, a classmethod,
a staticmethod and a bare-decorated method; exceptions leaving a `with` span and a
decorated function; pyprof.start/stop by hand; a fork inside a span, whose child starts
a span of its own and leaves the parent's span; three threads, each burning CPU inside a
span of its own.  Prints one JSON object of what it observed: what the calls returned,
the threads' kernel ids, the exceptions as they arrived, the child's pid.
"""

import json
import os
import sys
import threading
import traceback

import pyprof

facts = {"active": pyprof.active()}


def gettid():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    import ctypes
    return ctypes.CDLL(None).syscall(186)  # SYS_gettid, x86_64


def burn(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


# ---- nesting ---------------------------------------------------------------------------
with pyprof.span("outer", request="GET /", n=1):
    with pyprof.span("middle"):
        with pyprof.span("inner", obj=object()):
            burn(1000)
facts["main_tid"] = gettid()


# ---- decorators ------------------------------------------------------------------------
@pyprof.span("deco-func", kind="f")
def deco_func(x, y=2):
    """doc of deco_func"""
    return x * y


class Klass(object):
    def __init__(self, k):
        self.k = k

    @pyprof.span("deco-method")
    def method(self, x):
        return self.k + x

    @pyprof.span("deco-class")
    @classmethod
    def cmethod(cls, x):
        return (cls.__name__, x)

    @pyprof.span("deco-static")
    @staticmethod
    def smethod(x):
        return x - 1

    @pyprof.span
    def bare(self):
        return "bare"


k = Klass(10)
facts["deco"] = [deco_func(3), deco_func(4, y=5), k.method(1), k.method(2),
                 list(Klass.cmethod(7)), Klass.smethod(8), k.bare(),
                 deco_func.__name__, deco_func.__doc__]


# ---- exceptions ------------------------------------------------------------------------
raised = {}


def fail(kind):
    e = kind("boom %s" % kind.__name__)
    raised[kind] = e
    raise e  # RAISE-LINE


@pyprof.span("exc-deco")
def fail_deco():
    fail(ValueError)


def caught(exc, kind):
    tb = traceback.extract_tb(sys.exc_info()[2])
    return {"same_object": exc is raised[kind], "type": type(exc).__name__,
            "last": [tb[-1][2], tb[-1][1]], "frames": [f[2] for f in tb]}


try:
    with pyprof.span("exc-with"):
        fail(KeyError)
except KeyError as e:
    facts["exc_with"] = caught(e, KeyError)
try:
    fail_deco()
except ValueError as e:
    facts["exc_deco"] = caught(e, ValueError)


# ---- by hand ---------------------------------------------------------------------------
facts["manual_id"] = pyprof.start("manual", a=1, b=[1, "x"])
facts["manual_inner_id"] = pyprof.start("manual-inner")
facts["manual_stops"] = [pyprof.stop(result="ok"), pyprof.stop(), pyprof.stop()]
facts["odd_info"] = pyprof.start("odd-info", key=float("nan"), s=set([1]), text=u"\u00e9t\u00e9")
pyprof.stop()


# ---- fork --------------------------------------------------------------------------------
with pyprof.span("fork-parent"):
    pid = os.fork()
    if pid == 0:
        try:
            with pyprof.span("fork-child"):
                burn(1000)
            child_facts = {"active": pyprof.active()}
            with open(os.environ["SPANS_CHILD_OUT"], "w") as f:
                json.dump(child_facts, f)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        # Leaving "fork-parent" here must not stop the parent's span from the child; the
        # interpreter's own exit (sys.exit) runs the with's exit, then the library's.
    else:
        _, status = os.waitpid(pid, 0)
        facts["child_pid"] = pid
        facts["child_status"] = status
if pid == 0:
    sys.exit(0)


# ---- threads -----------------------------------------------------------------------------
N_THREADS = 3
BURN = int(os.environ.get("SPANS_BURN", "400000"))
thread_tids = [None] * N_THREADS


# One span object entered by every thread at once: thread i enters it after thread i-1,
# and leaves it after thread i-1 left it, once all are inside (first in, first out: the
# last entry is never the leaving thread's but for the last thread).
SHARED = pyprof.span("shared")
entered = [threading.Event() for _ in range(N_THREADS)]
left = [threading.Event() for _ in range(N_THREADS)]


def worker(i):
    thread_tids[i] = gettid()
    with pyprof.span("thread-%d" % i, i=i):
        burn(BURN)
    if i:
        entered[i - 1].wait()
    with SHARED:
        entered[i].set()
        with pyprof.span("in-shared-%d" % i):
            entered[N_THREADS - 1].wait()
            if i:
                left[i - 1].wait()
    left[i].set()


threads = [threading.Thread(target=worker, args=(i,)) for i in range(N_THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
facts["thread_tids"] = thread_tids
facts["stack_left"] = len(pyprof._local.stack)
print(json.dumps(facts))
