"""TEST HELPER ONLY: a small decoder of the records the span tests assert on.

The library's span tests read the span records (SPAN_START, SPAN_STOP) here, with a
second decoder of the format independent of the tool's reader
(make_fixtures' record reader, as test_rotation.py uses): the header, THREAD, CODE, STACK,
SAMPLE and RSS records and BATCH ones (for the samples' times), the span records and the footer's
spans_lost.  Not a reader for anything but these tests.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures"))
import make_fixtures as mf  # noqa: E402  (the log format's varint readers)

REC_HEADER, REC_THREAD, REC_CODE, REC_STACK, REC_SAMPLE, REC_RSS = 1, 2, 3, 4, 5, 6
REC_SPAN_START, REC_SPAN_STOP, REC_BATCH, REC_FOOTER = 12, 13, 14, 15
HDR_NATIVE = 2


def _text(b):
    return b.decode("utf-8")


def _info(b):
    return json.loads(_text(b)) if b else None


class Log(object):
    """One log file: header fields, threads {idx: (tid, name)}, code names, stacks, the
    samples [(t_us, thread_idx, stack_id)], the span records in file order (dicts, with
    `order`: their place among all records, and the tid of their thread), the footer's
    spans_lost (None without a footer or without the span section)."""

    def __init__(self, path):
        self.path = path
        self.threads = {}
        self.codes = {}
        self.stacks = {}
        self.samples = []
        self.starts = []
        self.stops = []
        self.footer = None
        self.spans_lost = None
        t_acc = 0
        for order, (typ, p) in enumerate(mf.log_records(path)):
            r = mf.Cursor(p)
            if typ == REC_HEADER:
                h = mf.read_header(p)
                self.header = h
                self.pid = h["pid"]
                self.seq = h["seq"]
            elif typ == REC_THREAD:
                idx, tid, name = r.uv(), r.uv(), _text(r.s())
                self.threads[idx] = (tid, name)
            elif typ == REC_CODE:
                cid = r.uv()
                r.sv()
                self.codes[cid] = _text(r.s())
            elif typ == REC_STACK:
                sid, n = r.uv(), r.uv()
                frames = []
                for _ in range(n):
                    frames.append(r.uv())
                    r.sv()
                self.stacks[sid] = frames
            elif typ == REC_SAMPLE:
                t_acc += r.sv()
                self.samples.append((t_acc, r.uv(), r.uv()))
            elif typ == REC_RSS:
                t_acc += r.sv()
            elif typ == REC_BATCH:
                # Samples and RSS points coded together (make_fixtures reads them).
                events = mf.batch_events(p, t_acc, bool(self.header["flags"] & HDR_NATIVE))
                for e in events:
                    if e[0] == "S":
                        self.samples.append((e[1], e[2], e[3]))
                if events:
                    t_acc = events[-1][1]
            elif typ == REC_SPAN_START:
                d = {"span_id": r.uv(), "t_us": r.uv(), "thread_idx": r.uv(),
                     "parent_span": r.uv(), "name": _text(r.s()),
                     "trace_id": _text(r.s()), "parent_id": _text(r.s()),
                     "base_id": _text(r.s()), "info": _info(r.s()), "order": order}
                d["tid"] = self.threads[d["thread_idx"]][0]
                self.starts.append(d)
            elif typ == REC_SPAN_STOP:
                d = {"span_id": r.uv(), "t_us": r.uv(), "thread_idx": r.uv(),
                     "info": _info(r.s()), "order": order}
                d["tid"] = self.threads[d["thread_idx"]][0]
                self.stops.append(d)
            elif typ == REC_FOOTER:
                self.footer = p
                self.spans_lost = _footer_spans_lost(r, self.header["flags"] & HDR_NATIVE)

    def named(self, name):
        """The SPAN_STARTs of spans named `name`."""
        return [s for s in self.starts if s["name"] == name]

    def one(self, name):
        found = self.named(name)
        assert len(found) == 1, "expected one span %r in %s, found %d: %r" % (
            name, self.path, len(found), self.starts)
        return found[0]

    def stop_of(self, span_id):
        found = [s for s in self.stops if s["span_id"] == span_id]
        assert len(found) <= 1, "span %d stopped %d times in %s" % (span_id, len(found),
                                                                    self.path)
        return found[0] if found else None

    def functions_of(self, sample):
        """The function names of a sample's stack, outermost first."""
        return [self.codes.get(c, "?") for c in self.stacks.get(sample[2], [])]

    def summary(self):
        return "%s (pid %s): %d starts, %d stops, %d samples\n%s" % (
            self.path, self.pid, len(self.starts), len(self.stops), len(self.samples),
            "\n".join(repr(s) for s in (self.starts + self.stops)[:40]))


def _footer_spans_lost(r, native):
    r.uv()
    r.uv()
    r.uv()
    r.uv()
    for _ in range(r.uv()):
        r.uv()
        r.uv()
    r.uv()
    r.u8()
    r.sv()
    r.uv()
    r.uv()
    if not r.more():
        return None
    r.uv()
    r.uv()
    ntime = r.uv()
    for _ in range(ntime):
        r.uv()
    for _ in range(r.uv()):
        r.uv()
        for _ in range(ntime):
            r.uv()
    r.uv()
    r.uv()
    if native:
        for _ in range(4):
            r.uv()
    if not r.more():
        return None
    # The whole-cost section: signal_cost_ns, calib_signals, calib_ns, process_cpu_ns.
    for _ in range(4):
        r.uv()
    return r.uv() if r.more() else None


def logs_in(d):
    """Every log of directory `d`, decoded."""
    return [Log(os.path.join(d, f)) for f in sorted(os.listdir(d))]
