"""`pyprof export` and `pyprof tree`, checked by the programs that read each format.

Two kinds of input:

  * a real log: workloads/accuracy.py profiled under the library (burn_a is the hot
    function), whose exports are opened by their real consumers and compared with
    `pyprof report --json` of the same log:
      pstats      python3's pstats (sort_stats("cumulative").print_stats(5)): burn_a is
                  listed, its cumtime and tottime shares within 5 points of the report's
      pprof       `go tool pprof -top`: the report's top functions, same flat and cum
      speedscope  validated against the schema the npm package `speedscope` ships; the
                  weights add up to the samples times the period
      callgrind   `callgrind_annotate`: burn_a first, the totals are the samples
      folded      the counts add up to the samples
      chrome      valid trace-event JSON, events nest per thread, burn_a's share
  * a log written here record by record (tests/fixtures/make_fixtures.py's encoders)
    whose every number is known: recursion, two threads, and a function and a thread
    whose names hold quotes, backslashes, ';', a newline, a control character, markup
    and bytes that are not UTF-8.  Each format's exact content is checked.

Plus the tree's arithmetic (shares add up, --min prunes, --depth cuts), several logs
and the filters, and bad input (one line, exit 1; usage errors exit 2).  And --memory on
tests/fixtures/alloc.lz4, whose allocations are known: report --memory --json's totals
and functions, folded's bytes per stack, and pprof's heap profile through `go tool
pprof` against the same numbers computed here.
"""

import gzip
import json
import math
import os
import re
import subprocess
import sys
from collections import defaultdict

import pytest

import pyprof_testlib as t

sys.path.insert(0, t.FIXTURES)
import make_fixtures as mf  # noqa: E402  (the log encoders, shared with the fixtures)

ACC = t.workload("accuracy.py")
TOLERANCE = 5.0  # points of percentage
FORMATS = ["folded", "pstats", "callgrind", "speedscope", "pprof", "chrome"]
CONSUMERS = os.environ.get("PYPROF_CONSUMERS") or os.path.join(t.REPO, "build", "consumers")
SCHEMA = os.path.join(CONSUMERS, "node_modules", "speedscope", "dist", "release",
                      "file-format-schema.json")


def export(fmt, out, *args):
    """Runs `pyprof export -f FMT ARGS -o OUT`; fails the test unless it succeeds with
    nothing on stderr.  Returns OUT."""
    res = t.tool("export", "-f", fmt, *(list(args) + ["-o", out]))
    assert res.returncode == 0 and not res.stderr, (
        "pyprof export -f %s %s: exit %s\n%s" % (fmt, " ".join(map(str, args)),
                                                  res.returncode, res.stderr))
    assert os.path.isfile(out), "no file written: %s" % out
    return str(out)


def consumer(argv, **kw):
    """Runs a consumer program; fails the test when it fails.  Returns its stdout."""
    res = subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=t.TIMEOUT, **kw)
    res.stdout = res.stdout.decode("utf-8", "replace")
    res.stderr = res.stderr.decode("utf-8", "replace")
    assert res.returncode == 0, "$ %s\nexit %s\n%s\n%s" % (
        " ".join(map(str, argv)), res.returncode, res.stdout[-3000:], res.stderr[-3000:])
    return res.stdout


def pct(part, whole):
    return 100.0 * part / whole


# ---- the real log ----------------------------------------------------------------------


class RealLog(object):
    def __init__(self, path, rep):
        self.path = path
        self.rep = rep
        self.samples = rep["samples"]
        self.period_us = rep["processes"][0]["period_ns"] // 1000
        self.by_name = dict((f["name"], f) for f in rep["functions"])

    def top(self, n):
        """The report's top n functions by self samples."""
        return [f for f in self.rep["functions"] if f["self"] > 0][:n]

    def top_names(self, n):
        """The names of the top n functions, and of those tied with the n-th."""
        top = self.top(n)
        return set(f["name"] for f in self.rep["functions"] if f["self"] >= top[-1]["self"])

    def share(self, name, key):
        return pct(self.by_name[name][key], self.samples)

    def dump(self):
        return t.dump(self.rep, functions=12)


@pytest.fixture(scope="module", params=("py3.11",) + t.SID_IDS)
def real(tmp_path_factory, request):
    """accuracy.py at a 2 ms period on 3.11 and on the newest interpreters: about two
    thousand samples (its CPU, not its wall time, is calibrated), burn_a the hot
    function (twice the next one's CPU)."""
    interp = t.by_id(request.param)[0].require()
    d = tmp_path_factory.mktemp("real")
    measured = str(d / "measured.json")
    prof = t.run([interp.path, ACC], str(d / "logs"),
                 env={"PYPROF_PERIOD": "2ms", "WORKLOAD_RESULT": measured})
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")
    log = RealLog(prof.logs[0], p.rep)
    # One sample per 2 ms of the CPU the workload measured for itself (a fixed amount,
    # whatever the machine's load), of which at least half.
    with open(measured) as f:
        t.check_cpu_samples(p, json.load(f)["total"])
    hot = log.top(1)[0]
    assert hot["name"] == "burn_a", "burn_a is not the hot function\n" + log.dump()
    return log


