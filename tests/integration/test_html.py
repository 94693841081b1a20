"""`pyprof html`: the page is opened in headless Chromium (Debian's `chromium`, driven over
the DevTools protocol by cdp_browser.py) and checked the way a person would use it:

* it loads with no console error, uncaught exception or dialog, and asks for nothing
  over the network;
* the flame graph, the timeline and the RSS chart have drawn pixels;
* a real click on a timeline sample lists that sample's stack, outermost first, and
  colours the shared base in the other samples; a click on a flame graph frame zooms to
  it; the search highlights matches; a drag zooms the timeline; the process selector
  limits the timeline to that process's threads;
* names that are markup (a function named <img src=x onerror=alert(1)>, a file named
  </script><script>alert(2)</script><!--evil.py, a thread named <b>worker</b>&amp;) are
  shown as text, and no element or script comes from them;
* spans are drawn above their thread's samples, and a real click on one shows the flame
  graph of exactly that span's samples; `pyprof trace show --html`'s page lists a
  trace's spans in tree order and a click on one lists its top functions;
* bad input gets one line and exit status 1, a usage error exit status 2.

The one-million-sample render time is measured by html_million.py (a script, not a timed
test); docs/HTML.md has the figure.
"""

import json
import os
import re

import pytest

import cdp_browser
import pyprof_testlib as t

NAMES = t.workload("html_names.py")
EVIL_NAME = "<img src=x onerror=alert(1)>"
EVIL_FILE = "</script><script>alert(2)</script><!--evil.py"
THREAD_NAME = "<b>worker</b>&amp;"


def embedded_json(html):
    """The page's data, parsed, and its raw text."""
    m = re.search(r'<script id="pyprof-data" type="application/json">(.*?)</script>', html,
                  re.S)
    assert m, "no data element in the page"
    return json.loads(m.group(1)), m.group(1)


@pytest.fixture(scope="module", params=("py3.11",) + t.SID_IDS)
def names_page(tmp_path_factory, request):
    """A two-process profile of html_names.py (3.11 and the newest interpreters: qualified
    names) and its page."""
    tmp = tmp_path_factory.mktemp("html")
    interp = t.by_id(request.param)[0].require()
    prof = t.run([interp.path, NAMES], str(tmp / "logs"),
                 env={"PYPROF_PERIOD": "1ms", "BURN_SECONDS": "1.0"})
    assert prof.rc == 0 and len(prof.logs) == 2, prof.describe()
    page = str(tmp / "names.html")
    res = t.tool("html", str(tmp / "logs"), "-o", page)
    assert res.returncode == 0 and not res.stderr, (res.returncode, res.stderr)
    return {"dir": str(tmp / "logs"), "page": page, "run": prof}


@pytest.fixture(scope="module")
def browser():
    if not cdp_browser.find_chromium():
        pytest.fail("chromium is not installed (Debian package `chromium`; `make deps` "
                    "installs it)")
    with cdp_browser.Browser(1400, 1000) as b:
        yield b


@pytest.fixture
def opened(browser, names_page):
    """The names page, freshly loaded, with the browser's logs emptied."""
    del browser.console_errors[:]
    del browser.dialogs[:]
    del browser.requests[:]
    browser.open(names_page["page"])
    return browser


def drawn_pixels(b, canvas_id, rgb=None):
    """How many pixels of a canvas are drawn (not transparent), or of colour rgb."""
    cond = ("d[i + 3] > 0" if rgb is None else
            "d[i] === %d && d[i + 1] === %d && d[i + 2] === %d" % tuple(rgb))
    return b.evaluate("""(() => {
        const c = document.getElementById(%s);
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (%s) n++;
        return n;
    })()""" % (json.dumps(canvas_id), cond))


def texts(b, selector):
    return b.evaluate("Array.from(document.querySelectorAll(%s), (e) => e.textContent)"
                      % json.dumps(selector))


def thread_index(b, name, pid=None):
    ts = [x for x in b.evaluate("pyprofViewer.threads()")
          if x["name"] == name and pid in (None, x["pid"])]
    assert ts, "no thread %r in %s" % (name, b.evaluate("pyprofViewer.threads()"))
    return ts[0]["index"]


def check_clean(b):
    assert not b.console_errors, "console errors: %s" % b.console_errors
    assert not b.dialogs, "a dialog opened (script ran from data?): %s" % b.dialogs
    others = [u for u in b.requests if not u.startswith("file://")]
    assert not others, "the page asked the network for %s" % others


# ---- the file ---------------------------------------------------------------------------


def test_page_is_self_contained_and_escaped(names_page):
    html = open(names_page["page"], encoding="utf-8").read()
    data, raw = embedded_json(html)
    # The data element is whole: no name closed it early or opened a comment.
    for bad in ("<", ">", "&"):
        assert bad not in raw, "raw %r inside the embedded JSON" % bad
    assert EVIL_NAME not in html and "alert(2)</script>" not in html
    names = [f[0] for f in data["funcs"]]
    files = [f[1] for f in data["funcs"]]
    assert EVIL_NAME in names, names
    assert EVIL_FILE in files, files
    assert THREAD_NAME in [th["name"] for th in data["threads"]]
    assert len(data["procs"]) == 2
    # Nothing to fetch: no URL in an attribute, and a policy that forbids fetching.
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', html, re.I)
    assert "default-src 'none'" in html
    # The samples add up to what report counts.
    rep = t.report(names_page["dir"])
    assert data["samples"] == rep["samples"]
    assert sum(th["samples"] for th in data["threads"]) == rep["samples"]
    assert sum(sum(th["runs"][3::4]) for th in data["threads"]) == rep["samples"]


# ---- in the browser ---------------------------------------------------------------------


def test_loads_and_draws(opened):
    b = opened
    check_clean(b)
    assert drawn_pixels(b, "flame") > 5000
    assert drawn_pixels(b, "timeline", (0x4a, 0x78, 0xb5)) > 100, "no sample column drawn"
    assert drawn_pixels(b, "rss") > 1000
    # Two processes: the selector offers both, with the markup thread name as text.
    options = texts(b, "#proc option")
    assert len(options) == 3, options
    assert any(THREAD_NAME in o for o in texts(b, "#thread option"))
    assert b.evaluate("document.title").startswith("pyprof: ")


