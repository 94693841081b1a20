"""The allocation windows (PYPROF_ALLOC_WINDOWS): the Python domains wrapped only inside
short windows at random times, every small allocation sampled in one weighed by 2^shift.

The estimates' spread: a site allocating B bytes while active a share f of a run of T
seconds, seen through windows of mean real length L at duty 2^-k, has a relative
standard error of about sqrt(I/B + (2^k - 1) L / (f T)) (I the sampling interval; the
second term is the windows', cluster sampling of the time): every bound below is four of
those, from the run's own windows (their count and time, in the report), never a fixed
figure.  A sample not weighed by its window (2^k too little) or a window duty that
drifted from 2^-k would break it many times over.

Python 2.7 has no PyMem_SetAllocator: there is nothing to switch, and its log has no
window."""

import json
import math
import re
import subprocess

import pytest

import pyprof_testlib as t

PHASES = t.workload("alloc_phases.py")
TRACEMALLOC = t.workload("alloc_tracemalloc.py")
INTERVAL = 64 << 10
PY3 = [i for i in t.INTERPRETERS if i.minor >= (3, 0)]


def windows_of(rep):
    procs = rep["processes"]
    assert len(procs) == 1, [p["argv"] for p in procs]
    return procs[0].get("alloc_windows")


@pytest.mark.parametrize("phase_ms", [1, 40], ids=["shorter", "longer"])
@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_windows_phases(interp, phase_ms, tmp_path):
    """Two sites of small allocations in alternating phases shorter (1 ms) and longer
    (40 ms) than a window, at a fixed duty of 1/4: each site's estimate within four of
    its standard errors (above) of what it counted itself, the windows' share of the
    time within four of its own of 1/4, and the windows' records in the log."""
    interp.require()
    truth_path = str(tmp_path / "truth.json")
    prof = t.run([interp.path, PHASES], str(tmp_path / "logs"),
                 env={"PYPROF_ALLOC": str(INTERVAL), "PYPROF_ALLOC_WINDOWS": "1/4",
                      "PHASE_MS": str(phase_ms), "DURATION": "5", "OUT": truth_path})
    assert prof.rc == 0 and prof.stdout == b"done\n", prof.describe()
    t.one_log(prof, ended=("exit", "Py_FinalizeEx"))
    with open(truth_path) as f:
        truth = json.load(f)
    rep = t.tool_json("report", "--memory", "--json", prof.outdir)
    win = windows_of(rep)
    if interp.minor < (3, 0):
        assert win is None, win
        return
    assert win and win["windows"] >= 50 and win["pauses"] == 0, win
    assert win["shift_min"] == win["shift_max"] == win["floor_shift"] == 2, win
    assert win["weighed"] > 0, win
    mean_len = win["window_s"] / win["windows"]
    # The share of the time inside windows: about `windows` cycles of exponential gaps,
    # each cycle's share spread by its gap (relative spread 1 / sqrt(windows) each way).
    share_se = 0.25 * 0.75 / math.sqrt(win["windows"])
    assert abs(win["window_share"] - 0.25) <= 4 * share_se + 0.02, win
    est = {f["name"]: f["self"]["alloc_bytes"] for f in rep["functions"]
           if f["file"].endswith("alloc_phases.py")}
    run_s = truth["duration"]
    lines = []
    for site in ("site_burst", "site_quiet"):
        b, f = truth["bytes"][site], truth["seconds"][site] / run_s
        rel = math.sqrt(INTERVAL / float(b) + 3 * mean_len / (f * run_s))
        got = est.get(site, 0)
        lines.append("%-10s estimated %12d  true %12d  (%.1f %% off, bound %.1f %%)" % (
            site, got, b, 100.0 * (got - b) / b, 400 * rel))
        assert abs(got - b) <= 4 * rel * b, "\n".join(lines + [json.dumps(win)])


