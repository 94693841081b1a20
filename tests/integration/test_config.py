"""Configuration through PYPROF_* variables: a bad value gets exactly one line on stderr
naming the variable and the value, no log, and the target runs as without the library;
PYPROF_QUIET=1 silences even that line.  PYPROF_MEMORY and the output template."""

import os
import re
import stat
import sys

import pytest

import pyprof_testlib as t

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures"))

SIMPLE = t.workload("simple.py")
CONFIG_INTERPS = t.INTERPRETERS

BAD = [
    pytest.param("PYPROF_PERIOD", "abc", id="period-abc"),
    pytest.param("PYPROF_PERIOD", "50us", id="period-50us"),
    pytest.param("PYPROF_MAX_DEPTH", "0", id="maxdepth-0"),
    pytest.param("PYPROF_MEMORY", "maybe", id="memory-maybe"),
    pytest.param("PYPROF_OUTPUT", "/nonexistent/dir/", id="output-missing-dir"),
]


def extra_lines(prof, base):
    """The lines the library added to stderr (the baseline's lines must all remain, in
    order)."""
    got = t.stderr_lines(prof.stderr)
    want = t.stderr_lines(base.stderr)
    added = list(got)
    for line in want:
        assert line in added, ("the target's stderr line %r is missing\n%s"
                               % (line, prof.describe()))
        added.remove(line)
    return added


@pytest.mark.parametrize("var,value", BAD)
@pytest.mark.parametrize("interp", t.params(CONFIG_INTERPS))
def test_bad_value(interp, var, value, tmp_path):
    interp.require()
    env = {var: value, "EXIT_STATUS": "4"}
    prof, base = t.run_pair([interp.path, SIMPLE], tmp_path, env=env)
    assert prof.rc == base.rc == 4, prof.describe()
    assert prof.stdout == base.stdout, prof.describe()
    added = extra_lines(prof, base)
    assert len(added) == 1, ("expected exactly one line from the library on stderr, got "
                             "%d\n%s" % (len(added), prof.describe()))
    line = added[0]
    assert line.startswith("pyprof:"), line
    assert var in line and value.rstrip("/") in line, (
        "the line must name the variable and the value: %r" % line)
    # The rest of stderr is the target's, unchanged.
    assert t._text(prof.stderr).replace(line + "\n", "", 1) == t._text(base.stderr), \
        prof.describe()
    assert prof.logs == [], "a log was written despite the bad value\n" + prof.describe()


@pytest.mark.parametrize("var,value", BAD)
def test_bad_value_quiet(var, value, tmp_path):
    interp = t.by_id("py3.11")[0].require()
    prof, base = t.run_pair([interp.path, SIMPLE], tmp_path,
                            env={var: value, "PYPROF_QUIET": "1", "EXIT_STATUS": "4"})
    t.assert_transparent(prof, base)
    assert prof.logs == [], prof.describe()


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.11", "py3.13",
                                                      "py3.11-debian", *t.SID_IDS)))
def test_memory(interp, tmp_path):
    interp.require()
    prof, base = t.run_pair([interp.path, SIMPLE], tmp_path)
    t.assert_transparent(prof, base)
    p = t.one_log(prof, ended="exit")
    rss = p.proc["rss"]
    assert isinstance(rss, dict), p.dump()
    for k in ("start", "peak", "end"):
        assert isinstance(rss.get(k), int) and rss[k] > 0, ("rss.%s\n%s" % (k, p.dump()))
    assert rss["peak"] >= rss["start"] and rss["peak"] >= rss["end"], p.dump()

    off, base = t.run_pair([interp.path, SIMPLE], tmp_path, env={"PYPROF_MEMORY": "0"})
    t.assert_transparent(off, base)
    p = t.one_log(off, ended="exit")
    rss = p.proc["rss"]
    assert rss is None or all(rss.get(k) is None for k in ("start", "peak", "end")), (
        "PYPROF_MEMORY=0 but RSS was recorded\n" + p.dump())


def test_rss_records(tmp_path):
    """The RSS is read at every wake of the writer and written when it changed (or each
    second when it did not): the log's peak is what the program itself saw at its
    largest, and a steady stretch costs about one record a second, not ten."""
    import subprocess
    import make_fixtures as mf
    interp = t.by_id("py3.11")[0]
    prof = t.run([interp.path, t.workload("rss_steps.py"), "3"], str(tmp_path / "logs"))
    assert prof.rc == 0, prof.describe()
    seen_peak = int(prof.stdout.decode().strip())
    p = t.one_log(prof, ended="exit")
    assert p.proc["rss"]["peak"] >= seen_peak - (1 << 20), (seen_peak, p.dump())
    raw = subprocess.run(["lz4", "-dc", prof.logs[0]], stdout=subprocess.PIPE).stdout
    points = [(e[1], e[2]) for e in mf.timed_records(raw) if e[0] == "R"]
    # Two records in a row with the same value are a second apart (the last one, at the
    # end, excepted).
    same = [(a, b) for a, b in zip(points, points[1:-1]) if a[1] == b[1]]
    assert all(b[0] - a[0] >= 990000 for a, b in same), same
    # 3 s of a steady RSS: a few records, where a record per read would have made 30 or
    # more (a read at each wake, every 100 ms at the most).
    steady = [pt for pt in points if pt[0] >= points[-1][0] - 2500000]
    assert len(steady) <= 2 + len(set(v for _, v in steady)) * 2, steady


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.12",
                                                      "py3.11-debian", *t.SID_IDS)))
def test_output_template(interp, tmp_path):
    interp.require()
    outdir = tmp_path / "tmpl"
    outdir.mkdir()
    prof = t.run([interp.path, SIMPLE], None,
                 env={"PYPROF_OUTPUT": str(outdir / "log.%p.%n.lz4")})
    assert prof.rc == 0, prof.describe()
    files = os.listdir(str(outdir))
    names = set([os.path.basename(interp.path),
                 os.path.basename(os.path.realpath(interp.path))])
    pattern = re.compile(r"^log\.%d\.(%s)\b.*lz4" % (
        prof.pid, "|".join(re.escape(n) for n in names)))
    matching = [f for f in files if pattern.match(f)]
    assert len(files) == 1 and matching, ("expected one file log.%d.<%s>.lz4 in %s, found "
                                          "%r\n%s" % (prof.pid, "|".join(sorted(names)),
                                                      outdir, files, prof.describe()))
    path = str(outdir / matching[0])
    mode = stat.S_IMODE(os.stat(path).st_mode)
    assert mode == 0o600, "log mode %o, expected 600" % mode
    t.report(path)