def test_click_sample_shows_stack(opened):
    b = opened
    main = thread_index(b, "MainThread", opened_pid(b))
    col = b.evaluate("pyprofViewer.findColumn(%d, %s)" % (main, json.dumps(EVIL_NAME)))
    assert col, "no drawn sample of the main thread in the evil function"
    b.click(col["x"], col["y"])
    b.wait_for("pyprofViewer.selection()")
    shown = texts(b, "#stack li .fn")
    # The stack the page says it drew there, and the one the workload has.
    assert shown == col["stack"], (shown, col["stack"])
    assert shown == ["<module>", "main", "outer", "middle", EVIL_NAME], shown
    locs = texts(b, "#stack li .loc")
    assert locs[-1].startswith(EVIL_FILE + ":"), locs
    info = b.evaluate("document.getElementById('stack-info').textContent")
    assert "MainThread" in info and "depth 5" in info, info
    # The base other samples share with it is drawn (in orange), in the worker too.
    assert drawn_pixels(b, "timeline", (0xe0, 0x70, 0x1a)) > 50
    worker = thread_index(b, THREAD_NAME, opened_pid(b))
    other = b.evaluate("pyprofViewer.findColumn(%d, 'spin')" % worker)
    assert other and other["stack"][:1] == ["Thread._bootstrap"], other
    check_clean(b)


def opened_pid(b):
    """The parent process (the one with the longer run) of the names page."""
    ts = b.evaluate("pyprofViewer.threads()")
    by_pid = {}
    for x in ts:
        by_pid[x["pid"]] = by_pid.get(x["pid"], 0) + x["samples"]
    return max(by_pid, key=by_pid.get)


def test_markup_names_are_text(opened):
    b = opened
    main = thread_index(b, "MainThread", opened_pid(b))
    col = b.evaluate("pyprofViewer.findColumn(%d, %s)" % (main, json.dumps(EVIL_NAME)))
    b.click(col["x"], col["y"])
    b.wait_for("pyprofViewer.selection()")
    assert EVIL_NAME in texts(b, "#stack li .fn")
    # As text: escaped in the serialized DOM, and no element made of it.
    html = b.evaluate("document.body.innerHTML")
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert b.evaluate("document.querySelectorAll('img, b').length") == 0
    assert b.evaluate("document.scripts.length") == 2
    # Hover the flame graph frame: the tooltip shows the name as text too.
    r = b.evaluate("pyprofViewer.flameRect(%s)" % json.dumps(EVIL_NAME))
    assert r, "the evil function is not in the flame graph"
    b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": r["x"], "y": r["y"]})
    b.wait_for("document.getElementById('tip').style.display === 'block'")
    assert EVIL_NAME in b.evaluate("document.getElementById('tip').textContent")
    assert b.evaluate("document.querySelectorAll('img, b').length") == 0
    check_clean(b)


def test_flame_click_zooms(opened):
    b = opened
    r = b.evaluate("pyprofViewer.flameRect('middle')")
    assert r
    b.click(r["x"], r["y"])
    b.wait_for("pyprofViewer.flameFocus() === 'middle'")
    # Zoomed: the frame now spans the whole width.
    r2 = b.evaluate("pyprofViewer.flameRect('middle')")
    assert r2["w"] > r["w"], (r, r2)
    b.click(*center(b, "#fg-reset"))
    b.wait_for("pyprofViewer.flameFocus() === null")
    check_clean(b)


def center(b, selector):
    r = b.evaluate("(() => { const r = document.querySelector(%s).getBoundingClientRect();"
                   " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
                   % json.dumps(selector))
    return r[0], r[1]


def test_search_highlights(opened, names_page):
    b = opened
    rep = t.report(names_page["dir"])
    expected = 100.0 * sum(f["total"] for f in rep["functions"]
                           if f["name"] == "middle") / rep["samples"]
    assert drawn_pixels(b, "flame", (0xd4, 0x54, 0xd4)) == 0
    b.click(*center(b, "#search"))
    b.type_text("middle")
    b.wait_for("document.getElementById('match').textContent.startsWith('matches')")
    share = float(re.search(r"([\d.]+)%",
                            b.evaluate("document.getElementById('match').textContent")).group(1))
    assert 0 < share and abs(share - expected) < 0.1, (share, expected)
    assert drawn_pixels(b, "flame", (0xd4, 0x54, 0xd4)) > 100
    assert drawn_pixels(b, "timeline", (0xc4, 0x3a, 0xc4)) > 10
    check_clean(b)


def test_drag_zooms_timeline_and_selectors(opened):
    b = opened
    total = b.evaluate("document.getElementById('fg-scope').textContent")
    tl = b.evaluate("(() => { const r = document.getElementById('timeline')"
                    ".getBoundingClientRect(); return [r.left, r.top, r.width]; })()")
    x0, y = tl[0] + 190 + 100, tl[1] + 40
    b.drag(x0, y, x0 + 200, y)
    b.wait_for("document.getElementById('tl-range').textContent !== ''")
    assert b.evaluate("document.getElementById('fg-scope').textContent") != total
    b.click(*center(b, "#tl-reset"))
    b.wait_for("document.getElementById('tl-range').textContent === ''")
    # One process: only its threads in the timeline.
    pid = opened_pid(b)
    b.evaluate("(() => { const s = document.getElementById('proc');"
               " s.selectedIndex = 1 + [...s.options].slice(1).findIndex("
               "(o) => o.textContent.startsWith('pid %d ')); "
               "s.dispatchEvent(new Event('change')); })()" % pid)
    rows = b.evaluate("pyprofViewer.rows()")
    threads = {x["index"]: x for x in b.evaluate("pyprofViewer.threads()")}
    assert rows and all(threads[i]["pid"] == pid for i in rows), (rows, threads)
    assert len(rows) < len(threads)
    check_clean(b)


# ---- bad input ----------------------------------------------------------------------------


def one_line_error(args, code=1):
    res = t.tool("html", *args)
    lines = res.stderr.splitlines()
    assert res.returncode == code, (args, res.returncode, res.stderr)
    assert len(lines) == 1 and lines[0].strip(), (args, res.stderr)
    return lines[0]


@pytest.mark.parametrize("name", ["not_a_log.txt", "empty.lz4", "not_pyprof.lz4",
                                  "newer_version.lz4", "corrupted.lz4"])
def test_bad_input(name, tmp_path):
    out = tmp_path / "out.html"
    one_line_error([os.path.join(t.FIXTURES, name), "-o", str(out)])
    assert not out.exists(), "a page was written for bad input"


def test_missing_and_usage(tmp_path, names_page):
    out = tmp_path / "out.html"
    one_line_error([str(tmp_path / "missing.lz4"), "-o", str(out)])
    assert not out.exists()
    assert t.tool("html", names_page["dir"]).returncode == 2            # no -o
    assert t.tool("html", "-o", str(out)).returncode == 2               # no log
    assert t.tool("html", "--bogus", names_page["dir"], "-o", str(out)).returncode == 2
    line = one_line_error([names_page["dir"], "-o", str(tmp_path / "no" / "dir.html")])
    assert "dir.html" in line


