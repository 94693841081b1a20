"""The JSON the tool writes against its documented schemas (docs/JSON.md).

docs/JSON.md holds one JSON Schema per output in a ```json-schema block whose title
names it.  Real outputs of the tool on real logs must validate against them: a key the
tool writes that the document does not list (every object there says
additionalProperties: false), a required key missing, or a value of another type fails.

The logs: workloads/json_shapes.py under the library (spans nested, failed, open and
with info that is not JSON, a hostile thread name, a fork), dumped while it runs and
then ended by SIGTERM (a footer with a signal); a native-mode run (its report's
`native` object); the fixtures (a log without a footer: the nulls; alloc.lz4, the
outputs of --memory, check_memory; make_fixtures' awindow_log, the allocation
windows).  The last tests
show that the check can fail: the same outputs against schemas with a key taken out,
a key required that the tool does not write, a type changed.
"""

import copy
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

import jsonschema
import pytest

import pyprof_testlib as t

sys.path.insert(0, t.FIXTURES)
import make_fixtures as mf  # noqa: E402  (the allocation windows' log)

DOC = os.path.join(t.REPO, "docs", "JSON.md")
PYPKG = os.path.join(t.REPO, "utils", "python")
SHAPES = t.workload("json_shapes.py")
INTERPS = [i for i in t.by_id("py3.11", "py2.7", "py3.13") if os.access(i.path, os.X_OK)]
PAGE_DATA = re.compile(
    br'<script id="pyprof-data" type="application/json">(.*?)</script>', re.S)


def schemas():
    """docs/JSON.md's schemas by title."""
    with open(DOC) as f:
        text = f.read()
    out = {}
    for block in re.findall(r"```json-schema\n(.*?)```", text, re.S):
        schema = json.loads(block)
        jsonschema.Draft202012Validator.check_schema(schema)
        out[schema["title"]] = schema
    return out


def problems(schema, doc):
    """What is wrong with `doc` under `schema`, one line each (empty: valid)."""
    v = jsonschema.Draft202012Validator(schema)
    out = []
    for e in sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in e.absolute_path) or "(top)"
        out.append("%s: %s" % (where, e.message[:300]))
        # oneOf hides the reason: show the branch that came closest.
        for sub in sorted(e.context or [], key=lambda s: -len(s.absolute_path))[:1]:
            out.append("  %s: %s" % ("/".join(str(p) for p in sub.absolute_path),
                                     sub.message[:300]))
    return out


def check(title, doc, what):
    bad = problems(schemas()[title], doc)
    assert not bad, "%s does not match docs/JSON.md, %r:\n%s" % (what, title,
                                                                 "\n".join(bad[:40]))


def page_data(*args):
    """The JSON document inside the page `pyprof ARGS` prints."""
    res = t.tool_bytes(*args)
    assert res.returncode == 0, res.stderr
    m = PAGE_DATA.search(res.stdout)
    assert m, "no data element in the page of pyprof %s" % " ".join(map(str, args))
    return json.loads(m.group(1).decode("utf-8"))


def check_logs(paths, traces=True):
    """Every output made from the logs `paths`, each against its schema.  Returns the
    report."""
    rep = t.tool_json("report", "--json", *paths)
    check("report", rep, "report --json")
    check("report", t.tool_json("report", "--json", "--top", "1", *paths), "report --top 1")
    check("tree", t.tool_json("tree", "--json", "--min", "0", *paths), "tree --json --min 0")
    check("tree", t.tool_json("tree", "--json", "--depth", "2", *paths), "tree --depth 2")
    check("html", page_data("html", "-o", "-", *paths), "pyprof html's data")
    check("diff", t.tool_json("diff", "--json", paths[0], paths[-1]), "diff --json")
    check("diff page", page_data("diff", "--html", paths[0], paths[-1]), "diff --html's data")
    listed = t.tool_json("trace", "list", "--json", *paths)
    check("trace list", listed, "trace list --json")
    if traces:
        assert listed["traces"], "no traces in %s" % (paths,)
    for tr in listed["traces"]:
        shown = t.tool_json("trace", "show", "--json", tr["trace_id"], *paths)
        check("trace show", shown, "trace show --json %s" % tr["trace_id"])
        check("trace show", page_data("trace", "show", "--html", tr["trace_id"], *paths),
              "trace show --html %s" % tr["trace_id"])
    return rep


_runs = {}


def wait_ready(proc):
    """Reads proc's stdout until "ready" (True), its end or the time limit (False)."""
    early, deadline = b"", time.time() + t.TIMEOUT
    while b"ready\n" not in early:
        r, _, _ = select.select([proc.stdout], [], [], max(deadline - time.time(), 0))
        chunk = os.read(proc.stdout.fileno(), 4096) if r else b""
        if not chunk:
            return False
        early += chunk
    return True


def shapes_run(interp, tmp_path_factory):
    """json_shapes.py under the library on `interp`, once: its dump (taken while it
    ran) and its logs (after SIGTERM)."""
    if interp.id in _runs:
        return _runs[interp.id]
    interp.require()
    out = str(tmp_path_factory.mktemp("json-" + interp.id))
    env = t.preload_env(t.base_env())
    env.update({"PYPROF_OUTPUT": out, "PYTHONPATH": PYPKG, "PYPROF_PERIOD": "1ms"})
    proc = subprocess.Popen([interp.path, SHAPES], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    dump = None
    try:
        if wait_ready(proc):
            dump = t.tool_json("dump", "--json", proc.pid)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=t.TIMEOUT)
    assert dump is not None and proc.returncode == -signal.SIGTERM, (
        "%s: exit %s\n%s" % (interp.id, proc.returncode, err.decode("utf-8", "replace")))
    _runs[interp.id] = (dump, [os.path.join(out, f) for f in sorted(os.listdir(out))])
    return _runs[interp.id]


