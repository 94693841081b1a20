"""OSProfiler's trace points as pyprof spans: Debian's python3-osprofiler on Debian's
/usr/bin/python3, the real library, no mocks.

The `pyprof://` driver is registered the way an installed service gets it: the package and
its .pth hook are put in a site directory Python processes at start-up (here the user
site of a PYTHONUSERBASE of the test's own, laid out as `make install` lays out
dist-packages), and the programs only set their connection string.  The logs are read
with the test-only decoder spanlog.py.
"""

import json
import os
import shutil
import subprocess
import uuid

import pytest

import pyprof_testlib as t
import spanlog

PY = "/usr/bin/python3"
PYPKG = os.path.join(t.REPO, "utils", "python")
LOCAL = t.workload("osprof_local.py")
SERVER = t.workload("osprof_server.py")
CLIENT = t.workload("osprof_client.py")


@pytest.fixture
def userbase(tmp_path):
    """A PYTHONUSERBASE whose site-packages holds the pyprof package and its .pth hook,
    as `make install` installs them."""
    if not os.access(PY, os.X_OK):
        pytest.fail("%s is missing (every test machine has Debian's python3)" % PY)
    res = subprocess.run([PY, "-c", "import osprofiler, webob"], stderr=subprocess.PIPE)
    assert res.returncode == 0, ("Debian's python3-osprofiler is needed (make deps): %s"
                                 % res.stderr.decode())
    base = str(tmp_path / "userbase")
    site = subprocess.run([PY, "-c", "import site; print(site.getusersitepackages())"],
                          env=dict(t.base_env(), PYTHONUSERBASE=base),
                          stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    assert site.startswith(base), site
    os.makedirs(site)
    shutil.copytree(os.path.join(PYPKG, "pyprof"), os.path.join(site, "pyprof"))
    shutil.copy(os.path.join(PYPKG, "pyprof-osprofiler.pth"), site)
    return base


def check_uuid4(s):
    assert uuid.UUID(s).version == 4 and str(uuid.UUID(s)) == s, s


def test_driver_records_trace_points(userbase, tmp_path):
    out = str(tmp_path / "logs")
    run = t.run([PY, LOCAL], out, env={"PYTHONUSERBASE": userbase, "PYPROF_PERIOD": "1ms"})
    assert run.rc == 0, run.describe()
    facts = json.loads(run.stdout.decode())
    assert facts["driver_imported"] is True and facts["active"] is True, facts
    logs = spanlog.logs_in(out)
    assert len(logs) == 1, run.describe()
    log = logs[0]
    where = "%s\n%s" % (run.describe(), log.summary())
    assert [s["name"] for s in log.starts] == ["outer", "compute", "inside-compute"], where
    outer, compute, inside = log.starts
    base = facts["base_id"]
    # OSProfiler's own ids, passed through.
    assert outer["trace_id"] == facts["outer_id"], where
    assert outer["parent_id"] == base and outer["base_id"] == base, where
    assert compute["trace_id"] == facts["compute_id"], where
    assert compute["parent_id"] == facts["outer_id"] and compute["base_id"] == base, where
    # The pyprof span inside the traced function nests under it, with its ids.
    assert inside["parent_id"] == facts["compute_id"] and inside["base_id"] == base, where
    check_uuid4(inside["trace_id"])
    assert compute["parent_span"] == outer["span_id"], where
    assert inside["parent_span"] == compute["span_id"], where
    # The notification's info, and the driver's project and service.
    assert outer["info"]["k"] == 1 and outer["info"]["project"] == "proj", where
    assert outer["info"]["service"] == "svc" and "host" in outer["info"], where
    assert compute["info"]["what"] == "squares", where
    assert compute["info"]["function"]["name"] == "__main__.compute", where
    stops = [log.stop_of(s["span_id"]) for s in (inside, compute, outer)]
    assert all(stops), where
    assert [s["order"] for s in stops] == sorted(s["order"] for s in stops), where
    assert all(s["tid"] == run.pid for s in log.starts + log.stops), where
    # The burn is inside the traced function's span.
    burning = [smp for smp in log.samples if "burn" in log.functions_of(smp)]
    assert burning, where
    stop = log.stop_of(compute["span_id"])
    assert all(compute["t_us"] <= smp[0] <= stop["t_us"] for smp in burning), where
    assert log.spans_lost == 0, where


def test_hook_idle_without_library(userbase, tmp_path):
    """Without the library the .pth hook does nothing: no pyprof module imported, and
    pyprof:// is a driver OSProfiler does not know (its notifier falls back to a no-op)."""
    prog = ("import sys; import osprofiler.notifier as n; "
            "print(sorted(m for m in sys.modules if m.startswith('pyprof'))); "
            "print(n.create('pyprof://') is n._noop_notifier)")
    run = t.run([PY, "-c", prog], None, profile=False, env={"PYTHONUSERBASE": userbase})
    assert run.rc == 0, run.describe()
    assert run.stdout.decode().split("\n")[:2] == ["[]", "True"], run.describe()


def test_wsgi_trace_across_processes(userbase, tmp_path):
    """A client process calls a WSGI app under osprofiler.web.WsgiMiddleware in another
    process, with the trace headers: both logs hold spans of the same base_id, and the
    server's root span's parent is the client's span."""
    out = str(tmp_path / "logs")
    port = str(tmp_path / "port")
    env = {"PYTHONUSERBASE": userbase, "PYPROF_PERIOD": "1ms",
           "PYPROF_RUN_ID": "5ba45ba45ba45ba4"}
    server = t.start([PY, SERVER, port], out, env=env)
    client = t.start([PY, CLIENT, port], out, env=env)
    c = client.wait()
    s = server.wait()
    assert c.rc == 0 and s.rc == 0, "%s\n%s" % (c.describe(), s.describe())
    cf = json.loads(c.stdout.decode())
    sf = json.loads(s.stdout.decode())
    assert cf["headers"] == ["X-Trace-HMAC", "X-Trace-Info"], cf
    logs = dict((log.pid, log) for log in spanlog.logs_in(out))
    assert sorted(logs) == sorted([c.pid, s.pid]), "%s\n%s" % (c.describe(), s.describe())
    cl, sl = logs[c.pid], logs[s.pid]
    where = "%s\n%s" % (cl.summary(), sl.summary())
    assert cl.header["run_id"] == sl.header["run_id"] == b"5ba45ba45ba45ba4", where
    call = cl.one("client-call")
    assert call["trace_id"] == cf["call_id"] and call["base_id"] == cf["base_id"], where
    assert call["info"]["port"] > 0 and call["info"]["service"] == "client", where
    wsgi = sl.one("wsgi")
    db = sl.one("db-query")
    # One trace: the server's root span hangs under the client's span.
    assert wsgi["base_id"] == db["base_id"] == call["base_id"], where
    assert wsgi["parent_id"] == call["trace_id"] == sf["wsgi_parent_id"], where
    assert wsgi["trace_id"] == sf["wsgi_id"] and wsgi["parent_span"] == 0, where
    assert db["parent_id"] == wsgi["trace_id"] and db["parent_span"] == wsgi["span_id"], where
    assert db["trace_id"] == sf["query_id"], where
    assert wsgi["info"]["request"]["path"] == "/items", where
    assert wsgi["info"]["request"]["query"] == "x=1", where
    assert db["info"]["table"] == "users", where
    for log in (cl, sl):
        for st in log.starts:
            assert log.stop_of(st["span_id"]) is not None, where
        assert log.spans_lost == 0, where
    # The server's CPU in the query is inside its span.
    stop = sl.stop_of(db["span_id"])
    burning = [smp for smp in sl.samples if "burn" in sl.functions_of(smp)]
    assert burning, where
    assert all(db["t_us"] <= smp[0] <= stop["t_us"] for smp in burning), where
