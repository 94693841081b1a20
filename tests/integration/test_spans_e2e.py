"""Spans end to end: logs the real library writes, read by the tool.

* `--span NAME` on every interpreter (2.7, 3.6-3.13, Debian's static 3.11):
  workloads/spans_two.py burns CPU in burn_alpha inside spans "alpha", in burn_beta
  inside spans "beta" and in burn_outside outside any span; `report --span alpha` has
  burn_alpha alone among the functions of a notable share, `--span beta` burn_beta, and
  their samples add up to the samples inside spans, counted in the log by the test-only
  decoder spanlog.py;
* a log cut inside open spans (the process killed with SIGKILL after a flush): the tool
  shows what it holds, the spans unfinished, their CPU;
* hostile span names and info through the C functions (ctypes: quotes, markup, invalid
  UTF-8, newlines, escape sequences, JSON cut short) and through the pyprof package stay
  data in `trace show --json` (python's json parses it), `--html`, `--dot` and
  OSProfiler's CLI; an unknown trace id is one error line;
* the footer's spans_lost: a program that makes more span records than the library's
  buffer holds counts what the library refused, and `info` and `report --json` show that
  count.
"""

import json
import os
import re
import signal
import subprocess
import threading

import pytest

import pyprof_testlib as t
import spanlog
from osprofiler_cli import DEBIAN_PYTHON, check_osprofiler, nodes, tree_of

PYPKG = os.path.join(t.REPO, "utils", "python")


def debian(workload, out, **env):
    e = {"PYTHONPATH": PYPKG, "PYPROF_PERIOD": "1ms"}
    e.update(env)
    run = t.run([DEBIAN_PYTHON, t.workload(workload)], out, env=e)
    assert run.rc == 0, run.describe()
    return run


# ---- --span on every interpreter ---------------------------------------------------------

def notable(rep, share=0.05):
    """The functions of at least `share` of the report's samples (self)."""
    return sorted(f["name"] for f in rep["functions"]
                  if f["self"] >= share * max(rep["samples"], 1))


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_span_filter_real(interp, tmp_path):
    interp.require()
    out = str(tmp_path / "logs")
    run = t.run([interp.path, t.workload("spans_two.py")], out,
                env={"PYTHONPATH": PYPKG, "PYPROF_PERIOD": "1ms"})
    assert run.rc == 0 and run.stdout.strip() == b"True", run.describe()
    (path,) = run.logs
    log = spanlog.Log(path)
    where = "%s\n%s" % (run.describe(), log.summary())
    assert sorted(s["name"] for s in log.starts) == ["alpha"] * 3 + ["beta"] * 3, where
    # The samples inside the spans, from the records: the span's thread, start <= t < stop.
    inside = {}
    for s in log.starts:
        stop = log.stop_of(s["span_id"])
        assert stop is not None, where
        idx = s["thread_idx"]
        inside[s["name"]] = inside.get(s["name"], 0) + sum(
            1 for smp in log.samples if smp[1] == idx and s["t_us"] <= smp[0] < stop["t_us"])
    full = t.report(path)
    reps = {}
    for name, burner in (("alpha", "burn_alpha"), ("beta", "burn_beta")):
        rep = t.tool_json("report", "--json", "--span", name, path)
        reps[name] = rep
        msg = "--span %s\n%s\n%s" % (name, where, t.dump(rep))
        assert notable(rep) == [burner], msg
        assert rep["samples"] == inside[name] > 0, msg
        assert not [f for f in rep["functions"] if f["name"] == "burn_outside"], msg
    both = t.tool_json("report", "--json", "--span", "alpha", "--span", "beta", path)
    assert both["samples"] == reps["alpha"]["samples"] + reps["beta"]["samples"]
    assert notable(both) == ["burn_alpha", "burn_beta"], t.dump(both)
    # Outside the spans: burn_outside's samples, which no --span report has.
    outside = [f for f in full["functions"] if f["name"] == "burn_outside"]
    assert outside and outside[0]["self"] > 0, t.dump(full)
    assert full["samples"] >= both["samples"] + outside[0]["self"], t.dump(full)


