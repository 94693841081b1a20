"""OSProfiler's trace points as pyprof spans, the real library, no mocks, on two
interpreters with their own OSProfiler: Debian 12's /usr/bin/python3 (py3.11-debian)
with Debian's python3-osprofiler (OSProfiler 3.x), and the sid root's python3.14 (py3.14,
run chrooted in the root by its wrapper) with the root's python3-osprofiler (OSProfiler
4.x).  OSProfiler's CLI that reads the tool's trace back is the same interpreter's.

The `pyprof://` driver is registered the way an installed service gets it: the package and
its .pth hook are put in a site directory Python processes at start-up (here the user
site of a PYTHONUSERBASE of the test's own, where `make install-python` puts them as
`make install` puts them in dist-packages; the directory is under /tmp, which the sid
root sees at the same path), and the programs only set their connection string.  The
logs are read with the test-only decoder spanlog.py.
"""

import json
import os
import socket
import subprocess
import uuid

import pytest

import pyprof_testlib as t
import spanlog
from osprofiler_cli import check_osprofiler, tree_of

# Debian 12's python3 and the sid root's python3.14 (sid's python3, the one its
# python3-osprofiler is for).
INTERPS = t.by_id("py3.11-debian", "py3.14")
LOCAL = t.workload("osprof_local.py")
SERVER = t.workload("osprof_server.py")
CLIENT = t.workload("osprof_client.py")


@pytest.fixture(scope="module", params=t.params(INTERPS))
def interp(request):
    return request.param.require()


