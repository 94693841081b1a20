"""Children: every process of a tree gets its own complete log (its pid, its parent's pid,
the run id of the tree), with its own samples only; PYPROF_CHILDREN=0 and PYPROF_FILTER
choose which processes are profiled; `pyprof report DIR` and `--run ID` combine the tree.

workloads/children.py burns CPU in parent_burn(), then forks three workers (each burning
in worker_<i>) or starts a multiprocessing 'fork' child (mp_worker) and a Python child
through subprocess (child_prog.py, exec_child_burn); every process writes "pid ppid" to
$CHILD_PIDS/<role> so the test knows which log belongs to whom.
"""

import os

import pytest

import pyprof_testlib as t

CHILDREN = t.workload("children.py")
CHILD_PROG = t.workload("child_prog.py")
# Every burn is 0.3 s of the process's own CPU (BURN_SECONDS in children.py,
# child_burn in fork_from_thread.py), however long a busy machine makes it take: at
# 2 ms, 150 periods, worth ~150 samples (the perf timer) or ~75 (the 250 Hz tick timer).
# A quarter of the periods, well below both, still catches a process whose samples went
# missing.
BURN_CPU = 0.3
PERIOD = 0.002
MIN_SAMPLES = int(0.25 * BURN_CPU / PERIOD)
ENV = {"PYPROF_PERIOD": "%dms" % (PERIOD * 1000)}
INTERPS = t.params(t.by_id("py2.7", "py3.8", "py3.11", "py3.12", "py3.13",
                           "py3.11-debian", *t.SID_IDS))
MIXED = t.params(t.by_id("py2.7", "py3.8", "py3.13", "py3.11-debian", *t.SID_IDS))
FEW = t.params(t.by_id("py2.7", "py3.12", "py3.11-debian", *t.SID_IDS))

FORK_WORKERS = ["worker_0", "worker_1", "worker_2"]
PARENT_ONLY = ["parent_burn", "parent_after"]


def run_tree(interp, tmp_path, mode, env=None):
    """Runs children.py under the library and without it; checks that the target behaved
    the same; returns (profiled run, {role: (pid, ppid)})."""
    pids = tmp_path / ("pids-%s" % mode)
    base_pids = tmp_path / ("base-pids-%s" % mode)
    pids.mkdir()
    base_pids.mkdir()
    e = dict(ENV, CHILDREN_MODE=mode, CHILD_PIDS=str(pids))
    e.update(env or {})
    be = dict(e, CHILD_PIDS=str(base_pids))
    prof, base = t.run_pair([interp.path, CHILDREN], tmp_path, env=e, base_env=be)
    # stderr is compared by test_fork_does_not_warn, so that these tests check the rest.
    t.assert_transparent(prof, base, stderr_too=False)
    assert prof.rc == 0 and b"children workload: done" in prof.stdout, prof.describe()
    roles = {}
    for role in os.listdir(str(pids)):
        with open(str(pids / role)) as f:
            pid, ppid = f.read().split()
        roles[role] = (int(pid), int(ppid))
    assert roles["parent"][0] == prof.pid, (roles, prof.describe())
    return prof, roles


def by_pid(prof):
    """{pid: (log path, report)} for every log of the run; each must be complete."""
    out = {}
    for path in prof.logs:
        rep = t.report(path)
        t.check_report_shape(rep)
        assert len(rep["processes"]) == 1, t.dump(rep)
        p = rep["processes"][0]
        assert p["pid"] not in out, "two logs for pid %d\n%s" % (p["pid"], prof.describe())
        out[p["pid"]] = (path, rep)
    return out


def names(rep):
    return dict((f["name"], f) for f in rep["functions"])


def check_child(rep, role, parent, run_id, ended, own, path):
    """One child's log: its pid and parent, the tree's run id, a footer, samples in its
    own function and none in the parent's (nor in a sibling's)."""
    p = rep["processes"][0]
    where = "%s (%s)\n%s" % (path, role, t.dump(rep))
    assert p["ppid"] == parent, "ppid %d, parent is %d\n%s" % (p["ppid"], parent, where)
    assert p["run_id"] == run_id, "run id %r, the tree's is %r\n%s" % (p["run_id"], run_id,
                                                                       where)
    assert p["truncated"] is False and p["ended"] == ended, where
    fns = names(rep)
    assert own in fns and fns[own]["total"] >= MIN_SAMPLES, (
        "child %s: expected >= %d samples in %s\n%s" % (role, MIN_SAMPLES, own, where))
    for other in PARENT_ONLY + FORK_WORKERS + ["mp_worker", "exec_child_burn"]:
        if other != own:
            assert other not in fns, ("child %s has samples in %s, which it never ran (the "
                                      "parent's unwritten samples?)\n%s" % (role, other, where))
    assert all(th["pid"] == p["pid"] for th in rep["threads"]), where
    assert sum(th["samples"] for th in rep["threads"]) == p["samples"], where


