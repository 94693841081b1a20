"""Stress: frames, code objects and threads appearing and vanishing as fast as Python
can make them, sampled every 100 us for 10 s of the workload's CPU, on every interpreter.  The target must
behave exactly as without the library, the log must be complete and readable, and
names of code that was compiled, run and freed in a loop must be right.

The unprofiled baseline runs for 2 s of CPU at the same time (the workload's output does not
depend on how long it ran), to keep the suite short.
"""

import re

import pytest

import pyprof_testlib as t

STRESS = t.workload("stress.py")
GENERATED_FILE = "<pyprof-stress-generated>"
GEN_NAME = re.compile(r"^gen_fn_(\d+)$")


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_stress(interp, tmp_path):
    interp.require()
    argv = [interp.path, STRESS]
    stats = tmp_path / "gen_fns.txt"
    env = {"PYPROF_PERIOD": "100us", "STRESS_SECONDS": "10", "STRESS_STATS": str(stats)}
    prof, base = t.run_pair(argv, tmp_path, env=env,
                            base_env={"STRESS_SECONDS": "2"})
    t.assert_transparent(prof, base)
    assert prof.rc == 0 and b"stress rounds agree: True" in prof.stdout, prof.describe()

    p = t.one_log(prof, ended="exit")
    t.check_python_version(p, interp)
    # Readable: the report has samples, counts what it rejected (checked in one_log:
    # processes[].dropped is a reason -> count object of ints >= 0).
    assert p.proc["samples"] > 0, p.dump()
    assert isinstance(p.rep["dropped"], int) and p.rep["dropped"] >= 0, p.dump()

    # Every function of the stress file has a sane name and its real first line.
    for name in ("fib", "thrower", "gen", "deep", "exec_code", "thread_work"):
        f = p.function(name, STRESS)
        assert f["line"] == t.def_line(STRESS, "def %s(" % name), (name, f, p.dump())

    # Code compiled with exec, run and freed: every function reported for that file is
    # a gen_fn_<i> starting on line 1 + i % 37 (or the exec'd module body itself).
    generated = p.functions(file=GENERATED_FILE)
    seen = set()
    bad = []
    for f in generated:
        m = GEN_NAME.match(f["name"])
        if m:
            i = int(m.group(1))
            if f["line"] != 1 + i % 37:
                bad.append(f)
            seen.add(i)
        elif f["name"] != "<module>":
            bad.append(f)
    assert not bad, ("functions of exec'd code with a wrong name or first line:\n%s\n%s"
                     % ("\n".join(map(repr, bad[:20])), p.dump()))
    # The workload burns 10 s of its CPU (at least half of its periods in the log,
    # however busy the machine) and says how many gen_fn_<i> it ran and the CPU they
    # took: L periods each on average, on this machine.  A period yields a sample with
    # the chance r the log shows (samples over periods of the process's CPU: the rest
    # were throttled or dropped), so a gen_fn_<i> is seen with a chance of about
    # min(1, L r); at least half of what that makes are expected as distinct names.
    t.check_cpu_samples(p, float(env["STRESS_SECONDS"]))
    words = stats.read_text().split()
    ran, gen_s = int(words[1]), float(words[3])
    length = gen_s / ran / (p.proc["period_ns"] / 1e9)
    r = p.proc["samples"] / (p.proc["cost"]["process_cpu_ns"] / p.proc["period_ns"])
    want = 0.5 * ran * min(1.0, length * r)
    assert len(seen) >= want, (
        "expected samples in at least %d distinct gen_fn_<i> (%d ran, %.2f periods each, "
        "%.2f of the periods sampled), got %d\n%s"
        % (want, ran, length, r, len(seen), p.dump()))
    # No function anywhere with an empty or unprintable name.
    odd = [f for f in p.rep["functions"]
           if not f["name"] or any(ord(c) < 32 for c in f["name"])]
    assert not odd, "garbage function names: %r\n%s" % (odd[:10], p.dump())
