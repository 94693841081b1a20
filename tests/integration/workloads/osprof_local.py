"""Workload of test_spans_osprofiler.py: one process using OSProfiler with the
connection string pyprof:// (the interpreter's python3-osprofiler: Debian 12's 3.x or the
sid root's 4.x; the driver registered by the installed .pth hook, not by this program).
Initialised as a service is, with initializer.init_from_conf, then profiler.init(hmac), a
Trace block, a @profiler.trace function burning CPU and a pyprof.span inside it.  Prints
one JSON object: the ids OSProfiler gave, whether the driver module was imported, and
whether pyprof is active.
"""

import json
import sys

from osprofiler import profiler

import osprof_conf


osprof_conf.init("proj", "svc", "host-a")
facts = {"driver_imported": "pyprof.osprofiler_driver" in sys.modules}
import pyprof  # noqa: E402  (after the driver's registration, which must not need it)

facts["active"] = pyprof.active()
profiler.init("secret-key")
facts["base_id"] = profiler.get().get_base_id()


def burn(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


@profiler.trace("compute", info={"what": "squares", "service": "not-the-driver's"})
def compute(n):
    facts["compute_id"] = profiler.get().get_id()
    with pyprof.span("inside-compute"):
        return burn(n)


with profiler.Trace("outer", info={"k": 1}):
    facts["outer_id"] = profiler.get().get_id()
    compute(300000)
print(json.dumps(facts))
