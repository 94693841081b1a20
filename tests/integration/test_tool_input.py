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


def lz4_blocks(data):
    """(start, end) of every data block of the LZ4 frames in `data` (the format's frame
    layout: magic, FLG, BD, optional content size and dictionary id, header checksum;
    blocks of a 4-byte size, data, optional checksum; an end mark, optional checksum)."""
    out, at = [], 0
    while at + 7 <= len(data) and data[at:at + 4] == b"\x04\x22\x4d\x18":
        flg = data[at + 4]
        at += 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
        while at + 4 <= len(data):
            size = int.from_bytes(data[at:at + 4], "little")
            at += 4
            if size == 0:
                at += 4 if flg & 0x04 else 0
                break
            end = at + (size & 0x7FFFFFFF)
            out.append((at, end))
            at = end + (4 if flg & 0x10 else 0)
    return out


def test_real_log_cut(tmp_path):
    """A real log cut short: in the middle of its middle LZ4 block, and just before its
    end (no footer, last block partial).  The run is 3 s at 100 us, flushed every 0.2 s,
    so that the log spans many LZ4 blocks (the first ones, with the start-up code
    records, are large: a cut in the middle of the file's bytes may fall in them) and
    half of them come before the cut, however slow the build (a sanitizer's) is."""
    interp = t.by_id("py3.11")[0].require()
    prof = t.run([interp.path, SIMPLE], str(tmp_path / "logs"),
                 env={"PYPROF_PERIOD": "100us", "BURN_SECONDS": "3", "PYPROF_FLUSH": "0.2"})
    assert prof.rc == 0, prof.describe()
    full = t.one_log(prof, ended="exit")
    n = full.proc["samples"]
    data = open(prof.logs[0], "rb").read()
    blocks = lz4_blocks(data)
    assert len(blocks) >= 6, blocks
    mid = blocks[len(blocks) // 2]
    for name, size in (("half", (mid[0] + mid[1]) // 2), ("end", len(data) - 100)):
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


# ---- rotated series -------------------------------------------------------------------

import sys  # noqa: E402

sys.path.insert(0, t.FIXTURES)
import make_fixtures as mf  # noqa: E402  (the log encoders, shared with the fixtures)


def write_series(d, **kw):
    """The series of make_fixtures.series_logs in directory d, named as the library names
    rotated logs; returns [(path, info)] by seq."""
    d.mkdir(exist_ok=True)
    out = []
    for raw, info in mf.series_logs(**kw):
        path = d / ("pyprof.app.4343.%04d.r%d.lz4" % (info["seq"], 7 - info["seq"]))
        path.write_bytes(mf.lz4(raw))
        out.append((str(path), info))
    return out


def report_json(*args):
    res = t.tool("report", "--json", *args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_series_any_order(tmp_path):
    files = write_series(tmp_path / "logs")
    paths = [p for p, _ in files]
    times = [x for _, info in files for x in info["times"]]
    reps = [report_json(*order) for order in
            (paths, paths[::-1], [paths[1], paths[2], paths[0]])]
    reps.append(report_json(str(tmp_path / "logs")))
    for rep in reps[1:]:
        assert rep == reps[0]
    rep = reps[0]
    assert len(rep["processes"]) == 1
    pr = rep["processes"][0]
    assert pr["files"] == len(files) and pr["snapshots"] == len(files)
    assert pr["samples"] == pr["samples_in_log"] == len(times) == rep["samples"]
    assert pr["ended"] == "exit" and pr["truncated"] is False
    assert pr["dropped"]["ring_full"] == sum(k + 1 for k in range(len(files)))
    assert pr["library_cpu_ns"] == sum(1000 * (k + 1) for k in range(len(files)))
    last = files[-1][1]
    dur_us = last["offset_us"] + (last["times"][-1] - last["offset_us"]) + 10
    assert abs(pr["duration_s"] - dur_us / 1e6) < 1e-6
    assert pr["path"] == paths[0]
    # Each file's ids are its own: the threads are the two of the process, by tid.
    assert sorted((th["tid"], th["samples"]) for th in rep["threads"]) == sorted(
        (tid, sum(1 for _, i in files for x in i["tids"] if x == tid))
        for tid in set(x for _, i in files for x in i["tids"]))
    # A logs that is not rotated keeps its keys, with one file and no snapshot.
    one = report_json(fixture("good.lz4"))["processes"][0]
    assert one["files"] == 1 and one["snapshots"] == 0


def test_series_missing_and_window(tmp_path):
    files = write_series(tmp_path / "logs", nfiles=4)
    os.remove(files[0][0])  # retention removed the oldest
    os.remove(files[2][0])  # and one in the middle is gone too
    kept = [files[1], files[3]]
    pr = report_json(str(tmp_path / "logs"))["processes"][0]
    assert pr["files"] == 2 and pr["snapshots"] == 2
    assert pr["samples"] == sum(len(i["times"]) for _, i in kept)
    last = files[3][1]
    assert abs(pr["duration_s"] - (last["times"][-1] + 10) / 1e6) < 1e-6
    # --from/--to count from the series' start, across the files.
    lo, hi = kept[0][1]["times"][20], kept[1][1]["times"][10]
    want = sum(1 for _, i in kept for x in i["times"] if lo <= x <= hi)
    rep = report_json("--from", "%.6f" % (lo / 1e6), "--to", "%.6f" % (hi / 1e6),
                      str(tmp_path / "logs"))
    assert rep["samples"] == want and 0 < want < pr["samples"]
    assert rep["processes"][0]["snapshots"] == 1  # file 3's; file 1's is before --from


def test_series_info(tmp_path):
    files = write_series(tmp_path / "logs", last_footer=False)
    res = t.tool("info", files[2][0], files[0][0], files[1][0])
    assert res.returncode == 0, res.stderr
    assert "truncated" in res.stderr  # the last file, still being written
    out = res.stdout
    assert "series          3 files, seq 0 to 2" in out
    lines = [ln for ln in out.splitlines() if ln.strip().startswith("seq ")]
    assert [ln.split()[1] for ln in lines] == ["0", "1", "2"]
    for (path, _), ln in zip(files, lines):
        assert ln.endswith(path)
    assert "rotated" in lines[0] and "truncated" in lines[2]
    snap = [ln for ln in out.splitlines() if ln.strip().startswith("snapshots")]
    assert len(snap) == 1 and snap[0].split()[1] == "3:"
    for k, (_, info) in enumerate(files):
        assert "#%d at %.3f s (2 threads)" % (k + 1, info["snapshot"] / 1e6) in snap[0]


# ---- one log, two codings ---------------------------------------------------------------

import re  # noqa: E402
import subprocess  # noqa: E402

SAME_COMMANDS = [["report"], ["report", "--json"], ["tree"], ["info"], ["html", "-o", "-"]] + \
    [["export", "-f", f, "-o", "-"]
     for f in ("folded", "pstats", "callgrind", "speedscope", "pprof", "chrome")]


def test_batches_read_as_records(tmp_path):
    """The same samples and RSS points written as SAMPLE and RSS records (as writers
    before BATCH did) and as BATCH records: every command says the same of both, byte for
    byte, but for the file's name and its decompressed size (`info`)."""
    plain = tmp_path / "plain.lz4"
    plain.write_bytes(mf.lz4(mf.build_log(3000, seed=7, rss_pages=True)))
    batched = tmp_path / "batched.lz4"
    batched.write_bytes(mf.lz4(mf.build_log(3000, seed=7, batched=256)))
    assert batched.stat().st_size < plain.stat().st_size, (
        batched.stat().st_size, plain.stat().st_size)
    for cmd in SAME_COMMANDS:
        a, b = (subprocess.run([t.TOOL] + cmd + [str(path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=t.base_env(), timeout=t.TIMEOUT)
                for path in (plain, batched))
        assert a.returncode == 0 and b.returncode == 0, (cmd, a.stderr, b.stderr)
        out_a, out_b = a.stdout, b.stdout.replace(b"batched.lz4", b"plain.lz4")
        if cmd == ["info"]:
            out_a, out_b = (re.sub(rb"\d+ bytes decompressed", b"", o) for o in (out_a, out_b))
        assert out_a and out_a == out_b, (cmd, out_a[:2000], out_b[:2000])
        assert a.stderr == b.stderr.replace(b"batched.lz4", b"plain.lz4"), cmd