def test_write_error(names_page):
    """A full disk: one line, exit 1, and the device named is left alone (only a regular
    file cut short is removed)."""
    import stat
    if not stat.S_ISCHR(os.stat("/dev/full").st_mode):
        pytest.fail("/dev/full is not the full device on this machine")
    line = one_line_error([names_page["dir"], "-o", "/dev/full"])
    assert "/dev/full" in line
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_truncated_log_still_makes_a_page(tmp_path):
    res = t.tool("html", os.path.join(t.FIXTURES, "truncated.lz4"), "-o",
                 str(tmp_path / "t.html"))
    assert res.returncode == 0, res.stderr
    assert "truncat" in res.stderr.lower()
    data, _ = embedded_json((tmp_path / "t.html").read_text(encoding="utf-8"))
    assert any("truncat" in w for w in data["warnings"])


def test_filters(names_page, tmp_path):
    rep = t.report(names_page["dir"])
    pid = max(rep["processes"], key=lambda p: p["samples"])["pid"]
    out = tmp_path / "one.html"
    res = t.tool("html", "--pid", pid, "--to", "0.5", names_page["dir"], "-o", str(out))
    assert res.returncode == 0, res.stderr
    data, _ = embedded_json(out.read_text(encoding="utf-8"))
    assert [p["pid"] for p in data["procs"]] == [pid]
    assert 0 < data["samples"] < max(p["samples"] for p in rep["processes"])
    assert data["t_max_us"] <= 0.5e6 + data["procs"][0]["period_us"]


# ---- snapshots ------------------------------------------------------------------------

import sys  # noqa: E402

sys.path.insert(0, t.FIXTURES)
import make_fixtures as mf  # noqa: E402  (the log encoders, shared with the fixtures)


def test_snapshot_markers(browser, tmp_path):
    """A rotated series with one snapshot per file (make_fixtures.series_logs): a marker
    per snapshot at its time on the series' axis; a click on one lists every thread of
    that snapshot with its stack, outermost first, or that it had no Python frame."""
    logs = tmp_path / "logs"
    logs.mkdir()
    series = mf.series_logs(nfiles=3)
    for raw, info in series:
        (logs / ("pyprof.app.4343.%04d.lz4" % info["seq"])).write_bytes(mf.lz4(raw))
    page = str(tmp_path / "snap.html")
    res = t.tool("html", str(logs), "-o", page)
    assert res.returncode == 0 and not res.stderr, (res.returncode, res.stderr)
    with open(page, encoding="utf-8") as f:
        data, _ = embedded_json(f.read())
    assert [s["t"] for s in data["snaps"]] == [i["snapshot"] for _, i in series]
    del browser.console_errors[:]
    browser.open(page)
    marks = browser.evaluate("pyprofViewer.snapshots()")
    assert [m["id"] for m in marks] == [1, 2, 3]
    xs = [m["x"] for m in marks]
    assert xs == sorted(xs) and xs[0] < xs[1] < xs[2]
    browser.click(marks[1]["x"], marks[1]["y"])
    assert browser.evaluate("pyprofViewer.selectedSnapshot()") == 2
    info = browser.evaluate("document.getElementById('stack-info').textContent")
    assert "snapshot #2" in info and "2 threads" in info
    items = texts(browser, "#stack li")
    heads = texts(browser, "#stack li.snap-thread")
    assert len(heads) == 2
    assert heads[0].startswith("MainThread (tid 4343)") and "state R" in heads[0]
    assert "holds the GIL" in heads[0]
    assert heads[1].startswith("worker (tid 4344)") and "state S" in heads[1]
    # MainThread: the file's stack 2 (<module> serve handle parse), then the worker's
    # "no frame" line.
    assert items.index(heads[1]) == 5
    assert texts(browser, "#stack li .fn") == ["<module>", "serve", "handle", "parse"]
    assert texts(browser, "#stack li .loc")[-1] == "/srv/app.py:32"
    assert items[-1] == "(no Python frame)"
    check_clean(browser)


def test_spans_drawn_and_clicked(browser, tmp_path):
    """Spans (spanlogs.py: alpha burning in fa, then beta in fb, on MainThread; a worker
    burning in `other` meanwhile) are drawn above their thread's samples, names as text;
    a real click on a span shows the flame graph of exactly its samples, a click on
    another span switches to its own, and a click on a sample goes back to the whole
    range."""
    from spanlogs import Log
    log = Log(6000)
    log.thread(0, 6000, "MainThread")
    log.thread(1, 6001, "worker")
    log.start(1, 10_000, 0, "alpha <b>x</b>")
    log.start(2, 50_000, 0, "beta")
    for t_us in range(500, 100_000, 1000):
        leaf = ("fa" if 10_000 <= t_us < 40_000 else "fb" if 50_000 <= t_us < 90_000
                else "idle")
        log.sample(t_us, 0, ["main", leaf])
        log.sample(t_us, 1, ["main", "other"])
        if t_us == 40_500:
            log.stop(1, 40_000, 0)
    log.stop(2, 90_000, 0)
    path = log.write(tmp_path / "spans.lz4")
    page = str(tmp_path / "spans.html")
    res = t.tool("html", path, "-o", page)
    assert res.returncode == 0 and not res.stderr, (res.returncode, res.stderr)
    del browser.console_errors[:]
    del browser.dialogs[:]
    del browser.requests[:]
    browser.open(page)
    drawn = {s["name"]: s for s in browser.evaluate("pyprofViewer.spans()")}
    assert set(drawn) == {"alpha <b>x</b>", "beta"}
    assert drawn["alpha <b>x</b>"]["x"] < drawn["beta"]["x"]
    assert browser.evaluate("document.querySelectorAll('b').length") == 0
    everything = browser.evaluate("pyprofViewer.flameFunctions()")
    assert {"fa", "fb", "idle", "other"} <= set(everything)
    for name, leaf, t0, t1 in (("alpha <b>x</b>", "fa", 10_000, 40_000),
                               ("beta", "fb", 50_000, 90_000)):
        s = drawn[name]
        browser.click(s["x"], s["y"])
        assert browser.evaluate("pyprofViewer.selectedSpan()") == name
        assert browser.evaluate("pyprofViewer.flameFunctions()") == sorted(["main", leaf])
        assert browser.evaluate("pyprofViewer.flameSamples()") == len(log.in_span(0, t0, t1))
        assert name in browser.evaluate("document.getElementById('fg-scope').textContent")
    col = browser.evaluate("pyprofViewer.findColumn(1, 'other')")
    browser.click(col["x"], col["y"])
    assert browser.evaluate("pyprofViewer.selectedSpan()") is None
    assert set(browser.evaluate("pyprofViewer.flameFunctions()")) == set(everything)
    check_clean(browser)


