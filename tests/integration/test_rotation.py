"""Rotation and retention (PYPROF_ROTATE, PYPROF_KEEP), on real interpreters.

A rotated series is a set of complete logs of one process: each one readable alone
(its own THREAD, CODE and STACK records, its footer counting its own samples), named
with its sequence number, and the oldest removed beyond PYPROF_KEEP.  The records are
read here with a second, independent decoder of the format (make_fixtures' varints), so
the tests check the files themselves, not only what the tool makes of them.
"""

import json
import os
import re
import signal
import sys
import time

import pytest

import pyprof_testlib as t

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures"))
import make_fixtures as mf  # noqa: E402  (the log format's varint readers)

WORKLOAD = t.workload("rotating.py")
REC_HEADER, REC_THREAD, REC_CODE, REC_STACK, REC_SAMPLE = 1, 2, 3, 4, 5
REC_MODULE, REC_NSTACK, REC_BATCH, REC_FOOTER = 8, 9, 14, 15
END_ROTATED = 8


def footer(payload):
    r = mf.Cursor(payload)
    f = {"end_unix_ns": r.uv(), "duration_ns": r.uv(), "samples": r.uv(),
         "signals": r.uv()}
    for _ in range(r.uv()):
        r.uv()
        r.uv()
    f["end"] = r.uv()
    return f


def check_self_contained(path):
    """Every id a record uses is announced earlier in the same file; returns the
    header, the footer (None when cut short) and the sample count (SAMPLE records and
    the samples of BATCH records)."""
    recs = mf.log_records(path)
    assert recs and recs[0][0] == REC_HEADER, path
    h = mf.read_header(recs[0][1])
    threads, codes, stacks, nstacks = set(), set(), set(), set()
    nsamples, foot = 0, None
    for typ, p in recs[1:]:
        r = mf.Cursor(p)
        if typ == REC_THREAD:
            threads.add(r.uv())
        elif typ == REC_CODE:
            codes.add(r.uv())
        elif typ == REC_STACK:
            sid = r.uv()
            for _ in range(r.uv()):
                cid = r.uv()
                r.sv()
                assert cid < 16 or cid in codes, (
                    "%s: stack %d uses code %d before (or without) its CODE record"
                    % (path, sid, cid))
            stacks.add(sid)
        elif typ == REC_NSTACK:
            nstacks.add(r.uv())
        elif typ == REC_SAMPLE:
            r.sv()
            tidx, sid = r.uv(), r.uv()
            assert tidx in threads, "%s: sample of thread %d before its THREAD" % (path, tidx)
            assert sid in stacks, "%s: sample of stack %d before its STACK" % (path, sid)
            if h["flags"] & 2:
                r.uv()
                nsid = r.uv()
                assert nsid == 0 or nsid in nstacks, (path, nsid)
            nsamples += 1
        elif typ == REC_BATCH:
            for e in mf.batch_events(p, 0, bool(h["flags"] & 2)):
                if e[0] != "S":
                    continue
                _, _, tidx, sid, _, nsid, _ = e
                assert tidx in threads, "%s: sample of thread %d before its THREAD" % (
                    path, tidx)
                assert sid in stacks, "%s: sample of stack %d before its STACK" % (path, sid)
                assert nsid == 0 or nsid in nstacks, (path, nsid)
                nsamples += 1
        elif typ == REC_FOOTER:
            foot = footer(p)
    if foot is not None:
        assert foot["samples"] == nsamples, (path, foot, nsamples)
    return h, foot, nsamples


