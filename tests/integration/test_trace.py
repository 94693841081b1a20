"""Spans in the tool: `pyprof trace list|show`, `--span NAME` on report/tree/export/html,
spans in `report --json`, `info` and the chrome export, on logs built record by record
(spanlogs.py) so that every expected number comes from the inputs: the times of the
spans and samples and the functions each sample was given.

* two span names burning in different functions: `report --span A` has only A's
  functions, with exactly the samples of A's thread between A's start and stop;
* a trace across two logs of two processes is one tree (the second process's root span
  under the span whose trace_id is its parent_id), with per-span samples, CPU and top
  functions; OSProfiler's own CLI (Debian's python3-osprofiler, /usr/bin/python3) reads
  our JSON: `--json` re-serializes the same tree and `--dot` draws it;
* a log cut inside a span shows the span as unfinished, to the end of the log's data;
* malformed names (quotes, <script>, invalid UTF-8, newlines, backslashes) stay data in
  JSON, dot and HTML;
* an unknown trace id is one error line and exit status 1; a stop without a start, a
  span that names itself or a cycle as its parent, and a span across the files of a
  rotated series load without harm.

The span logs are the tests' own, but for test_real_span_logs: logs the library writes
in the test, checked for the invariants that hold of any log (every trace joins, JSON
parses, OSProfiler reads it), as are the directories PYPROF_SPAN_LOGS names.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

import pyprof_testlib as t
from osprofiler_cli import DEBIAN_PYTHON, check_osprofiler, count, nodes, tree_of
from spanlogs import Log, START_NS


# ---- --span ---------------------------------------------------------------------------

def burn_log(path, pid=1000):
    """Two spans on thread 0: alpha (10-40 ms) burning in fa, beta (50-90 ms) burning in
    fb, each sample's stack main > handle > f*; "inner" nested in alpha (20-30 ms);
    outside them idle; thread 1 burning in `other` the whole time."""
    log = Log(pid)
    log.thread(0, pid, "MainThread")
    log.thread(1, pid + 1, "worker")
    log.start(1, 10_000, 0, "alpha")
    log.start(2, 20_000, 0, "inner", parent_span_id=1)
    log.start(3, 50_000, 0, "beta")
    for t_us in range(500, 100_000, 1000):
        if 10_000 <= t_us < 40_000:
            leaf = "fa"
        elif 50_000 <= t_us < 90_000:
            leaf = "fb"
        else:
            leaf = "idle"
        log.sample(t_us, 0, ["main", "handle", leaf])
        log.sample(t_us, 1, ["main", "other"], cpu_us=2000)
        if t_us == 30_500:
            log.stop(2, 30_000, 0)
        if t_us == 40_500:
            log.stop(1, 40_000, 0)
        if t_us == 90_500:
            log.stop(3, 90_000, 0)
    log.write(path)
    return log


def self_funcs(rep):
    return {f["name"]: f["self"] for f in rep["functions"] if f["self"]}


def test_span_filter_report(tmp_path):
    path = str(tmp_path / "burn.lz4")
    log = burn_log(path)
    full = t.tool_json("report", "--json", path)
    assert full["samples"] == len(log.samples)
    for name, (t0, t1), leaf in (("alpha", (10_000, 40_000), "fa"),
                                 ("beta", (50_000, 90_000), "fb"),
                                 ("inner", (20_000, 30_000), "fa")):
        want = log.in_span(0, t0, t1)
        assert want and all(s[2][-1] == leaf for s in want)
        rep = t.tool_json("report", "--json", "--span", name, path)
        assert rep["samples"] == len(want), name
        assert self_funcs(rep) == {leaf: len(want)}, name
        assert [th["samples"] for th in rep["threads"] if th["tid"] == 1001] in ([], [0])
        assert rep["processes"][0]["samples"] == len(want)
    # Repeated: inside any of the names.
    rep = t.tool_json("report", "--json", "--span", "alpha", "--span", "beta", path)
    assert self_funcs(rep) == {"fa": len(log.in_span(0, 10_000, 40_000)),
                               "fb": len(log.in_span(0, 50_000, 90_000))}
    # A name no span has keeps nothing; the other filters still combine.
    assert t.tool_json("report", "--json", "--span", "nope", path)["samples"] == 0
    rep = t.tool_json("report", "--json", "--span", "beta", "--to", "0.07", path)
    assert rep["samples"] == len(log.in_span(0, 50_000, 70_001))


def test_span_filter_tree_export_html(tmp_path):
    path = str(tmp_path / "burn.lz4")
    log = burn_log(path)
    n_alpha = len(log.in_span(0, 10_000, 40_000))
    tree = t.tool_json("tree", "--json", "--min", "0", "--span", "alpha", path)
    assert tree["samples"] == n_alpha
    names = []
    node = tree["roots"]
    while node:
        assert len(node) == 1
        names.append(node[0]["name"])
        node = node[0]["children"]
    assert names == ["main", "handle", "fa"]
    res = t.tool_bytes("export", "-f", "folded", "--span", "beta", path)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.decode().splitlines()
    assert len(lines) == 1 and lines[0].endswith(" %d" % len(log.in_span(0, 50_000, 90_000)))
    assert "fb (" in lines[0] and "fa (" not in lines[0]
    page = str(tmp_path / "alpha.html")
    res = t.tool_bytes("html", "--span", "alpha", path, "-o", page)
    assert res.returncode == 0, res.stderr
    data = page_data(page)
    assert data["samples"] == n_alpha


# ---- traces ---------------------------------------------------------------------------

def two_process_trace(d):
    """pid 1000: wsgi (1-101 ms) > db (10-50 ms, in `query`) and render (60-90 ms, in
    `render_html`, ends with an exception); pid 2000, started 65 ms later: wsgi (1-20 ms
    on its axis, in `remote_work`), called from render (parent_id T3).  Plus a span
    "cron" on pid 1000's worker without any id: a trace of its own."""
    a = Log(1000)
    a.thread(0, 1000, "MainThread")
    a.thread(1, 1001, "worker")
    a.start(1, 1000, 0, "wsgi", base_id="B1", trace_id="T1", parent_id="B1",
            info={"request": {"method": "GET", "path": "/x", "query": ""}})
    a.start(2, 10_000, 0, "db", parent_span_id=1, base_id="B1", trace_id="T2",
            parent_id="T1", info={"db": {"statement": "SELECT 1"}})
    a.start(3, 60_000, 0, "render", parent_span_id=1, base_id="B1", trace_id="T3",
            parent_id="T1")
    for t_us in range(500, 120_000, 1000):
        st = ["main", "handle"]
        if 10_000 <= t_us < 50_000:
            st.append("query")
        if 60_000 <= t_us < 90_000:
            st.append("render_html")
        a.sample(t_us, 0, st)
        a.sample(t_us, 1, ["bg", "background"])
        if t_us == 50_500:
            a.stop(2, 50_000, 0)
        if t_us == 90_500:
            a.stop(3, 90_000, 0, {"etype": "ValueError", "message": "bad"})
    a.stop(1, 101_000, 0)
    a.start(10, 110_000, 1, "cron")
    a.stop(10, 115_000, 1)
    b = Log(2000, start_unix_ns=START_NS + 65_000_000, run_id="b0b0b0b0b0b0b0b0")
    b.thread(0, 2000, "MainThread")
    b.start(1, 1000, 0, "wsgi", base_id="B1", trace_id="T4", parent_id="T3",
            info={"request": {"method": "POST", "path": "/y", "query": ""}})
    for t_us in range(500, 30_000, 1000):
        b.sample(t_us, 0, ["main", "remote_work"])
    b.stop(1, 20_000, 0)
    d.mkdir(exist_ok=True)
    return a, b, a.write(d / "a.lz4"), b.write(d / "b.lz4")