def test_trace_page(browser, tmp_path):
    """`pyprof trace show --html`: one row per span in tree order (names as text), and a
    click on a row lists that span's top functions."""
    from spanlogs import Log
    log = Log(6100)
    log.thread(0, 6100, "MainThread")
    log.start(1, 1000, 0, "req <i>1</i>", base_id="P", trace_id="a", parent_id="P")
    log.start(2, 2000, 0, "db", parent_span_id=1, base_id="P", trace_id="b", parent_id="a")
    for t_us in range(500, 20_000, 1000):
        log.sample(t_us, 0, ["main", "query" if 2000 <= t_us < 9000 else "work"])
        if t_us == 9500:
            log.stop(2, 9000, 0)
    log.stop(1, 19_000, 0)
    path = log.write(tmp_path / "p.lz4")
    page = str(tmp_path / "trace.html")
    res = t.tool("trace", "show", "P", "--html", "-o", page, path)
    assert res.returncode == 0 and not res.stderr, (res.returncode, res.stderr)
    del browser.console_errors[:]
    del browser.dialogs[:]
    del browser.requests[:]
    browser.open(page)
    assert browser.evaluate("pyprofTrace.names()") == ["req <i>1</i>", "db"]
    assert browser.evaluate("pyprofTrace.depths()") == [0, 1]
    assert browser.evaluate("document.querySelectorAll('i').length") == 0
    box = browser.evaluate("""(() => { const r = document.querySelectorAll('.row')[1]
        .getBoundingClientRect(); return {x: r.left + 20, y: r.top + r.height / 2}; })()""")
    browser.click(box["x"], box["y"])
    assert texts(browser, "#details h2")[0] == "db"
    assert texts(browser, "#details td.fn") == ["query"]
    check_clean(browser)


def test_diff_page(browser, tmp_path):
    """`pyprof diff --html`: the merged call tree on a canvas, `grow` (10 -> 60 samples,
    z 6.5) red, `steady` (100 both sides) grey, a function of one side only still drawn;
    names stay text; a click zooms; the table lists the flagged function."""
    from spanlogs import Log
    evil = "<img src=x onerror=alert(1)>"
    sides = []
    for k, (grow, extra) in enumerate(((10, "only_base"), (60, evil))):
        log = Log(7000 + k)
        log.thread(0, 7000 + k, "MainThread")
        t_us = 500
        for names, n in ((["main", "steady"], 100), (["main", "grow"], grow),
                         (["main", extra], 3)):
            for _ in range(n):
                log.sample(t_us, 0, names)
                t_us += 1000
        sides.append(log.write(tmp_path / ("side%d.lz4" % k)))
    page = str(tmp_path / "diff.html")
    res = t.tool("diff", "--html", "-o", page, *sides)
    assert res.returncode == 0 and not res.stderr, (res.returncode, res.stderr)
    del browser.console_errors[:]
    del browser.dialogs[:]
    del browser.requests[:]
    browser.open(page)
    frames = dict((f["name"], f) for f in browser.evaluate("pyprofDiff.frames()"))
    assert set(frames) == {"all", "main", "steady", "grow", "only_base", evil}, sorted(frames)
    assert frames["grow"]["sign"] == 1 and frames["steady"]["sign"] == 0, frames
    assert frames["grow"]["colour"] != frames["steady"]["colour"] == "#c9c9c9", frames
    # Widths: the mean of the two sides, so steady (100, 100) is 100 / 35 of grow's (10, 60).
    ratio = frames["steady"]["w"] / frames["grow"]["w"]
    assert abs(ratio - 100 / 35.0) < 0.05, ratio
    assert frames["only_base"]["w"] > 0 and frames[evil]["w"] > 0, frames
    assert drawn_pixels(browser, "flame") > 0
    listed = texts(browser, "#changed tbody td:first-child")
    assert len(listed) == 1 and listed[0].startswith("grow (/srv/app.py:"), listed
    assert browser.evaluate("document.querySelectorAll('img').length") == 0
    assert browser.evaluate("pyprofDiff.zoom('grow')")
    zoomed = dict((f["name"], f) for f in browser.evaluate("pyprofDiff.frames()"))
    assert "steady" not in zoomed and zoomed["grow"]["w"] == zoomed["all"]["w"], zoomed
    check_clean(browser)


# ---- allocation samples ---------------------------------------------------------------

LEAK = t.workload("alloc_leak.py")
HEAP_RGB = (0xe0, 0x70, 0x1a)   # the heap line of a single process


@pytest.fixture(scope="module")
def leak_page(tmp_path_factory):
    """alloc_leak.py (a 2,000-byte block kept per iteration, 50 times as many bytes
    allocated and freed) profiled with allocation sampling, and its page."""
    tmp = tmp_path_factory.mktemp("html-alloc")
    interp = t.by_id("py3.11")[0].require()
    prof = t.run([interp.path, LEAK], str(tmp / "logs"),
                 env={"PYPROF_SIGNAL": "USR2", "PYPROF_ALLOC": "16KB", "ITERATIONS": "2000"})
    assert prof.rc == 0 and prof.stdout == b"leaked 4000000\n", prof.describe()
    page = str(tmp / "leak.html")
    res = t.tool("html", str(tmp / "logs"), "-o", page)
    assert res.returncode == 0 and not res.stderr, (res.returncode, res.stderr)
    return {"dir": str(tmp / "logs"), "page": page}


def set_weight(b, value):
    """Chooses `value` in the flame graph's weight selector, as a person would."""
    b.evaluate("(() => { const s = document.getElementById('fg-weight');"
               " s.value = %s; s.dispatchEvent(new Event('change')); })()" % json.dumps(value))
    b.wait_for("pyprofViewer.flameWeight() === %s" % json.dumps(value))


def test_no_memory_controls_without_allocs(opened, names_page):
    """A page without allocation samples has no `allocs`, and neither the weight selector
    nor the heap line's legend shows."""
    b = opened
    data, _ = embedded_json(open(names_page["page"], encoding="utf-8").read())
    assert "allocs" not in data
    assert not b.evaluate("pyprofViewer.memory()")
    assert b.evaluate("document.getElementById('fg-weight-label').hidden")
    assert b.evaluate("document.getElementById('rss-legend').hidden")
    assert b.evaluate("pyprofViewer.flameWeight()") == "samples"
    assert all(h["points"] == 0 for h in b.evaluate("pyprofViewer.heap()"))
    check_clean(b)