@pytest.mark.parametrize("interp", t.params(INTERPS))
def test_dump(interp, tmp_path_factory):
    dump, _ = shapes_run(interp, tmp_path_factory)
    check("dump", dump, "dump --json")
    names = [th["name"] for th in dump["threads"]]
    assert "MainThread" in names, names


@pytest.mark.parametrize("interp", t.params(INTERPS))
def test_outputs(interp, tmp_path_factory):
    _, logs = shapes_run(interp, tmp_path_factory)
    assert len(logs) == 2, logs  # the process and its fork child
    rep = check_logs(logs)
    main = [p for p in rep["processes"] if p["signal"] is not None]
    assert [p["signal"] for p in main] == [signal.SIGTERM], rep["processes"]
    assert main[0]["spans_unfinished"] >= 1 and main[0]["snapshots"] == 1, main[0]
    # The workload's spans are all there: the schemas saw each kind.
    roots = sorted(tr["root"] for tr in t.tool_json("trace", "list", "--json", *logs)["traces"])
    assert roots == [u"c-span\ufffd", "left open", "outer", "work<er>"], roots
    for log in logs:
        check_logs([log], traces=False)


def test_native(tmp_path):
    """A report's native object (PYPROF_NATIVE=1)."""
    (interp,) = t.by_id("py3.11")
    interp.require()
    out = str(tmp_path / "logs")
    run = t.run([interp.path, t.workload("simple.py")], out,
                env={"PYPROF_NATIVE": "1", "PYPROF_PERIOD": "1ms"})
    assert run.rc == 0, run.describe()
    rep = check_logs(run.logs, traces=False)
    assert rep["processes"][0]["native"] is not None, t.dump(rep)


@pytest.mark.parametrize("fixture", ["good.lz4", "truncated.lz4"])
def test_fixtures(fixture):
    rep = check_logs([os.path.join(t.FIXTURES, fixture)], traces=False)
    if fixture == "truncated.lz4":
        p = rep["processes"][0]
        assert p["truncated"] and p["cost"] is None and p["achieved_hz"] is None, p


def check_memory(paths):
    """The --memory outputs made from `paths` (logs with allocation sampling), each
    against its schema; the other outputs too.  Returns report --memory --json."""
    rep = t.tool_json("report", "--memory", "--json", *paths)
    check("report memory", rep, "report --memory --json")
    check("report memory", t.tool_json("report", "--memory=inuse", "--json", "--top", "1",
                                       *paths), "report --memory=inuse --top 1")
    check("tree memory", t.tool_json("tree", "--memory", "--json", "--min", "0", *paths),
          "tree --memory --json --min 0")
    check("tree memory", t.tool_json("tree", "--memory=inuse", "--json", "--depth", "2",
                                     *paths), "tree --memory=inuse --depth 2")
    check_logs(paths, traces=False)
    return rep


def test_memory_fixture():
    """tests/fixtures/alloc.lz4: every domain, a footer with the allocation section."""
    rep = check_memory([os.path.join(t.FIXTURES, "alloc.lz4")])
    assert rep["processes"][0]["alloc_live"] == 4 and rep["functions"], rep
    assert all(rep["domains"][d]["samples"] for d in rep["domains"]), rep["domains"]


def test_memory_windows(tmp_path):
    """make_fixtures' awindow_log: allocation windows and pauses of them, the process's
    alloc_windows object (absent from alloc.lz4's report, above)."""
    path = str(tmp_path / "awindow.lz4")
    with open(path, "wb") as f:
        f.write(mf.lz4(mf.awindow_log()))
    rep = check_memory([path])
    w = rep["processes"][0]["alloc_windows"]
    assert (w["windows"], w["shift_min"], w["shift_max"], w["pauses"]) == (2, 4, 5, 2), w
    assert w["weighed"] == 2 and w["floor_shift"] == 5, w


# ---- the check can fail -----------------------------------------------------------------


def test_fails_on_undocumented_key(tmp_path_factory):
    """A key the tool writes but the document does not list is an error."""
    _, logs = shapes_run(INTERPS[0], tmp_path_factory)
    rep = t.tool_json("report", "--json", *logs)
    schema = copy.deepcopy(schemas()["report"])
    del schema["$defs"]["process"]["properties"]["samples_in_log"]
    schema["$defs"]["process"]["required"].remove("samples_in_log")
    bad = problems(schema, rep)
    assert any("samples_in_log" in b and "not allowed" in b for b in bad), bad


def test_fails_on_missing_required_key(tmp_path_factory):
    _, logs = shapes_run(INTERPS[0], tmp_path_factory)
    rep = t.tool_json("report", "--json", *logs)
    schema = copy.deepcopy(schemas()["report"])
    schema["required"].append("no_such_key")
    bad = problems(schema, rep)
    assert any("'no_such_key' is a required property" in b for b in bad), bad


def test_fails_on_wrong_type(tmp_path_factory):
    _, logs = shapes_run(INTERPS[0], tmp_path_factory)
    listed = t.tool_json("trace", "list", "--json", *logs)
    schema = copy.deepcopy(schemas()["trace list"])
    schema["properties"]["traces"]["items"]["properties"]["spans"]["type"] = "string"
    bad = problems(schema, listed)
    assert any("is not of type 'string'" in b for b in bad), bad
