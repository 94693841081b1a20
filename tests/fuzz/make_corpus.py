#!/usr/bin/env python3
"""make_corpus.py -- (re)creates the seed corpus of tests/fuzz/ for the reader fuzzer.

    python3 tests/fuzz/make_corpus.py [build/libpyprof.so] [tests/fuzz/corpus]
    python3 tests/fuzz/make_corpus.py --series-only    # only the hand-built seeds (series,
                                                       # snapshot and span records)
    python3 tests/fuzz/make_corpus.py --batch-only     # only the BATCH seeds
    python3 tests/fuzz/make_corpus.py --alloc-only     # only the ALLOC / FREE seeds

Profiles a few tiny Python programs with the real library to get real logs, then derives
broken ones from them: cut short at several places, bytes flipped, a newer format version,
an absurd record length, an unknown record type, several LZ4 frames back to back, and the
decompressed content itself (the fuzz target also reads every input as decompressed log
content, see fuzz_reader.c).  Needs the `lz4` command.  The seeds are kept small (a few
KB) so the replay stays fast; the files are committed, so this is only run to refresh them.
"""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
from make_fixtures import MAGIC, batch_events, header_flags, lz4, read_uvarint, record, svarint, text, uvarint, write_seeds  # noqa: E402,E501  (one codec)

PROGRAMS = {
    # A short CPU-bound run with a thread.
    "threads": """
import threading
def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
t = threading.Thread(target=work, args=(200000,), name="worker")
t.start(); work(200000); t.join()
""",
    # A deep recursion, cut by PYPROF_MAX_DEPTH.
    "deep": """
import sys
sys.setrecursionlimit(5000)
def rec(n):
    if n == 0:
        s = 0
        for i in range(150000):
            s += i
        return s
    return rec(n - 1)
rec(300)
""",
    # A forked child writes its own log.
    "fork": """
import os
def work():
    s = 0
    for i in range(150000):
        s += i
pid = os.fork()
work()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
""",
}

RUNS = [
    ("threads", {"PYPROF_PERIOD": "5ms", "PYPROF_CLOCK": "wall", "PYPROF_MEMORY": "0"}),
    ("deep", {"PYPROF_PERIOD": "2ms", "PYPROF_MAX_DEPTH": "16"}),
    ("deep", {"PYPROF_PERIOD": "2ms", "PYPROF_NATIVE": "1"}),
    ("fork", {"PYPROF_PERIOD": "3ms"}),
]


def records(plain):
    """[(type, whole record bytes)] of a decompressed log, after the magic."""
    out = []
    i = len(MAGIC)
    while i < len(plain):
        start = i
        n, i = read_uvarint(plain, i + 1)
        i += n
        out.append((plain[start], plain[start:i]))
    return out


def payload(rec):
    _, i = read_uvarint(rec, 1)
    return rec[i:]


def pick_records(recs, nsamples, native=False):
    """The first `nsamples` samples (SAMPLE records, or the BATCH records that hold them),
    the THREAD, RSS and MARK records, and the STACK and CODE records the samples need, in
    their original order."""
    keep = set()
    stacks = {}  # stack_id -> index
    codes = {}  # code_id -> index
    for k, (t, r) in enumerate(recs):
        if t == 3:
            codes[read_uvarint(payload(r), 0)[0]] = k
        elif t == 4:
            stacks[read_uvarint(payload(r), 0)[0]] = k

    def need_stack(sid):
        if sid not in stacks:
            return
        keep.add(stacks[sid])
        sp = payload(recs[stacks[sid]][1])
        _, j = read_uvarint(sp, 0)
        nframes, j = read_uvarint(sp, j)
        for _ in range(nframes):
            cid, j = read_uvarint(sp, j)
            _, j = read_uvarint(sp, j)
            if cid in codes:
                keep.add(codes[cid])

    for k, (t, r) in enumerate(recs):
        if t in (2, 6, 7) or (t == 5 and nsamples > 0):
            keep.add(k)
            nsamples -= t == 5
            if t == 5:
                p = payload(r)
                _, i = read_uvarint(p, 0)  # dt_us
                _, i = read_uvarint(p, i)  # thread_idx
                need_stack(read_uvarint(p, i)[0])
        elif t == 14 and nsamples > 0:
            keep.add(k)  # a batch: every sample of it needs its stack
            for e in batch_events(payload(r), 0, native):
                if e[0] == "S":
                    nsamples -= 1
                    need_stack(e[3])
    return [recs[k][1] for k in sorted(keep)]