def test_trace_list(tmp_path):
    a, b, pa, pb = two_process_trace(tmp_path / "logs")
    lst = t.tool_json("trace", "list", "--json", str(tmp_path / "logs"))["traces"]
    assert [x["trace_id"] for x in lst] == ["B1", "1000.10"]
    b1, cron = lst
    assert b1["spans"] == 4 and b1["pids"] == [1000, 2000] and b1["root"] == "wsgi"
    assert b1["started_unix_ns"] == START_NS + 1000 * 1000
    assert b1["duration_ms"] == pytest.approx(100.0)  # 1 ms to 101 ms of pid 1000
    assert b1["unfinished"] == 0
    assert cron["spans"] == 1 and cron["pids"] == [1000] and cron["root"] == "cron"
    assert cron["duration_ms"] == pytest.approx(5.0)
    res = t.tool_bytes("trace", "list", pa, pb)
    assert res.returncode == 0
    lines = res.stdout.decode().splitlines()
    assert lines[0].split()[:2] == ["TRACE", "STARTED"]
    assert lines[1].split()[0] == "B1" and lines[1].split()[-1] == "wsgi"
    assert "1000,2000" in lines[1].split()
    assert lines[2].split()[0] == "1000.10"


def test_thread_filter_drops_spans(tmp_path):
    """--thread leaves out the spans the excluded threads started, and their stops are
    not taken for stray ones."""
    a, b, pa, pb = two_process_trace(tmp_path / "logs")
    pr = t.tool_json("report", "--json", "--thread", "1001", pa)["processes"][0]
    assert (pr["spans"], pr["spans_unfinished"], pr["span_stops_unmatched"]) == (1, 0, 0)
    lst = t.tool_json("trace", "list", "--json", "--thread", "1001", pa)["traces"]
    assert [x["trace_id"] for x in lst] == ["1000.10"]