def test_memory_flame_graph_and_heap(browser, leak_page):
    """With allocation samples: the weight selector switches the flame graph to bytes
    allocated (churn_site the largest) and in use at the end (leak_site's path the widest,
    tooltips in bytes); the estimated heap is drawn over the RSS with a legend, and its
    last point is within 30 % of what `pyprof report --memory=inuse` says is in use."""
    b = browser
    del b.console_errors[:]
    del b.dialogs[:]
    del b.requests[:]
    b.open(leak_page["page"])
    assert b.evaluate("pyprofViewer.memory()")
    assert not b.evaluate("document.getElementById('fg-weight-label').hidden")
    assert b.evaluate("Array.from(document.querySelectorAll('#fg-weight option'),"
                      " (o) => o.value)") == ["samples", "alloc", "inuse"]
    assert b.evaluate("pyprofViewer.flameWeight()") == "samples"
    assert b.evaluate("document.getElementById('fg-scope').textContent").endswith(" samples")

    set_weight(b, "inuse")
    path = b.evaluate("pyprofViewer.flameWidestPath()")
    assert path and path[-1] == "leak_site", path
    assert b.evaluate("pyprofViewer.flameLargestSelf()") == "leak_site"
    scope = b.evaluate("document.getElementById('fg-scope').textContent")
    assert re.search(r": [\d.]+ (B|KiB|MiB|GiB) in use$", scope), scope
    r = b.evaluate("pyprofViewer.flameRect('leak_site')")
    assert r and r["w"] > 0.8 * b.evaluate("document.getElementById('flame').clientWidth"), r
    b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": r["x"], "y": r["y"]})
    b.wait_for("document.getElementById('tip').style.display === 'block'")
    tip = b.evaluate("document.getElementById('tip').textContent")
    assert re.search(r"total [\d.]+ (KiB|MiB) in use \(", tip), tip

    set_weight(b, "alloc")
    assert b.evaluate("pyprofViewer.flameLargestSelf()") == "churn_site"
    assert "allocated" in b.evaluate("document.getElementById('fg-scope').textContent")

    # The heap line: drawn, explained, and ending where the report's in-use total is.
    rep = t.tool_json("report", "--memory=inuse", "--json", leak_page["dir"])
    inuse = rep["total"]["inuse_bytes"]
    heap = b.evaluate("pyprofViewer.heap()")
    assert len(heap) == 1 and heap[0]["points"] > 100, heap
    assert abs(heap[0]["last"] - inuse) <= 0.3 * inuse, (heap, inuse)
    assert drawn_pixels(b, "rss", HEAP_RGB) > 50
    legend = b.evaluate("document.getElementById('rss-legend').textContent")
    assert "RSS" in legend and "estimated live heap" in legend, legend
    assert not b.evaluate("document.getElementById('rss-legend').hidden")

    set_weight(b, "samples")
    assert b.evaluate("document.getElementById('fg-scope').textContent").endswith(" samples")
    check_clean(b)


# ---- GIL states ---------------------------------------------------------------------------

from test_json_schema import check as check_schema  # noqa: E402

GIL_WORKLOAD = t.workload("gil_contention.py")
GIL_KEYS = ("unknown", "held", "wait", "other", "not_held")  # enum pyprof_gil's order
GIL_RGB = {"held": (0x2f, 0x9e, 0x44), "wait": (0xc9, 0x2a, 0x2a), "other": (0xa5, 0xb1, 0xc2)}
SAMPLE_RGB = (0x4a, 0x78, 0xb5)  # a timeline sample without the GIL colours


@pytest.fixture(scope="module")
def gil_page(tmp_path_factory):
    """gil_contention.py (three threads of pure Python, one sleeping, one holding the GIL
    in C calls) profiled in wall mode for 1 s, and its page."""
    tmp = tmp_path_factory.mktemp("html-gil")
    interp = t.by_id("py3.11")[0].require()
    prof = t.run([interp.path, GIL_WORKLOAD], str(tmp / "logs"),
                 env={"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": "5ms", "GIL_SECONDS": "1"})
    assert prof.rc == 0, prof.describe()
    page = str(tmp / "gil.html")
    res = t.tool("html", str(tmp / "logs"), "-o", page)
    assert res.returncode == 0 and not res.stderr, (res.returncode, res.stderr)
    return {"dir": str(tmp / "logs"), "page": page}


def gil_by_thread(rep):
    """report --gil --json's threads by (pid, tid): their samples per state, in
    enum pyprof_gil's order."""
    return dict(((th["pid"], th["tid"]), [th[k] for k in GIL_KEYS]) for th in rep["threads"])


def test_gil_states_in_page_data(gil_page):
    """A wall-mode page carries each sample's GIL state: a digit per run (runs_gil), each
    thread's samples by state (equal to `pyprof report --gil --json`'s for every thread),
    and the flag; the data matches its documented schema."""
    with open(gil_page["page"], encoding="utf-8") as f:
        data, _ = embedded_json(f.read())
    check_schema("html", data, "pyprof html's data (wall mode, GIL states)")
    assert data["gil"] == 1
    rep = t.tool_json("report", "--gil", "--json", gil_page["dir"])
    assert rep["states"]["wait"] > 0 and rep["states"]["held"] > 0, rep["states"]
    want = gil_by_thread(rep)
    got = {}
    for th in data["threads"]:
        runs, states = th["runs"], th["runs_gil"]
        assert len(states) == len(runs) // 4 and set(states) <= set("01234"), th["name"]
        # The runs' states add up to the thread's counts, and those to its samples.
        per_run = [0] * len(GIL_KEYS)
        for k, s in enumerate(states):
            per_run[int(s)] += runs[4 * k + 3]
        assert per_run == th["gil"] and sum(th["gil"]) == th["samples"], (th["name"], per_run)
        got[(data["procs"][th["p"]]["pid"], th["tid"])] = th["gil"]
    assert got == want, (got, want)
    assert [sum(c[i] for c in got.values()) for i in range(len(GIL_KEYS))] == [
        rep["states"][k] for k in GIL_KEYS]


def test_no_gil_states_in_cpu_page(names_page):
    """A cpu-mode page says it has no GIL states, and carries none."""
    with open(names_page["page"], encoding="utf-8") as f:
        data, _ = embedded_json(f.read())
    assert {p["clock"] for p in data["procs"]} == {"cpu"}
    assert data["gil"] == 0
    assert not any("gil" in th or "runs_gil" in th for th in data["threads"])
    assert not any("st_wait" in sp for sp in data["spans"])


def canvas_digest(b, canvas_id):
    """The drawn pixels of a canvas, as a data URL (equal strings: equal drawings)."""
    return b.evaluate("document.getElementById(%s).toDataURL()" % json.dumps(canvas_id))


