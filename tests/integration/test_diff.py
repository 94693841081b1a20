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

import json
import os
import re

import jsonschema
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


ALLOC_WORK = t.workload("alloc_work.py")
ALLOC_ENV = {"PYPROF_ALLOC": "32KB", "SITE_MB": "48", "GROW_SITE": "site_ext", "GROW_MB": "2"}
ALLOC_MORE = dict(ALLOC_ENV, GROW_MB="10")
SITES = ("site_small", "site_bytearray", "site_ext", "site_mmap")


def alloc_profiled(interp, tmp_path, env):
    env = dict(env, ALLOC_EXT=t.alloc_ext(interp), ALLOC_OUT=str(tmp_path / "truth.json"))
    prof = t.run([interp.path, ALLOC_WORK], str(tmp_path / "logs"), env=env)
    assert prof.rc == 0 and prof.stdout == b"done\n", prof.describe()
    t.one_log(prof, ended=("exit", "Py_FinalizeEx"))
    return prof.outdir


def memory_where(diff):
    return "\n".join("%-20s base %-90s new %-90s z %.1f/%.1f%s" % (
        f["name"], f["base"], f["new"], f["self_z"], f["total_z"],
        "  FLAGGED" if f["flagged"] else "") for f in diff["functions"][:15])


def diff_schema_problems(doc):
    """What is wrong with `doc` under docs/JSON.md's "diff" schema (test_json_schema.py
    checks the time diff; this is the memory one)."""
    with open(os.path.join(t.REPO, "docs", "JSON.md")) as f:
        text = f.read()
    for block in re.findall(r"```json-schema\n(.*?)```", text, re.S):
        schema = json.loads(block)
        if schema["title"] == "diff":
            v = jsonschema.Draft202012Validator(schema)
            return ["%s: %s" % ("/".join(map(str, e.absolute_path)), e.message[:300])
                    for e in v.iter_errors(doc)]
    return ["no diff schema"]


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.11", "py3.13")))
def test_diff_memory(interp, tmp_path):
    """`diff --memory`: two runs of workloads/alloc_work.py flag no function; a run whose
    site_ext allocates 8 MiB more is flagged there and nowhere else.

    At PYPROF_ALLOC=32KB a 50,000-byte block of site_ext is sampled with p = 1 -
    exp(-50000 / 32768) = 0.78 and stands for w = 50000 / p = 63.9 KB.  With GROW_MB 2 the
    site makes 42 blocks (33 samples expected), with 10 it makes 210 (164): every sample
    of the site weighs w, so z = w (164 - 33) / (w sqrt(164 + 33)) = 9.4, with a standard
    deviation of about 0.5 (the samples are binomial: the noise model, Poisson, is an
    upper bound), +400 %.  Two runs alike differ at this site by z with a deviation of
    about 0.5, at site_small (100-byte blocks, w = 32.8 KB, about 1,500 samples) by about
    1, and at the sites of 200 KB and 1 MiB blocks (sampled almost surely) by about 0.
    main and <module> hold every site: 8.4 MB more is under 10 % of their 106 MB (2.7,
    whose small-object site is not seen) or 154 MB (3.x), and their z is about 1 (the 49
    mmap samples of 1 MiB on each side weigh on their variance), so neither is flagged.
    The same holds for --memory=inuse, where nothing is in use at the end of the sites.
    """
    interp.require()
    base = alloc_profiled(interp, tmp_path / "a", ALLOC_ENV)
    again = alloc_profiled(interp, tmp_path / "b", ALLOC_ENV)
    more = alloc_profiled(interp, tmp_path / "c", ALLOC_MORE)

    same = t.tool_json("diff", "--memory", "--json", base, again)
    assert same["memory"] == "alloc", same["base"]
    assert not diff_schema_problems(same), diff_schema_problems(same)[:10]
    seen = SITES[1:] if interp.minor < (3, 0) else SITES
    r = dict((f["name"], f) for f in same["functions"] if f["file"].endswith("alloc_work.py"))
    for name in seen:
        assert r[name]["base"] and r[name]["new"], "%s not on both sides\n%s" % (
            name, memory_where(same))
    assert same["flagged"] == 0, "two runs of one program differ\n" + memory_where(same)

    changed = t.tool_json("diff", "--memory", "--json", base, more)
    assert not diff_schema_problems(changed), diff_schema_problems(changed)[:10]
    flagged = sorted(f["name"] for f in changed["functions"] if f["flagged"])
    assert flagged == ["site_ext"], "flagged %s, expected only site_ext\n%s" % (
        flagged, memory_where(changed))
    ext = dict((f["name"], f) for f in changed["functions"])["site_ext"]
    assert ext["self_flagged"] and ext["total_flagged"] and ext["self_z"] >= 6, \
        memory_where(changed)
    assert 3 <= ext["new"]["self_bytes"] / float(ext["base"]["self_bytes"]) <= 7, ext
    assert changed["functions"][0]["name"] == "site_ext", memory_where(changed)

    # The table says the same, in bytes.
    text = t.tool("diff", "--memory", base, more)
    assert text.returncode == 0, text.stderr
    lines = [ln for ln in text.stdout.splitlines() if ln.startswith("*")]
    assert len(lines) == 1 and " site_ext (" in lines[0] and "MiB" in lines[0], text.stdout
    assert "allocation samples" in text.stdout.splitlines()[0], text.stdout

    # Nothing is in use at the end: no function to compare, nothing flagged.
    inuse = t.tool_json("diff", "--memory=inuse", "--json", base, more)
    assert inuse["memory"] == "inuse" and inuse["flagged"] == 0, memory_where(inuse)
    assert not diff_schema_problems(inuse), diff_schema_problems(inuse)[:10]


def test_diff_memory_errors(tmp_path):
    """Logs without allocation samples, and --html with --memory: one clear line each."""
    interp = t.by_id("py3.11")[0]
    interp.require()
    cpu = profiled(interp, tmp_path / "cpu", dict(ENV, STEADY_A="0.05", STEADY_B="0.02"))
    mem = alloc_profiled(interp, tmp_path / "mem", dict(ALLOC_ENV, SITE_MB="1"))
    cases = [
        (["diff", "--memory", mem, cpu], 1,
         "pyprof: diff: %s: no allocation samples: the logs were written without "
         "PYPROF_ALLOC" % cpu),
        (["diff", "--memory=inuse", cpu, mem], 1,
         "pyprof: diff: %s: no allocation samples" % cpu),
        (["diff", "--memory=bytes", mem, mem], 2, "--memory: 'bytes' is neither"),
        (["diff", "--memory", "--html", mem, mem], 2, "--html pages show time only"),
    ]
    for args, rc, text in cases:
        res = t.tool(*args)
        assert res.returncode == rc, (args, res.returncode, res.stderr)
        assert text in res.stderr and res.stdout == "", (args, res.stderr, res.stdout)
        assert len(res.stderr.splitlines()) <= 2, res.stderr
    # The time diff of the same logs still works, and says it is not memory.
    d = t.tool_json("diff", "--json", mem, mem)
    assert d["memory"] is None and d["flagged"] == 0, d["base"]