def test_trace_show_json(tmp_path):
    a, b, pa, pb = two_process_trace(tmp_path / "logs")
    tr = t.tool_json("trace", "show", "B1", "--json", pb, pa)  # any order of logs
    assert tr["info"]["name"] == "total" and tr["info"]["started"] == 0
    assert tr["info"]["finished"] == 100
    assert tr["info"]["last_trace_started"] == 65  # pid 2000's wsgi: 65 + 1 - 1 ms
    assert tree_of({"info": {"name": "total"}, "children": tr["children"]}) == (
        "total", [("wsgi", [("db", []), ("render", [("wsgi", [])])])])
    wsgi = tr["children"][0]
    db, render = wsgi["children"]
    remote = render["children"][0]
    assert (wsgi["trace_id"], wsgi["parent_id"]) == ("T1", "B1")
    assert (db["trace_id"], db["parent_id"]) == ("T2", "T1")
    assert (remote["trace_id"], remote["parent_id"]) == ("T4", "T3")
    assert (db["info"]["started"], db["info"]["finished"]) == (9, 49)
    assert (remote["info"]["started"], remote["info"]["finished"]) == (65, 84)
    assert render["info"]["exception"] == "ValueError"
    assert db["info"]["exception"] == "None"
    start = db["info"]["meta.raw_payload.db-start"]
    assert start["name"] == "db-start" and start["base_id"] == "B1"
    assert start["info"] == {"db": {"statement": "SELECT 1"}}
    assert start["timestamp"] == "2023-11-14T22:13:20.010000"
    assert db["info"]["meta.raw_payload.db-stop"]["timestamp"] == "2023-11-14T22:13:20.050000"
    assert render["info"]["meta.raw_payload.render-stop"]["info"]["etype"] == "ValueError"
    # The samples inside each span, from the inputs.
    for node, log, t0, t1 in ((wsgi, a, 1000, 101_000), (db, a, 10_000, 50_000),
                              (render, a, 60_000, 90_000), (remote, b, 1000, 20_000)):
        q = node["info"]["pyprof"]
        want = log.in_span(0, t0, t1)
        assert q["samples"] == len(want), node["info"]["name"]
        assert q["cpu_ms"] == pytest.approx(len(want) * log.period_us / 1000)
        counts = {}
        for s in want:
            counts[s[2][-1]] = counts.get(s[2][-1], 0) + 1
        top = q["top_functions"]
        assert {f["function"]: f["samples"] for f in top} == counts
        assert [f["samples"] for f in top] == sorted(counts.values(), reverse=True)
        assert q["unfinished"] is False and q["pid"] == log.pid
    assert tr["stats"] == {"wsgi": {"count": 2, "duration": 100 + 19},
                           "db": {"count": 1, "duration": 40},
                           "render": {"count": 1, "duration": 30}}
    assert tr["pyprof"]["trace_id"] == "B1" and tr["pyprof"]["spans"] == 4
    assert [p["pid"] for p in tr["pyprof"]["processes"]] == [1000, 2000]
    # A span without ids: a trace of its own, named by pid and span id.
    cron = t.tool_json("trace", "show", "1000.10", "--json", pa)
    assert tree_of(cron["children"][0]) == ("cron", [])
    assert cron["children"][0]["info"]["pyprof"]["samples"] == len(a.in_span(1, 110_000,
                                                                            115_000))