def native_mini():
    """A small native log built by hand (until the library's own native logs are in the
    runs above): the header with PYPROF_HDR_NATIVE, MODULE records (a file, the vDSO),
    NSTACK, STACK with runs, SAMPLE with the native tail, MODULE_GONE and a footer with
    the native section."""
    hdr = (uvarint(1) + uvarint(4242) + uvarint(1) + text("0123456789abcdef")
           + uvarint(1700000000000000000) + text("fuzz-host") + text("/usr/bin/python3.11")
           + uvarint(1) + text("python3") + text("3.11.7") + uvarint(0x030B07F0)
           + uvarint(10_000_000) + bytes([0]) + text("perf-task-clock") + uvarint(256)
           + uvarint(2) + uvarint(0))

    def module(mid, path, base, bid, segs, ino):
        p = uvarint(mid) + text(path) + uvarint(base) + text(bid) + uvarint(len(segs))
        p += b"".join(b"".join(uvarint(v) for v in seg) for seg in segs)
        return record(8, p + uvarint(0x803 if ino else 0) + uvarint(ino)
                      + uvarint(23_000_000 if ino else 0) + uvarint(1_700_000_000 * ino))

    segs = [(0, 0x1000, 0, 4), (0x1000, 0x20000, 0x1000, 5), (0x21000, 0x8000, 0x21000, 6)]
    recs = [
        module(1, "/usr/lib/libpython3.11.so.1.0", 0x7F0000000000, bytes(range(20)), segs, 77),
        module(2, "linux-vdso.so.1", 0x7FFF00000000, bytes(range(20, 40)), segs[:1], 0),
        record(2, uvarint(0) + uvarint(4242) + text("MainThread")),
        record(3, uvarint(16) + svarint(1) + text("f") + text("f") + text("/a.py")
               + bytes([4]) + text(b"") + uvarint(0)),
        record(9, uvarint(1) + uvarint(3) + uvarint(0x7F0000001234)
               + uvarint(0x7F0000005678) + uvarint(0x7FFF00000100)),
        record(4, uvarint(1) + uvarint(3) + uvarint(1) + svarint(0) + uvarint(16)
               + svarint(3) + uvarint(16) + svarint(4) + uvarint(2) + uvarint(1) + uvarint(2)),
        record(5, svarint(100) + uvarint(0) + uvarint(1) + uvarint(10000) + uvarint(1)
               + uvarint(1)),
        record(5, svarint(100) + uvarint(0) + uvarint(1) + uvarint(10000) + uvarint(0)
               + uvarint(2)),
        record(10, uvarint(2)),
    ]
    foot = (uvarint(1700000001000000000) + uvarint(10**9) + uvarint(2) + uvarint(2)
            + uvarint(0) + uvarint(1) + bytes([1]) + svarint(0) + uvarint(99_500)
            + uvarint(1000) + uvarint(600) + uvarint(400) + uvarint(0) + uvarint(0)
            + uvarint(0) + uvarint(0) + uvarint(1) + uvarint(0) + uvarint(1) + uvarint(500))
    return MAGIC + record(1, hdr) + b"".join(recs) + record(15, foot)


