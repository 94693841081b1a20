"""Threads: every thread that runs Python shows up, under its Python name, with samples
in proportion to the CPU it used (twice the work, about twice the samples; compared with
the CPU time each thread measured for itself)."""

import os

import pytest

import pyprof_testlib as t

THREADS = t.workload("threads.py")
DAEMON = os.path.join(t.REPO, "examples", "daemon.py")


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.6", "py3.11", "py3.13",
                                                      "py3.11-debian", *t.SID_IDS)))
def test_thread_split(interp, tmp_path):
    interp.require()
    tids_dir = tmp_path / "tids"
    tids_dir.mkdir()
    prof, base = t.run_pair([interp.path, THREADS], tmp_path,
                            env={"PYPROF_PERIOD": "2ms", "THREAD_TIDS": str(tids_dir)})
    t.assert_transparent(prof, base)
    p = t.one_log(prof, ended="exit")
    threads = [th for th in p.rep["threads"] if th["pid"] == prof.pid]
    by_tid = dict((th["tid"], th) for th in threads)
    tids, cpu = {}, {}
    with open(str(tids_dir / str(prof.pid))) as f:
        for line in f:
            name, tid, ns = line.split()
            tids[name], cpu[name] = int(tid), int(ns)
    assert tids.get("alpha") in by_tid and tids.get("beta") in by_tid, (
        "threads alpha and beta (tids %r) missing\n%s" % (tids, p.dump()))
    by_name = {"alpha": by_tid[tids["alpha"]], "beta": by_tid[tids["beta"]]}
    a, b = by_name["alpha"]["samples"], by_name["beta"]["samples"]
    # Each thread is sampled every 2 ms of its own CPU: 1.8 s of it between the two, at
    # least half of the 900 periods however busy the machine.
    t.check_cpu_samples(p, (cpu["alpha"] + cpu["beta"]) / 1e9, got=a + b,
                        what="samples of alpha and beta")
    # The threads stop on their own CPU time, 2:1, but the split the profile must match
    # is the CPU time each thread measured for itself at the end.
    share = a / float(a + b)
    want = cpu["alpha"] / float(cpu["alpha"] + cpu["beta"])
    assert abs(share - want) <= 0.08, ("alpha has %.1f%% of alpha+beta's samples and used "
                                       "%.1f%% of their CPU, expected +- 8\n%s"
                                       % (100 * share, 100 * want, p.dump()))
    assert sum(th["samples"] for th in threads) == p.proc["samples"], p.dump()
    assert by_name["alpha"]["tid"] != by_name["beta"]["tid"], p.dump()
    assert by_name["alpha"]["name"] == "alpha" and by_name["beta"]["name"] == "beta", p.dump()


NAMES = t.workload("names.py")
# label written by names.py -> the name the report must show for that thread
EXPECTED_NAMES = {
    "main": u"boss",
    "plain": u"plain",
    "custom": u"custom-worker",
    "renamed": u"renamed",
    "dict": u"dict",
    "unicode": u"\u00fcn\u00ef-\u20ac-\U0001d518",
    # 60 euro signs (3 bytes each) kept to 127 bytes, cut on a character boundary
    "long": u"\u20ac" * 42,
}


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_thread_names(interp, tmp_path):
    """Each thread shows under its Python name, read from threading._active: a Thread
    subclass, a name changed while the thread runs, attributes in an ordinary instance
    dict, non-ASCII and over-long names, the main thread renamed."""
    interp.require()
    tids_dir = tmp_path / "tids"
    tids_dir.mkdir()
    prof = t.run([interp.path, NAMES], str(tmp_path / "logs"),
                 env={"PYPROF_PERIOD": "2ms", "THREAD_TIDS": str(tids_dir)})
    assert prof.rc == 0 and prof.stdout == b"names workload: done\n", prof.describe()
    p = t.one_log(prof, ended="exit")
    by_tid = dict((th["tid"], th) for th in p.rep["threads"] if th["pid"] == prof.pid)
    with open(str(tids_dir / str(prof.pid))) as f:
        tids = dict((label, int(tid)) for label, tid in (line.split() for line in f))
    assert sorted(tids) == sorted(EXPECTED_NAMES), (tids, p.dump())
    assert tids["main"] == prof.pid, p.dump()
    for label, name in sorted(EXPECTED_NAMES.items()):
        th = by_tid.get(tids[label])
        assert th is not None, "thread %s (tid %d) missing\n%s" % (label, tids[label], p.dump())
        assert th["name"] == name, ("thread %s (tid %d) is named %r, expected %r\n%s"
                                    % (label, tids[label], th["name"], name, p.dump()))


def test_demo_daemon(tmp_path):
    """examples/daemon.py (what `make demo` profiles) under the system python3: one
    complete log, its main thread and four worker threads, its output unchanged."""
    interp = t.by_id("py3.11-debian")[0].require()
    prof = t.run([interp.path, DAEMON], str(tmp_path / "logs"))
    assert prof.rc == 0 and prof.stderr == b"", prof.describe()
    assert prof.stdout.startswith(b"daemon: starting"), prof.describe()
    p = t.one_log(prof, ended="exit")
    workers = [th for th in p.rep["threads"] if th["tid"] != prof.pid and th["samples"] > 0]
    assert len(workers) == 4, "expected 4 worker threads with samples\n%s" % p.dump()
    assert any(f["name"] in ("handle_json", "Worker.run", "run")
               for f in p.rep["functions"]), p.dump()