def test_pstats_real(real, tmp_path):
    out = export("pstats", str(tmp_path / "prof.pstats"), real.path)
    text = consumer([sys.executable, "-c",
                     "import pstats, sys; "
                     "pstats.Stats(sys.argv[1]).sort_stats('cumulative').print_stats(5)",
                     out])
    head = re.search(r"(\d+) function calls(?: \((\d+) primitive calls\))? in ([\d.]+) "
                     r"seconds", text)
    assert head, "no summary line in pstats' output:\n" + text
    seconds = float(head.group(3))
    want = real.samples * real.period_us / 1e6
    assert seconds == pytest.approx(want, rel=0.01), (
        "pstats total %s s, the samples stand for %s s\n%s" % (seconds, want, text))
    rows = {}
    for m in re.finditer(r"^\s*(\d+(?:/\d+)?)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+"
                         r"(\S.*):(\d+)\((.*)\)\s*$", text, re.M):
        rows[m.group(6)] = (float(m.group(2)), float(m.group(3)), m.group(4))
    assert len(rows) == 5, "print_stats(5) should list 5 functions:\n" + text
    assert "burn_a" in rows, "pstats' top 5 by cumulative time lacks burn_a:\n" + text
    tottime, cumtime, path = rows["burn_a"]
    assert t.same_file(path, ACC), text
    where = "pstats:\n%s\nreport:\n%s" % (text, real.dump())
    assert abs(pct(cumtime, seconds) - real.share("burn_a", "total")) <= TOLERANCE, where
    assert abs(pct(tottime, seconds) - real.share("burn_a", "self")) <= TOLERANCE, where
    # The listing is sorted by cumulative time, as the report's totals are.
    cums = [v[1] for v in rows.values()]
    assert cums == sorted(cums, reverse=True), where


def pprof_top(path, *opts):
    """`go tool pprof -top` rows: {name: (flat, cum)} as printed, in order."""
    env = dict(os.environ, PPROF_TMPDIR=os.path.dirname(path), HOME=os.path.dirname(path))
    text = consumer(["go", "tool", "pprof", "-top"] + list(opts) + [path], env=env)
    rows = []
    for m in re.finditer(r"^\s*(\S+)\s+[\d.]+%\s+[\d.]+%\s+(\S+)\s+[\d.]+%\s+(.+?)\s*$",
                         text, re.M):
        rows.append((m.group(3), m.group(1), m.group(2)))
    assert rows, "no rows in go tool pprof -top:\n" + text
    return rows, text


def seconds(v):
    """A pprof duration ("1.23s", "450ms", "0") in seconds."""
    if v == "0":
        return 0.0
    m = re.match(r"^([\d.]+)(ns|us|ms|s|mins|hrs)$", v)
    assert m, "unexpected pprof value %r" % v
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "hrs": 3600.0}
    return float(m.group(1)) * scale[m.group(2)]


def test_pprof_real(real, tmp_path):
    out = export("pprof", str(tmp_path / "prof.pb.gz"), real.path)
    with open(out, "rb") as f:
        assert f.read(2) == b"\x1f\x8b", "not gzipped"
    rows, text = pprof_top(out, "-sample_index=samples")
    where = "go tool pprof -top:\n%s\nreport:\n%s" % (text, real.dump())
    got = dict((name, (int(flat), int(cum))) for name, flat, cum in rows)
    top = real.top(4)
    # The same top functions (ties in any order), with the same self and total.
    assert [int(r[1]) for r in rows[:4]] == [f["self"] for f in top], where
    assert set(r[0] for r in rows[:4]) <= real.top_names(4), where
    for f in top:
        assert got.get(f["name"]) == (f["self"], f["total"]), (
            "%s: pprof (flat, cum) %r, report (self, total) %r\n%s"
            % (f["name"], got.get(f["name"]), (f["self"], f["total"]), where))
    # The default sample type: CPU time, the samples times the period.
    rows, text = pprof_top(out)
    got = dict((name, seconds(flat)) for name, flat, cum in rows)
    want = real.by_name["burn_a"]["self"] * real.period_us / 1e6
    assert got["burn_a"] == pytest.approx(want, rel=0.02, abs=0.011), text


def test_speedscope_real(real, tmp_path):
    import jsonschema  # Debian's python3-jsonschema, installed by make deps
    assert os.path.isfile(SCHEMA), (
        "speedscope's schema is missing: %s (make consumers installs the npm package)"
        % SCHEMA)
    with open(SCHEMA) as f:
        schema = json.load(f)
    out = export("speedscope", str(tmp_path / "prof.speedscope.json"), real.path)
    with open(out) as f:
        doc = json.load(f)
    jsonschema.validate(doc, schema)
    where = "speedscope file %s\nreport:\n%s" % (out, real.dump())
    assert len(doc["profiles"]) == len(real.rep["threads"]), where
    total = sum(sum(p["weights"]) for p in doc["profiles"])
    assert total == real.samples * real.period_us, where
    frames = doc["shared"]["frames"]
    burn_a = [i for i, fr in enumerate(frames) if fr["name"] == "burn_a"]
    assert len(burn_a) == 1 and t.same_file(frames[burn_a[0]]["file"], ACC), where
    weight = sum(w for p in doc["profiles"] for s, w in zip(p["samples"], p["weights"])
                 if burn_a[0] in s)
    assert abs(pct(weight, total) - real.share("burn_a", "total")) <= TOLERANCE, where
    for p in doc["profiles"]:
        assert p["endValue"] == sum(p["weights"]) and p["unit"] == "microseconds", where


def annotate_rows(text):
    """callgrind_annotate's function table: [(samples, "file:function")]."""
    rows = []
    for m in re.finditer(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+[\d,]+ \(\s*[\d.]+%\)\s+(.+?)\s*$",
                         text, re.M):
        rows.append((int(m.group(1).replace(",", "")), m.group(2)))
    return rows


def test_callgrind_real(real, tmp_path):
    out = export("callgrind", str(tmp_path / "callgrind.out.acc"), real.path)
    text = consumer(["callgrind_annotate", out])
    rows = annotate_rows(text)
    where = "callgrind_annotate:\n%s\nreport:\n%s" % (text, real.dump())
    assert rows and rows[0][1] == "PROGRAM TOTALS", where
    assert rows[0][0] == real.samples, where
    first = rows[1]
    assert first[1].endswith(":burn_a") and t.same_file(first[1][:-len(":burn_a")], ACC), where
    assert first[0] == real.by_name["burn_a"]["self"], where