def test_trace_show_text_dot_html(tmp_path):
    a, b, pa, pb = two_process_trace(tmp_path / "logs")
    res = t.tool_bytes("trace", "show", "B1", pa, pb)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.decode().splitlines()
    assert lines[0].startswith("trace B1: 4 spans")
    assert [ln.split()[0] for ln in lines[1:]] == ["wsgi", "db", "render", "wsgi"]
    assert [len(ln) - len(ln.lstrip()) for ln in lines[1:]] == [0, 2, 2, 4]
    dot = str(tmp_path / "t.dot")
    res = t.tool_bytes("trace", "show", "B1", "--dot", "--out", dot, pa, pb)
    assert res.returncode == 0 and not res.stdout
    text = open(dot).read()
    edges = re.findall(r"^  (\w+) -> (\w+);$", text, re.M)
    labels = dict(re.findall(r'^  (\w+) \[label="([^"\n]*?) - ', text, re.M))
    named = sorted((labels[x], labels[y]) for x, y in edges)
    assert named == sorted([("total", "wsgi"), ("wsgi", "db"), ("wsgi", "render"),
                            ("render", "wsgi")]), text
    if shutil.which("dot"):
        assert subprocess.run(["dot", "-Tsvg", dot], stdout=subprocess.DEVNULL).returncode == 0
    page = str(tmp_path / "t.html")
    res = t.tool_bytes("trace", "show", "B1", "--html", "-o", page, pa, pb)
    assert res.returncode == 0, res.stderr
    data = page_data(page)
    assert tree_of({"info": {"name": "total"}, "children": data["children"]}) == (
        "total", [("wsgi", [("db", []), ("render", [("wsgi", [])])])])


def test_osprofiler_reads_our_json(tmp_path):
    a, b, pa, pb = two_process_trace(tmp_path / "logs")
    ours = str(tmp_path / "trace.json")
    res = t.tool_bytes("trace", "show", "B1", "--json", "-o", ours, pa, pb)
    assert res.returncode == 0, res.stderr
    check_osprofiler(ours, tmp_path)


# ---- bad input ------------------------------------------------------------------------

EVIL = ['q"uote\\back', "<script>alert(1)</script>", b"bad\xff\xfeutf8", "new\nline"]


def evil_logs(d):
    """pid 3000, cut (no footer, no stops: the process was killed inside its spans):
    spans named with the EVIL names, nested, ids that are markup too."""
    c = Log(3000)
    c.thread(0, 3000, "<b>Main</b>")
    parent = 0
    for i, name in enumerate(EVIL):
        c.start(i + 1, 1000 * (i + 1), 0, name, parent_span_id=parent, base_id="E<1>",
                trace_id="t<%d>" % i, parent_id="t<%d>" % (i - 1) if i else "E<1>",
                info='{"broken": ' if i == 1 else {"k": "<v>"})
        parent = i + 1
    for t_us in range(500, 9000, 1000):
        c.sample(t_us, 0, ["main", "<img src=x onerror=alert(2)>"])
    d.mkdir(exist_ok=True)
    return c, c.write(d / "c.lz4", footer=False)


def decoded(name):
    return name.decode("utf-8", "replace") if isinstance(name, bytes) else name