def native_seeds():
    plain = native_mini()
    return {"native-mini.lz4": lz4(plain), "native-cut.lz4": lz4(plain[: len(plain) * 2 // 3])}


def series_seeds():
    """Logs of the rotated series and snapshot records, built by hand with
    make_fixtures.series_logs: a middle file of a series (header with seq, series start
    and offset; a SNAPSHOT after its first sample), the same cut inside its snapshot, and
    damaged snapshots (more threads announced than the payload holds, an absurd count)."""
    import make_fixtures as mf
    plain = mf.series_logs(nfiles=2, per_file=6)[1][0]
    seeds = {"series-snapshot.lz4": lz4(plain)}
    snap = mf.snapshot(2, 10_003, [(1, 102, 1, "R"), (0, 0, 0, "S")])
    at = plain.index(snap)
    seeds["series-cut-in-snapshot.lz4"] = lz4(plain[: at + len(snap) // 2])
    short = bytes([11]) + uvarint(7) + uvarint(2) + uvarint(10) + uvarint(3) + b"\x00\x00\x00R"
    seeds["snapshot-short.lz4"] = lz4(plain[:at] + short + plain[at + len(snap):])
    absurd = bytes([11]) + uvarint(8) + uvarint(2) + uvarint(10) + uvarint(1 << 30) + b"\x00R"
    seeds["snapshot-absurd.lz4"] = lz4(plain[:at] + absurd + plain[at + len(snap):])
    return seeds


def span_seeds():
    """Span records built by hand in a middle file of a series (make_fixtures.span_start /
    span_stop): nested spans with OSProfiler's ids and info, a stop whose start is in an
    earlier file, a span still open at the end; the same cut inside a SPAN_START; and
    damaged ones (a name longer than PYPROF_SPAN_NAME_MAX, span id 0, a stop's info
    running past its payload)."""
    import make_fixtures as mf
    plain = mf.series_logs(nfiles=2, per_file=6)[1][0]
    snap = mf.snapshot(2, 10_003, [(1, 102, 1, "R"), (0, 0, 0, "S")])
    at = plain.index(snap)
    root = mf.span_start(7, 10_001, 0, "wsgi", trace_id="5f0e1d2c-aaaa-4bbb-8ccc-000000000001",
                         parent_id="5f0e1d2c-aaaa-4bbb-8ccc-000000000000",
                         base_id="5f0e1d2c-aaaa-4bbb-8ccc-000000000000",
                         info='{"request":{"path":"/v2/servers","method":"GET"}}')
    child = mf.span_start(8, 10_002, 1, "db", parent_span_id=7,
                          trace_id="5f0e1d2c-aaaa-4bbb-8ccc-000000000002",
                          parent_id="5f0e1d2c-aaaa-4bbb-8ccc-000000000001",
                          base_id="5f0e1d2c-aaaa-4bbb-8ccc-000000000000",
                          info='{"db":{"statement":"SELECT 1"}}')
    spans = (root + child + mf.span_stop(8, 10_003, 1, '{"etype":"KeyError"}') +
             mf.span_stop(3, 10_003, 0) + mf.span_start(9, 10_004, 0, u"\u00e9t\u00e9"))
    seeds = {"spans.lz4": lz4(plain[:at] + spans + plain[at:])}
    seeds["spans-cut-in-start.lz4"] = lz4(plain[:at] + root[: len(root) // 2])
    long_name = mf.span_start(10, 10_001, 0, "n" * 257)
    seeds["span-name-too-long.lz4"] = lz4(plain[:at] + long_name + plain[at:])
    seeds["span-id-zero.lz4"] = lz4(plain[:at] + mf.span_start(0, 10_001, 0, "zero") +
                                    plain[at:])
    short_stop = bytes([13]) + uvarint(5) + uvarint(8) + uvarint(1) + uvarint(0) + uvarint(9) + b"{"
    seeds["span-stop-short.lz4"] = lz4(plain[:at] + short_stop + plain[at:])
    return seeds


def batch_seeds():
    """Logs of BATCH records, built by hand with make_fixtures: make_fixtures.build_log
    in batches (with the native tail, too), the same cut inside a batch, and damaged
    batches: more events announced than the payload holds, an RSS unit of 0, a flag and
    a kind no reader knows, an event cut short."""
    import make_fixtures as mf
    plain = mf.build_log(120, seed=11, nthreads=3, batched=40)
    seeds = {"batch-valid.lz4": lz4(plain)}
    recs = records(plain)
    at = len(MAGIC) + sum(len(r) for _, r in recs[:[t for t, _ in recs].index(mf.REC_BATCH)])
    first = dict(recs)[mf.REC_BATCH]
    seeds["batch-cut.lz4"] = lz4(plain[: at + len(first) // 2])
    # A native log: a header with PYPROF_HDR_NATIVE, samples with nstack ids and flags.
    native = native_mini()
    hdr = records(native)[0][1]
    tail = mf.batch([("S", 100, 0, 1, 10000, 1, 1), ("R", 150, 8192),
                     ("S", 10200, 0, 1, 10000, 0, 2), ("S", 10200, 1, 1, 5000, 1, 0)],
                    0, native=True)
    seeds["batch-native.lz4"] = lz4(MAGIC + hdr + b"".join(r for _, r in records(native)[1:-1])
                                    + tail + records(native)[-1][1])

    def damaged(name, payload):
        seeds["batch-%s.lz4" % name] = lz4(plain[:at] + record(mf.REC_BATCH, payload)
                                           + plain[at + len(first):])

    head = uvarint(10000) + uvarint(10000)
    damaged("count-lie", uvarint(50) + head + uvarint(4096) + uvarint(2) + svarint(0))
    damaged("unit-zero", uvarint(1) + head + uvarint(0) + uvarint(2) + svarint(0))
    damaged("flag-unknown", uvarint(1) + head + uvarint(1) + uvarint(1 << 3 | 5) + uvarint(8)
            + svarint(0))
    damaged("kind-7", uvarint(1) + head + uvarint(1) + uvarint(7) + svarint(0))
    damaged("event-cut", uvarint(2) + head + uvarint(1) + uvarint(2) + svarint(0)
            + uvarint(1 << 3 | 1))
    return seeds


def alloc_seeds():
    """Logs of allocation sampling, built by hand with make_fixtures from its alloc_log
    (ALLOC and FREE records of every kind, the footer's allocation section: the fixture
    alloc.lz4, itself a seed): the same cut inside an ALLOC; a native log whose ALLOC records carry native stacks (one the log
    never defined); and damaged ones: a domain no writer uses, an ALLOC cut short, a
    footer whose allocation section is cut, ALLOC records in a log whose header has no
    interval (an older header); then ALLOCS records, whole and damaged; then AWINDOW
    records (make_fixtures' awindow_log), whole, cut, and with a shift past the flags'
    five bits."""
    import make_fixtures as mf
    plain = mf.alloc_log()
    seeds = {}
    recs = records(plain)
    first = dict(recs)[mf.REC_ALLOC]
    at = plain.index(first)
    seeds["alloc-cut.lz4"] = lz4(plain[: at + len(first) // 2])
    bad = mf.record(mf.REC_ALLOC, uvarint(5) + uvarint(0) + uvarint(1) + uvarint(8)
                    + uvarint(0x10) + bytes([9]) + uvarint(0))
    seeds["alloc-domain-bad.lz4"] = lz4(plain[:at] + bad + plain[at:])
    short = mf.record(mf.REC_ALLOC, uvarint(5) + uvarint(0) + uvarint(1) + uvarint(8))
    seeds["alloc-short.lz4"] = lz4(plain[:at] + short + plain[at:])
    foot = recs[-1][1]
    seeds["alloc-footer-cut.lz4"] = lz4(plain[: len(plain) - len(foot)]
                                        + mf.record(mf.REC_FOOTER, payload(foot)[:-3]))
    old_hdr = mf.header()
    seeds["alloc-no-interval.lz4"] = lz4(MAGIC + old_hdr + b"".join(r for _, r in recs[1:]))
    # Native: the header with PYPROF_HDR_NATIVE, the series' fields and an interval.
    native = native_mini()
    nrecs = records(native)
    hdr = mf.record(1, payload(nrecs[0][1]) + uvarint(0) * 3 + uvarint(65536))
    allocs = (mf.alloc(50, 0, 1, 1000, 0x100, mf.ALLOC_MALLOC, 0, nstack_id=1)
              + mf.alloc(60, 0, 0, 24, 0x200, mf.ALLOC_PYOBJECT, 0, nstack_id=1)
              + mf.alloc(70, 0, 1, 24, 0x300, mf.ALLOC_PYOBJECT, 0, nstack_id=7)
              + mf.alloc(80, 0, 1, 4096, 0x400, mf.ALLOC_MMAP, 0, nstack_id=0)
              + mf.free(90, 0x200))
    nfoot = payload(nrecs[-1][1]) + uvarint(0) * 5 + b"".join(uvarint(v) for v in (4, 1, 0, 0, 3))
    seeds["alloc-native.lz4"] = lz4(MAGIC + hdr + b"".join(r for _, r in nrecs[1:-1]) + allocs
                                    + mf.record(15, nfoot))
    # ALLOCS, as the library writes them: the native log's events in one record, and
    # the fixture allocs.lz4 cut inside its last record, and instead of that record one
    # with an event of kind 3, and one with a free naming an ordinal before the first.
    events = [("A", 50, 0, 1, 1000, 0x100, mf.ALLOC_MALLOC, 0, 1),
              ("A", 60, 0, 0, 24, 0x200, mf.ALLOC_PYOBJECT, 0, 1),
              ("A", 70, 1, 1, 24, 0x300, mf.ALLOC_PYOBJECT, 0, 7),
              ("F", 90, 0x200), ("F", 95, 0x777)]
    rec, _ = mf.allocs(events, 3, {}, by_address={0x300}, native=True)
    seeds["allocs-native.lz4"] = lz4(MAGIC + hdr + b"".join(r for _, r in nrecs[1:-1]) + rec
                                     + mf.record(15, nfoot))
    batched = mf.allocs_log()
    one = dict(records(batched))[mf.REC_ALLOCS]
    at = batched.index(one)
    seeds["allocs-cut.lz4"] = lz4(batched[: at + len(one) // 2])
    body = payload(one)
    seeds["allocs-kind-3.lz4"] = lz4(batched[:at] + mf.record(mf.REC_ALLOCS, uvarint(1) + body[1:3]
                                                              + uvarint(3) + svarint(0)))
    seeds["allocs-ordinal-before.lz4"] = lz4(
        batched[:at] + mf.record(mf.REC_ALLOCS, uvarint(1) + uvarint(5) + uvarint(2)
                                 + uvarint(2 << 2 | 1) + svarint(0)))
    windowed = mf.awindow_log()
    seeds["awindow.lz4"] = lz4(windowed)
    win = dict(records(windowed))[mf.REC_AWINDOW]
    at = windowed.index(win)
    seeds["awindow-cut.lz4"] = lz4(windowed[: at + len(win) - 1])
    seeds["awindow-shift-bad.lz4"] = lz4(windowed[:at] + mf.awindow(9_000, 800, 400, 32, 5)
                                         + windowed[at + len(win):])
    return seeds


def main():
    if sys.argv[1:] == ["--alloc-only"]:
        # Only the hand-built seeds of the ALLOC and FREE records (no library run).
        write_seeds(os.path.join(os.path.dirname(__file__), "corpus"), alloc_seeds())
        return
    if sys.argv[1:] == ["--batch-only"]:
        # Only the hand-built seeds of the BATCH record (no library run).
        write_seeds(os.path.join(os.path.dirname(__file__), "corpus"), batch_seeds())
        return
    if sys.argv[1:] == ["--series-only"]:
        # Only the hand-built seeds of the series, snapshot and span records (no library
        # run).
        seeds = series_seeds()
        seeds.update(span_seeds())
        write_seeds(os.path.join(os.path.dirname(__file__), "corpus"), seeds)
        return
    lib = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/libpyprof.so")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__),
                                                             "corpus")
    os.makedirs(out, exist_ok=True)
    logs = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, (prog, env) in enumerate(RUNS):
            d = os.path.join(tmp, str(k))
            os.mkdir(d)
            e = dict(os.environ, LD_PRELOAD=lib, PYPROF_OUTPUT=d, **env)
            subprocess.run([sys.executable, "-c", PROGRAMS[prog]], env=e, check=True)
            for j, path in enumerate(sorted(glob.glob(os.path.join(d, "*")))):
                with open(path, "rb") as f:
                    logs.append(("%s-%d-%d" % (prog, k, j), f.read()))
    if not logs:
        raise SystemExit("no log written: is %s the library?" % lib)

    # Real logs are mostly CODE records (line tables); the valid ones go in whole, the
    # rest is derived from `mini`, a valid log of a few KB: the header, some samples with
    # the THREAD, STACK and CODE records they refer to, and the footer.
    seeds = {}
    for name, log in logs:
        seeds["valid-" + name + ".lz4"] = log
    name, log = min(logs, key=lambda nl: len(nl[1]))
    recs = records(lz4(log, "-d"))
    assert recs[0][0] == 1 and recs[-1][0] == 15, "header ... footer expected"
    body = pick_records(recs[1:-1], 3, bool(header_flags(payload(recs[0][1])) & 2))
    plain = MAGIC + recs[0][1] + b"".join(body) + recs[-1][1]
    mini = lz4(plain)
    hdr_end = len(MAGIC) + len(recs[0][1])
    hdr_payload = hdr_end - len(recs[0][1]) + 1 + len(uvarint(len(recs[0][1]) - 1))
    assert plain[hdr_payload] == 1, "format version 1 expected"
    seeds["valid-mini.lz4"] = mini
    seeds["plain-mini.bin"] = plain
    # Cut short: inside the LZ4 frame header, in the middle, just before the end.
    seeds["cut-frame-header.lz4"] = mini[:5]
    seeds["cut-middle.lz4"] = mini[: len(mini) // 2]
    seeds["cut-last-byte.lz4"] = mini[:-1]
    seeds["cut-after-header.lz4"] = lz4(plain[:hdr_end])
    seeds["cut-inside-header.lz4"] = lz4(plain[: hdr_end - 3])
    seeds["cut-inside-footer.lz4"] = lz4(plain[:-2])
    seeds["cut-no-footer.lz4"] = lz4(plain[: len(plain) - len(recs[-1][1])])
    seeds["empty.lz4"] = b""
    # Damaged bytes, in a log of the library's own (its LZ4 blocks carry checksums).
    flipped = bytearray(log)
    flipped[len(flipped) // 3] ^= 0x40
    seeds["flipped-byte.lz4"] = bytes(flipped)
    seeds["bad-magic.lz4"] = lz4(b"\x89PYPROX\n" + plain[8:hdr_end])
    seeds["not-lz4.bin"] = b"this is not a log\n"
    seeds["newer-version.lz4"] = lz4(plain[:hdr_payload] + uvarint(PYPROF_NEWER) +
                                     plain[hdr_payload + 1:hdr_end])
    seeds["absurd-length.lz4"] = lz4(plain[:hdr_end] + b"\x03" + uvarint(1 << 40) + b"x")
    seeds["unknown-type.lz4"] = lz4(plain[:hdr_end] + b"\x63\x03abc" + plain[hdr_end:])
    seeds["second-header.lz4"] = lz4(plain[:hdr_end] + plain[8:hdr_end] + plain[hdr_end:])
    seeds["footer-then-more.lz4"] = lz4(plain + body[-1])
    # Several frames back to back, as a writer that flushes makes them.
    third = len(plain) // 3
    seeds["three-frames.lz4"] = (lz4(plain[:third]) + lz4(plain[third:2 * third]) +
                                 lz4(plain[2 * third:]))
    seeds["frames-then-junk.lz4"] = mini + b"\x00junk"
    seeds.update(native_seeds())
    seeds.update(series_seeds())
    seeds.update(span_seeds())
    seeds.update(batch_seeds())
    seeds.update(alloc_seeds())

    # Every seed is written again under its own name; the fuzzer's reproducers
    # (lz4-*.bin and the like) stay.
    write_seeds(out, seeds)


PYPROF_NEWER = 2  # PYPROF_FORMAT_VERSION + 1

if __name__ == "__main__":
    main()
