"""Workload of test_spans_osprofiler.py: a WSGI app under osprofiler.web.WsgiMiddleware,
served with wsgiref on 127.0.0.1 (a port of the kernel's choice, written to argv[1]), for
one request.  OSProfiler is set up with pyprof:// and the HMAC key of the client.  The app
calls a traced function that burns CPU.  Prints one JSON object: the ids OSProfiler had
while serving.
"""

import json
import os
import sys
from wsgiref.simple_server import WSGIRequestHandler, make_server

from osprofiler import initializer, profiler, web


class _Section(object):
    connection_string = "pyprof://"
    hmac_keys = "secret-key"
    enabled = True


class _Conf(dict):
    """What a service's oslo.config object offers: attributes and a mapping."""

    def __init__(self):
        dict.__init__(self, profiler=_Section())
        self.profiler = self["profiler"]


initializer.init_from_conf(_Conf(), {}, "proj", "api", "host-s")
facts = {}


def burn(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


@profiler.trace("db-query", info={"table": "users"})
def query():
    facts["query_id"] = profiler.get().get_id()
    return burn(300000)


def app(environ, start_response):
    p = profiler.get()
    facts["base_id"] = p.get_base_id()
    facts["wsgi_id"] = p.get_id()
    facts["wsgi_parent_id"] = p.get_parent_id()
    body = str(query()).encode()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body]


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


server = make_server("127.0.0.1", 0, web.WsgiMiddleware(app, hmac_keys="secret-key",
                                                         enabled=True),
                     handler_class=Quiet)
tmp = sys.argv[1] + ".tmp"
with open(tmp, "w") as f:
    f.write(str(server.server_port))
os.rename(tmp, sys.argv[1])
server.handle_request()
server.server_close()
print(json.dumps(facts))