def test_gil_view(browser, gil_page):
    """The GIL toggle colours the timeline's samples by state (a legend says which is
    which), the table lists each thread's split as the report counts it, and "GIL waits
    only" makes the flame graph count exactly the samples that waited for the GIL."""
    b = browser
    del b.console_errors[:]
    del b.dialogs[:]
    del b.requests[:]
    b.open(gil_page["page"])
    rep = t.tool_json("report", "--gil", "--json", gil_page["dir"])
    assert b.evaluate("pyprofViewer.gil()")
    assert not b.evaluate("document.getElementById('gil-color-label').hidden")
    assert not b.evaluate("document.getElementById('gil-section').hidden")
    assert b.evaluate("document.getElementById('gil-legend').hidden")
    assert drawn_pixels(b, "timeline", GIL_RGB["wait"]) == 0
    plain = drawn_pixels(b, "timeline", SAMPLE_RGB)
    assert plain > 1000, plain

    b.click(*center(b, "#gil-color"))
    b.wait_for("pyprofViewer.gilColors()")
    assert drawn_pixels(b, "timeline", SAMPLE_RGB) == 0  # every sample has a state
    for state, rgb in GIL_RGB.items():
        assert drawn_pixels(b, "timeline", rgb) > 100, state
    legend = b.evaluate("document.getElementById('gil-legend').textContent")
    assert "held the GIL" in legend and "waiting for the GIL" in legend, legend
    assert not b.evaluate("document.getElementById('gil-legend').hidden")

    # The table: each thread's samples by state, as the report counts them.
    want = gil_by_thread(rep)
    pids = {x["index"]: x["pid"] for x in b.evaluate("pyprofViewer.threads()")}
    rows = b.evaluate("pyprofViewer.gilTable()")
    assert len(rows) == len(want), (rows, want)
    for r in rows:
        assert [r[k] for k in GIL_KEYS] == want[(pids[r["index"]], r["tid"])], r
    assert len(texts(b, "#gil-table tbody tr")) == len(want)

    # GIL waits only: the flame graph of the waiting samples, and back.
    assert b.evaluate("pyprofViewer.flameSamples()") == rep["samples"]
    b.click(*center(b, "#gil-wait"))
    b.wait_for("pyprofViewer.gilWaitOnly()")
    assert b.evaluate("pyprofViewer.flameSamples()") == rep["states"]["wait"]
    assert "py_work" in b.evaluate("pyprofViewer.flameFunctions()")
    scope = b.evaluate("document.getElementById('fg-scope').textContent")
    assert scope.endswith(" samples waiting for the GIL"), scope
    b.click(*center(b, "#gil-wait"))
    b.wait_for("!pyprofViewer.gilWaitOnly()")
    assert b.evaluate("pyprofViewer.flameSamples()") == rep["samples"]

    b.click(*center(b, "#gil-color"))
    b.wait_for("!pyprofViewer.gilColors()")
    assert drawn_pixels(b, "timeline", GIL_RGB["wait"]) == 0
    assert drawn_pixels(b, "timeline", SAMPLE_RGB) == plain
    check_clean(b)


def test_no_gil_view_without_states(opened):
    """A page without GIL states shows neither toggle nor the table, and turning the
    toggles on anyway changes neither the timeline nor the flame graph."""
    b = opened
    assert not b.evaluate("pyprofViewer.gil()")
    for el in ("gil-color-label", "gil-wait-label", "gil-section"):
        assert b.evaluate("document.getElementById(%s).hidden" % json.dumps(el)), el
    before, samples = canvas_digest(b, "timeline"), b.evaluate("pyprofViewer.flameSamples()")
    b.evaluate("""['gil-color', 'gil-wait'].forEach((id) => {
        const c = document.getElementById(id);
        c.checked = true;
        c.dispatchEvent(new Event('change')); })""")
    assert not b.evaluate("pyprofViewer.gilColors()")
    assert not b.evaluate("pyprofViewer.gilWaitOnly()")
    assert canvas_digest(b, "timeline") == before
    assert b.evaluate("pyprofViewer.flameSamples()") == samples
    check_clean(b)


def test_gil_waits_in_a_span(browser, tmp_path):
    """A wall-clock log built record by record (spanlogs.py's Log with a GIL state per
    stack): with "GIL waits only", a clicked span's flame graph holds exactly its samples
    that waited for the GIL (counted by the tool: `st_wait`)."""
    from spanlogs import Log

    class GilLog(Log):
        """A wall-clock log whose samples each say where their thread stood with the GIL
        (the STACK record's trailing uvarint)."""

        def __init__(self, pid):
            Log.__init__(self, pid)
            self.recs[1] = mf.header(pid=pid, run_id="5ca1ab1e5ca1ab1e",
                                     argv=("python3", "app.py"),
                                     start_unix_ns=self.start_unix_ns, clock=mf.CLOCK_WALL)
            self.gil = 0

        def _stack(self, names):
            key = (tuple(names), self.gil)
            if key not in self.stacks:
                frames = [(self._code(n), 1) for n in names]
                sid = len(self.stacks) + 1
                self.stacks[key] = sid
                payload = mf.uvarint(sid) + mf.uvarint(len(frames)) + b"".join(
                    mf.uvarint(c) + mf.svarint(line) for c, line in frames)
                self.recs.append(mf.record(mf.REC_STACK, payload + mf.uvarint(self.gil)))
            return self.stacks[key]

    log = GilLog(6200)
    log.thread(0, 6200, "MainThread")
    log.thread(1, 6201, "worker")
    log.start(1, 10_000, 0, "req")
    waits = 0
    for k, t_us in enumerate(range(500, 60_000, 1000)):
        inside = 10_000 <= t_us < 40_000
        log.gil = 2 if inside and k % 3 == 0 else 1
        waits += log.gil == 2
        log.sample(t_us, 0, ["main", "handle" if inside else "idle"])
        log.gil = 1 if log.gil == 2 else 3
        log.sample(t_us, 1, ["main", "other"])
        if t_us == 40_500:
            log.stop(1, 40_000, 0)
    assert waits == 10
    path = log.write(tmp_path / "gil-span.lz4")
    page = str(tmp_path / "gil-span.html")
    res = t.tool("html", path, "-o", page)
    assert res.returncode == 0 and not res.stderr, (res.returncode, res.stderr)
    with open(page, encoding="utf-8") as f:
        data, _ = embedded_json(f.read())
    check_schema("html", data, "pyprof html's data (a span with GIL waits)")
    assert data["gil"] == 1 and len(data["spans"]) == 1
    st_wait = data["spans"][0]["st_wait"]
    assert sum(st_wait[1::2]) == waits and sum(data["spans"][0]["st"][1::2]) == 30
    del browser.console_errors[:]
    browser.open(page)
    span = browser.evaluate("pyprofViewer.spans()")[0]
    browser.click(span["x"], span["y"])
    assert browser.evaluate("pyprofViewer.flameSamples()") == 30
    browser.click(*center(browser, "#gil-wait"))
    browser.wait_for("pyprofViewer.gilWaitOnly()")
    assert browser.evaluate("pyprofViewer.selectedSpan()") == "req"
    assert browser.evaluate("pyprofViewer.flameSamples()") == waits
    assert browser.evaluate("pyprofViewer.flameFunctions()") == ["handle", "main"]
    # Out of the span: the whole range's waits, the main thread's only.
    browser.click(*center(browser, "#tl-reset"))
    browser.wait_for("pyprofViewer.selectedSpan() === null")
    assert browser.evaluate("pyprofViewer.flameSamples()") == waits
    check_clean(browser)