# ---- a log cut inside open spans ------------------------------------------------------------

def test_cut_inside_spans(tmp_path):
    """The process is killed (SIGKILL) inside two open spans, after a `pyprof ctl flush`
    made the log hold what it had sampled: the log has no footer, and the tool still
    reads it whole, the spans unfinished, lasting to the end of its data, with the CPU
    burnt inside them (the program measured it before the flush: at least that much,
    less one sample, 5 % and a period for each sample the library dropped, which
    `pyprof ctl status` counts: a handler preempted on a busy machine makes it skip up
    to 9 signals), in burn_forever."""
    out = str(tmp_path / "logs")
    proc = t.start([DEBIAN_PYTHON, t.workload("spans_cut.py")], out,
                   env={"PYTHONPATH": PYPKG, "PYPROF_PERIOD": "1ms"})
    # A hang guard only: the program never ends by itself.
    guard = threading.Timer(t.TIMEOUT, proc.proc.kill)
    guard.start()
    line = proc.proc.stdout.readline()
    try:
        said = json.loads(line.decode())
        flushed = t.tool("ctl", proc.proc.pid, "flush", timeout=60)
        assert flushed.returncode == 0 and flushed.stdout.startswith("ok"), flushed
        status = t.tool("ctl", proc.proc.pid, "status", timeout=60)
        assert status.returncode == 0, status
        dropped = [int(ln.split()[1]) for ln in status.stdout.splitlines()
                   if ln.startswith("dropped:")]
        assert len(dropped) == 1, status.stdout
    finally:
        proc.proc.send_signal(signal.SIGKILL)
        guard.cancel()
    run = proc.wait()
    assert run.rc == -signal.SIGKILL, run.describe()
    (path,) = run.logs
    info = t.tool_bytes("info", path)
    assert info.returncode == 0, info.stderr
    assert b"truncated" in info.stderr + info.stdout, info
    assert b"2 started, 0 stopped; 2 unfinished (no stop in the logs)" in info.stdout, info
    rep = t.report(path)
    pr = rep["processes"][0]
    assert pr["truncated"] is True and pr["spans_lost"] is None, t.dump(rep)
    assert (pr["spans"], pr["spans_unfinished"]) == (2, 2), t.dump(rep)
    (tr,) = t.tool_json("trace", "list", "--json", path)["traces"]
    assert (tr["spans"], tr["unfinished"], tr["pids"], tr["root"]) == (
        2, 2, [run.pid], "cut-outer"), tr
    show = t.tool_json("trace", "show", tr["trace_id"], "--json", path)
    assert tree_of(show) == ("total", [("cut-outer", [("cut-inner", [])])])
    outer = show["children"][0]
    inner = outer["children"][0]
    for node in (outer, inner):
        info = node["info"]
        q = info["pyprof"]
        assert q["unfinished"] is True, info
        assert not [k for k in info if k.endswith("-stop")] and "exception" not in info
        # To the end of the process's data: the same end for both.
        assert q["finished_us"] == outer["info"]["pyprof"]["finished_us"], info
        msg = "burnt %.1f ms before the flush, %d samples dropped\n%s" % (
            said["burnt_ms"], dropped[0], json.dumps(q))
        assert q["cpu_ms"] >= 0.95 * said["burnt_ms"] - 1 - dropped[0], msg
        assert q["top_functions"][0]["function"] == "burn_forever", msg
    assert outer["info"]["meta.raw_payload.cut-outer-start"]["info"] == {
        "request": "GET /slow"}
    text = t.tool_bytes("trace", "show", tr["trace_id"], path)
    assert text.returncode == 0
    assert text.stdout.decode().count("(unfinished)") == 2, text.stdout
    check_osprofiler_file(tr["trace_id"], path, tmp_path)