def test_unfinished_and_names(tmp_path):
    c, path = evil_logs(tmp_path / "logs")
    res = t.tool_bytes("trace", "list", "--json", path)
    assert res.returncode == 0
    assert b"truncated" in res.stderr  # the cut log, with a warning
    (tr,) = json.loads(res.stdout)["traces"]
    assert tr["trace_id"] == "E<1>" and tr["spans"] == 4 and tr["unfinished"] == 4
    assert tr["root"] == EVIL[0]
    # Unfinished spans last to the end of the log's data: its last sample.
    assert tr["duration_ms"] == pytest.approx((c.last - 1000) / 1000)
    show = t.tool_json("trace", "show", "E<1>", "--json", path)
    node, names = show["children"][0], []
    while True:
        names.append(node["info"]["name"])
        q = node["info"]["pyprof"]
        assert q["unfinished"] is True
        assert q["finished_us"] == c.last - 1000
        assert not any(k.endswith("-stop") for k in node["info"])
        assert "exception" not in node["info"]
        assert q["samples"] == len(c.in_span(0, q["started_us"] + 1000, None))
        if not node["children"]:
            break
        (node,) = node["children"]
    assert names == [decoded(n) for n in EVIL]
    assert show["children"][0]["children"][0]["info"][
        "meta.raw_payload.<script>alert(1)</script>-start"]["info"] == {
            "unparsed": '{"broken": '}
    # OSProfiler's milliseconds: truncated times since the trace's start, then differences.
    assert show["stats"] == {decoded(n): {"count": 1,
                                          "duration": (c.last - 1000) // 1000 - i}
                             for i, n in enumerate(EVIL)}
    # The text views show control characters as '?'.
    res = t.tool_bytes("trace", "show", "E<1>", path)
    assert res.returncode == 0 and b"new?line" in res.stdout and b"new\nline" not in res.stdout
    # dot: one statement a line, quotes and backslashes escaped.
    res = t.tool_bytes("trace", "show", "E<1>", "--dot", path)
    assert res.returncode == 0
    text = res.stdout.decode()
    assert 'q\\"uote\\\\back' in text and "new?line" in text and "\ufffd" in text
    for ln in text.splitlines()[1:-1]:
        assert re.match(r'^  (graph|node|total|s\d+)[ ;]', ln), ln
    if shutil.which("dot"):
        dot = subprocess.run(["dot", "-Tsvg"], input=res.stdout, stdout=subprocess.PIPE)
        assert dot.returncode == 0
    # HTML: the trace page and the viewer carry the names as escaped JSON only.
    for args in (["trace", "show", "E<1>", "--html"], ["html"]):
        page = str(tmp_path / "p.html")
        res = t.tool_bytes(*(args + [path, "-o", page]))
        assert res.returncode == 0, res.stderr
        html = open(page, encoding="utf-8").read()
        assert "<script>alert(1)" not in html and "<img src=x" not in html
        assert "<b>" not in html and "E<1>" not in html
        data = page_data(page)
        got = (data["pyprof"]["trace_id"] if "pyprof" in data else
               [s["name"] for s in data["spans"]])
        assert got == ("E<1>" if "pyprof" in data else [decoded(n) for n in EVIL])
    # OSProfiler reads it too.
    ours = str(tmp_path / "evil.json")
    assert t.tool_bytes("trace", "show", "E<1>", "--json", "-o", ours, path).returncode == 0
    check_osprofiler(ours, tmp_path)


def test_unknown_trace_id(tmp_path):
    a, b, pa, pb = two_process_trace(tmp_path / "logs")
    for tid in ("nope", "B1\x1b[2J", "x" * 500):
        res = t.tool_bytes("trace", "show", tid, "--json", pa, pb)
        assert res.returncode == 1 and not res.stdout
        err = res.stderr.decode()
        assert err.count("\n") == 1 and err.startswith("pyprof: trace '"), err
        assert "\x1b" not in err and "not in the logs given" in err
    res = t.tool_bytes("trace", "show", pa)  # no log after the id
    assert res.returncode == 2
    res = t.tool_bytes("trace", "frob", pa)
    assert res.returncode == 2
    res = t.tool_bytes("trace", "show", "B1", "--json", "--dot", pa)
    assert res.returncode == 2
    out = str(tmp_path / "none.json")
    res = t.tool_bytes("trace", "show", "nope", "--json", "-o", out, pa)
    assert res.returncode == 1 and not os.path.exists(out)


def test_odd_spans(tmp_path):
    """A stop without a start, a span that is its own parent, two spans each other's
    parent (by span id and by OSProfiler ids), a stop before its start: all load."""
    log = Log(4000)
    log.thread(0, 4000, "MainThread")
    log.stop(99, 500, 0)  # its start is not in the logs (a fork child's, or removed)
    log.start(1, 1000, 0, "self", parent_span_id=1, base_id="O", trace_id="s",
              parent_id="s")
    log.start(2, 2000, 0, "a", parent_span_id=3, base_id="O", trace_id="a", parent_id="b")
    log.start(3, 3000, 0, "b", parent_span_id=2, base_id="O", trace_id="b", parent_id="a")
    log.start(4, 6000, 0, "backwards")
    for t_us in range(500, 8000, 1000):
        log.sample(t_us, 0, ["main"])
    log.stop(2, 5000, 0)
    log.stop(3, 4000, 0)
    log.stop(4, 4000, 0)  # before its start: it lasts nothing
    log.stop(1, 7000, 0)
    path = log.write(tmp_path / "odd.lz4")
    rep = t.tool_json("report", "--json", path)
    pr = rep["processes"][0]
    assert (pr["spans"], pr["spans_unfinished"], pr["span_stops_unmatched"]) == (4, 0, 1)
    assert pr["spans_lost"] is None  # a footer without the span section
    res = t.tool_bytes("info", path)
    assert res.returncode == 0
    assert b"4 started, 5 stopped; 1 stops of spans not in the logs" in res.stdout
    lst = t.tool_json("trace", "list", "--json", path)["traces"]
    assert sorted((x["trace_id"], x["spans"]) for x in lst) == [("4000.4", 1), ("O", 3)]
    tr = t.tool_json("trace", "show", "O", "--json", path)
    assert sum(count(c) for c in tr["children"]) == 3
    back = t.tool_json("trace", "show", "4000.4", "--json", path)["children"][0]
    assert back["info"]["pyprof"]["finished_us"] == back["info"]["pyprof"]["started_us"]
    assert back["info"]["pyprof"]["samples"] == 0


def test_span_across_rotated_files(tmp_path):
    """A span started in seq 0 and stopped in seq 1 of a series is one span, whatever
    the order the files are given in; the files' spans_lost add up."""
    import make_fixtures as mf
    d = tmp_path / "logs"
    d.mkdir()
    paths = []
    for seq, offset in ((0, 0), (1, 50_000)):
        log = Log(5000, start_unix_ns=START_NS + offset * 1000)
        log.recs[1] = mf.header(pid=5000, run_id="5e5e5e5e5e5e5e5e",
                                start_unix_ns=START_NS + offset * 1000,
                                series=(seq, START_NS, offset))
        log.thread(3 - seq, 5000, "MainThread")
        if seq == 0:
            log.start(7, 10_000, 3, "long", base_id="R")
        for t_us in range(500, 50_000, 1000):
            log.sample(t_us, 3 - seq, ["main", "f%d" % seq])
        if seq == 1:
            log.stop(7, 20_000, 2)  # 20 ms into the second file: 70 ms into the series
        paths.append(log.write(d / ("pyprof.app.5000.%04d.lz4" % seq), spans_lost=3 + seq))
    # The footers' spans_lost (3, 4) add up, as the series' other counters do.
    pr = t.tool_json("report", "--json", *paths)["processes"]
    assert [p["spans_lost"] for p in pr] == [7]
    assert b"; 7 starts and stops lost" in t.tool_bytes("info", *paths).stdout
    for order in (paths, paths[::-1]):
        tr = t.tool_json("trace", "show", "R", "--json", *order)
        q = tr["children"][0]["info"]["pyprof"]
        assert q["unfinished"] is False
        assert (tr["children"][0]["info"]["finished"], q["finished_us"]) == (60, 60_000)
        assert q["samples"] == 40 + 20  # 10.5 .. 49.5 ms, then 50.5 .. 69.5 ms
        assert {f["function"]: f["samples"] for f in q["top_functions"]} == {"f0": 40,
                                                                             "f1": 20}


# ---- chrome export, report --------------------------------------------------------------

def test_chrome_export_spans(tmp_path):
    a, b, pa, pb = two_process_trace(tmp_path / "logs")
    out = str(tmp_path / "c.json")
    res = t.tool_bytes("export", "-f", "chrome", "-o", out, pa, pb)
    assert res.returncode == 0, res.stderr
    events = [e for e in json.load(open(out))["traceEvents"] if e.get("cat") == "span"]
    got = sorted((e["pid"], e["tid"], e["name"], e["ts"], e["dur"], e["ph"]) for e in events)
    assert got == sorted([(1000, 1000, "wsgi", 1000, 100_000, "X"),
                          (1000, 1000, "db", 10_000, 40_000, "X"),
                          (1000, 1000, "render", 60_000, 30_000, "X"),
                          (1000, 1001, "cron", 110_000, 5000, "X"),
                          (2000, 2000, "wsgi", 65_000 + 1000, 19_000, "X")])
    db = [e for e in events if e["name"] == "db"][0]
    assert db["args"]["trace_id"] == "T2" and db["args"]["base_id"] == "B1"
    assert db["args"]["info"] == {"db": {"statement": "SELECT 1"}}


# ---- real logs --------------------------------------------------------------------------

def check_span_logs(d, tmp_path):
    """What holds of any logs with spans: each trace `trace list` names shows as one tree
    of as many spans (unfinished ones and processes too) as the list says, OSProfiler's
    CLI reads its JSON back (for the traces that cross processes and the largest one:
    OSProfiler's CLI takes seconds to start), no span holds more samples than its
    process, a span nested in another of its process starts no earlier, and the page and
    the graph are made.  Returns {trace_id: its JSON}."""
    lst = t.tool_json("trace", "list", "--json", d)["traces"]
    assert lst
    largest = max(tr["spans"] for tr in lst)
    procs = t.tool_json("report", "--json", d)["processes"]
    samples = {}
    for pr in procs:
        samples[pr["pid"]] = samples.get(pr["pid"], 0) + pr["samples"]
    shown = {}
    for i, tr in enumerate(lst):
        ours = str(tmp_path / ("t%d.json" % i))
        res = t.tool_bytes("trace", "show", tr["trace_id"], "--json", "-o", ours, d)
        assert res.returncode == 0 and not res.stdout, res.stderr
        if len(tr["pids"]) > 1 or tr["spans"] == largest:
            show = check_osprofiler(ours, tmp_path)
        else:
            with open(ours) as f:
                show = json.load(f)
        spans = nodes(show)
        assert len(spans) == tr["spans"] == show["pyprof"]["spans"], tr
        assert sum(n["info"]["pyprof"]["unfinished"] for n in spans) == tr["unfinished"]
        assert sorted(set(n["info"]["pyprof"]["pid"] for n in spans)) == sorted(tr["pids"])
        for n in spans:
            q = n["info"]["pyprof"]
            assert 0 <= q["samples"] <= samples[q["pid"]], n["info"]
            assert q["started_us"] <= q["finished_us"], n["info"]
            for c in n["children"]:
                if c["info"]["pyprof"]["pid"] == q["pid"]:
                    assert c["info"]["pyprof"]["started_us"] >= q["started_us"]
        for fmt in ("--html", "--dot"):
            res = t.tool_bytes("trace", "show", tr["trace_id"], fmt, d)
            assert res.returncode == 0 and res.stdout, res.stderr
        shown[tr["trace_id"]] = show
    return shown


def test_real_span_logs(tmp_path):
    """Logs the library wrote: workloads/spans_api.py (nested spans, decorators,
    exceptions, spans by hand, a fork inside a span, threads) on Debian's python3 under
    the library, checked for the invariants above; the fork child's span is in its
    parent's trace, under the span it was forked in.  PYPROF_SPAN_LOGS=DIR[:DIR...]
    adds directories of real logs of one's own to check the same way."""
    out = str(tmp_path / "logs")
    run_ = t.run([DEBIAN_PYTHON, t.workload("spans_api.py")], out, env={
        "PYTHONPATH": os.path.join(t.REPO, "utils", "python"), "PYPROF_PERIOD": "1ms",
        "SPANS_CHILD_OUT": str(tmp_path / "child.json")})
    assert run_.rc == 0, run_.describe()
    facts = json.loads(run_.stdout.decode())
    shown = check_span_logs(out, tmp_path)
    forked = [tr for tr in shown.values() if tr["children"][0]["info"]["name"] == "fork-parent"]
    assert len(forked) == 1, sorted(shown)
    assert tree_of(forked[0]["children"][0]) == ("fork-parent", [("fork-child", [])])
    assert sorted(p["pid"] for p in forked[0]["pyprof"]["processes"]) == sorted(
        [run_.pid, facts["child_pid"]])
    for d in filter(None, os.environ.get("PYPROF_SPAN_LOGS", "").split(":")):
        check_span_logs(d, tmp_path)


def page_data(path):
    html = open(path, encoding="utf-8").read()
    m = re.search(r'<script id="pyprof-data" type="application/json">(.*?)</script>', html,
                  re.S)
    assert m, "no data element in the page"
    return json.loads(m.group(1))