def test_folded_real(real, tmp_path):
    out = export("folded", str(tmp_path / "prof.folded"), real.path)
    counts = defaultdict(int)
    total = 0
    with open(out, "rb") as f:
        for line in f:
            stack, _, n = line.rstrip(b"\n").rpartition(b" ")
            assert stack and n.isdigit(), "bad folded line %r" % line
            total += int(n)
            counts[stack.split(b";")[-1].split(b" (")[0].decode()] += int(n)
    assert total == real.samples, "folded counts add up to %d, %d samples" % (
        total, real.samples)
    for f in real.top(3):
        assert counts[f["name"]] == f["self"], (f, dict(counts))


def trace_events(path):
    """The events of a trace-event JSON file, checked for the format's shape."""
    with open(path) as f:
        doc = json.load(f)
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), str(doc)[:500]
    for e in doc["traceEvents"]:
        assert e.get("ph") in ("X", "M"), e
        assert isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), e
        assert isinstance(e.get("name"), str), e
        if e["ph"] == "X":
            assert isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0, e
            assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, e
        else:
            assert e["name"] in ("process_name", "thread_name"), e
            assert isinstance(e["args"]["name"], str), e
    return doc["traceEvents"]


def nest(events):
    """Per (pid, tid): the X events with their nesting depth; fails on overlap."""
    by_thread = defaultdict(list)
    for i, e in enumerate(events):
        if e["ph"] == "X":
            by_thread[(e["pid"], e["tid"])].append((i, e))
    out = []
    for key, evs in by_thread.items():
        # Events with the same begin and length nest in the order of the file.
        evs.sort(key=lambda ie: (ie[1]["ts"], -ie[1]["dur"], ie[0]))
        stack = []
        for _, e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                top = stack[-1]
                assert e["ts"] + e["dur"] <= top["ts"] + top["dur"], (
                    "events overlap without nesting on %r: %r and %r" % (key, top, e))
            out.append((len(stack), e))
            stack.append(e)
    return out


def chrome_root_us(samples, period_us):
    """The total duration of the chrome export's root events, from the samples: each
    sample at t stands for [t - w, t] (w its cpu_us, else the period); per thread in
    time order, a sample starting more than w after the previous one ended starts a new
    run, one starting before it ended is clipped to begin there."""
    by_thread = defaultdict(list)
    for t_us, thread, _stack, cpu_us in samples:
        by_thread[thread].append((t_us, cpu_us or period_us))
    total = 0
    for runs in by_thread.values():
        runs.sort(key=lambda s: s[0])  # stable: ties keep file order, as the export's
        begin = last_end = None
        for t_us, w in runs:
            a, b = t_us - w, t_us
            if last_end is not None and a > last_end + w:
                total += last_end - begin
                begin = None
            elif last_end is not None and a < last_end:
                a = last_end
            a = max(a, 0)
            b = max(b, a)
            if begin is None:
                begin = a
            last_end = b
        if begin is not None:
            total += last_end - begin
    return total


def test_chrome_real(real, tmp_path):
    out = export("chrome", str(tmp_path / "trace.json"), real.path)
    events = trace_events(out)
    pid = real.rep["processes"][0]["pid"]
    names = [e for e in events if e["ph"] == "M"]
    assert any(e["name"] == "process_name" and e["pid"] == pid for e in names), names
    assert any(e["name"] == "thread_name" and e["pid"] == pid for e in names), names
    nested = nest(events)
    roots = sum(e["dur"] for depth, e in nested if depth == 0)
    burn_a = sum(e["dur"] for depth, e in nested if e["name"] == "burn_a")
    where = "chrome: roots %d us, burn_a %d us\n%s" % (roots, burn_a, real.dump())
    # The export's promise (docs/EXPORTS.md): per thread, the root events cover
    # the union of the samples' intervals [t - w, t] and bridge a gap no longer than the
    # later sample's w.  Computed here from the samples themselves, decoded
    # independently of the tool: wall-clock jitter moves both sides alike.
    want = chrome_root_us(mf.samples_of(real.path), real.period_us)
    assert roots == want, where + "\nthe samples' intervals and bridged gaps: %d us" % want
    # And so no more than twice what the samples stand for, never less than one period.
    assert real.period_us <= roots <= 2 * real.samples * real.period_us, where
    assert abs(pct(burn_a, roots) - real.share("burn_a", "total")) <= TOLERANCE, where


# ---- the tree of the real log ------------------------------------------------------------


def tree_json(*args):
    res = t.tool("tree", "--json", *args)
    assert res.returncode == 0 and not res.stderr, res.stderr
    return json.loads(res.stdout)


def walk(nodes, depth=1):
    for n in nodes:
        yield depth, n
        for x in walk(n["children"], depth + 1):
            yield x


TREE_LINE = re.compile(r"^\s+([\d.]+)%\s+(\d+)\s+([\d.]+)%\s+(\d+)  ((?:\|  |   )*)"
                       r"(\|- |`- )?(.*)$")


