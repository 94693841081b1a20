"""exec: the log of a process that execs another program is finalized first (complete,
"ended": "exec", with its samples), and the exec'd program's output is unchanged.
Children that subprocess forks and execs leave no log of their own."""

import os

import pytest

import pyprof_testlib as t

EXEC = t.workload("exec_echo.py")
SPAWN = t.workload("spawn_true.py")
INTERPS = t.params(t.by_id("py2.7", "py3.8", "py3.11-debian", "py3.12", "py3.13", *t.SID_IDS))


@pytest.mark.parametrize("interp", INTERPS)
def test_exec_finalizes_log(interp, tmp_path):
    interp.require()
    prof, base = t.run_pair([interp.path, EXEC], tmp_path)
    t.assert_transparent(prof, base)
    assert prof.stdout == b"exec workload: echo ran\n", prof.describe()
    p = t.one_log(prof, ended="exec")
    assert not p.proc["truncated"], p.dump()
    # The workload burned at least 0.5 s of its own CPU before the exec: at least half
    # of those periods are in the log, however long the machine made it take.
    t.check_cpu_samples(p, 0.5)
    assert any(f["name"] == "burn" for f in p.rep["functions"]), p.dump()


@pytest.mark.parametrize("interp", INTERPS)
def test_subprocess_children_leave_no_log(interp, tmp_path):
    interp.require()
    prof, base = t.run_pair([interp.path, SPAWN], tmp_path)
    t.assert_transparent(prof, base)
    logs = [f for f in os.listdir(prof.outdir) if f.endswith(".lz4")]
    assert len(logs) == 1, "expected only the parent's log, got %r\n%s" % (logs,
                                                                           prof.describe())
    t.one_log(prof, ended="exit")