# ---- asyncio tasks ------------------------------------------------------------------------

TASKS_WORKLOAD = t.workload("html_tasks.py")
TASK_RGB = {"running": (0x2b, 0x8a, 0x3e), "awaiting": (0xe8, 0xa3, 0x17)}
# The workload's tasks (their main task has asyncio's default name, Task-N).
TASK_NAMES = ("cruncher", "waiter", "<b>x</b>")


@pytest.fixture(scope="module", params=[i for i in t.SID_IDS if i == "py3.14"])
def tasks_page(tmp_path_factory, request):
    """html_tasks.py (a busy `cruncher`, a `waiter` suspended the whole time, a task named
    <b>x</b> that alternates CPU and sleeps) profiled in wall mode on 3.14, where the
    suspended tasks are sampled too, and its page."""
    tmp = tmp_path_factory.mktemp("html-tasks")
    interp = t.by_id(request.param)[0].require()
    prof = t.run([interp.path, TASKS_WORKLOAD], str(tmp / "logs"),
                 env={"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": "5ms"})
    assert prof.rc == 0 and len(prof.logs) == 1, prof.describe()
    page = str(tmp / "tasks.html")
    res = t.tool("html", str(tmp / "logs"), "-o", page)
    assert res.returncode == 0 and not res.stderr, (res.returncode, res.stderr)
    rep = t.tool_json("report", "--tasks", "--json", str(tmp / "logs"))
    return {"dir": str(tmp / "logs"), "page": page, "tmp": tmp,
            "rows": dict((r["task"], r) for r in rep["tasks"])}


def lane_counts(lane):
    """A lane's samples (running, awaiting), summed from its runs."""
    runs, states = lane["runs"], lane["runs_await"]
    assert len(states) == len(runs) // 4 and set(states) <= set("01"), lane["name"]
    n = [0, 0]
    for k, s in enumerate(states):
        n[int(s)] += runs[4 * k + 3]
    return tuple(n)


def test_task_lanes_in_page_data(tasks_page):
    """A lane per task, named as the workload named it; each lane's running and awaiting
    samples are what `pyprof report --tasks --json` counts for the task (self, awaiting);
    the awaiting samples change nothing else (the samples, the threads' runs and GIL
    counts are the report's without --awaiting), unless --awaiting is given."""
    with open(tasks_page["page"], encoding="utf-8") as f:
        data, raw = embedded_json(f.read())
    check_schema("html", data, "pyprof html's data (asyncio tasks)")
    assert "<" not in raw and "&" not in raw
    rows = tasks_page["rows"]
    lanes = dict((ln["name"], ln) for ln in data["tasks"])
    named = [n for n in lanes if not re.match(r"^<task Task-\d+>$", n)]
    assert sorted(named) == sorted("<task %s>" % n for n in TASK_NAMES), list(lanes)
    for name in TASK_NAMES:
        ln, row = lanes["<task %s>" % name], rows[name]
        assert ln["tasks"] == 1 and ln["th"] == 0, ln["name"]
        assert (ln["running"], ln["awaiting"]) == (row["self"], row["awaiting"]), (name, row)
        assert lane_counts(ln) == (row["self"], row["awaiting"]), name
    assert rows["cruncher"]["self"] > 20 and rows["waiter"]["awaiting"] > 20, rows
    assert rows["waiter"]["self"] == 0, rows["waiter"]
    # Kept apart: everything else counts what the report counts without --awaiting.
    rep = t.report(tasks_page["dir"])
    assert data["samples"] == rep["samples"]
    assert sum(sum(th["runs"][3::4]) for th in data["threads"]) == rep["samples"]
    gil = t.tool_json("report", "--gil", "--json", tasks_page["dir"])
    assert [sum(th["gil"][i] for th in data["threads"]) for i in range(len(GIL_KEYS))] == [
        gil["states"][k] for k in GIL_KEYS]
    # With --awaiting they are samples too, as for every command; the lanes are the same.
    page = str(tasks_page["tmp"] / "tasks-awaiting.html")
    res = t.tool("html", "--awaiting", tasks_page["dir"], "-o", page)
    assert res.returncode == 0 and not res.stderr, res.stderr
    with open(page, encoding="utf-8") as f:
        both, _ = embedded_json(f.read())
    assert both["samples"] == t.report("--awaiting", tasks_page["dir"])["samples"]
    assert both["samples"] == rep["samples"] + sum(ln["awaiting"] for ln in data["tasks"])
    assert [(ln["name"], lane_counts(ln)) for ln in both["tasks"]] == [
        (ln["name"], lane_counts(ln)) for ln in data["tasks"]]


def lane_of(b, name):
    lanes = [ln for ln in b.evaluate("pyprofViewer.taskLanes()") if ln["name"] == name]
    assert len(lanes) == 1, (name, b.evaluate("pyprofViewer.taskLanes()"))
    return lanes[0]