@pytest.mark.parametrize("interp", INTERPS)
def test_fork_three_workers(interp, tmp_path):
    interp.require()
    prof, roles = run_tree(interp, tmp_path, "fork3")
    logs = by_pid(prof)
    want = set(pid for pid, _ in roles.values())
    assert set(logs) == want, ("expected one log for each of the pids %s, got logs for %s\n%s"
                               % (sorted(want), sorted(logs), prof.describe()))
    assert len(prof.logs) == 4, prof.describe()

    path, prep = logs[prof.pid]
    parent = prep["processes"][0]
    assert parent["truncated"] is False and parent["ended"] == "exit", t.dump(prep)
    pf = names(prep)
    assert "parent_burn" in pf and pf["parent_burn"]["total"] >= MIN_SAMPLES, t.dump(prep)
    for w in FORK_WORKERS:
        assert w not in pf, "the parent has samples in %s\n%s" % (w, t.dump(prep))
    for i, w in enumerate(FORK_WORKERS):
        pid, ppid = roles["worker_%d" % i]
        assert ppid == prof.pid, roles
        cpath, crep = logs[pid]
        check_child(crep, w, prof.pid, parent["run_id"], "_exit", w, cpath)


@pytest.mark.parametrize("interp", t.params(t.by_id("py3.12", "py3.13", *t.SID_IDS)))
def test_fork_does_not_warn(interp, tmp_path):
    """Python 3.12+ warns at os.fork() when the process has more than one OS thread
    ("This process is multi-threaded, use of fork() may lead to deadlocks"): a thread of
    the library's own must not make the target print that warning."""
    interp.require()
    prof, base = t.run_pair([interp.path, CHILDREN], tmp_path,
                            env=dict(ENV, CHILDREN_MODE="fork3"))
    t.assert_transparent(prof, base)


@pytest.mark.parametrize("interp", MIXED)
def test_multiprocessing_and_subprocess(interp, tmp_path):
    """A multiprocessing child ('fork' start method; 2.7 always forks) and a Python child
    run with subprocess (fork + exec): each gets its own log with the tree's run id."""
    interp.require()
    prof, roles = run_tree(interp, tmp_path, "mixed")
    assert prof.stdout.count(b"exit code 0") == 2, prof.describe()
    logs = by_pid(prof)
    want = set(pid for pid, _ in roles.values())
    assert set(logs) == want and len(want) == 3, (
        "expected logs for parent, mp_worker and exec_child %r, got %s\n%s"
        % (roles, sorted(logs), prof.describe()))
    parent = logs[prof.pid][1]["processes"][0]
    assert parent["ended"] == "exit", t.dump(logs[prof.pid][1])
    mp_pid, mp_ppid = roles["mp_worker"]
    ex_pid, ex_ppid = roles["exec_child"]
    assert mp_ppid == prof.pid and ex_ppid == prof.pid, roles
    # multiprocessing's fork child leaves through os._exit.
    check_child(logs[mp_pid][1], "mp_worker", prof.pid, parent["run_id"], "_exit",
                "mp_worker", logs[mp_pid][0])
    check_child(logs[ex_pid][1], "exec_child", prof.pid, parent["run_id"], "exit",
                "exec_child_burn", logs[ex_pid][0])
    ex = logs[ex_pid][1]["processes"][0]
    assert any(a.endswith("child_prog.py") for a in ex["argv"]), t.dump(logs[ex_pid][1])


@pytest.mark.parametrize("mode", ["fork3", "mixed"])
@pytest.mark.parametrize("interp", FEW)
def test_children_off(interp, mode, tmp_path):
    """PYPROF_CHILDREN=0: the first process only, whatever made the children."""
    interp.require()
    prof, roles = run_tree(interp, tmp_path, mode, env={"PYPROF_CHILDREN": "0"})
    assert len(roles) == (4 if mode == "fork3" else 3), roles
    p = t.one_log(prof, ended="exit")
    assert p.function("parent_burn")["total"] >= MIN_SAMPLES, p.dump()


