"""Workload of test_spans_osprofiler.py: a WSGI app under osprofiler.web.WsgiMiddleware,
served with wsgiref on 127.0.0.1 (a port of the kernel's choice, printed as the first
line of stdout), for one request.  OSProfiler is set up with pyprof:// and the HMAC key
of the client.  The app burns a known amount of its thread's CPU time in server_burn,
then calls a traced function (span db-query) that burns CPU in burn.  Then prints one
JSON object: the ids OSProfiler had while serving, and the CPU times the app measured on
its thread's CPU clock (ms): server_burn's, burn's, the whole traced call's (measured by
its caller, so it holds the span's own start and stop, which run inside the span), and
the app's whole call.
"""

import json
import sys
import time
from wsgiref.simple_server import WSGIRequestHandler, make_server

from osprofiler import profiler, web

import osprof_conf


osprof_conf.init("proj", "api", "host-s")
facts = {}


def burn(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def server_burn(ms):
    """Burns `ms` of this thread's CPU time; returns the thread CPU time it took (ms)."""
    t0 = time.thread_time()
    s = 0
    while time.thread_time() - t0 < ms / 1000.0:
        for i in range(2000):
            s += i * i
    return (time.thread_time() - t0) * 1000.0


@profiler.trace("db-query", info={"table": "users"})
def query():
    facts["query_id"] = profiler.get().get_id()
    t0 = time.thread_time()
    r = burn(1000000)
    facts["burn_ms"] = (time.thread_time() - t0) * 1000.0
    return r


def app(environ, start_response):
    t0 = time.thread_time()
    p = profiler.get()
    facts["base_id"] = p.get_base_id()
    facts["wsgi_id"] = p.get_id()
    facts["wsgi_parent_id"] = p.get_parent_id()
    facts["server_burn_ms"] = server_burn(300)
    t1 = time.thread_time()
    body = str(query()).encode()
    facts["query_cpu_ms"] = (time.thread_time() - t1) * 1000.0
    start_response("200 OK", [("Content-Type", "text/plain")])
    facts["app_cpu_ms"] = (time.thread_time() - t0) * 1000.0
    return [body]


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


server = make_server("127.0.0.1", 0, web.WsgiMiddleware(app, hmac_keys="secret-key",
                                                         enabled=True),
                     handler_class=Quiet)
sys.stdout.write("%d\n" % server.server_port)
sys.stdout.flush()
server.handle_request()
server.server_close()
print(json.dumps(facts))
