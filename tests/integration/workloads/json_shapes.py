"""Workload of test_json_schema.py: a little of everything the tool's JSON outputs hold
(Python 2.7 and 3.6+, utils/python on PYTHONPATH).  Nested spans through the pyprof
package, one ended by an exception; spans through the library's C functions whose info
is not a JSON object and whose name is not UTF-8, one of them left open; a second
thread with a hostile name burning CPU inside a span; a fork whose child burns and
exits.  Then prints "ready" and sleeps until it is killed (the test dumps it first).
"""
from __future__ import print_function

import os
import sys
import threading
import time

import pyprof
from span_capi import start, stop


def burn(n):
    s = i = 0
    while i < n:
        s += i * i
        i += 1
    return s


def worker():
    with pyprof.span("work<er>", kind="thread"):
        burn(200000)


with pyprof.span("outer", request=1, who=u"caf\u00e9 \"q\""):
    burn(100000)
    with pyprof.span("inner"):
        burn(100000)
    try:
        with pyprof.span("failing"):
            burn(50000)
            raise ValueError("on purpose")
    except ValueError:
        pass

th = threading.Thread(target=worker, name="w\"<1>\\\x01")
th.start()
th.join()

sid = start(b"c-span\xff", b"c-trace", b"c-parent", b"c-base", b'{"broken": ', 0)
burn(50000)
stop(sid, b"not json")
start(b"left open", b"open-trace", b"", b"", None, 0)
burn(50000)

pid = os.fork()
if pid == 0:
    burn(100000)
    os._exit(0)
os.waitpid(pid, 0)

print("ready")
sys.stdout.flush()
while True:
    time.sleep(1)
