"""The control socket from the outside: `pyprof ctl`, `pyprof dump` and `pyprof top`
against real interpreters running with the library preloaded (docs/CONTROL.md).

Every request changes what the next `status` says and what the logs hold, so each one
is checked there, not only by its reply; a client that misbehaves (garbage, silence, a
line far too long, another user) gets an error and the daemon goes on serving the
others; the daemon's own output and exit status are those of a run without the
library.  `pyprof dump` must show each thread of a known workload at its function and
line (the workload's MARK comments), `pyprof top` the hottest function of a known
workload at the top of its table, driven in a real terminal (tmux).
"""

import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

import pyprof_testlib as t

sys.path.insert(0, t.FIXTURES)
import make_fixtures as mf  # noqa: E402  (the log encoders, shared with the fixtures)

CTL_TARGET = t.workload("ctl_target.py")
DUMP_TARGET = t.workload("dump_target.py")
TOP_TARGET = t.workload("top_target.py")
BUSY_LOOP_SRC = os.path.join(t.REPO, "tests", "helpers", "busy_loop.c")

VERSIONS = [i for i in t.by_id("py2.7", "py3.8", "py3.11", "py3.13", *t.SID_IDS)
            if os.access(i.path, os.X_OK)]
ONE = [i for i in t.by_id("py3.11")]

NO_SOCKET = ("pyprof ctl: no pyprof control socket for pid %d (not profiled, "
             "PYPROF_CONTROL=0, or not running)")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


# ---- a daemon under test ------------------------------------------------------------------


