"""`pyprof diff`: two runs of one program flag nothing; a function that gets 5 % more of
the program's CPU is flagged, and nothing else is.

workloads/diff_work.py burns set amounts of its thread's own CPU in steady_a (1.0 s),
steady_b (0.5 s) and grow (0.03 s, 2 % of the whole), so the amounts do not depend on
how fast the machine runs.  At 1 ms the samples of a function are its CPU over the period
to a sample or two, and the noise model (Poisson counts) is an upper bound on that
variation: two runs differ by z well under 4.  The changed run gives grow 5 % of the base
run's CPU more (0.1065 s): 30 -> 106 samples, z = 76 / sqrt(136) = 6.5, +250 %;
everything else keeps its CPU, and the program's whole grows by 5 %, under the 10 %
below which no change is flagged."""

import pytest

import pyprof_testlib as t

WORK = t.workload("diff_work.py")
ENV = {"PYPROF_PERIOD": "1ms", "STEADY_A": "1.0", "STEADY_B": "0.5", "GROW": "0.03"}
MORE = dict(ENV, GROW="%.4f" % (0.03 + 0.05 * (1.0 + 0.5 + 0.03)))


def profiled(interp, tmp_path, env):
    prof = t.run([interp.path, WORK], str(tmp_path / ("logs-%s" % env["GROW"])), env=env)
    assert prof.rc == 0 and prof.stdout == b"done\n", prof.describe()
    t.one_log(prof, ended=("exit", "Py_FinalizeEx"))
    return prof.outdir


def rows(diff):
    return dict((f["name"], f) for f in diff["functions"] if f["file"].endswith("diff_work.py"))


def where(diff):
    return "\n".join("%-28s base %-60s new %-60s z %.1f/%.1f%s" % (
        f["name"], f["base"], f["new"], f["self_z"], f["total_z"],
        "  FLAGGED" if f["flagged"] else "") for f in diff["functions"][:15])


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_diff(interp, tmp_path):
    interp.require()
    base = profiled(interp, tmp_path / "a", ENV)
    again = profiled(interp, tmp_path / "b", ENV)
    more = profiled(interp, tmp_path / "c", MORE)

    same = t.tool_json("diff", "--json", base, again)
    assert same["base"]["clock"] == same["new"]["clock"] == "cpu", same["base"]
    r = rows(same)
    for name in ("steady_a", "steady_b", "grow"):
        assert r[name]["base"] and r[name]["new"], "%s not on both sides\n%s" % (
            name, where(same))
    assert same["flagged"] == 0, "two runs of one program differ\n" + where(same)

    changed = t.tool_json("diff", "--json", base, more)
    r = rows(changed)
    flagged = sorted(f["name"] for f in changed["functions"] if f["flagged"])
    assert flagged == ["grow"], "flagged %s, expected only grow\n%s" % (flagged,
                                                                       where(changed))
    assert r["grow"]["total_flagged"] and r["grow"]["total_z"] >= 4, where(changed)
    assert changed["functions"][0]["name"] == "grow", where(changed)

    # The table says the same.
    text = t.tool("diff", base, more)
    assert text.returncode == 0, text.stderr
    lines = [ln for ln in text.stdout.splitlines() if ln.startswith("*")]
    assert len(lines) == 1 and " grow (" in lines[0], text.stdout


def test_diff_windows(tmp_path):
    """--base-from/--base-to give the base side its own window of the same log: each
    side holds exactly the samples `report` finds in its window."""
    interp = t.by_id("py3.11")[0]
    interp.require()
    log = profiled(interp, tmp_path, ENV)
    d = t.tool_json("diff", "--json", "--base-from", "0.2", "--base-to", "0.9",
                    "--from", "0.9", "--to", "1.6", log, log)
    first = t.tool_json("report", "--json", "--from", "0.2", "--to", "0.9", log)
    second = t.tool_json("report", "--json", "--from", "0.9", "--to", "1.6", log)
    assert first["samples"] > 0 and second["samples"] > 0, (first["samples"],
                                                             second["samples"])
    assert (d["base"]["samples"], d["new"]["samples"]) == (first["samples"],
                                                           second["samples"]), d
    whole = t.tool_json("diff", "--json", log, log)
    assert whole["flagged"] == 0 and whole["base"] == whole["new"], whole["base"]
    assert all(f["self_z"] == 0 and f["total_z"] == 0 for f in whole["functions"])


def test_diff_errors(tmp_path):
    """One clear line and the right exit status for what cannot be compared."""
    interp = t.by_id("py3.11")[0]
    interp.require()
    cpu = profiled(interp, tmp_path / "cpu", dict(ENV, STEADY_A="0.05", STEADY_B="0.02"))
    wall = profiled(interp, tmp_path / "wall",
                    dict(ENV, PYPROF_CLOCK="wall", STEADY_A="0.05", STEADY_B="0.02",
                         GROW="0.01"))
    foreign = tmp_path / "foreign.lz4"
    foreign.write_bytes(b"not a pyprof log\n" * 10)
    cases = [
        (["diff", cpu, str(foreign)], 1, str(foreign)),
        (["diff", cpu], 2, "needs two operands, BASE and NEW"),
        (["diff", cpu, cpu, cpu], 2, "takes exactly two operands"),
        (["diff", cpu, wall], 1, "with the cpu clock and %s with the wall clock" % wall),
        (["diff", cpu, str(tmp_path / "missing")], 1, "No such file or directory"),
        (["diff", "--top", "0", cpu, cpu], 2, "--top"),
        (["diff", "--base-from", "x", cpu, cpu], 2, "--base-from: 'x'"),
        (["diff", "--base-from", "2", "--base-to", "1", cpu, cpu], 2,
         "--base-to 1 is before --base-from 2"),
    ]
    for args, rc, text in cases:
        res = t.tool(*args)
        assert res.returncode == rc, (args, res.returncode, res.stderr)
        assert text in res.stderr and res.stdout == "", (args, res.stderr, res.stdout)
        assert len(res.stderr.splitlines()) <= 2, res.stderr
    res = t.tool("help", "diff")
    assert res.returncode == 0 and "EXAMPLES" in res.stdout and "BASE NEW" in res.stdout
