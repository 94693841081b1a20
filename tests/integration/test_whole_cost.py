"""The whole cost of sampling in the log: what each signal costs outside the handler,
measured in the process (signal_cost_ns, calib_signals, calib_ns), the process's CPU,
and the whole cost the tool derives from them (report --json, info)."""
import pytest

import pyprof_testlib as t

BURN = t.workload("cost_burn.py")
BURN_S = "3"  # seconds of process CPU test_signal_cost_measured burns
# The library measures only once a process has been profiled for a second, with at most
# half a per cent of the process's CPU, in slices of 4 ms (src/lib/writer.c).
SHARE, SLICE_NS = 0.005, 4000000


def cost_of(p):
    c = p.proc.get("cost")
    assert c, p.dump()
    return c


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.11", "py3.13",
                                                      "py3.11-debian", *t.SID_IDS)))
def test_signal_cost_measured(interp, tmp_path):
    """At 1 kHz a process that burns 3 s of CPU has its signal cost measured; the
    measuring stayed within its share of the CPU, and the whole cost adds up."""
    interp.require()
    prof = t.run([interp.path, BURN, BURN_S], str(tmp_path / "logs"),
                 env={"PYPROF_PERIOD": "1ms"})
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")
    c = cost_of(p)
    burned = float(prof.stdout.decode().strip())
    assert c["signal_cost_ns"] and c["calib_signals"] >= 4, p.dump()
    # A signal costs something, and less than the period it comes in.
    assert 0 < c["signal_cost_ns"] < p.proc["period_ns"], p.dump()
    # The process's CPU as the footer saw it covers the burn, which the program measured
    # on its own CPU clock after the log began (the log begins as the interpreter starts;
    # the total the program prints also holds that start, 20-40 ms of 3.14's in the test
    # root on a loaded machine: more than the 1 % this compared with once).
    assert c["process_cpu_ns"] >= float(BURN_S) * 1e9, (burned, p.dump())
    # The measuring took no more than its share (plus one slice: the one that crossed it).
    assert 0 < c["calib_ns"] <= SHARE * c["process_cpu_ns"] + SLICE_NS * 1.5, p.dump()
    # It is library CPU, and not the writer's.
    assert p.proc["library_cpu_ns"] >= c["calib_ns"] + c["handler_ns"] + c["writer_ns"], \
        p.dump()
    signals = p.proc["samples"] + sum(p.proc["dropped"].values())
    assert c["whole_ns"] >= p.proc["library_cpu_ns"] + signals * c["signal_cost_ns"] * 0.99, \
        p.dump()
    info = t.tool("info", prof.logs[0])
    assert info.returncode == 0, info.stderr
    assert "whole cost" in info.stdout and "outside the handler" in info.stdout, info.stdout


def test_short_process_pays_nothing(tmp_path):
    """A process profiled for less than a second is never measured."""
    interp = t.by_id("py3.11")[0]
    prof = t.run([interp.path, BURN, "0.3"], str(tmp_path / "logs"),
                 env={"PYPROF_PERIOD": "1ms"})
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")
    c = cost_of(p)
    assert c["calib_ns"] == 0 and c["signal_cost_ns"] is None and c["whole_ns"] is None, \
        p.dump()
    assert "whole cost      not measured" in t.tool("info", prof.logs[0]).stdout


def test_wall_clock_not_measured(tmp_path):
    """Wall mode's figure is not measured: its passes are the sampler thread's own CPU,
    and what its threads' timers cost in signals is measured in cpu mode only."""
    interp = t.by_id("py3.11")[0]
    prof = t.run([interp.path, BURN, "1.5"], str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": "1ms"})
    assert prof.rc == 0, prof.describe()
    c = cost_of(t.one_log(prof, ended="exit"))
    assert c["calib_ns"] == 0 and c["signal_cost_ns"] is None, c


def test_fork_child_keeps_the_figure(tmp_path):
    """A child forked once the parent's measuring is over reports the parent's figure and
    spends nothing measuring again."""
    interp = t.by_id("py3.11")[0]
    prof = t.run([interp.path, BURN, "3", "0.5"], str(tmp_path / "logs"),
                 env={"PYPROF_PERIOD": "1ms"})
    assert prof.rc == 0, prof.describe()
    rep = t.report(*prof.logs)
    procs = {p["pid"]: p for p in rep["processes"]}
    assert len(procs) == 2 and prof.pid in procs, t.dump(rep)
    parent = procs.pop(prof.pid)
    child = list(procs.values())[0]
    pc, cc = parent["cost"], child["cost"]
    assert pc["signal_cost_ns"], t.dump(rep)
    # The parent ran 3 s, well past the 4 signals a 1 kHz measurement needs at least:
    # done before the fork unless the budget share held it back.
    assert pc["calib_signals"] >= 4, t.dump(rep)
    assert cc["signal_cost_ns"] == pc["signal_cost_ns"], t.dump(rep)
    assert cc["calib_signals"] == pc["calib_signals"], t.dump(rep)


def test_new_period_measured_anew(tmp_path):
    """A figure measured at 1 ms does not stand for a window at 10 ms (`ctl period`): the
    new window reports nothing until it has measured its own, and all the measuring of
    the process stays within its share of the CPU."""
    interp = t.by_id("py3.11")[0]
    # The program asks for the new period itself once the 1 ms figure is in its log
    # (pyprof ctl status has the log's path; the footer is read after the switch).
    pending = t.start([interp.path, "-c", """
import os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(%r))
from cost_burn import burn
burn(9.0)
out = subprocess.check_output([%r, "ctl", str(os.getpid()), "period", "10ms"])
assert out.startswith(b"ok period"), out
burn(1.5)
""" % (BURN, t.TOOL)], str(tmp_path / "logs"), env={"PYPROF_PERIOD": "1ms"})
    prof = pending.wait()
    assert prof.rc == 0, prof.describe()
    rep = t.report(*prof.logs)
    procs = sorted(rep["processes"], key=lambda p: p["window"])
    assert [p["period_ns"] for p in procs] == [1000000, 10000000], t.dump(rep)
    first, second = procs[0]["cost"], procs[1]["cost"]
    assert first["signal_cost_ns"] and first["calib_signals"] >= 4, t.dump(rep)
    if second["signal_cost_ns"]:
        # Measured anew: its own signals, and CPU spent on it in this window.
        assert second["calib_ns"] > 0, t.dump(rep)
    else:
        assert second["calib_signals"] < 4, t.dump(rep)
    total_cpu = first["process_cpu_ns"] + second["process_cpu_ns"]
    spent = first["calib_ns"] + second["calib_ns"]
    assert spent <= SHARE * total_cpu + 2 * SLICE_NS * 1.5, t.dump(rep)