def require_osprofiler(interp):
    """The version of `interp`'s OSProfiler ("3.4.3", "4.3.0"); fails the test when it
    has none (or no WebOb, which osprofiler.web needs)."""
    prog = ("import osprofiler, webob, importlib.metadata as m; "
            "print(m.version('osprofiler'))")
    res = subprocess.run([interp.path, "-c", prog], env=t.base_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    how = ("the sid root's python3-osprofiler (make sid-root)" if interp.sysroot
           else "Debian's python3-osprofiler (make deps)")
    assert res.returncode == 0, "%s is needed for %s: %s" % (how, interp.path, res.stderr)
    return res.stdout.strip()


def make_userbase(d, interp):
    """A PYTHONUSERBASE under `d` whose user site-packages (for `interp`:
    lib/pythonX.Y/site-packages) holds the pyprof package and its .pth hook, installed
    there by the Makefile's own rule (`make install-python`, which `make install` runs
    with Debian python3's dist-packages).  Checks that `interp` (inside the sid root for
    py3.14) puts that directory on sys.path and imports pyprof from it."""
    require_osprofiler(interp)
    base = os.path.join(str(d), "userbase")
    env = dict(t.base_env(), PYTHONUSERBASE=base)
    prog = "import site; print(site.getusersitepackages())"
    res = subprocess.run([interp.path, "-c", prog], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True)
    assert res.returncode == 0, res.stderr
    site = res.stdout.strip()
    assert site == os.path.join(base, "lib", "python%d.%d" % interp.minor,
                                "site-packages"), site
    res = subprocess.run(["make", "-s", "-C", t.REPO, "install-python", "PY_SITE=" + site],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True)
    assert res.returncode == 0, res.stdout
    assert os.path.isfile(os.path.join(site, "pyprof-osprofiler.pth")), os.listdir(site)
    # The interpreter finds it there (the sid root's sees /tmp at the same path).
    prog = ("import sys, site, pyprof; print(site.ENABLE_USER_SITE); "
            "print(site.getusersitepackages() in sys.path); print(pyprof.__file__)")
    res = subprocess.run([interp.path, "-c", prog], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:3] == ["True", "True", os.path.join(
        site, "pyprof", "__init__.py")], res.stdout + res.stderr
    return base


@pytest.fixture
def userbase(tmp_path, interp):
    return make_userbase(tmp_path, interp)


def check_uuid4(s):
    assert uuid.UUID(s).version == 4 and str(uuid.UUID(s)) == s, s


def test_driver_records_trace_points(interp, userbase, tmp_path):
    out = str(tmp_path / "logs")
    run = t.run([interp.path, LOCAL], out,
                env={"PYTHONUSERBASE": userbase, "PYPROF_PERIOD": "1ms"})
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
    # The driver's service over a trace point's own key of that name, as OSProfiler's
    # report has it.
    assert compute["info"]["service"] == "svc" and compute["info"]["project"] == "proj"
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


def test_hook_idle_without_library(interp, userbase, tmp_path):
    """Without the library the .pth hook does nothing: no pyprof module imported, and
    pyprof:// is a driver OSProfiler does not know (its notifier falls back to a no-op)."""
    prog = ("import sys; import osprofiler.notifier as n; "
            "print(sorted(m for m in sys.modules if m.startswith('pyprof'))); "
            "print(n.create('pyprof://') is n._noop_notifier)")
    run = t.run([interp.path, "-c", prog], None, profile=False,
                env={"PYTHONUSERBASE": userbase})
    assert run.rc == 0, run.describe()
    assert run.stdout.decode().split("\n")[:2] == ["[]", "True"], run.describe()


class WsgiRun(object):
    """The two processes of the WSGI call on `interp`, ended: their runs, the JSON each
    printed, the log directory."""

    def __init__(self, d, interp):
        self.interp = interp
        base = make_userbase(d, interp)
        self.out = os.path.join(str(d), "logs")
        env = {"PYTHONUSERBASE": base, "PYPROF_PERIOD": "1ms",
               "PYPROF_RUN_ID": "5ba45ba45ba45ba4"}
        server = t.start([interp.path, SERVER], self.out, env=env)
        port = server.proc.stdout.readline().decode().strip()  # the server listens
        if not port.isdigit():
            s = server.wait()
            pytest.fail("the server gave no port\n" + s.describe())
        client = t.start([interp.path, CLIENT, port], self.out, env=env)
        self.c = client.wait()
        self.s = server.wait()
        where = "%s\n%s" % (self.c.describe(), self.s.describe())
        assert self.c.rc == 0 and self.s.rc == 0, where
        self.cf = json.loads(self.c.stdout.decode())
        self.sf = json.loads(self.s.stdout.decode())


@pytest.fixture(scope="module")
def wsgi(tmp_path_factory, interp):
    return WsgiRun(tmp_path_factory.mktemp("wsgi-" + interp.id), interp)


def test_wsgi_trace_across_processes(wsgi):
    """A client process calls a WSGI app under osprofiler.web.WsgiMiddleware in another
    process, with the trace headers: both logs hold spans of the same base_id, and the
    server's root span's parent is the client's span."""
    c, s, cf, sf, out = wsgi.c, wsgi.s, wsgi.cf, wsgi.sf, wsgi.out
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


def test_wsgi_trace_in_the_tool(wsgi, tmp_path):
    """The same two logs through the tool and back through OSProfiler's CLI.

    `trace list` finds one trace of both processes; `trace show --json` draws it as one
    tree (client-call > wsgi > db-query) that OSProfiler's own `trace show` (the
    interpreter's OSProfiler) re-serializes unchanged (--json) and draws (--dot).  The
    span info carries what OSProfiler's report shows: the driver's project and service,
    OSProfiler's host, the request.

    CPU.  Each program burnt a known amount of its thread's CPU time inside a span, in a
    function of its own (server_burn in wsgi, burn in db-query, client_burn in
    client-call), and measured on its thread's CPU clock both that and all the CPU of
    the code it runs inside the span (for db-query, a traced function, its caller
    measures the whole call: the span's own start and stop run inside the span).
    Against those: the span's CPU in the JSON
    (info.pyprof.cpu_ms) within 5 % of the CPU the program measured inside it, and the
    burning function's share of the span's CPU (its self_ms over cpu_ms) within 5
    points of the share the program measured (burn over all).  The scale is the span's
    CPU, not its duration: a sample stands for a period of the thread's own CPU clock,
    so what sampling gets wrong is a sample or two of that CPU however long the thread
    waited for a core (on this shared machine a span of 300 ms of CPU can last 650 ms),
    and the figures come from the programs' own clocks, never from wall time.  Samples
    the library dropped while Python ran (counted in the footer: a handler preempted on
    a busy machine makes it skip up to 9 signals, `throttled`) are CPU no span can show:
    each widens the bounds by one period.  The burning function is the span's top
    function."""
    out, c, s, cf, sf = wsgi.out, wsgi.c, wsgi.s, wsgi.cf, wsgi.sf
    ls = str(tmp_path / "list.json")
    res = t.tool_bytes("trace", "list", "--json", "--out", ls, out)
    assert res.returncode == 0 and not res.stdout, res.stderr
    with open(ls) as f:
        (tr,) = json.load(f)["traces"]
    assert tr["trace_id"] == cf["base_id"] == sf["base_id"], tr
    assert sorted(tr["pids"]) == sorted([c.pid, s.pid]), tr
    assert (tr["spans"], tr["unfinished"], tr["root"]) == (3, 0, "client-call"), tr
    ours = str(tmp_path / "trace.json")
    res = t.tool_bytes("trace", "show", cf["base_id"], "--json", "--out", ours, out)
    assert res.returncode == 0 and not res.stdout, res.stderr
    show = check_osprofiler(ours, tmp_path, wsgi.interp)
    assert tree_of(show) == ("total", [("client-call", [("wsgi", [("db-query", [])])])])
    call = show["children"][0]
    srv = call["children"][0]
    db = srv["children"][0]
    where = json.dumps(show, indent=1)[:6000]
    assert (call["trace_id"], call["parent_id"]) == (cf["call_id"], cf["base_id"]), where
    assert (srv["trace_id"], srv["parent_id"]) == (sf["wsgi_id"], cf["call_id"]), where
    assert (db["trace_id"], db["parent_id"]) == (sf["query_id"], sf["wsgi_id"]), where
    host = socket.gethostname()
    for node, pid, service in ((call, c.pid, "client"), (srv, s.pid, "api"),
                               (db, s.pid, "api")):
        info = node["info"]
        assert info["pyprof"]["pid"] == pid and info["pyprof"]["unfinished"] is False
        assert (info["service"], info["project"], info["host"]) == (service, "proj", host)
        name = info["name"]
        start = info["meta.raw_payload.%s-start" % name]
        assert (start["service"], start["project"], start["host"]) == (service, "proj", host)
        assert start["info"]["host"] == host and start["info"]["service"] == service
        assert info["exception"] == "None"
    assert srv["info"]["meta.raw_payload.wsgi-start"]["info"]["request"]["path"] == "/items"
    assert db["info"]["meta.raw_payload.db-query-start"]["info"]["table"] == "users"
    # The CPU each process's dropped samples stood for (ms), those of the interpreter's
    # start and end (not_ready) and of threads not running Python aside.
    lost_ms = {}
    for pr in t.report(out)["processes"]:
        n = sum(v for k, v in pr["dropped"].items() if k not in ("not_ready", "no_python"))
        lost_ms[pr["pid"]] = n * pr["period_ns"] / 1e6
    # CPU: (span, function burning, its measured CPU, the measured CPU of the program's
    # code inside the span).
    for node, func, burnt, inside in ((call, "client_burn", cf["client_burn_ms"],
                                       cf["call_cpu_ms"]),
                                      (srv, "server_burn", sf["server_burn_ms"],
                                       sf["app_cpu_ms"]),
                                      (db, "burn", sf["burn_ms"], sf["query_cpu_ms"])):
        q = node["info"]["pyprof"]
        top = q["top_functions"]
        lost = lost_ms[q["pid"]]
        msg = "%s: %.1f ms of CPU inside, %.1f ms of it in %s; %.0f ms dropped\n%s" % (
            node["info"]["name"], inside, burnt, func, lost, json.dumps(q, indent=1))
        assert burnt > 20 and inside >= burnt, msg
        assert top and top[0]["function"] == func, msg
        assert abs(q["cpu_ms"] - inside) <= 0.05 * inside + lost, msg
        assert abs(top[0]["self_ms"] / q["cpu_ms"] - burnt / inside) <= 0.05 + lost / inside, msg
        assert q["samples"] >= top[0]["samples"], msg