def check_osprofiler_file(trace_id, path, tmp_path):
    ours = str(tmp_path / "trace.json")
    res = t.tool_bytes("trace", "show", trace_id, "--json", "-o", ours, path)
    assert res.returncode == 0, res.stderr
    return check_osprofiler(ours, tmp_path)


# ---- hostile names ----------------------------------------------------------------------

C_NAMES = [b'q"uote\\back', b"<script>alert(1)</script>", b"bad\xff\xfeutf8", b"new\nline",
           b"tab\tand\x1b[2Jesc"]
PY_NAME = u"py<script>\"x\"\n</script>"


def page_data(html):
    m = re.search(r'<script id="pyprof-data" type="application/json">(.*?)</script>', html,
                  re.S)
    assert m, "no data element in the page"
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def names_logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("names")
    run = debian("spans_names.py", str(d / "logs"))
    facts = json.loads(run.stdout.decode())
    assert all(facts["ids"]) and all(facts["stops"]), run.describe()
    (path,) = run.logs
    return run, path


def test_hostile_names_json(names_logs, tmp_path):
    run, path = names_logs
    lst = t.tool_json("trace", "list", "--json", path)["traces"]
    assert sorted(tr["spans"] for tr in lst) == [2, 5], lst
    (c,) = [tr for tr in lst if tr["trace_id"] == "E<1>"]
    assert c["root"] == C_NAMES[0].decode() and c["unfinished"] == 0
    show = t.tool_json("trace", "show", "E<1>", "--json", path)
    spans = nodes(show)
    # Nested in one another, named as given; invalid UTF-8 shows as U+FFFD.
    assert [n["info"]["name"] for n in spans] == [
        n.decode("utf-8", "replace") for n in C_NAMES]
    assert [len(n["children"]) for n in spans] == [1, 1, 1, 1, 0]
    assert [n["trace_id"] for n in spans] == ["t<%d>" % i for i in range(5)]
    infos = [n["info"]["meta.raw_payload.%s-start" % n["info"]["name"]].get("info")
             for n in spans]
    assert infos[0] == {"k": "</script><b>bold</b>"}
    assert infos[1] == {"unparsed": '{"broken": '}
    assert infos[2] in ({"bytes": u"\ufffd\ufffd"}, {"unparsed": u'{"bytes": "\ufffd\ufffd"}'})
    assert infos[3] is None and infos[4] == {"n": 1}
    for n in spans:
        stop = n["info"]["meta.raw_payload.%s-stop" % n["info"]["name"]]
        assert stop["info"] == {"end": "</script>"}
    assert show["stats"][C_NAMES[3].decode()]["count"] == 1
    check_osprofiler_file("E<1>", path, tmp_path)
    (py,) = [tr for tr in lst if tr["trace_id"] != "E<1>"]
    assert py["root"] == PY_NAME
    pys = t.tool_json("trace", "show", py["trace_id"], "--json", path)
    assert tree_of(pys) == ("total", [(PY_NAME, [(u"inner&<i>", [])])])
    start = pys["children"][0]["info"]["meta.raw_payload.%s-start" % PY_NAME]
    assert start["info"] == {"note": "</script><!--", "amp": "&amp;"}
    check_osprofiler_file(py["trace_id"], path, tmp_path)


