"""Accuracy: the profile's shares match the CPU time the workload measured for itself,
on every interpreter and in an embedding host; names, files, first lines and the
per-line split are right.

workloads/accuracy.py burns CPU in burn_a/burn_b/burn_c (about 50/30/20 % of what the
three use), in two_lines (two loops on two known lines, 2:1) and in Worker.run, and
writes the CPU time each really used (process CPU clock around every call) to a JSON
file.  The test compares, within 5 points:

  * each function's self share of the process's samples with its share of the
    process's CPU time, and
  * each burn_* function's share among the three with its measured share among them.

The run uses PYPROF_PERIOD=2ms: one sample per 2 ms of the CPU the workload measured,
about 1700 on any machine, however busy (the workload's iterations are calibrated in CPU
time, not in wall time); a periodic
sampler on a deterministic loop errs by about one sample per phase, far below 5 points.
"""

import json

import pytest

import pyprof_testlib as t

ACC = t.workload("accuracy.py")
TOLERANCE = 0.05
BURNS = ("burn_a", "burn_b", "burn_c")


def check_accuracy(interp, argv, tmp_path):
    result = str(tmp_path / "measured.json")
    prof, base = t.run_pair(argv, tmp_path,
                            env={"PYPROF_PERIOD": "2ms", "WORKLOAD_RESULT": result},
                            base_env={"WORKLOAD_RESULT": str(tmp_path / "base.json")})
    t.assert_transparent(prof, base)
    assert prof.rc == 0, prof.describe()
    embedded = "embed" in argv[0] or "plugin" in argv[0]
    p = t.one_log(prof, ended=("exit", "Py_FinalizeEx") if embedded else "exit")
    t.check_python_version(p, interp)
    with open(result) as f:
        measured = json.load(f)

    # The workload burns a fixed amount of its own CPU (about 3.4 s, some 1700 periods
    # of 2 ms); half of that is still several hundred samples, plenty for a 5-point test.
    t.check_cpu_samples(p, measured["total"])
    assert ACC in p.proc["argv"] or any(t.same_file(a, ACC) for a in p.proc["argv"]), (
        "argv %r lacks the script\n%s" % (p.proc["argv"], p.dump()))

    # Names, files, first lines.
    entries = {}
    for qual in BURNS + ("two_lines", "Worker.run"):
        name = interp.qualified(qual)
        f = p.function(name, ACC)
        plain = qual.rsplit(".", 1)[-1]
        want_line = t.def_line(ACC, "def %s(" % plain)
        assert f["line"] == want_line, ("%s: first line %s, the source says %s\n%s"
                                        % (name, f["line"], want_line, p.dump()))
        entries[qual] = f

    # Shares of the whole process: samples against CPU time.
    total_cpu = measured["total"]
    lines = []
    bad = []
    for qual, f in sorted(entries.items()):
        got = p.share(f)
        want = measured[qual] / total_cpu
        lines.append("%-12s profile %5.1f%%  measured %5.1f%%" % (qual, 100 * got,
                                                                  100 * want))
        if abs(got - want) > TOLERANCE:
            bad.append(qual)
    # Shares among the three burn functions.
    sum_self = float(sum(entries[q]["self"] for q in BURNS))
    sum_cpu = sum(measured[q] for q in BURNS)
    for qual in BURNS:
        got = entries[qual]["self"] / sum_self
        want = measured[qual] / sum_cpu
        lines.append("%-12s among the three: profile %5.1f%%  measured %5.1f%%"
                     % (qual, 100 * got, 100 * want))
        if abs(got - want) > TOLERANCE:
            bad.append(qual + " (among the three)")
    assert not bad, ("shares off by more than %d points: %s\n%s\n%s"
                     % (100 * TOLERANCE, ", ".join(bad), "\n".join(lines), p.dump()))

    # Lines: two_lines spends 2/3 of its time on LINE-X and 1/3 on LINE-Y.
    x = t.def_line(ACC, "LINE-X")
    y = t.def_line(ACC, "LINE-Y")
    tl = entries["two_lines"]
    by_self = sorted(tl["lines"], key=lambda l: -l["self"])
    top = [l["line"] for l in by_self[:2]]
    assert top == [x, y], ("two_lines: top lines %s, expected [%d, %d]\nlines: %s\n%s"
                           % (top, x, y, tl["lines"], p.dump()))
    frac = by_self[0]["self"] / float(by_self[0]["self"] + by_self[1]["self"])
    want = measured["LINE-X"] / (measured["LINE-X"] + measured["LINE-Y"])
    assert abs(frac - want) <= 0.1, ("two_lines: line %d has %.1f%% of the two lines' "
                                     "samples, measured %.1f%% +- 10\nlines: %s"
                                     % (x, 100 * frac, 100 * want, tl["lines"]))
    # Other lines of two_lines (the clock reads) may hold a few samples, never many.
    assert sum(l["self"] for l in tl["lines"]) == tl["self"], (
        "two_lines: per-line self does not add up to the function's self: %r" % tl)


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_accuracy(interp, tmp_path):
    interp.require()
    check_accuracy(interp, [interp.path, ACC], tmp_path)


@pytest.mark.parametrize("interp", t.params(t.EMBEDDABLE))
def test_accuracy_embedded(interp, tmp_path):
    """The same in a C program that embeds the interpreter (Py_InitializeEx)."""
    check_accuracy(interp, [t.embed_host(interp), ACC], tmp_path)


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.8", "py3.11", "py3.12",
                                                      "py3.13", *t.SID_IDS)))
def test_accuracy_plugin_loaded_late(interp, tmp_path):
    """The same in an application-server-like host that does not link libpython: it
    dlopens a plugin linked against libpython with RTLD_LOCAL after start (as uwsgi
    does), so no interpreter symbol is global.  pyprof finds it from the init hook."""
    check_accuracy(interp, t.plugin_host(interp) + [ACC], tmp_path)
