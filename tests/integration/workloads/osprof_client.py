"""Workload of test_spans_osprofiler.py: the client of osprof_server.py.  OSProfiler with
pyprof:// and the server's HMAC key; inside a Trace (span client-call), a known amount
of its thread's CPU time burnt in client_burn, then one HTTP GET carrying
web.get_trace_id_headers() to the port argv[1] (the server's).  Prints one JSON object:
its ids, the response, and the CPU times it measured on its thread's CPU clock (ms):
client_burn's and the Trace block's whole body.
"""

import json
import sys
import time
from urllib.request import Request, urlopen

from osprofiler import profiler, web

import osprof_conf


def client_burn(ms):
    """Burns `ms` of this thread's CPU time; returns the thread CPU time it took (ms)."""
    t0 = time.thread_time()
    s = 0
    while time.thread_time() - t0 < ms / 1000.0:
        for i in range(2000):
            s ^= i << 3
    return (time.thread_time() - t0) * 1000.0


osprof_conf.init("proj", "client", "host-c")
port = int(sys.argv[1])
profiler.init("secret-key")
facts = {"base_id": profiler.get().get_base_id()}
with profiler.Trace("client-call", info={"port": port}):
    t0 = time.thread_time()
    facts["call_id"] = profiler.get().get_id()
    facts["client_burn_ms"] = client_burn(200)
    headers = web.get_trace_id_headers()
    facts["headers"] = sorted(headers)
    req = Request("http://127.0.0.1:%d/items?x=1" % port, headers=headers)
    facts["body"] = urlopen(req, timeout=60).read().decode()
    facts["call_cpu_ms"] = (time.thread_time() - t0) * 1000.0
print(json.dumps(facts))