@pytest.mark.parametrize("interp", t.params(PY3))
def test_windows_tracemalloc(interp, tmp_path):
    """A program that starts and stops tracemalloc again and again, sampled with
    windows at 1/16: tracemalloc sees in every round what it sees without pyprof (the
    output is the same), and the log says when the windows paused under its hook."""
    interp.require()
    prof, base = t.run_pair([interp.path, TRACEMALLOC], tmp_path,
                            env={"PYPROF_ALLOC": "64KB", "PYPROF_ALLOC_WINDOWS": "1/16"},
                            base_env={})
    t.assert_transparent(prof, base)
    assert prof.stdout.endswith(b"done\n"), prof.describe()
    rep = t.tool_json("report", "--memory", "--json", prof.outdir)
    win = windows_of(rep)
    # tracemalloc is on for a moment in each round: a switch that found its hook on
    # top paused the windows; either way windows ran between the rounds.
    assert win and win["windows"] > 0, win
    text = t.tool("report", "--memory", prof.outdir).stdout
    assert ("windows paused" in text) == (win["pauses"] > 0), text


def cpython_suites(interp):
    """CPython's own tests of tracemalloc and of the allocator API for `interp`, as
    `python -m test` arguments, each run apart: the PyMem test classes of test_capi
    (test_capi.test_mem from 3.12 on), where the interpreter ships test_capi (Debian's
    3.11 testsuite package leaves it out, as some builds of 3.10 do): test_tracemalloc
    alone there."""
    suites = [["test_tracemalloc"]]
    if interp.minor >= (3, 12):
        capi = ["test_capi.test_mem"]
    elif interp.minor >= (3, 11):
        capi = ["test_capi.test_misc", "-m", "PyMem*"]
    else:
        capi = ["test_capi", "-m", "PyMem*"]
    res = subprocess.run([interp.path, "-c", "import " + "test." + capi[0]],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=t.base_env())
    if res.returncode == 0:
        suites.append(capi)
    return suites


def suite_result(res):
    """(result, tests run) of a `python -m test` run, and its output."""
    out = t._text(res.stdout)
    result = re.findall(r"(SUCCESS|FAILURE|NO TESTS RAN)", out)
    ran = re.findall(r"run=(\d+)|^(\d+) tests? OK", out, re.M)
    return result[-1:], ran[-1:], out


@pytest.mark.parametrize("interp", t.params(PY3))
def test_windows_cpython_suites(interp, tmp_path):
    """CPython's test_tracemalloc and its allocator tests (test_capi's PyMem tests,
    which run PYTHONMALLOC's allocators and the debug hooks) preloaded with allocation
    sampling and windows at 1/16 give what they give without pyprof: the same result
    and the same number of tests run."""
    interp.require()
    for args in cpython_suites(interp):
        argv = [interp.path, "-m", "test"] + args
        prof, base = t.run_pair(argv, tmp_path, env={"PYPROF_ALLOC": "64KB",
                                                     "PYPROF_ALLOC_WINDOWS": "1/16"},
                                base_env={}, timeout=max(t.TIMEOUT, 600))
        got, want = suite_result(prof), suite_result(base)
        assert base.rc == 0 and want[0] == ["SUCCESS"] and want[1], (args, base.describe())
        assert prof.rc == base.rc and got[:2] == want[:2], (args, got[:2], want[:2],
                                                            got[2][-3000:])


@pytest.mark.parametrize("interp", t.params(t.by_id("py3.11", *t.SID_IDS[:1])))
def test_windows_diff(interp, tmp_path):
    """`diff --memory` of two runs of the phases workload with windows at 1/16 flags
    no function: the samples of one window are drawn together, so the noise model counts
    each window's sum once (its square), not each sample's, where the samples alone
    would make the windows' spread look like a change."""
    interp.require()
    outs = []
    for k in range(2):
        truth_path = str(tmp_path / ("truth%d.json" % k))
        prof = t.run([interp.path, PHASES], str(tmp_path / ("logs%d" % k)),
                     env={"PYPROF_ALLOC": str(INTERVAL), "PYPROF_ALLOC_WINDOWS": "1/16",
                          "PHASE_MS": "40", "DURATION": "3", "OUT": truth_path})
        assert prof.rc == 0 and prof.stdout == b"done\n", prof.describe()
        outs.append(prof.outdir)
    same = t.tool_json("diff", "--memory", "--json", outs[0], outs[1])
    sites = [f for f in same["functions"] if f["file"].endswith("alloc_phases.py")]
    where = "\n".join("%-12s %12s -> %12s  z %.1f %s" % (
        f["name"], f["base"] and f["base"]["self_bytes"], f["new"] and f["new"]["self_bytes"],
        f["self_z"], "flagged" if f["flagged"] else "") for f in sites)
    assert len(sites) >= 2 and same["flagged"] == 0, where