def click_mark(b, name, state):
    """Clicks (a real mouse click) a drawn mark of task lane `name` in `state`; returns
    the stack panel's function names and its line."""
    lane = lane_of(b, name)
    where = "pyprofViewer.taskColumn(%d, %s)" % (lane["lane"], json.dumps(state))
    at = b.evaluate(where)
    assert at, (name, state, lane)
    if not 0 < at["y"] < b.evaluate("window.innerHeight"):   # scrolled into view first
        b.evaluate("window.scrollBy(0, %d)" % (at["y"] - b.evaluate("window.innerHeight") // 2))
        at = b.evaluate(where)
    b.click(at["x"], at["y"])
    b.wait_for("pyprofViewer.selection() && pyprofViewer.selection().lane === %d"
               % lane["lane"])
    return (texts(b, "#stack li .fn"),
            b.evaluate("document.getElementById('stack-info').textContent"))


def test_tasks_view(browser, tasks_page):
    """The Tasks toggle adds a lane per task to the timeline, its marks in the running
    and awaiting colours (a legend says which is which), and back; the flame graph does
    not change.  A real click on a mark lists its stack (markup in a task's name stays
    text)."""
    b = browser
    del b.console_errors[:]
    del b.dialogs[:]
    del b.requests[:]
    b.open(tasks_page["page"])
    rows = tasks_page["rows"]
    rep = t.report(tasks_page["dir"])
    assert b.evaluate("pyprofViewer.tasks()") and not b.evaluate("pyprofViewer.tasksOn()")
    assert not b.evaluate("document.getElementById('tasks-label').hidden")
    assert b.evaluate("document.getElementById('tasks-legend').hidden")
    for rgb in TASK_RGB.values():
        assert drawn_pixels(b, "timeline", rgb) == 0
    before = canvas_digest(b, "timeline")
    assert b.evaluate("pyprofViewer.flameSamples()") == rep["samples"]

    b.click(*center(b, "#tasks-on"))
    b.wait_for("pyprofViewer.tasksOn()")
    assert not b.evaluate("document.getElementById('tasks-legend').hidden")
    legend = b.evaluate("document.getElementById('tasks-legend').textContent")
    assert "running" in legend and "awaiting" in legend, legend
    for state, rgb in TASK_RGB.items():
        assert drawn_pixels(b, "timeline", rgb) > 100, state
    for name in TASK_NAMES:
        ln = lane_of(b, "<task %s>" % name)
        assert ln["drawn"], ln
        assert (ln["running"], ln["awaiting"]) == (rows[name]["self"], rows[name]["awaiting"])
    cols = lane_of(b, "<task cruncher>")["columns"]
    assert cols["running"] > 50, cols
    cols = lane_of(b, "<task waiter>")["columns"]
    assert cols["awaiting"] > 50 and cols["running"] == 0, cols
    assert b.evaluate("pyprofViewer.flameSamples()") == rep["samples"]

    # Marks clicked: the stack of a busy task's sample, of a waiting task's at its await.
    fns, info = click_mark(b, "<task cruncher>", "running")
    assert "<task cruncher>" in fns and fns[-1] == "burn", fns
    assert "running" in info and "<task cruncher>" in info, info
    fns, info = click_mark(b, "<task waiter>", "awaiting")
    assert fns[:4] == ["<task waiter>", "waiter", "wait_inner", "Event.wait"], fns
    assert "awaiting" in info, info
    fns, info = click_mark(b, "<task <b>x</b>>", "awaiting")
    assert fns[:2] == ["<task <b>x</b>>", "marked"], fns
    assert "<task <b>x</b>>" in info, info
    assert b.evaluate("document.querySelectorAll('b').length") == 0

    b.click(*center(b, "#tasks-on"))
    b.wait_for("!pyprofViewer.tasksOn()")
    assert b.evaluate("pyprofViewer.selection()") is None
    for rgb in TASK_RGB.values():
        assert drawn_pixels(b, "timeline", rgb) == 0
    assert canvas_digest(b, "timeline") == before
    check_clean(b)


def test_tasks_hash_opens_lanes(browser, tasks_page):
    """`PAGE.html#tasks` opens the page with the task lanes on."""
    page = str(tasks_page["tmp"] / "tasks-hash.html")
    with open(tasks_page["page"], "rb") as f, open(page, "wb") as out:
        out.write(f.read())
    del browser.console_errors[:]
    browser.open(page + "#tasks")
    assert browser.evaluate("pyprofViewer.tasksOn()")
    assert browser.evaluate("document.getElementById('tasks-on').checked")
    assert drawn_pixels(browser, "timeline", TASK_RGB["running"]) > 100
    assert lane_of(browser, "<task waiter>")["drawn"]
    check_clean(browser)


def test_no_tasks_view_without_task_frames(opened, names_page):
    """A page of a program without asyncio tasks (cpu mode) has no task lanes in its
    data, no Tasks toggle, and turning the toggle on anyway changes no pixel."""
    with open(names_page["page"], encoding="utf-8") as f:
        data, _ = embedded_json(f.read())
    assert "tasks" not in data
    b = opened
    assert not b.evaluate("pyprofViewer.tasks()")
    assert b.evaluate("document.getElementById('tasks-label').hidden")
    before = canvas_digest(b, "timeline")
    b.evaluate("""(() => { const c = document.getElementById('tasks-on');
        c.checked = true; c.dispatchEvent(new Event('change')); })()""")
    assert not b.evaluate("pyprofViewer.tasksOn()")
    assert canvas_digest(b, "timeline") == before
    check_clean(b)


@pytest.mark.parametrize("interp", t.params([i for i in t.SIDS if i.id == "py3.14"]))
def test_task_lanes_bounded(browser, tmp_path, interp):
    """More tasks than lanes: asyncio_waiting.py with 100 more idle tasks.  A process has
    64 lanes of its own tasks, those with the most samples, and one for the rest; every
    task sample is in one of them (the lanes' sums are the report's), and a mark of the
    shared lane, clicked, names its task."""
    interp.require()
    prof = t.run([interp.path, t.workload("asyncio_waiting.py")], str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": "10ms", "WORKLOAD_MANY": "100"})
    assert prof.rc == 0 and len(prof.logs) == 1, prof.describe()
    page = str(tmp_path / "many.html")
    res = t.tool("html", prof.logs[0], "-o", page)
    assert res.returncode == 0 and not res.stderr, res.stderr
    with open(page, encoding="utf-8") as f:
        data, _ = embedded_json(f.read())
    check_schema("html", data, "pyprof html's data (more tasks than lanes)")
    rep = t.tool_json("report", "--tasks", "--json", prof.logs[0])
    lanes = data["tasks"]
    assert len(lanes) == 65 and [ln["name"] for ln in lanes].count("") == 1, len(lanes)
    other = lanes[-1]
    assert other["name"] == "", [ln["name"] for ln in lanes][-3:]
    tasks = set(f[0] for f in data["funcs"] if re.match(r"^<task .*>$", f[0]) and not f[1])
    assert other["tasks"] == len(tasks) - 64 > 0, (other["tasks"], len(tasks))
    totals = [ln["running"] + ln["awaiting"] for ln in lanes[:-1]]
    assert totals == sorted(totals, reverse=True), totals
    assert sum(lane_counts(ln)[0] for ln in lanes) == rep["with_task"]
    assert sum(lane_counts(ln)[1] for ln in lanes) == rep["awaiting"] > 0
    del browser.console_errors[:]
    browser.open(page + "#tasks")
    lane = lane_of(browser, "%d other tasks" % other["tasks"])
    assert lane["drawn"] and lane["columns"]["awaiting"] > 0, lane
    fns, info = click_mark(browser, lane["name"], "awaiting")
    named = re.search(r" · (<task [^>]*>) · awaiting", info)
    assert named and named.group(1) in tasks and named.group(1) in fns, (info, fns)
    assert named.group(1) not in [ln["name"] for ln in lanes], named.group(1)
    check_clean(browser)
