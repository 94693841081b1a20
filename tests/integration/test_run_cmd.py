"""`pyprof run -o DIR -p 5ms -- python workload.py`: the child's output passes through,
its exit status is the tool's, and its log lands in DIR."""

import os

import pytest

import pyprof_testlib as t

SIMPLE = t.workload("simple.py")


@pytest.mark.parametrize("status", [0, 3])
@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.13", "py3.11-debian",
                                                    *t.SID_IDS)))
def test_pyprof_run(interp, status, tmp_path):
    interp.require()
    outdir = tmp_path / "out"
    outdir.mkdir()
    env = {"EXIT_STATUS": str(status)}
    if t.SAN:
        # The tool preloads the library; a sanitized library also needs the sanitizer
        # runtime in front of it, which the tool keeps from the inherited LD_PRELOAD.
        env["LD_PRELOAD"] = t.preload_env({})["LD_PRELOAD"].split()[0]
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    res = t.tool("run", "-o", str(outdir), "-p", "5ms", "--", interp.path, SIMPLE, env=env)
    base = t.run([interp.path, SIMPLE], None, profile=False, env=env)
    where = ("pyprof run: exit %s\n--- stdout ---\n%s\n--- stderr ---\n%s"
             % (res.returncode, res.stdout, res.stderr))
    assert res.returncode == status == base.rc, where
    assert t._text(base.stdout) in res.stdout, "the child's stdout did not pass through\n" \
        + where
    assert t._text(base.stderr) in res.stderr, "the child's stderr did not pass through\n" \
        + where
    logs = sorted(os.listdir(str(outdir)))
    assert len(logs) == 1, "expected one log in %s, found %r\n%s" % (outdir, logs, where)
    rep = t.report(str(outdir))
    t.check_report_shape(rep)
    p = rep["processes"][0]
    assert any(t.same_file(a, SIMPLE) for a in p["argv"]), t.dump(rep)
    assert p["truncated"] is False and p["samples"] > 0, t.dump(rep)
    assert any(f["name"] == "burn" for f in rep["functions"]), t.dump(rep)
