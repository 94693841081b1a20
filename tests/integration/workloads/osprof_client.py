"""Workload of test_spans_osprofiler.py: the client of osprof_server.py.  OSProfiler with
pyprof:// and the server's HMAC key; inside a Trace, one HTTP GET carrying
web.get_trace_id_headers() to the port found in argv[1] (written by the server when it
listens).  Prints one JSON object: its ids and the response.
"""

import json
import os
import sys
import time
from urllib.request import Request, urlopen

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


initializer.init_from_conf(_Conf(), {}, "proj", "client", "host-c")
deadline = time.time() + 100  # a hang guard only: the server writes the port at once
while not os.path.exists(sys.argv[1]):
    if time.time() > deadline:
        sys.exit("the server never listened")
    time.sleep(0.01)
with open(sys.argv[1]) as f:
    port = int(f.read())
profiler.init("secret-key")
facts = {"base_id": profiler.get().get_base_id()}
with profiler.Trace("client-call", info={"port": port}):
    facts["call_id"] = profiler.get().get_id()
    headers = web.get_trace_id_headers()
    facts["headers"] = sorted(headers)
    req = Request("http://127.0.0.1:%d/items?x=1" % port, headers=headers)
    facts["body"] = urlopen(req, timeout=60).read().decode()
print(json.dumps(facts))
