"""The tool on bad input: a missing file, a text file, an empty file, the broken logs in
tests/fixtures/ get exit status 1 and exactly one line on stderr; a truncated log is
reported up to its cut with a warning (exit 0).  A real log cut in half by the test is
still reported, marked truncated, with the samples before the cut."""

import json
import os

import pytest

import pyprof_testlib as t

SIMPLE = t.workload("simple.py")
BAD_FIXTURES = ["not_a_log.txt", "empty.lz4", "not_pyprof.lz4", "newer_version.lz4",
                "corrupted.lz4"]
COMMANDS = [["report"], ["report", "--json"], ["info"], ["tree"],
            ["html", "-o", os.devnull], ["export", "-f", "folded", "-o", os.devnull]]
CMD_IDS = ["report", "report-json", "info", "tree", "html", "export"]


def fixture(name):
    path = os.path.join(t.FIXTURES, name)
    assert os.path.isfile(path), "fixture %s is missing (tests/fixtures/)" % path
    return path


def check_one_line_error(cmd, path):
    res = t.tool(*(cmd + [path]))
    lines = res.stderr.splitlines()
    assert res.returncode == 1, ("pyprof %s %s: exit %s, expected 1\nstderr: %s"
                                 % (" ".join(cmd), path, res.returncode, res.stderr))
    assert len(lines) == 1 and lines[0].strip(), (
        "pyprof %s %s: expected exactly one line on stderr, got %r"
        % (" ".join(cmd), path, res.stderr))
    return lines[0]


@pytest.mark.parametrize("cmd", COMMANDS, ids=CMD_IDS)
def test_missing_text_empty(cmd, tmp_path):
    missing = str(tmp_path / "no_such.lz4")
    check_one_line_error(cmd, missing)
    text = tmp_path / "text.lz4"
    text.write_text(u"this is not a log\n")
    check_one_line_error(cmd, str(text))
    empty = tmp_path / "empty.lz4"
    empty.write_bytes(b"")
    check_one_line_error(cmd, str(empty))


@pytest.mark.parametrize("name", BAD_FIXTURES)
@pytest.mark.parametrize("cmd", COMMANDS, ids=CMD_IDS)
def test_bad_fixture(cmd, name):
    line = check_one_line_error(cmd, fixture(name))
    if name == "newer_version.lz4":
        assert "newer" in line.lower(), line


def check_truncated(path):
    """A truncated log: report --json works (exit 0, one warning line), says
    truncated, and has the samples before the cut.  Returns the report."""
    res = t.tool("report", "--json", path)
    assert res.returncode == 0, ("report --json on a truncated log: exit %s\n%s"
                                 % (res.returncode, res.stderr))
    warn = res.stderr.splitlines()
    assert len(warn) == 1 and "truncat" in warn[0].lower(), (
        "expected one warning line about the truncation, got %r" % res.stderr)
    rep = json.loads(res.stdout)
    t.check_report_shape(rep)
    assert any(p["truncated"] for p in rep["processes"]), t.dump(rep)
    text = t.tool("report", path)
    assert text.returncode == 0 and text.stdout.strip(), text.stderr
    info = t.tool("info", path)
    assert info.returncode == 0, info.stderr
    assert "truncat" in (info.stdout + info.stderr).lower(), info.stdout
    return rep


def test_truncated_fixture():
    check_truncated(fixture("truncated.lz4"))


def test_real_log_cut(tmp_path):
    """A real log cut short: in half, and just before its end (no footer, last block
    partial).  The run is 3 s at 100 us, flushed every 0.2 s, so that the log spans many
    LZ4 blocks (the first one, with the start-up code records, is large) and the first
    half holds whole blocks of samples, however slow the build (a sanitizer's) is."""
    interp = t.by_id("py3.11")[0].require()
    prof = t.run([interp.path, SIMPLE], str(tmp_path / "logs"),
                 env={"PYPROF_PERIOD": "100us", "BURN_SECONDS": "3", "PYPROF_FLUSH": "0.2"})
    assert prof.rc == 0, prof.describe()
    full = t.one_log(prof, ended="exit")
    n = full.proc["samples"]
    data = open(prof.logs[0], "rb").read()
    for name, size in (("half", len(data) // 2), ("end", len(data) - 100)):
        cut = tmp_path / ("cut-%s.lz4" % name)
        cut.write_bytes(data[:size])
        rep = check_truncated(str(cut))
        p = rep["processes"][0]
        where = ("log cut to %d of %d bytes, %d samples before the cut\n%s"
                 % (size, len(data), n, t.dump(rep)))
        assert p["truncated"] is True and p["ended"] == "truncated", where
        assert p["pid"] == prof.pid, where
        if name == "half":
            assert 0 < p["samples"] < n, where
        else:
            # The last block may hold only the footer: then every sample survives.
            assert 0.8 * n <= p["samples"] <= n, where