def series_files(d, pid=None):
    """The logs in d, as {pid: [(seq, path), ...] sorted by seq}."""
    out = {}
    for f in os.listdir(d):
        path = os.path.join(d, f)
        recs = mf.log_records(path)
        if not recs:
            continue
        h = mf.read_header(recs[0][1])
        out.setdefault(h["pid"], []).append((h["seq"], path))
    for v in out.values():
        v.sort()
    return out if pid is None else out.get(pid, [])


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    pytest.fail("timed out waiting for %s" % what)


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.11", "py3.13", *t.SID_IDS)))
def test_keep_three_and_kill9(interp, tmp_path):
    """PYPROF_ROTATE=1s PYPROF_KEEP=3: at any time at most the 3 newest complete logs and
    the one being written (plus, for a moment, the one just finished); a kill -9 leaves
    the complete ones complete and the current one readable; together they read as one
    process."""
    interp.require()
    out = str(tmp_path / "logs")
    run = t.start([interp.path, WORKLOAD, "0"], out, timeout=120,
                  env={"PYPROF_ROTATE": "1s", "PYPROF_KEEP": "3"})
    pid = run.proc.pid
    most_files, most_bytes, largest = 0, 0, 0
    try:
        # Watch the directory until the series reaches its tenth file.
        deadline = time.time() + 60
        while time.time() < deadline:
            names = os.listdir(out) if os.path.isdir(out) else []
            sizes = []
            for n in names:
                try:
                    sizes.append(os.path.getsize(os.path.join(out, n)))
                except OSError:
                    pass
            most_files = max(most_files, len(names))
            most_bytes = max(most_bytes, sum(sizes))
            largest = max([largest] + sizes)
            seqs = [int(m.group(1)) for m in
                    (re.search(r"\.%d\.(\d{4})\.[^.]+\.lz4$" % pid, n) for n in names) if m]
            if seqs and max(seqs) >= 10:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the series never reached 10 files: %s" % os.listdir(out))
        # The kill comes once the newest file holds its header (its first flush):
        # waited for, however long a busy machine takes.
        def newest_has_header():
            named = sorted((int(m.group(1)), m.group(0)) for m in
                           (re.search(r"\.%d\.(\d{4})\.[^.]+\.lz4$" % pid, n)
                            for n in os.listdir(out)) if m)
            newest = os.path.join(out, [n for n in os.listdir(out)
                                        if n.endswith(named[-1][1])][0])
            return bool(mf.log_records(newest))
        wait_for(newest_has_header, 60, "the newest file's first flush")
    finally:
        os.kill(pid, signal.SIGKILL)
        run.proc.communicate()
    files = series_files(out, pid)
    seqs = [s for s, _ in files]
    assert len(files) == 4, "expected 3 complete logs and the current one: %s" % files
    assert seqs == list(range(seqs[0], seqs[0] + 4)) and seqs[0] >= 7, seqs
    # The bound held the whole time: 4 files, 5 at the moment between a rotation's new
    # file and the removal of the oldest.
    assert most_files <= 5, most_files
    assert most_bytes <= 5 * largest, (most_bytes, largest)
    series = None
    for k, (seq, path) in enumerate(files):
        h, foot, n = check_self_contained(path)
        assert re.search(r"\.%d\.%04d\.[A-Za-z0-9]{6}\.lz4$" % (pid, seq), path), path
        assert (h["run_id"], h["window"], h["series_start_unix_ns"]) == (
            series or (h["run_id"], h["window"], h["series_start_unix_ns"]))
        series = (h["run_id"], h["window"], h["series_start_unix_ns"])
        assert h["series_start_unix_ns"] < h["start_unix_ns"] and h["offset_us"] > 0, h
        if k < 3:
            assert foot is not None and foot["end"] == END_ROTATED, (path, foot)
            assert n > 0, path
        else:
            assert foot is None, "the file being written at the kill has a footer"
    # One file's end is the next one's start, on the series' clock.
    for (_, a), (_, b) in zip(files, files[1:]):
        ha, fa, _ = check_self_contained(a)
        hb = mf.read_header(mf.log_records(b)[0][1])
        if fa:
            assert hb["offset_us"] * 1000 + 1000 >= ha["offset_us"] * 1000 + fa["duration_ns"]
            assert hb["offset_us"] - ha["offset_us"] < (fa["duration_ns"] // 1000) + 500000
    # The union reads as one process, cut short, with every file's samples.
    res = t.tool("report", "--json", out)
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    procs = [p for p in rep["processes"] if p["pid"] == pid]
    assert len(procs) == 1, t.dump(rep)
    assert procs[0]["samples"] == sum(check_self_contained(p)[2] for _, p in files)
    assert procs[0]["truncated"] is True, t.dump(rep)


def test_rotate_by_size(tmp_path):
    """PYPROF_ROTATE=64KB: a file is finished once 64 KiB are on disk, so every finished
    file is at least that and at most that plus what one drain adds.  The program runs
    until its series has three files (however long that takes on a busy machine), then
    SIGTERM ends it, the log finished first."""
    interp = t.by_id("py3.11")[0]
    out = str(tmp_path / "logs")
    run = t.start([interp.path, WORKLOAD, "0", "codes"], out, timeout=180,
                  env={"PYPROF_ROTATE": "64KB", "PYPROF_PERIOD": "500us"})
    try:
        wait_for(lambda: os.path.isdir(out) and len(os.listdir(out)) >= 3, 150,
                 "a third file of the series")
    finally:
        run.proc.send_signal(signal.SIGTERM)
    prof = run.wait()
    assert prof.rc == -signal.SIGTERM, prof.describe()
    files = series_files(out, prof.pid)
    assert len(files) >= 3, "expected several 64 KiB files: %s" % files
    assert [s for s, _ in files] == list(range(len(files)))
    total = 0
    for seq, path in files:
        h, foot, n = check_self_contained(path)
        total += n
        size = os.path.getsize(path)
        if seq < len(files) - 1:
            assert foot["end"] == END_ROTATED
            assert 64 * 1024 <= size <= 3 * 64 * 1024, (path, size)
        else:
            assert foot is not None and foot["end"] != END_ROTATED
    rep = t.report(out)
    assert [p["samples"] for p in rep["processes"]] == [total], t.dump(rep)


@pytest.mark.parametrize("template,expect", [
    ("app.%p.%s.lz4", r"app\.{pid}\.{seq}\.lz4"),
    ("app.%p.lz4", r"app\.{pid}\.{seq}\.lz4"),
    ("app-%p-%s", r"app-{pid}-{seq}"),
    ("app-%p", r"app-{pid}\.{seq}"),
])
def test_rotated_names(template, expect, tmp_path):
    """The sequence number is where %s puts it, or before .lz4 (or at the end)."""
    interp = t.by_id("py3.11")[0]
    out = tmp_path / "logs"
    out.mkdir()
    prof = t.run([interp.path, WORKLOAD, "3.5"], None,
                 env={"PYPROF_ROTATE": "1s", "PYPROF_OUTPUT": str(out / template)})
    assert prof.rc == 0, prof.describe()
    names = sorted(os.listdir(str(out)))
    assert len(names) >= 3, names
    for seq, name in enumerate(names):
        assert re.match("^" + expect.format(pid=prof.pid, seq="%04d" % seq) + "$", name), (
            names, template)
        assert mf.read_header(mf.log_records(str(out / name))[0][1])["seq"] == seq


def test_native_series_files_stand_alone(tmp_path):
    """In native mode each file announces again the modules its native stacks use."""
    interp = t.by_id("py3.11")[0]
    out = str(tmp_path / "logs")
    prof = t.run([interp.path, WORKLOAD, "3.5"], out,
                 env={"PYPROF_ROTATE": "1s", "PYPROF_NATIVE": "1"})
    assert prof.rc == 0, prof.describe()
    files = series_files(out, prof.pid)
    assert len(files) >= 3, files
    for _, path in files:
        check_self_contained(path)
        types = [typ for typ, _ in mf.log_records(path)]
        assert REC_NSTACK in types, path
        assert REC_MODULE in types and types.index(REC_MODULE) < types.index(REC_NSTACK)
        rep = t.report(path)
        native = rep["processes"][0]["native"]
        assert native["ok"] > 0 and native["unresolved_addresses"] < native["ok"], native


def test_keep_spares_other_processes(tmp_path):
    """A forked child has its own series; neither side's PYPROF_KEEP removes the other's
    files."""
    interp = t.by_id("py3.11")[0]
    out = str(tmp_path / "logs")
    script = tmp_path / "fork.py"
    script.write_text(u"import os, runpy, sys\nsys.argv[1:] = ['4.5']\n"
                      u"pid = os.fork()\nrunpy.run_path(%r, run_name='__main__')\n"
                      u"if pid: os.waitpid(pid, 0)\nelse: os._exit(0)\n" % WORKLOAD)
    prof = t.run([interp.path, str(script)], out,
                 env={"PYPROF_ROTATE": "1s", "PYPROF_KEEP": "2"})
    assert prof.rc == 0, prof.describe()
    by_pid = series_files(out)
    assert len(by_pid) == 2 and prof.pid in by_pid, by_pid
    for pid, files in by_pid.items():
        # Each process ran 4.5 s: seq 0..3 at least; the newest two remain.
        assert len(files) == 2, (pid, files)
        assert files[-1][0] >= 3 and files[0][0] == files[-1][0] - 1, (pid, files)
        for _, path in files:
            h, foot, _ = check_self_contained(path)
            assert h["pid"] == pid and foot is not None


@pytest.mark.parametrize("env,word", [
    ({"PYPROF_KEEP": "3"}, "PYPROF_KEEP=3"),
    ({"PYPROF_ROTATE": "10 minutes"}, "PYPROF_ROTATE=10 minutes"),
    ({"PYPROF_ROTATE": "1KB"}, "PYPROF_ROTATE=1KB"),
    ({"PYPROF_ROTATE": "1s", "PYPROF_KEEP": "-1"}, "PYPROF_KEEP=-1"),
])
def test_bad_rotation_values(env, word, tmp_path):
    """A bad value: one line naming it, no log, the program unchanged."""
    interp = t.by_id("py3.11")[0]
    prof, base = t.run_pair([interp.path, WORKLOAD, "0.2"], tmp_path, env=env)
    assert prof.rc == base.rc == 0 and prof.stdout == base.stdout
    lines = t.stderr_lines(prof.stderr)
    assert len(lines) == 1 and word in lines[0], lines
    assert prof.logs == [], prof.describe()