@pytest.mark.parametrize("interp", FEW)
def test_filter_child_only(interp, tmp_path):
    """PYPROF_FILTER matching only the exec'd child's script: only the child has a log
    (the parent and its multiprocessing child are left alone)."""
    interp.require()
    prof, roles = run_tree(interp, tmp_path, "mixed",
                           env={"PYPROF_FILTER": "*child_prog.py*"})
    ex_pid, _ = roles["exec_child"]
    assert len(prof.logs) == 1, "expected only the child's log\n%s" % prof.describe()
    rep = t.report(prof.logs[0])
    t.check_report_shape(rep)
    p = rep["processes"][0]
    assert p["pid"] == ex_pid and p["ppid"] == prof.pid, (roles, t.dump(rep))
    assert p["truncated"] is False and p["ended"] == "exit", t.dump(rep)
    fns = names(rep)
    assert "exec_child_burn" in fns and fns["exec_child_burn"]["total"] >= MIN_SAMPLES, \
        t.dump(rep)


def check_combined(rep, pids, where):
    procs = rep["processes"]
    got = sorted(p["pid"] for p in procs)
    assert got == sorted(pids), "processes %s, expected %s\n%s" % (got, sorted(pids), where)
    total = sum(p["samples"] for p in procs)
    assert total == rep["samples"], ("per-process samples sum to %d, total says %d\n%s"
                                     % (total, rep["samples"], where))
    assert sum(th["samples"] for th in rep["threads"]) == rep["samples"], where
    assert sum(f["self"] for f in rep["functions"]) <= rep["samples"], where
    assert rep["samples"] > 0, where


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.13", "py3.11-debian",
                                                    *t.SID_IDS)))
def test_report_combines_tree(interp, tmp_path):
    """Two runs of the tree into one directory: `report DIR` shows all eight processes,
    `report --run ID DIR` exactly the four of that run; per-process counts add up."""
    interp.require()
    outdir = str(tmp_path / "logs")
    runs = []
    for k in range(2):
        pids = tmp_path / ("pids%d" % k)
        pids.mkdir()
        r = t.run([interp.path, CHILDREN], outdir,
                  env=dict(ENV, CHILDREN_MODE="fork3", CHILD_PIDS=str(pids)))
        assert r.rc == 0, r.describe()
        runs.append(sorted(int(open(str(pids / f)).read().split()[0])
                           for f in os.listdir(str(pids))))
    assert len(os.listdir(outdir)) == 8, os.listdir(outdir)

    rep = t.report(outdir)
    t.check_report_shape(rep)
    check_combined(rep, runs[0] + runs[1], t.dump(rep))
    run_ids = {}
    for p in rep["processes"]:
        k = 0 if p["pid"] in runs[0] else 1
        run_ids.setdefault(k, set()).add(p["run_id"])
    assert len(run_ids[0]) == 1 and len(run_ids[1]) == 1 and run_ids[0] != run_ids[1], (
        "each run must have one run id of its own: %r\n%s" % (run_ids, t.dump(rep)))
    # Total samples of the combined report == the sum of the per-log reports.
    single = sum(t.report(os.path.join(outdir, f))["samples"] for f in os.listdir(outdir))
    assert single == rep["samples"], (single, t.dump(rep))

    for k in (0, 1):
        rid = next(iter(run_ids[k]))
        sub = t.report("--run", rid, outdir)
        check_combined(sub, runs[k], t.dump(sub))
        assert all(p["run_id"] == rid for p in sub["processes"]), t.dump(sub)
        # The tree's functions are all there: the parent's and each worker's.
        fns = names(sub)
        for fn in PARENT_ONLY[:1] + FORK_WORKERS:
            assert fn in fns and fns[fn]["total"] >= MIN_SAMPLES, (fn, t.dump(sub))


FORK_FROM_THREAD = t.workload("fork_from_thread.py")


@pytest.mark.parametrize("interp", FEW)
def test_fork_from_thread_child_ends(interp, tmp_path):
    """A child forked from a thread other than main ends when that thread returns (the C
    library calls exit(0) after the last thread): the library's own threads must not keep
    it alive.  It ends as without the library, with a complete log of its samples."""
    interp.require()
    prof, base = t.run_pair([interp.path, FORK_FROM_THREAD], tmp_path, env=ENV, timeout=60)
    t.assert_transparent(prof, base)
    assert prof.stdout == b"child done\nchild status 0\n", prof.describe()
    logs = by_pid(prof)
    child = [pid for pid in logs if pid != prof.pid]
    assert len(child) == 1 and prof.pid in logs, prof.describe()
    rep = logs[child[0]][1]
    proc = rep["processes"][0]
    assert proc["ended"] == "exit" and not proc["truncated"], t.dump(rep)
    assert proc["ppid"] == prof.pid, t.dump(rep)
    assert proc["samples"] >= MIN_SAMPLES, t.dump(rep)
    assert any(f["name"] == "child_burn" for f in rep["functions"]), t.dump(rep)