def test_hostile_names_html_dot_text(names_logs, tmp_path):
    run, path = names_logs
    lst = t.tool_json("trace", "list", "--json", path)["traces"]
    for tr in lst:
        page = str(tmp_path / "t.html")
        res = t.tool_bytes("trace", "show", tr["trace_id"], "--html", "-o", page, path)
        assert res.returncode == 0, res.stderr
        html = open(page, encoding="utf-8").read()
        # The program's strings are only in the data element, where no '<', '>' or '&'
        # can end it or open anything.
        raw = html.split('<script id="pyprof-data" type="application/json">', 1)[1]
        raw = raw.split("</script>", 1)[0]
        assert not set("<>&") & set(raw), raw[:2000]
        for bad in ("alert(1)", "bold", "py<", "inner&", "E<1>", "t<0>", "uote"):
            assert bad not in html.replace(raw, ""), bad
        data = page_data(html)
        assert data["pyprof"]["trace_id"] == tr["trace_id"]
        assert data == t.tool_json("trace", "show", tr["trace_id"], "--json", path)
        dot = t.tool_bytes("trace", "show", tr["trace_id"], "--dot", path)
        assert dot.returncode == 0, dot.stderr
        text = dot.stdout.decode()
        lines = text.splitlines()
        assert lines[0].startswith("digraph ") and lines[-1] == "}", text
        for ln in lines[1:-1]:
            assert re.match(r'^  (graph|node|total|s\d+)[ ;]', ln), ln
        drawn = subprocess.run(["dot", "-Tsvg"], input=dot.stdout, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        assert drawn.returncode == 0, drawn.stderr
        plain = t.tool_bytes("trace", "show", tr["trace_id"], path)
        assert plain.returncode == 0
        for ch in (b"\x1b", b"\t"):
            assert ch not in plain.stdout
        # One line per span, the header first.
        assert len(plain.stdout.splitlines()) == tr["spans"] + 1, plain.stdout
    text = t.tool_bytes("trace", "show", "E<1>", "--dot", path).stdout.decode()
    assert 'q\\"uote\\\\back' in text and "new?line" in text and "\ufffd" in text
    assert "tab?and?[2Jesc" in text
    # The viewer carries them as escaped JSON too.
    page = str(tmp_path / "v.html")
    res = t.tool_bytes("html", path, "-o", page)
    assert res.returncode == 0, res.stderr
    html = open(page, encoding="utf-8").read()
    assert "<script>alert(1)" not in html and "py<script>" not in html
    assert sorted(s["name"] for s in page_data(html)["spans"]) == sorted(
        [n.decode("utf-8", "replace") for n in C_NAMES] + [PY_NAME, u"inner&<i>"])


def test_unknown_trace_id_real(names_logs):
    run, path = names_logs
    for tid in ("nope", "E<2>", "E<1>\n", ""):
        res = t.tool_bytes("trace", "show", tid, "--json", path)
        err = res.stderr.decode()
        assert res.returncode == 1 and not res.stdout, (tid, res)
        assert err.count("\n") == 1 and "not in the logs given" in err, err
        assert "2 traces there" in err, err


# ---- spans_lost --------------------------------------------------------------------------

def test_spans_lost(tmp_path):
    """The library's buffer full: what pyprof_span_start and pyprof_span_stop refused
    (they returned 0) is the footer's spans_lost, shown by `info` and `report --json`; the
    spans whose stop was refused are unfinished."""
    run = debian("spans_flood.py", str(tmp_path / "logs"))
    facts = json.loads(run.stdout.decode())
    lost = facts["refused_starts"] + facts["refused_stops"]
    assert lost >= 100, facts  # the flood did overflow the buffer
    (path,) = run.logs
    assert spanlog.Log(path).spans_lost == lost
    pr = t.report(path)["processes"][0]
    assert pr["spans_lost"] == lost, pr
    assert pr["spans"] == facts["starts"] - facts["refused_starts"], (facts, pr)
    assert pr["spans_unfinished"] == facts["refused_stops"], (facts, pr)
    info = t.tool_bytes("info", path)
    assert info.returncode == 0
    assert ("; %d starts and stops lost (the library's buffer was full)" % lost
            ).encode() in info.stdout, info.stdout
    # A log with the span section and nothing lost says 0, and info says nothing of it.
    run = debian("spans_two.py", str(tmp_path / "two"))
    (path,) = run.logs
    assert t.report(path)["processes"][0]["spans_lost"] == 0
    spans_line = [ln for ln in t.tool_bytes("info", path).stdout.decode().splitlines()
                  if ln.split()[:1] == ["spans"]]
    assert spans_line == ["  spans           6 started, 6 stopped"], spans_line