class Daemon(object):
    """A workload started with (or without) the library, once it printed "ready"."""

    def __init__(self, interp, script, outdir, args=(), env=None, profile=True, prefix=()):
        """`prefix`: a command that runs the interpreter in its place (exec'ing it, so
        that the pid stays the interpreter's)."""
        interp.require()
        full = t.base_env()
        if profile:
            os.makedirs(outdir, exist_ok=True)
            full["PYPROF_OUTPUT"] = outdir
            full = t.preload_env(full)
        full.update(env or {})
        self.argv = list(prefix) + [interp.path, script] + [str(a) for a in args]
        self.outdir = outdir
        self.proc = subprocess.Popen(self.argv, env=full, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.pid = self.proc.pid
        self.early = b""
        deadline = time.time() + 60
        fd = self.proc.stdout.fileno()
        while b"ready\n" not in self.early:
            left = deadline - time.time()
            r, _, _ = select.select([fd], [], [], max(left, 0))
            chunk = os.read(fd, 4096) if r else b""
            if not chunk:
                self.proc.kill()
                out, err = self.proc.communicate()
                pytest.fail("%s did not print ready (exit %s)\nstdout: %r\nstderr: %s"
                            % (" ".join(self.argv), self.proc.returncode,
                               self.early + out, err.decode("utf-8", "replace")))
            self.early += chunk

    def finish(self, line=b"stop\n"):
        """Sends `line` and collects the run: (exit status, stdout, stderr)."""
        try:
            out, err = self.proc.communicate(line, timeout=t.TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            pytest.fail("%s hung\nstderr: %s" % (" ".join(self.argv),
                                                 err.decode("utf-8", "replace")))
        return self.proc.returncode, self.early + out, err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()

    def alive(self):
        return self.proc.poll() is None


@pytest.fixture
def daemons():
    started = []
    yield started
    for d in started:
        d.kill()


def ctl(pid, *args, **kw):
    """`pyprof ctl PID ARGS...`; as user nobody with as_nobody=True."""
    if kw.pop("as_nobody", False):
        return subprocess.run(NOBODY + [t.TOOL, "ctl", str(pid)] + [str(a) for a in args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60)
    return t.tool("ctl", pid, *args, timeout=60)


def ok(res, what):
    assert res.returncode == 0, "%s: exit %s\nstdout: %s\nstderr: %s" % (
        what, res.returncode, res.stdout, res.stderr)
    assert res.stderr == "", "%s wrote to stderr: %s" % (what, res.stderr)
    return res.stdout


def refused(res, what, line):
    """The request failed with exactly one line on stderr, containing `line`."""
    assert res.returncode == 1, "%s: exit %s, expected 1\nstdout: %s\nstderr: %s" % (
        what, res.returncode, res.stdout, res.stderr)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and line in lines[0], (
        "%s: expected one line with %r on stderr, got %r" % (what, line, res.stderr))
    assert res.stdout == "", res.stdout


def status(pid):
    out = ok(ctl(pid, "status"), "status")
    lines = out.splitlines()
    assert lines[0] == "ok", out
    kv = {}
    for l in lines[1:]:
        k, sep, v = l.partition(":")
        assert sep, "status line without a key: %r\n%s" % (l, out)
        kv[k] = v.strip()
    for k in ("state", "pid", "period_ns", "clock", "native", "log", "seq", "window",
              "samples", "dropped", "lib_cpu_ns", "rotate", "keep", "snapshots"):
        assert k in kv, "status has no %r\n%s" % (k, out)
    return kv


def reply_path(out, prefix):
    """The path at the end of a one-line reply "PREFIX <path>"."""
    line = out.rstrip("\n")
    assert "\n" not in line and line.startswith(prefix + " "), (out, prefix)
    return line[len(prefix) + 1:]


def log_report(path):
    res = t.tool("report", "--json", path)
    assert res.returncode == 0, "report %s: %s" % (path, res.stderr)
    return json.loads(res.stdout)


def wait_for(what, fn, timeout=60.0, step=0.05):
    """Calls fn() until it returns something true; fails after `timeout` seconds (a
    generous bound: reaching it means something hung)."""
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.time() > deadline:
            pytest.fail("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(step)


def raw_connect(pid):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(b"\0pyprof.%d" % pid)
    return s


def recv_all(s):
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


# ---- ctl ----------------------------------------------------------------------------------


@pytest.mark.parametrize("interp", t.params(VERSIONS))
def test_requests(interp, tmp_path, daemons):
    outdir = str(tmp_path / "logs")
    d = Daemon(interp, CTL_TARGET, outdir)
    daemons.append(d)
    base = Daemon(interp, CTL_TARGET, None, profile=False)
    daemons.append(base)
    pid = d.pid

    # The log is created once the interpreter runs; until then `log` is empty.
    st = wait_for("the first log", lambda: (lambda s: s["log"] and s)(status(pid)))
    assert st["state"] == "running" and int(st["pid"]) == pid, st
    assert st["clock"] == "cpu" and int(st["period_ns"]) == 10000000, st
    first = st["log"]
    assert os.path.dirname(first) == outdir and os.path.isfile(first), st
    assert st["seq"] == "0" and st["rotate"] == "off" and st["keep"] == "all", st

    # flush: everything sampled so far is in the file, readable now.
    st = wait_for("samples", lambda: (lambda s: int(s["samples"]) > 0 and s)(status(pid)))
    sampled = int(st["samples"])
    out = ok(ctl(pid, "flush"), "flush")
    assert reply_path(out, "ok flushed") == first, out
    rep = log_report(first)
    assert rep["processes"][0]["pid"] == pid
    assert rep["samples"] >= sampled, (
        "status said %d samples before the flush, the flushed log holds %d"
        % (sampled, rep["samples"]))

    # rotate: the next file of the series; the old one complete, ended by the rotation.
    out = ok(ctl(pid, "rotate"), "rotate")
    second = reply_path(out, "ok rotated")
    assert second != first and os.path.isfile(second), out
    st = status(pid)
    assert st["log"] == second and st["seq"] == "1", st
    info = t.tool("info", first)
    assert info.returncode == 0 and "rotated" in info.stdout, info.stdout + info.stderr

    # period and clock: a new window with the new setting.
    out = ok(ctl(pid, "period", "1ms"), "period")
    m = re.match(r"ok period 1000000 (/.*)\n$", out)
    assert m, out
    st = status(pid)
    assert st["period_ns"] == "1000000" and st["log"] == m.group(1), st
    refused(ctl(pid, "period", "bogus"), "period bogus", "pyprof ctl: error: bad period")
    assert status(pid)["period_ns"] == "1000000"
    out = ok(ctl(pid, "clock", "wall"), "clock")
    m = re.match(r"ok clock wall (/.*)\n$", out)
    assert m, out
    st = status(pid)
    assert st["clock"] == "wall" and st["log"] == m.group(1), st

    # pause: no log, nothing sampled; what needs a log is refused.
    out = ok(ctl(pid, "pause"), "pause")
    assert out == "ok paused\n", out
    st = status(pid)
    assert st["state"] == "paused" and st["log"] == "", st
    refused(ctl(pid, "flush"), "flush while paused", "pyprof ctl: error: paused")
    refused(ctl(pid, "rotate"), "rotate while paused", "pyprof ctl: error: paused")
    refused(t.tool("dump", pid, timeout=60), "dump while paused",
            "pyprof dump: error: paused")
    out = ok(ctl(pid, "resume"), "resume")
    resumed = reply_path(out, "ok running")
    st = status(pid)
    assert st["state"] == "running" and st["log"] == resumed, st
    refused(ctl(pid, "frobnicate"), "unknown request", "pyprof ctl: error: unknown request")

    rc, stdout, stderr = d.finish()
    brc, bstdout, _ = base.finish()
    assert (rc, stdout) == (brc, bstdout) == (3, b"ready\ngot 'stop'\n"), (
        "with the library: exit %s, %r (stderr %s); without: exit %s, %r"
        % (rc, stdout, stderr, brc, bstdout))
    # Every file the requests made is a log of this process that the tool reads.
    logs = sorted(os.listdir(outdir))
    assert len(logs) >= 5, logs
    for name in logs:
        rep = log_report(os.path.join(outdir, name))
        assert [p["pid"] for p in rep["processes"]] == [pid], (name, rep["processes"])


@pytest.mark.parametrize("interp", t.params(ONE))
def test_other_user_refused(interp, tmp_path, daemons):
    d = Daemon(interp, CTL_TARGET, str(tmp_path / "logs"))
    daemons.append(d)
    res = ctl(d.pid, "status", as_nobody=True)
    refused(res, "status as nobody", "pyprof ctl: error: permission denied")
    res = ctl(d.pid, "pause", as_nobody=True)
    refused(res, "pause as nobody", "pyprof ctl: error: permission denied")
    assert status(d.pid)["state"] == "running"
    rc, out, err = d.finish()
    assert (rc, out) == (3, b"ready\ngot 'stop'\n"), err


@pytest.mark.parametrize("interp", t.params(ONE))
def test_bad_clients(interp, tmp_path, daemons):
    d = Daemon(interp, CTL_TARGET, str(tmp_path / "logs"))
    daemons.append(d)
    base = Daemon(interp, CTL_TARGET, None, profile=False)
    daemons.append(base)

    s = raw_connect(d.pid)
    s.sendall(b"\xff\xfe\x00garbage\x01\n")
    reply = recv_all(s)
    s.close()
    assert reply.startswith(b"error: ") and reply.count(b"\n") == 1, reply

    # A client that sends nothing holds one slot; the others are served meanwhile.
    idle = [raw_connect(d.pid) for _ in range(3)]
    st = status(d.pid)
    assert st["state"] == "running", st
    for s in idle:
        reply = recv_all(s)
        s.close()
        assert reply.startswith(b"error: no request within 1 s") \
            and reply.count(b"\n") == 1, reply

    # A client that connects and leaves at once.
    for _ in range(5):
        raw_connect(d.pid).close()

    # A line of 100 KB: refused without reading it all.
    s = raw_connect(d.pid)
    try:
        s.sendall(b"status " + b"x" * 100000 + b"\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    reply = recv_all(s)
    s.close()
    assert reply.startswith(b"error: request too long") and reply.count(b"\n") == 1, \
        reply[:200]

    st = status(d.pid)
    assert st["state"] == "running", st
    rc, out, err = d.finish()
    brc, bout, _ = base.finish()
    assert (rc, out) == (brc, bout) == (3, b"ready\ngot 'stop'\n"), (rc, out, err, brc, bout)


def test_name_held_by_another_process():
    """Any process can bind an abstract name: the client checks who listens."""
    sleeper = subprocess.Popen(["sleep", "60"])
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        squatter.bind(b"\0pyprof.%d" % sleeper.pid)
        squatter.listen(4)
        res = ctl(sleeper.pid, "status")
        refused(res, "status of a squatted name", "is held by process %d" % os.getpid())
        res = t.tool("dump", sleeper.pid, timeout=60)
        refused(res, "dump of a squatted name", "is held by process %d" % os.getpid())
    finally:
        squatter.close()
        sleeper.kill()
        sleeper.wait()


class _System(object):
    id = "system"
    path = "/usr/bin/python3"

    def require(self):
        return self


@pytest.mark.parametrize("mode, line, max_s", [
    ("silent", "no complete reply from pid %d within 5 s", 30),
    ("flood", "the reply of pid %d is longer than 65536 bytes", 30),
])
def test_client_bounds(mode, line, max_s, daemons):
    """A server that never answers, or answers too much, costs a client one line and
    at most its deadline."""
    d = Daemon(_System(), t.workload("fake_ctl_server.py"), None, args=[mode],
               profile=False)
    daemons.append(d)
    for cmd in (["ctl", d.pid, "status"], ["dump", d.pid], ["top", "--once", d.pid]):
        start = time.time()
        res = t.tool(*cmd, timeout=60)
        took = time.time() - start
        refused(res, " ".join(map(str, cmd)), "pyprof %s: %s" % (cmd[0], line % d.pid))
        assert took < max_s, "%s took %.1f s" % (cmd, took)


def test_client_sends_one_line(daemons):
    d = Daemon(_System(), t.workload("fake_ctl_server.py"), None, args=["ok"],
               profile=False)
    daemons.append(d)
    out = ok(ctl(d.pid, "period", "5ms"), "ctl to the stand-in")
    assert out == "ok fine\nrequest: period 5ms\n", out
    # dump wants "ok snapshot <id> <path>": anything else is one line, exit 1.
    refused(t.tool("dump", d.pid, timeout=60), "dump with a bad reply",
            "pyprof dump: unexpected reply from pid %d: ok fine" % d.pid)


def test_no_socket(tmp_path, daemons):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        refused(ctl(sleeper.pid, "status"), "unprofiled", NO_SOCKET % sleeper.pid)
        res = t.tool("dump", sleeper.pid, timeout=60)
        refused(res, "dump unprofiled", (NO_SOCKET % sleeper.pid).replace("ctl", "dump"))
        res = t.tool("top", "--once", sleeper.pid, timeout=60)
        refused(res, "top unprofiled", (NO_SOCKET % sleeper.pid).replace("ctl", "top"))
    finally:
        sleeper.kill()
        sleeper.wait()
    refused(ctl(sleeper.pid, "status"), "gone", NO_SOCKET % sleeper.pid)
    d = Daemon(ONE[0], CTL_TARGET, str(tmp_path / "logs"), env={"PYPROF_CONTROL": "0"})
    daemons.append(d)
    refused(ctl(d.pid, "status"), "PYPROF_CONTROL=0", NO_SOCKET % d.pid)
    empty = tmp_path / "empty"
    empty.mkdir()
    res = t.tool("top", "--once", str(empty), timeout=60)
    refused(res, "top of an empty directory", "no log there")


def test_other_network_namespace(tmp_path, daemons):
    """A process in another network namespace (a unit's PrivateNetwork=, a container)
    holds its abstract control socket there: ctl, dump and top say so and how to reach it
    in one line, and the command run there works."""
    d = Daemon(ONE[0], CTL_TARGET, str(tmp_path / "logs"), prefix=["unshare", "--net"])
    daemons.append(d)
    ns = "/proc/%d/ns/net" % d.pid
    assert os.readlink(ns) != os.readlink("/proc/self/ns/net")
    said = ("no pyprof control socket for pid %d here: it runs in another network namespace "
            "(%s: PrivateNetwork=, a container), which holds its socket; run this there: "
            "nsenter --net=%s pyprof ..." % (d.pid, os.readlink(ns), ns))
    refused(ctl(d.pid, "status"), "status", "pyprof ctl: " + said)
    refused(t.tool("dump", d.pid, timeout=60), "dump", "pyprof dump: " + said)
    refused(t.tool("top", "--once", d.pid, timeout=60), "top", "pyprof top: " + said)
    there = subprocess.run(["nsenter", "--net=" + ns, t.TOOL, "ctl", str(d.pid), "status"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
    assert ok(there, "status in its namespace").startswith("ok"), there.stdout


@pytest.mark.parametrize("args", [
    ["ctl"], ["ctl", "123"], ["ctl", "abc", "status"], ["ctl", "0", "status"],
    ["ctl", "1", "period", "1ms", "extra"], ["dump"], ["dump", "x"], ["dump", "1", "2"],
    ["dump", "--bogus", "1"], ["top"], ["top", "--interval", "0", "1"],
    ["top", "--interval", "x", "1"], ["top", "--bogus", "1"], ["top", "1", "2"],
])
def test_usage(args):
    res = t.tool(*args)
    assert res.returncode == 2, (args, res.returncode, res.stderr)
    assert res.stderr.startswith("pyprof %s: " % args[0]), res.stderr
    assert "Try 'pyprof help %s'." % args[0] in res.stderr, res.stderr


def test_help_lists_commands():
    out = ok(t.tool("help"), "help")
    for cmd in ("ctl", "dump", "top"):
        assert re.search(r"^  %s +\S" % cmd, out, re.M), out
        assert ok(t.tool("help", cmd), "help " + cmd).startswith("usage: pyprof " + cmd)


# ---- dump ---------------------------------------------------------------------------------


def busy_loop_lib():
    """tests/helpers/busy_loop.c built as a shared object (cached next to the library)."""
    outdir = os.path.join(os.path.dirname(t.LIB), "embed")
    out = os.path.join(outdir, "busy_loop.so")
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(BUSY_LOOP_SRC):
        return out
    os.makedirs(outdir, exist_ok=True)
    tmp = out + ".tmp.%d" % os.getpid()
    res = subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", tmp, BUSY_LOOP_SRC],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True)
    assert res.returncode == 0, res.stdout
    os.rename(tmp, out)
    return out


def mark(name):
    return t.def_line(DUMP_TARGET, "# MARK: %s" % name)


def dump_problems(dump, pid, gil=False):
    """What is wrong with a `pyprof dump --json` of dump_target.py (empty: nothing).
    With `gil`, also that the C spinner, and no other thread, holds the GIL."""
    bad = []
    if dump["pid"] != pid:
        bad.append("pid %s" % dump["pid"])
    threads = {th["name"]: th for th in dump["threads"]}
    want = {
        "deadlock-a": ("take_a_then_b", [mark("deadlock-a")], "sleeping", False),
        "deadlock-b": ("take_b_then_a", [mark("deadlock-b")], "sleeping", False),
        "selector": ("wait_in_select", [mark("select")], "sleeping", False),
        "c-spinner": ("spin_in_c", [mark("spin")], "running", True),
    }
    for name, (func, lines, state, holds) in sorted(want.items()):
        th = threads.get(name)
        if th is None:
            bad.append("no thread %r" % name)
            continue
        top = th["frames"][0] if th["frames"] else {}
        if top.get("name") != func or not t.same_file(top.get("file"), DUMP_TARGET) \
                or top.get("line") not in lines:
            bad.append("%s: innermost frame %r, expected %s at %s:%s"
                       % (name, top, func, DUMP_TARGET, lines))
        if th["state"] != state:
            bad.append("%s: state %r, expected %r" % (name, th["state"], state))
        if gil and th["gil"] != holds:
            bad.append("%s: gil %r, expected %r" % (name, th["gil"], holds))
        if th["changed"]:
            bad.append("%s: stack changed while read" % name)
        if not isinstance(th["tid"], int) or th["tid"] <= 0:
            bad.append("%s: tid %r" % (name, th["tid"]))
    main = threads.get("MainThread")
    if main is None:
        bad.append("no MainThread")
    else:
        own = [f for f in main["frames"] if f.get("name") == "main"
               and t.same_file(f.get("file"), DUMP_TARGET)]
        if len(own) != 1 or own[0]["line"] not in (mark("main-start"), mark("main-join")):
            bad.append("MainThread: main() not at the spinner's start or join: %r"
                       % main["frames"])
    tids = [th["tid"] for th in dump["threads"]]
    if len(set(tids)) != len(tids) or pid not in tids:
        bad.append("thread ids %r (the main thread's is the pid %d)" % (tids, pid))
    return bad


def dump_in_place(d, gil=False):
    """`pyprof dump --json` of dump_target.py once every thread is in place: "ready"
    comes just before the C spinner starts, and every thread must then get where the
    workload puts it (however long a busy machine makes that take; a minute without
    means it never will)."""
    deadline = time.time() + 60.0
    while True:
        res = t.tool("dump", "--json", d.pid, timeout=60)
        assert res.returncode == 0, res.stderr
        assert res.stderr == "", res.stderr
        dump = json.loads(res.stdout)
        bad = dump_problems(dump, d.pid, gil)
        if not bad or time.time() > deadline:
            break
        time.sleep(0.1)
    assert not bad, "\n".join(bad) + "\n" + json.dumps(dump, indent=1)
    return dump


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_dump_gil_holder(interp, tmp_path, daemons):
    """The thread spinning in C with the GIL is the one the dump says holds it, on every
    version (each keeps the holder somewhere else: docs/CPYTHON.md)."""
    d = Daemon(interp, DUMP_TARGET, str(tmp_path / "logs"), args=[busy_loop_lib()])
    daemons.append(d)
    dump_in_place(d, gil=True)


@pytest.mark.parametrize("interp", t.params(VERSIONS))
def test_dump(interp, tmp_path, daemons):
    lib = busy_loop_lib()
    d = Daemon(interp, DUMP_TARGET, str(tmp_path / "logs"), args=[lib])
    daemons.append(d)
    dump = dump_in_place(d)
    assert dump["python"] == interp.version, dump["python"]
    assert dump["argv"][1:] == [DUMP_TARGET, lib], dump["argv"]

    # The text form says the same.
    res = t.tool("dump", d.pid, timeout=60)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    text = res.stdout
    assert text.startswith("Process %d: " % d.pid), text
    assert "\nPython %s\n" % interp.version in text, text
    threads = {th["name"]: th for th in dump["threads"]}
    for name, func, line in (("deadlock-a", "take_a_then_b", mark("deadlock-a")),
                             ("deadlock-b", "take_b_then_a", mark("deadlock-b")),
                             ("selector", "wait_in_select", mark("select")),
                             ("c-spinner", "spin_in_c", mark("spin"))):
        state = "running" if name == "c-spinner" else "sleeping"
        if threads[name]["gil"]:
            state += ", gil"
        head = 'Thread %d (%s): "%s"\n    %s (%s:%d)\n' % (
            threads[name]["tid"], state, name, func, DUMP_TARGET, line)
        assert head in text, "expected\n%s\nin\n%s" % (head, text)
    # Each dump is one more snapshot in the log.
    assert int(status(d.pid)["snapshots"]) >= 2


# ---- dump and top of logs written here, record by record ------------------------------


def crafted_log(path, pid, footer=False):
    """A log as a library still writing it would leave it (no footer unless asked):
    four threads, two functions, stacks with a cut and an unreadable marker, two
    SNAPSHOT records (only the first is asked for), and samples for top: 50 in
    Worker.work under main, 30 in main itself, 20 in rec(rec(rec)) under main, each
    standing for 10 ms.  Its start is a minute ahead, so top's window stays at its
    newest sample however slowly the test runs."""
    start = int((time.time() + 60) * 1e9)
    recs = [mf.header(pid=pid, start_unix_ns=start),
            mf.thread(0, 100, "MainThread"), mf.thread(1, 101, "worker"),
            mf.thread(2, 102, "ghost"), mf.thread(3, 103, "idle"),
            mf.code(16, 1, "main", "", "/srv/a.py"),
            mf.code(17, 10, "work", "Worker.work", "/srv/a.py"),
            mf.code(18, 30, "rec", "", "/srv/b.py"),
            mf.stack(1, [(16, 5), (17, 12)]),
            mf.stack(2, [(16, 5), (mf.CODE_CUT, 40), (17, 13)]),
            mf.stack(3, [(mf.CODE_UNREADABLE, 0), (17, 14)]),
            mf.stack(4, [(16, 6)]),
            mf.stack(5, [(16, 7), (18, 31), (18, 32), (18, 33)]),
            mf.snapshot(1, 5, [(0, 1, mf.SNAP_F_GIL, "R"), (1, 2, 0, "S"),
                               (2, 3, mf.SNAP_F_CHANGED, "D"), (3, 0, 0, "T")]),
            mf.snapshot(2, 6, [(0, 4, 0, "S")])]
    for i in range(100):
        sid = 1 if i % 10 < 5 else 4 if i % 10 < 8 else 5
        recs.append(mf.sample(10000 if i else 0, 0, sid, 10000))
    if footer:
        recs.append(mf.footer(100, 100, 1000000, {}))
    with open(path, "wb") as f:
        f.write(mf.lz4(mf.MAGIC + b"".join(recs)))
    return path


DUMP_TEXT = """Process %d: python3 app.py --port 8080
Python 3.11.7

Thread 100 (running, gil): "MainThread"
    Worker.work (/srv/a.py:12)
    main (/srv/a.py:5)

Thread 101 (sleeping): "worker"
    Worker.work (/srv/a.py:13)
    ... 40 frames cut ...
    main (/srv/a.py:5)

Thread 102 (disk wait): "ghost"
    (stack changed while read: innermost frame only)
    Worker.work (/srv/a.py:14)
    [unreadable]

Thread 103 (T): "idle"
    (no Python frame could be read)
"""


def stand_in(daemons, reply):
    d = Daemon(_System(), t.workload("fake_ctl_server.py"), None,
               args=["reply", reply.replace("\n", "\\n")], profile=False)
    daemons.append(d)
    return d


def test_dump_of_a_crafted_log(tmp_path, daemons):
    """Markers, a changed stack, a thread without frames, state letters, the GIL: each
    printed as docs/CONTROL.md says, from the snapshot asked for and no other."""
    path = str(tmp_path / "crafted.lz4")
    server = stand_in(daemons, "ok snapshot 1 %s\n" % path)
    crafted_log(path, server.pid)
    out = ok(t.tool("dump", server.pid, timeout=60), "dump")
    assert out == DUMP_TEXT % server.pid, out
    dump = json.loads(ok(t.tool("dump", "--json", server.pid, timeout=60), "dump --json"))
    assert dump["snapshot"] == 1 and dump["log"] == path, dump
    assert dump["argv"] == ["python3", "app.py", "--port", "8080"], dump
    th = {x["name"]: x for x in dump["threads"]}
    assert [x["tid"] for x in dump["threads"]] == [100, 101, 102, 103], dump
    assert th["MainThread"]["gil"] is True and th["MainThread"]["os_state"] == "R"
    assert th["worker"]["frames"][1] == {"marker": "cut", "count": 40}, th["worker"]
    assert th["ghost"]["changed"] is True and th["ghost"]["state"] == "disk wait"
    assert th["ghost"]["frames"] == [
        {"function": "Worker.work", "name": "work", "qualname": "Worker.work",
         "file": "/srv/a.py", "line": 14}, {"marker": "unreadable"}], th["ghost"]
    assert th["idle"]["frames"] == [] and th["idle"]["state"] == "T", th["idle"]


@pytest.mark.parametrize("footer", [True, False])
def test_dump_snapshot_missing(tmp_path, daemons, footer):
    """A reply naming a snapshot the log does not hold: one line, exit 1 (at the
    footer at once; without one, after waiting a few seconds for more)."""
    path = str(tmp_path / "crafted.lz4")
    server = stand_in(daemons, "ok snapshot 7 %s\n" % path)
    crafted_log(path, server.pid, footer=footer)
    refused(t.tool("dump", server.pid, timeout=60), "dump of a missing snapshot",
            "pyprof dump: %s: snapshot 7 is not in the log" % path)
    os.unlink(path)
    refused(t.tool("dump", server.pid, timeout=60), "dump of a missing log",
            "pyprof dump: %s: " % path)


def test_top_sums(tmp_path):
    """top's arithmetic on known samples: own and total shares of the window, times in
    seconds since the start, a recursive function counted once per sample, rows by own
    samples."""
    logs = tmp_path / "logs"
    logs.mkdir()
    crafted_log(str(logs / "crafted.lz4"), os.getpid())
    res = t.tool("top", "--once", "--interval", "0.2", str(logs), timeout=60)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    rows = table(res.stdout)
    assert rows == [(50.0, 50.0, 0.5, 0.5, "Worker.work"), (30.0, 100.0, 0.3, 1.0, "main"),
                     (20.0, 20.0, 0.2, 0.2, "rec")], res.stdout
    head = res.stdout.splitlines()
    assert head[0] == "pyprof top - pid %d: python3 app.py --port 8080" % os.getpid(), head
    # The window is the last 0.2 s of the log's time: its last 20 samples (which repeat
    # the 5/3/2 pattern), while the times add up all 100.
    assert head[1] == ("Python 3.11.7  clock cpu  period 10 ms  samples 100 (+20 in 0.2s)"
                       "  threads 1"), head
    assert head[2].startswith("[following] window 0 seq 0: ") and "crafted.lz4" in head[2]


# ---- top ----------------------------------------------------------------------------------

ROW = re.compile(r"^ *(\d+\.\d)% +(\d+\.\d)% +(\d+\.\d\d)s +(\d+\.\d\d)s  (\S+)")


def table(screen):
    """The rows of a `pyprof top` screen: (own %, total %, own s, total s, function)."""
    lines = screen.splitlines()
    heads = [i for i, l in enumerate(lines) if "%Own" in l and "Function" in l]
    assert len(heads) == 1, screen
    rows = []
    for l in lines[heads[0] + 1:]:
        if not l.strip():
            continue
        m = ROW.match(l)
        assert m, "not a table row (wrapped?): %r\n%s" % (l, screen)
        rows.append((float(m.group(1)), float(m.group(2)), float(m.group(3)),
                     float(m.group(4)), m.group(5)))
    return rows


class Tmux(object):
    def __init__(self, tmp_path):
        if not shutil.which("tmux"):
            pytest.fail("tmux is not installed (make deps installs it)")
        self.sock = "pyprof-test-%d-%d" % (os.getpid(), id(self))
        self.base = ["tmux", "-L", self.sock, "-f", "/dev/null"]

    def run(self, *args):
        res = subprocess.run(self.base + list(args), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
        assert res.returncode == 0, (args, res.stderr)
        return res.stdout

    def capture(self):
        return self.run("capture-pane", "-p", "-t", "top")

    def close(self):
        subprocess.run(self.base + ["kill-server"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def hottest_first(screen):
    try:
        rows = table(screen)
    except AssertionError:
        return None
    return rows and rows[0][4] == "hottest" and rows


@pytest.mark.parametrize("interp", t.params(ONE))
@pytest.mark.parametrize("target, quit_key", [("pid", "q"), ("dir", "C-c")])
def test_top_in_a_terminal(interp, target, quit_key, tmp_path, daemons):
    outdir = str(tmp_path / "logs")
    d = Daemon(interp, TOP_TARGET, outdir)
    daemons.append(d)
    rcfile = str(tmp_path / "top.rc")
    tm = Tmux(tmp_path)
    try:
        cmd = "%s top %s; echo $? > %s; sleep 600" % (
            t.TOOL, d.pid if target == "pid" else outdir, rcfile)
        tm.run("new-session", "-d", "-s", "top", "-x", "80", "-y", "24", cmd)
        screen = [""]

        def look():
            screen[0] = tm.capture()
            # The interpreter's start (imports: a few samples) is left behind once a
            # hundred samples are in: past that, the target's loop is at least 90 %.
            m = re.search(r"samples (\d+)", screen[0])
            return m and int(m.group(1)) >= 100 and hottest_first(screen[0])
        rows = wait_for("hottest() at the top of pyprof top's table, 100 samples in", look,
                        timeout=60.0, step=0.1)
        lines = screen[0].splitlines()
        assert lines[0].startswith("pyprof top - pid %d: " % d.pid), screen[0]
        assert "Python %s" % interp.version in lines[1] and "clock cpu" in lines[1], lines[1]
        assert rows[0][0] >= 50.0 and rows[0][1] >= rows[0][0], screen[0]
        assert any(r[4] == "main" and r[1] >= 90.0 for r in rows), screen[0]
        assert "seq 0: " in lines[2], lines[2]

        # The log rotates under it, twice: top follows into the next files.
        for seq in (1, 2):
            path = reply_path(ok(ctl(d.pid, "rotate"), "rotate"), "ok rotated")
            tail = os.path.basename(path)[-30:]

            def followed():
                screen[0] = tm.capture()
                status_line = screen[0].splitlines()[2]
                return ("seq %d: " % seq in status_line and tail in status_line
                        and hottest_first(screen[0]))
            wait_for("top to follow the rotation into %s" % path, followed, timeout=60.0,
                     step=0.1)

        tm.run("send-keys", "-t", "top", quit_key)
        wait_for("top to quit on %s" % quit_key, lambda: os.path.exists(rcfile)
                 and open(rcfile).read().strip(), timeout=60.0)
        assert open(rcfile).read().strip() == "0"
        # Out of the alternate screen, the terminal is as before: nothing of top's table.
        assert "%Own" not in tm.capture()
    finally:
        tm.close()


@pytest.mark.parametrize("interp", t.params(ONE))
def test_top_once(interp, tmp_path, daemons):
    outdir = str(tmp_path / "logs")
    d = Daemon(interp, TOP_TARGET, outdir)
    daemons.append(d)
    for target in (d.pid, outdir):
        res = t.tool("top", "--once", target, timeout=60)
        assert res.returncode == 0 and res.stderr == "", res.stderr
        rows = table(res.stdout)
        assert rows and rows[0][4] == "hottest", res.stdout
        assert all(len(l) <= 80 for l in res.stdout.splitlines()), res.stdout


@pytest.mark.parametrize("interp", t.params(ONE))
def test_top_and_report_by_content(interp, tmp_path, daemons):
    """A log is a file whose header says so, whatever its name: a daemon writing
    DIR/prof.<pid> (PYPROF_OUTPUT=DIR/prof.%p, no .lz4) is followed by `top DIR` and read
    by `report DIR`, and a file of DIR that is not a log (the newest one there) is
    ignored by both."""
    outdir = tmp_path / "logs"
    d = Daemon(interp, TOP_TARGET, str(outdir), env={"PYPROF_OUTPUT": str(outdir / "prof.%p")})
    daemons.append(d)
    log = str(outdir / ("prof.%d" % d.pid))
    readme = outdir / "README.txt"
    readme.write_text("not a log\n")
    future = time.time() + 3600
    os.utime(str(readme), (future, future))
    res = t.tool("top", "--once", str(outdir), timeout=60)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    rows = table(res.stdout)
    assert rows and rows[0][4] == "hottest", res.stdout
    lines = res.stdout.splitlines()
    assert lines[0].startswith("pyprof top - pid %d: " % d.pid), lines[0]
    assert lines[2].startswith("[following] window 0 seq 0: "), lines[2]
    assert lines[2].endswith("/prof.%d" % d.pid), lines[2]
    assert sorted(os.listdir(str(outdir))) == sorted(["README.txt", "prof.%d" % d.pid])

    # SIGTERM: the log is finished, then the process ends by the signal.
    d.proc.terminate()
    d.proc.communicate(timeout=t.TIMEOUT)
    assert d.proc.returncode == -signal.SIGTERM, d.proc.returncode
    res = t.tool("report", "--json", str(outdir))
    assert res.returncode == 0 and res.stderr == "", res.stderr
    procs = json.loads(res.stdout)["processes"]
    assert [(p["pid"], p["path"], p["ended"]) for p in procs] == [(d.pid, log, "signal")], procs
    assert procs[0]["samples"] > 0, procs
    # Nothing is written there now: top says so, counting the one log, not the README.
    res = t.tool("top", "--once", str(outdir), timeout=60)
    refused(res, "top of a finished log", "%s: no log being written there (1 log, "
            "finished or unreadable)" % outdir)
