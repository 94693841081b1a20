"""Logs with spans for the tool's tests, built record by record with the encoders of
tests/fixtures/make_fixtures.py: a `Log` holds the records of one process and knows the
times and stacks it was given, so tests compute what they expect from their own inputs.

    log = Log(pid=1000)
    log.thread(0, 1000, "MainThread")
    log.sample(1000, 0, ["main", "work"])          # at 1 ms, thread_idx 0
    log.start(1, 500, 0, "db", base_id="B", trace_id="T1", parent_id="B")
    log.stop(1, 2500, 0)
    log.write(path)                                 # with a footer; cut=True: without
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import make_fixtures as mf  # noqa: E402

START_NS = 1_700_000_000_000_000_000


class Log:
    def __init__(self, pid, start_unix_ns=START_NS, run_id="5ca1ab1e5ca1ab1e",
                 argv=("python3", "app.py"), period_us=1000):
        self.pid = pid
        self.start_unix_ns = start_unix_ns
        self.period_us = period_us
        self.recs = [mf.MAGIC, mf.header(pid=pid, run_id=run_id, start_unix_ns=start_unix_ns,
                                         argv=argv)]
        self.t = 0  # the dt chain's time
        self.last = 0  # the latest time of any record
        self.codes = {}
        self.stacks = {}
        self.samples = []  # (t_us, thread_idx, names)
        self.tids = {}

    def thread(self, idx, tid, name):
        self.tids[idx] = tid
        self.recs.append(mf.thread(idx, tid, name))

    def _code(self, name):
        if name not in self.codes:
            cid = mf.CODE_FIRST + len(self.codes)
            self.codes[name] = cid
            self.recs.append(mf.code(cid, 10 * len(self.codes), name, "", "/srv/app.py"))
        return self.codes[name]

    def _stack(self, names):
        key = tuple(names)
        if key not in self.stacks:
            frames = [(self._code(n), 1) for n in names]
            sid = len(self.stacks) + 1
            self.stacks[key] = sid
            self.recs.append(mf.stack(sid, frames))
        return self.stacks[key]

    def sample(self, t_us, thread_idx, names, cpu_us=None):
        sid = self._stack(names)
        self.recs.append(mf.sample(t_us - self.t, thread_idx, sid,
                                   self.period_us if cpu_us is None else cpu_us))
        self.t = t_us
        self.last = max(self.last, t_us)
        self.samples.append((t_us, thread_idx, list(names)))

    def start(self, span_id, t_us, thread_idx, name, **kw):
        if isinstance(kw.get("info"), dict):
            kw["info"] = json.dumps(kw["info"])
        self.recs.append(mf.span_start(span_id, t_us, thread_idx, name, **kw))
        self.last = max(self.last, t_us)

    def stop(self, span_id, t_us, thread_idx, info=""):
        if isinstance(info, dict):
            info = json.dumps(info)
        self.recs.append(mf.span_stop(span_id, t_us, thread_idx, info))
        self.last = max(self.last, t_us)

    def data(self, footer=True, spans_lost=None):
        recs = list(self.recs)
        if footer:
            rec = mf.footer(len(self.samples), len(self.samples), self.last + 10, {},
                            start_unix_ns=self.start_unix_ns)
            if spans_lost is not None:
                # The optional sections up to the span section: an empty cost
                # histogram, the timer and whole-cost sections at 0, then spans_lost.
                n, at = mf.read_uvarint(rec, 1)
                payload = rec[at:at + n] + b"".join(
                    mf.uvarint(v) for v in [0, 0, 0, 0] + [0, 0] + [0, 0, 0, 0] +
                    [spans_lost])
                rec = mf.record(mf.REC_FOOTER, payload)
            recs.append(rec)
        return b"".join(recs)

    def write(self, path, footer=True, spans_lost=None):
        with open(path, "wb") as f:
            f.write(mf.lz4(self.data(footer, spans_lost)))
        return str(path)

    def in_span(self, thread_idx, t0, t1):
        """The samples of thread_idx at t0 <= t < t1 (t1 None: to the end)."""
        return [s for s in self.samples
                if s[1] == thread_idx and t0 <= s[0] and (t1 is None or s[0] < t1)]
