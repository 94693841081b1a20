"""Where the asyncio layout comes from (docs/ASYNCIO.md, "Built so far"): on 3.14+ the
library finds `.AsyncioDebug` in the object that holds _asyncio, once it is loaded; on
3.7-3.13 its per-version table, checked against the _asyncio module once imported; and
says so once with PYPROF_VERBOSE.  What the line says is
held to what the workload computes from Python itself (the module's file,
_asyncio.Task.__basicsize__, the thread-state word that holds the running task)."""

import json
import re

import pytest

import pyprof_testlib as t

WORKLOAD = t.workload("asyncio_layout.py")
FOUND = re.compile(r"^pyprof: asyncio: layout from \.AsyncioDebug in (\S+) \(task (\d+) "
                   r"bytes, running task at thread state \+(\d+)\)$")
TABLE = re.compile(r"^pyprof: asyncio: layout from the table for 3\.(\d+) \(task (\d+) "
                   r"bytes, running tasks from _asyncio\._current_tasks, suspended ones "
                   r"from its set of tasks\)$")


def asyncio_lines(prof):
    return [line for line in t.stderr_lines(prof.stderr) if line.startswith("pyprof: asyncio")]


def run(interp, tmp_path, *args):
    prof = t.run([interp.path, WORKLOAD] + list(args), str(tmp_path / "logs"),
                 env={"PYPROF_VERBOSE": "1"})
    assert prof.rc == 0, prof.describe()
    report = json.loads(t._text(prof.stdout).strip().splitlines()[-1])
    # The look for the section left no descriptor on the files it read.
    for f in (report.get("object"), report["executable"]):
        assert f not in report["open_files"], (f, report)
    t.one_log(prof, ended="exit")
    return prof, report


def check_found(prof, report, lines):
    assert len(lines) == 1, ("expected the found line once\n" + prof.describe())
    m = FOUND.match(lines[0])
    assert m, ("not the found line: %r\n%s" % (lines[0], prof.describe()))
    path, task_size, running_task = m.group(1), int(m.group(2)), int(m.group(3))
    assert path == report["object"], (path, report)
    assert task_size == report["task_size"], (task_size, report)
    # Every task the workload ran found itself at that word of its thread state, and
    # only there.
    assert report["running_task_at"] == [[running_task]], (running_task, report)


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_layout_found(interp, tmp_path):
    """asyncio imported after 0.3 s, an event loop for 0.5 s: the layout found once on
    3.14+ (3.14: the _asyncio extension loaded at the import; 3.15: the executable);
    3.7-3.13: the table line once asyncio is imported; no asyncio line before 3.7."""
    interp.require()
    if interp.minor < (3, 7):   # no asyncio.run: the program alone, nothing claimed
        prof = t.run([interp.path, t.workload("simple.py")], str(tmp_path / "logs"),
                     env={"PYPROF_VERBOSE": "1"})
        assert prof.rc == 0, prof.describe()
        assert asyncio_lines(prof) == [], prof.describe()
        return
    prof, report = run(interp, tmp_path)
    lines = asyncio_lines(prof)
    if interp.minor < (3, 14):
        # The table's row, checked against the module: its Task's size is Python's own.
        assert len(lines) == 1, ("expected the table line once\n" + prof.describe())
        m = TABLE.match(lines[0])
        assert m, ("not the table line: %r\n%s" % (lines[0], prof.describe()))
        assert int(m.group(1)) == interp.minor[1], (lines, interp)
        assert int(m.group(2)) == report["task_size"], (lines, report)
        return
    check_found(prof, report, lines)
    if not report["builtin"]:
        assert "_asyncio" in report["object"], report


@pytest.mark.parametrize("interp", t.params(t.SIDS))
def test_never_imported(interp, tmp_path):
    """A program that never imports asyncio: no asyncio line where _asyncio is an
    extension module (never loaded); where it is built into the interpreter the section
    is there from the start, found in the executable."""
    interp.require()
    prof, report = run(interp, tmp_path, "never")
    lines = asyncio_lines(prof)
    if not report["builtin"]:
        assert lines == [], prof.describe()
        return
    assert len(lines) == 1, prof.describe()
    m = FOUND.match(lines[0])
    assert m and m.group(1) == interp.exe, (lines, interp.exe)