def tree_text(*args):
    """`pyprof tree` text: [(depth, total%, total, self%, self, function)].  Names are
    printed as the log has them, so bytes that are not UTF-8 show as U+FFFD here."""
    res = subprocess.run([t.TOOL, "tree"] + [str(a) for a in args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=t.TIMEOUT)
    assert res.returncode == 0 and not res.stderr, res.stderr
    lines = res.stdout.decode("utf-8", "replace").splitlines()
    assert lines[0].startswith("pyprof tree:") and "function" in lines[1], res.stdout
    out = []
    for line in lines[2:]:
        m = TREE_LINE.match(line)
        assert m, "unexpected tree line %r" % line
        depth = len(m.group(5)) // 3 + (2 if m.group(6) else 1)
        out.append((depth, float(m.group(1)), int(m.group(2)), float(m.group(3)),
                    int(m.group(4)), m.group(7)))
    return out


def test_tree_real(real):
    tree = tree_json("--min", "0", real.path)
    n = real.samples
    assert tree["samples"] == n
    assert sum(r["total"] for r in tree["roots"]) + 0 <= n
    for depth, node in walk(tree["roots"]):
        kids = sum(c["total"] for c in node["children"])
        assert node["total"] == node["self"] + kids, ("shares do not add up", node["name"])
    # Each function's self summed over the tree is its self in the report (and total, for
    # a function that never recurses).
    self_by, total_by = defaultdict(int), defaultdict(int)
    for depth, node in walk(tree["roots"]):
        self_by[node["name"]] += node["self"]
        total_by[node["name"]] += node["total"]
    assert sum(self_by.values()) == n
    for f in real.top(5):
        assert self_by[f["name"]] == f["self"], (f, self_by[f["name"]])
    assert total_by["burn_a"] == real.by_name["burn_a"]["total"]

    # The text shows the same tree, line for line.
    text = tree_text("--min", "0", real.path)
    flat = [(d, nd["total"], nd["self"], nd["name"]) for d, nd in walk(tree["roots"])]
    assert [(d, tot, s, f.split(" (")[0]) for d, _, tot, _, s, f in text] == flat
    for d, tp, tot, sp, s, f in text:
        assert abs(tp - pct(tot, n)) <= 0.051 and abs(sp - pct(s, n)) <= 0.051

    # --min hides the calls below it, and only those.
    pruned = tree_json("--min", "5", real.path)
    want = [(d, nd["total"], nd["name"]) for d, nd in walk(tree["roots"])
            if nd["total"] * 100 >= 5 * n]
    got = [(d, nd["total"], nd["name"]) for d, nd in walk(pruned["roots"])]
    assert got == want and got, (got, want)
    # --depth cuts below N levels; the text marks the cut lines.
    cut = tree_json("--min", "0", "--depth", "3", real.path)
    assert max(d for d, _ in walk(cut["roots"])) == 3
    assert [(d, nd["total"]) for d, nd in walk(cut["roots"])] == [
        (d, nd["total"]) for d, nd in walk(tree["roots"]) if d <= 3]
    text = tree_text("--min", "0", "--depth", "3", real.path)
    assert max(line[0] for line in text) == 3
    assert any(line[5].endswith(" ...") for line in text if line[0] == 3)


# ---- a log whose every number is known ---------------------------------------------------

MAIN = "/app/main.py"
WEIRD = b'odd;name "q" \\ \x01\n<img src=x onerror=alert(1)> \xff'
WEIRD_FILE = b"/app/we;ird\xfe.py"
THREAD1 = 'w"orker\n<b>'
PERIOD_US = 10000
# (thread index, stack id, samples), in time order.
PLAN = [(0, 0, 50), (0, 1, 30), (0, 3, 5), (1, 2, 15)]
STACKS = {
    0: [(16, 5), (17, 12), (20, 41)],                               # <module> main leaf
    1: [(16, 5), (17, 13), (18, 21), (18, 22), (18, 22), (20, 42)],  # ... rec rec rec leaf
    2: [(16, 5), (17, 14), (19, 31)],                               # <module> main WEIRD
    3: [(16, 6)],                                                   # <module>
}


def u(b):
    """What a reader shows of bytes from the log: invalid UTF-8 as U+FFFD."""
    return b.decode("utf-8", "replace")


def known_log(path, pid=4242, tids=(100, 101)):
    out = [mf.MAGIC, mf.header(pid=pid)]
    out.append(mf.thread(0, tids[0], "MainThread"))
    out.append(mf.thread(1, tids[1], THREAD1))
    out.append(mf.code(16, 1, "<module>", "", MAIN))
    out.append(mf.code(17, 10, "main", "", MAIN))
    out.append(mf.code(18, 20, "rec", "Rec.rec", MAIN))
    out.append(mf.code(19, 30, WEIRD, b"", WEIRD_FILE))
    out.append(mf.code(20, 40, "leaf", "", MAIN))
    for sid in sorted(STACKS):
        out.append(mf.stack(sid, STACKS[sid]))
    n = 0
    for thread, sid, count in PLAN:
        for _ in range(count):
            out.append(mf.sample(PERIOD_US, thread, sid, PERIOD_US))
            n += 1
    out.append(mf.footer(n, n, n * PERIOD_US, {}))
    with open(str(path), "wb") as f:
        f.write(mf.lz4(b"".join(out)))
    return str(path)


@pytest.fixture
def known(tmp_path):
    return known_log(tmp_path / "known.lz4")


def folded_lines(path):
    with open(path, "rb") as f:
        return sorted(f.read().splitlines())


def test_folded_known(known, tmp_path):
    m, main = b"<module> (/app/main.py:1)", b"main (/app/main.py:10)"
    leaf, rec = b"leaf (/app/main.py:40)", b"Rec.rec (/app/main.py:20)"
    weird = b'odd:name "q" \\ ??<img src=x onerror=alert(1)> \xff (/app/we:ird\xfe.py:30)'
    assert folded_lines(export("folded", str(tmp_path / "a"), known)) == sorted([
        b";".join([m, main, leaf]) + b" 50",
        b";".join([m, main, rec, rec, rec, leaf]) + b" 30",
        m + b" 5",
        b";".join([m, main, weird]) + b" 15"])
    # --lines: each frame shows the line it was running.
    lines = folded_lines(export("folded", str(tmp_path / "b"), "--lines", known))
    assert (b"<module> (/app/main.py:5);main (/app/main.py:13);Rec.rec (/app/main.py:21);"
            b"Rec.rec (/app/main.py:22);Rec.rec (/app/main.py:22);leaf (/app/main.py:42) 30"
            in lines), lines
    assert b"<module> (/app/main.py:6) 5" in lines, lines
    # To standard output with -o -.
    res = subprocess.run([t.TOOL, "export", "-f", "folded", known, "-o", "-"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert res.returncode == 0 and sorted(res.stdout.splitlines()) == folded_lines(
        str(tmp_path / "a")), res.stderr


def test_pstats_known(known, tmp_path):
    out = export("pstats", str(tmp_path / "k.pstats"), known)
    code = ("import json, marshal, pstats, sys\n"
            "raw = open(sys.argv[1], 'rb').read()\n"
            "d = marshal.loads(raw)\n"
            "assert marshal.loads(marshal.dumps(d)) == d\n"
            "s = pstats.Stats(sys.argv[1])\n"
            "print(json.dumps([[list(k), list(v[:4]), [[list(c), list(cv)] for c, cv in "
            "v[4].items()]] for k, v in s.stats.items()]))\n"
            "print(s.total_calls, s.prim_calls, s.total_tt)\n")
    text = consumer([sys.executable, "-c", code, out])
    stats_json, totals = text.splitlines()
    got = {}
    for key, vals, callers in json.loads(stats_json):
        got[tuple(key)] = (tuple(vals), dict((tuple(c), tuple(cv)) for c, cv in callers))
    mod, main = (MAIN, 1, "<module>"), (MAIN, 10, "main")
    rec, leaf = (MAIN, 20, "Rec.rec"), (MAIN, 40, "leaf")
    weird = (u(WEIRD_FILE), 30, u(WEIRD))
    # cc = samples with it on the stack, nc = its frames (every recursion level);
    # callers' tuples are (nc, cc, tt, ct) as cProfile writes them.
    want = {
        mod: ((100, 100, 0.05, 1.0), {}),
        main: ((95, 95, 0.0, 0.95), {mod: (95, 95, 0.0, 0.95)}),
        rec: ((30, 90, 0.0, 0.3), {main: (30, 30, 0.0, 0.3), rec: (60, 30, 0.0, 0.3)}),
        leaf: ((80, 80, 0.8, 0.8), {main: (50, 50, 0.5, 0.5), rec: (30, 30, 0.3, 0.3)}),
        weird: ((15, 15, 0.15, 0.15), {main: (15, 15, 0.15, 0.15)}),
    }
    assert set(got) == set(want), sorted(got)
    for k in want:
        assert got[k][0] == pytest.approx(want[k][0]), (k, got[k])
        assert set(got[k][1]) == set(want[k][1]), (k, got[k])
        for c in want[k][1]:
            assert got[k][1][c] == pytest.approx(want[k][1][c]), (k, c, got[k][1][c])
    calls, prim, tt = totals.split()
    assert (int(calls), int(prim), float(tt)) == (100 + 95 + 90 + 80 + 15,
                                                   100 + 95 + 30 + 80 + 15, pytest.approx(1.0))
    # `python3 -m pstats` and print_callers read it too.
    text = consumer([sys.executable, "-c", "import pstats, sys; s = pstats.Stats(sys.argv[1]);"
                     " s.sort_stats('tottime').print_stats(1); s.print_callers('rec')", out])
    assert re.search(r"^\s*80\s+0\.800\s+0\.010\s+0\.800\s+0\.010 /app/main.py:40\(leaf\)",
                     text, re.M), text
    assert re.search(r"60/30\s+0\.000\s+0\.300\s+/app/main.py:20\(Rec.rec\)", text), text


def test_callgrind_known(known, tmp_path):
    out = export("callgrind", str(tmp_path / "callgrind.out.k"), known)
    with open(out, "rb") as f:
        raw = f.read()
    assert raw.startswith(b"# callgrind format\n"), raw[:200]
    assert b"\nevents: Samples Time_us\n" in raw and b"\nsummary: 100 1000000\n" in raw, raw
    assert b"\ncfn=(4) odd;name \"q\" \\ ??<img src=x onerror=alert(1)> \xff\n" in raw, raw
    # The calls main makes: to leaf from line 12, rec from 13, the odd one from 14, each
    # with its inclusive cost; rec's recursive call counts once per sample.
    text = raw.decode("utf-8", "replace")
    assert re.search(r"cfn=\(5\)( leaf)?\ncalls=50 40\n12 50 500000\n", text), text
    assert re.search(r"cfn=\(3\)( Rec.rec)?\ncalls=30 20\n13 30 300000\n", text), text
    assert re.search(r"cfn=\(3\)\ncalls=30 20\n2[12] 30 300000\n", text), text
    rows = annotate_rows(consumer(["callgrind_annotate", out]))
    assert rows[0] == (100, "PROGRAM TOTALS"), rows
    assert rows[1] == (80, "/app/main.py:leaf"), rows
    assert rows[2][0] == 15 and rows[3] == (5, "/app/main.py:<module>"), rows
    # With --inclusive=yes the outermost function holds everything, recursion or not.
    rows = annotate_rows(consumer(["callgrind_annotate", "--inclusive=yes", out]))
    incl = dict((name, n) for n, name in rows)
    assert incl["/app/main.py:<module>"] == 100 and incl["/app/main.py:main"] == 95, rows
    assert incl["/app/main.py:leaf"] == 80, rows


def test_speedscope_known(known, tmp_path):
    import jsonschema
    assert os.path.isfile(SCHEMA), "speedscope's schema is missing: %s" % SCHEMA
    with open(SCHEMA) as f:
        schema = json.load(f)
    out = export("speedscope", str(tmp_path / "k.json"), known)
    with open(out, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))  # strict: the file must be UTF-8
    jsonschema.validate(doc, schema)
    frames = doc["shared"]["frames"]
    names = [fr["name"] for fr in frames]
    assert sorted(names) == sorted(["<module>", "main", "leaf", "Rec.rec", u(WEIRD)]), names
    odd = frames[names.index(u(WEIRD))]
    assert odd["file"] == u(WEIRD_FILE) and odd["line"] == 30, odd
    profs = doc["profiles"]
    assert [p["name"] for p in profs] == ["pid 4242 tid 100 (MainThread)",
                                          "pid 4242 tid 101 (%s)" % THREAD1], profs
    assert doc["activeProfileIndex"] == 0

    def stack(sid):
        return [names.index(n) for n in
                [["<module>", "main", "leaf"],
                 ["<module>", "main", "Rec.rec", "Rec.rec", "Rec.rec", "leaf"],
                 ["<module>", "main", u(WEIRD)], ["<module>"]][sid]]
    # Consecutive samples of one stack are merged, their weights summed.
    assert profs[0]["samples"] == [stack(0), stack(1), stack(3)], profs[0]
    assert profs[0]["weights"] == [500000, 300000, 50000], profs[0]
    assert profs[1]["samples"] == [stack(2)] and profs[1]["weights"] == [150000], profs[1]
    assert profs[0]["endValue"] == 850000 and profs[1]["endValue"] == 150000


def test_pprof_known(known, tmp_path):
    out = export("pprof", str(tmp_path / "k.pb.gz"), known)
    with gzip.open(out) as f:
        raw = f.read()
    assert b"<img src=x onerror=alert(1)>" in raw
    rows, text = pprof_top(out, "-sample_index=samples")
    got = dict((name, (int(flat), int(cum))) for name, flat, cum in rows)
    assert got["leaf"] == (80, 80) and got["main"] == (0, 95), text
    assert got["<module>"] == (5, 100), text
    assert got["Rec.rec"] == (0, 30), text  # recursion counted once per sample
    assert rows[0][0] == "leaf", text
    rows, text = pprof_top(out)
    got = dict((name, (seconds(flat), seconds(cum))) for name, flat, cum in rows)
    assert got["leaf"] == pytest.approx((0.8, 0.8)) and got["<module>"][1] == pytest.approx(1.0)
    env = dict(os.environ, PPROF_TMPDIR=str(tmp_path), HOME=str(tmp_path))
    tags = consumer(["go", "tool", "pprof", "-tags", "-sample_index=samples", out], env=env)
    assert re.search(r"^\s*pid: Total 100(\.0)?\s*$", tags, re.M), tags
    assert re.search(r"^\s*100(\.0)? \(\s*100%\): 4242\s*$", tags, re.M), tags
    assert re.search(r"^\s*85(\.0)? \(85\.00%\): 100\s*$", tags, re.M), tags
    assert re.search(r"^\s*15(\.0)? \(15\.00%\): 101\s*$", tags, re.M), tags
    assert re.search(r"^\s*85(\.0)? \(85\.00%\): MainThread\s*$", tags, re.M), tags
    # The source lines of each location.
    lines = consumer(["go", "tool", "pprof", "-top", "-lines", "-sample_index=samples", out],
                     env=env)
    assert re.search(r"\s80 .*leaf /app/main.py:4[12]", lines) or re.search(
        r"\s50 .*leaf /app/main.py:41", lines), lines


def test_chrome_known(known, tmp_path):
    out = export("chrome", str(tmp_path / "k.json"), known)
    with open(out, "rb") as f:
        json.loads(f.read().decode("utf-8"))
    events = trace_events(out)
    meta = dict(((e["name"], e["tid"]), e["args"]["name"]) for e in events if e["ph"] == "M")
    assert meta[("thread_name", 100)] == "MainThread"
    assert meta[("thread_name", 101)] == THREAD1
    assert meta[("process_name", 0)] == "python3 app.py --port 8080"
    got = sorted((e["tid"], e["ts"], e["dur"], e["name"], d) for d, e in nest(events))
    assert got == sorted([
        (100, 0, 850000, "<module>", 0), (100, 0, 800000, "main", 1),
        (100, 0, 500000, "leaf", 2), (100, 500000, 300000, "Rec.rec", 2),
        (100, 500000, 300000, "Rec.rec", 3), (100, 500000, 300000, "Rec.rec", 4),
        (100, 500000, 300000, "leaf", 5),
        (101, 850000, 150000, "<module>", 0), (101, 850000, 150000, "main", 1),
        (101, 850000, 150000, u(WEIRD), 2)]), got
    assert all(e["pid"] == 4242 for e in events)


def test_tree_known(known):
    tree = tree_json("--min", "0", known)
    flat = [(d, n["name"], n["total"], n["self"]) for d, n in walk(tree["roots"])]
    assert flat == [
        (1, "<module>", 100, 5), (2, "main", 95, 0), (3, "leaf", 50, 50),
        (3, "Rec.rec", 30, 0), (4, "Rec.rec", 30, 0), (5, "Rec.rec", 30, 0),
        (6, "leaf", 30, 30), (3, u(WEIRD), 15, 15)], flat
    text = tree_text("--min", "20", known)
    assert [(d, tp, name.split(" (")[0]) for d, tp, _, _, _, name in text] == [
        (1, 100.0, "<module>"), (2, 95.0, "main"), (3, 50.0, "leaf"), (3, 30.0, "Rec.rec"),
        (4, 30.0, "Rec.rec"), (5, 30.0, "Rec.rec"), (6, 30.0, "leaf")], text
    # A control character in a name never reaches the terminal.
    text = tree_text("--min", "0", known)
    assert text[-1][5] == (u'odd;name "q" \\ ??<img src=x onerror=alert(1)> \ufffd '
                           u'(/app/we;ird\ufffd.py:30)'), text
    text = tree_text("--min", "0", "--depth", "2", known)
    assert [line[5] for line in text] == ["<module> (/app/main.py:1)",
                                          "main (/app/main.py:10) ..."], text


# ---- several logs, filters ---------------------------------------------------------------


def test_several_logs_and_filters(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    known_log(d / "a.lz4", pid=4242, tids=(100, 101))
    known_log(d / "b.lz4", pid=4343, tids=(200, 201))
    ex = tmp_path / "ex"
    ex.mkdir()

    def folded_total(*args):
        path = export("folded", str(ex / "f"), *args)
        return sum(int(line.rsplit(b" ", 1)[1]) for line in folded_lines(path))
    assert folded_total(str(d)) == 200
    assert folded_total("--pid", "4343", str(d)) == 100
    assert folded_total("--thread", "201", str(d)) == 15
    # Samples every 10 ms from 10 ms on: 0.5 s to 0.8 s, both ends included, holds 31.
    assert folded_total("--from", "0.5", "--to", "0.8", str(d / "a.lz4")) == 31
    with open(export("speedscope", str(ex / "s.json"), str(d))) as f:
        profs = json.load(f)["profiles"]
    assert sorted(p["name"].split(" (")[0] for p in profs) == [
        "pid 4242 tid 100", "pid 4242 tid 101", "pid 4343 tid 200", "pid 4343 tid 201"]
    events = trace_events(export("chrome", str(ex / "c.json"), str(d)))
    assert set(e["pid"] for e in events) == {4242, 4343}
    tree = tree_json("--min", "0", str(d))
    assert [(n["name"], n["total"]) for n in tree["roots"]] == [("<module>", 200)]
    tree = tree_json("--min", "0", "--thread", "101", str(d))
    assert [(n["name"], n["total"]) for n in tree["roots"]] == [("<module>", 15)]
    # Filters that keep nothing: a warning, and a valid empty export.
    res = t.tool("export", "-f", "speedscope", "--from", "100", str(d), "-o", str(ex / "e"))
    assert res.returncode == 0 and "no samples" in res.stderr, res.stderr
    with open(str(ex / "e")) as f:
        assert json.load(f)["profiles"] == []


# ---- bad input ------------------------------------------------------------------------


BAD = ["not_a_log.txt", "empty.lz4", "not_pyprof.lz4", "newer_version.lz4", "corrupted.lz4"]
CMDS = [["tree"], ["export", "-f", "folded"], ["export", "-f", "pprof"],
        ["export", "-f", "chrome"]]


@pytest.mark.parametrize("name", BAD + ["missing.lz4"])
@pytest.mark.parametrize("cmd", CMDS, ids=["tree", "folded", "pprof", "chrome"])
def test_bad_input(cmd, name, tmp_path):
    path = os.path.join(t.FIXTURES, name) if name != "missing.lz4" else str(
        tmp_path / name)
    out = tmp_path / "out"
    out.write_bytes(b"keep")
    args = cmd + [path] + (["-o", str(out)] if cmd[0] == "export" else [])
    res = t.tool(*args)
    lines = res.stderr.splitlines()
    assert res.returncode == 1 and len(lines) == 1 and lines[0].strip(), (
        "pyprof %s: exit %s, stderr %r" % (" ".join(args), res.returncode, res.stderr))
    assert not res.stdout
    if name == "newer_version.lz4":
        assert "newer" in lines[0].lower(), lines
    # A log that could not be read leaves the output file alone.
    assert out.read_bytes() == b"keep"


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated(fmt, tmp_path):
    """A truncated log exports what it holds, with one warning."""
    trunc = os.path.join(t.FIXTURES, "truncated.lz4")
    n = t.tool("report", "--json", trunc)
    samples = json.loads(n.stdout)["samples"]
    out = str(tmp_path / ("t." + fmt))
    res = t.tool("export", "-f", fmt, trunc, "-o", out)
    warn = res.stderr.splitlines()
    assert res.returncode == 0 and len(warn) == 1 and "truncat" in warn[0].lower(), (
        res.returncode, res.stderr)
    raw = open(out, "rb").read()
    if fmt == "folded":
        assert sum(int(x.rsplit(b" ", 1)[1]) for x in raw.splitlines()) == samples
    elif fmt == "pstats":
        text = consumer([sys.executable, "-c",
                         "import pstats, sys; s = pstats.Stats(sys.argv[1]); "
                         "print(round(s.total_tt * 100))", out])
        assert int(text) == samples  # 10 ms per sample
    elif fmt == "pprof":
        assert gzip.decompress(raw)
    elif fmt == "callgrind":
        assert ("\nsummary: %d " % samples).encode() in raw
    else:
        json.loads(raw.decode("utf-8"))
    res = t.tool("tree", trunc)
    assert res.returncode == 0 and "truncat" in res.stderr.lower() and res.stdout


def test_usage_errors(known, tmp_path):
    res = t.tool("export", "-f", "svg", known, "-o", str(tmp_path / "x"))
    assert res.returncode == 2 and "'svg'" in res.stderr.splitlines()[0], res.stderr
    assert "folded" in res.stderr.splitlines()[0] and "chrome" in res.stderr, res.stderr
    res = t.tool("export", known, "-o", str(tmp_path / "x"))
    assert res.returncode == 2 and "format" in res.stderr, res.stderr
    res = t.tool("export", "-f", "folded")
    assert res.returncode == 2 and "no log" in res.stderr, res.stderr
    assert not os.path.exists(str(tmp_path / "x"))
    for args in (["--min", "101"], ["--min", "x"], ["--depth", "0"], ["--bogus"]):
        res = t.tool("tree", *(args + [known]))
        assert res.returncode == 2, (args, res.stderr)
    for cmd in ("tree", "export"):
        res = t.tool("help", cmd)
        assert res.returncode == 0 and "EXAMPLES" in res.stdout, res.stdout


def test_unwritable_output(known, tmp_path):
    for out in (str(tmp_path / "no" / "such" / "dir.json"), str(tmp_path)):
        res = t.tool("export", "-f", "speedscope", known, "-o", out)
        lines = res.stderr.splitlines()
        assert res.returncode == 1 and len(lines) == 1 and out in lines[0], (
            res.returncode, res.stderr)
    if os.path.exists("/dev/full"):
        res = t.tool("export", "-f", "chrome", known, "-o", "/dev/full")
        assert res.returncode == 1 and len(res.stderr.splitlines()) == 1, res.stderr


# ---- --memory: the sampled allocations of tests/fixtures/alloc.lz4 ----------------------

ALLOC_LOG = os.path.join(t.FIXTURES, "alloc.lz4")
# The same events in ALLOCS records (blocks named by ordinal and by address), as the
# library writes them: every view of it must be the same.
ALLOC_LOGS = [ALLOC_LOG, os.path.join(t.FIXTURES, "allocs.lz4")]


def alloc_expected():
    """make_fixtures.ALLOC_EVENTS, naively: per allocation (stack id, bytes, objects, in
    use at the end), a FREE ending the newest live block of its address."""
    allocs, live = [], {}
    for e in mf.ALLOC_EVENTS:
        if e[0] == "F":
            if live.get(e[2]):
                live[e[2]].pop()["inuse"] = False
            continue
        _, _, _, sid, size, addr, _, flags = e
        p = 1 - math.exp(-size / mf.ALLOC_INTERVAL)
        a = {"stack": sid, "bytes": size / p if size else mf.ALLOC_INTERVAL,
             "objects": 1 / p if size else 1, "inuse": not flags & mf.ALLOC_F_UNTRACKED}
        allocs.append(a)
        if a["inuse"]:
            live.setdefault(addr, []).append(a)
    return allocs


def alloc_path(sid):
    """Folded frames of make_fixtures.ALLOC_STACKS[sid], by function."""
    return b";".join(b"%s (/srv/app.py:%d)" % (mf.ALLOC_FUNCS[c - 16].encode(),
                                               10 * (c - 16) + 1)
                     for c, _ in mf.ALLOC_STACKS[sid])


@pytest.mark.parametrize("log", ALLOC_LOGS, ids=["records", "batched"])
def test_memory_known(tmp_path, log):
    allocs = alloc_expected()
    rep = t.tool_json("report", "--memory", "--json", log)
    tot = rep["total"]
    assert tot["samples"] == len(allocs) and tot["inuse_samples"] == 4, tot
    assert tot["alloc_bytes"] == round(sum(a["bytes"] for a in allocs)), tot
    assert tot["inuse_objects"] == round(sum(a["objects"] for a in allocs if a["inuse"])), tot
    assert rep["untracked"] == 1 and rep["freed"] == 2, rep
    (proc,) = rep["processes"]
    assert (proc["frees_unmatched"], proc["alloc_lost"], proc["alloc_live"]) == (1, 1, 4), proc
    # Per function: Cache.fill recurses on stack 3 and counts once there.
    by = dict((f["name"], f) for f in rep["functions"])
    fill = [a for a in allocs if a["stack"] == 3]
    assert by["Cache.fill"]["total"]["alloc_bytes"] == round(sum(a["bytes"] for a in fill))
    assert by["Cache.fill"]["self"] == by["Cache.fill"]["total"], by["Cache.fill"]
    assert by["<module>"]["self"]["samples"] == 0 and by["<module>"]["total"]["samples"] == 6
    # Folded: each stack's bytes, allocated and in use.
    for arg, key in (("--memory", "bytes"), ("--memory=inuse", "inuse")):
        want = defaultdict(float)
        for a in allocs:
            if key == "bytes" or a["inuse"]:
                want[a["stack"]] += a["bytes"]
        lines = folded_lines(export("folded", str(tmp_path / arg), arg, log))
        assert lines == sorted((alloc_path(s) if s else b"[no Python frame]") +
                               b" %d" % round(v) for s, v in want.items()), lines
    # pprof: a heap profile go tool pprof reads, inuse_space by default.
    out = export("pprof", str(tmp_path / "heap.pb.gz"), "--memory", log)
    rows, text = pprof_top(out, "-unit=B")
    assert "Type: inuse_space" in text, text
    got = dict((name, flat) for name, flat, cum in rows)
    assert got["load"] == "1000000B", text
    rows, text = pprof_top(out, "-sample_index=alloc_objects")
    got = dict((name, int(cum)) for name, flat, cum in rows)
    assert got["<module>"] == by["<module>"]["total"]["alloc_objects"], text


@pytest.mark.parametrize("log", ALLOC_LOGS, ids=["records", "batched"])
def test_memory_speedscope(tmp_path, log):
    """speedscope --memory: one profile in bytes, valid against speedscope's schema, each
    stack once with the bytes its sampled allocations stand for (allocated, in use)."""
    import jsonschema
    assert os.path.isfile(SCHEMA), "speedscope's schema is missing: %s" % SCHEMA
    with open(SCHEMA) as f:
        schema = json.load(f)
    allocs = alloc_expected()
    for arg, key in (("--memory", "bytes"), ("--memory=inuse", "inuse")):
        out = export("speedscope", str(tmp_path / ("m%s.json" % key)), arg, log)
        with open(out) as f:
            doc = json.load(f)
        jsonschema.validate(doc, schema)
        (prof,) = doc["profiles"]
        assert prof["unit"] == "bytes" and prof["endValue"] == sum(prof["weights"]), prof
        want = defaultdict(float)
        for a in allocs:
            if key == "bytes" or a["inuse"]:
                want[a["stack"]] += a["bytes"]
        assert sorted(prof["weights"]) == sorted(round(v) for v in want.values() if round(v)), (
            prof["weights"], want)


def test_memory_refused():
    """Logs without allocation sampling: one line, exit 1; --memory elsewhere: usage."""
    good = os.path.join(t.FIXTURES, "good.lz4")
    for args in (["report", "--memory"], ["tree", "--memory=inuse"],
                 ["export", "-f", "pprof", "--memory", "-o", os.devnull]):
        res = t.tool(*(args + [good]))
        assert res.returncode == 1 and res.stderr == (
            "pyprof: no allocation samples: the logs were written without PYPROF_ALLOC\n"), (
            args, res.returncode, res.stderr)
    res = t.tool("export", "-f", "chrome", "--memory", ALLOC_LOG)
    assert res.returncode == 2 and "--memory" in res.stderr, res.stderr
    res = t.tool("report", "--memory=bytes", ALLOC_LOG)
    assert res.returncode == 2 and "'bytes'" in res.stderr, res.stderr
