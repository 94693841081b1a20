"""Spans: the pyprof package (utils/python/pyprof) over the library's span functions, on
every interpreter (2.7, 3.6-3.13, Debian's static 3.11), read back from the logs.

workloads/spans_api.py makes nested spans, decorated functions and methods, exceptions
inside spans, spans by hand, a fork inside a span and three threads burning CPU inside
spans, and prints what the calls returned; the tests compare that with the SPAN_START and
SPAN_STOP records of the logs, read with the test-only decoder spanlog.py.  The same
workload without the library must behave the same and write nothing.
workloads/spans_rotate.py keeps a span open across a rotation of the series and makes
spans around a pause of profiling.
"""

import json
import os
import uuid

import pytest

import pyprof_testlib as t
import spanlog

PYPKG = os.path.join(t.REPO, "utils", "python")
API = t.workload("spans_api.py")
ROTATE = t.workload("spans_rotate.py")
RAISE_LINE = t.def_line(API, "RAISE-LINE")

_runs = {}


def api_run(interp, tmp_path_factory):
    """spans_api.py under the library on `interp` (once per interpreter): (run, facts,
    child facts, main log, child log)."""
    if interp.id not in _runs:
        interp.require()
        d = str(tmp_path_factory.mktemp("spans-" + interp.id))
        out = os.path.join(d, "logs")
        child_out = os.path.join(d, "child.json")
        run = t.run([interp.path, API], out, env={
            "PYTHONPATH": PYPKG, "PYPROF_PERIOD": "1ms", "SPANS_CHILD_OUT": child_out})
        assert run.rc == 0, run.describe()
        facts = json.loads(run.stdout.decode())
        with open(child_out) as f:
            child_facts = json.load(f)
        logs = spanlog.logs_in(out)
        by_pid = dict((log.pid, log) for log in logs)
        assert sorted(by_pid) == sorted([run.pid, facts["child_pid"]]), (
            "%s\n%s" % (run.describe(), [log.summary() for log in logs]))
        _runs[interp.id] = (run, facts, child_facts, by_pid[run.pid],
                            by_pid[facts["child_pid"]])
    return _runs[interp.id]


def check_uuid4(s):
    u = uuid.UUID(s)
    assert u.version == 4 and u.variant == uuid.RFC_4122 and str(u) == s, s


def check_complete(log):
    """Every start of the log has exactly one stop after it, on the same thread, no
    earlier; every stop has its start; nothing was lost."""
    assert log.footer is not None, log.summary()
    assert log.spans_lost == 0, log.summary()
    ids = [s["span_id"] for s in log.starts]
    assert len(ids) == len(set(ids)), "a span id given twice\n" + log.summary()
    for s in log.starts:
        stop = log.stop_of(s["span_id"])
        assert stop is not None, "span %r never stopped\n%s" % (s, log.summary())
        assert stop["order"] > s["order"] and stop["t_us"] >= s["t_us"], (s, stop)
        assert stop["tid"] == s["tid"], (s, stop)
    for stop in log.stops:
        assert stop["span_id"] in ids, "a stop without its start %r\n%s" % (
            stop, log.summary())


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_nesting(interp, tmp_path_factory):
    run, facts, _, log, _ = api_run(interp, tmp_path_factory)
    assert facts["active"] is True
    check_complete(log)
    outer, middle, inner = log.one("outer"), log.one("middle"), log.one("inner")
    where = log.summary()
    assert outer["span_id"] < middle["span_id"] < inner["span_id"], where
    assert outer["parent_span"] == 0, where
    assert middle["parent_span"] == outer["span_id"], where
    assert inner["parent_span"] == middle["span_id"], where
    for s in (outer, middle, inner):
        check_uuid4(s["trace_id"])
        assert s["tid"] == facts["main_tid"], where
        assert s["base_id"] == outer["base_id"], where
    check_uuid4(outer["base_id"])
    assert outer["parent_id"] == outer["base_id"] != outer["trace_id"], where
    assert middle["parent_id"] == outer["trace_id"], where
    assert inner["parent_id"] == middle["trace_id"], where
    assert len(set(s["trace_id"] for s in log.starts)) == len(log.starts), where
    assert outer["info"] == {"request": "GET /", "n": 1}, where
    assert middle["info"] is None, where
    assert inner["info"]["obj"].startswith("<object object at "), where
    # Ended innermost first, after the last of them started.
    stops = [log.stop_of(s["span_id"]) for s in (inner, middle, outer)]
    assert [s["order"] for s in stops] == sorted(s["order"] for s in stops), where
    assert stops[0]["order"] > inner["order"], where
    assert all(s["info"] is None for s in stops), where
    assert facts["stack_left"] == 0


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_decorators_and_by_hand(interp, tmp_path_factory):
    run, facts, _, log, _ = api_run(interp, tmp_path_factory)
    where = log.summary()
    assert facts["deco"] == [6, 20, 11, 12, ["Klass", 7], 7, "bare", "deco_func",
                             "doc of deco_func"], facts
    funcs = log.named("deco-func")
    assert len(funcs) == 2 and all(s["info"] == {"kind": "f"} for s in funcs), where
    assert len(log.named("deco-method")) == 2, where
    log.one("deco-class")
    log.one("deco-static")
    log.one("Klass.bare" if interp.minor >= (3, 3) else "bare")
    roots = funcs + log.named("deco-method")
    assert all(s["parent_span"] == 0 for s in roots), where
    assert len(set(s["base_id"] for s in roots)) == len(roots), where
    # By hand: the ids start() returned; stop() ends the innermost first.
    manual, inner = log.one("manual"), log.one("manual-inner")
    assert manual["span_id"] == facts["manual_id"] > 0, where
    assert inner["span_id"] == facts["manual_inner_id"], where
    assert inner["parent_span"] == manual["span_id"], where
    assert manual["info"] == {"a": 1, "b": [1, "x"]}, where
    assert facts["manual_stops"] == [True, True, False]
    assert log.stop_of(inner["span_id"])["info"] == {"result": "ok"}, where
    assert log.stop_of(manual["span_id"])["info"] is None, where
    # Info json cannot write as it is: each value as text, never an exception.
    odd = log.one("odd-info")
    assert odd["span_id"] == facts["odd_info"], where
    assert odd["info"]["key"] == "nan" and odd["info"]["text"] == u"\u00e9t\u00e9", where
    assert odd["info"]["s"] in ("{1}", "set([1])"), where
    check_complete(log)


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_exceptions(interp, tmp_path_factory):
    run, facts, _, log, _ = api_run(interp, tmp_path_factory)
    where = log.summary()
    for key, kind, span, frames in (
            ("exc_with", "KeyError", "exc-with", ["<module>", "fail"]),
            ("exc_deco", "ValueError", "exc-deco", ["<module>", "traced", "fail_deco", "fail"])):
        # The very exception raised, with its traceback to the raise: only the
        # decorator's own frame is added, as any decorator's is.
        assert facts[key] == {"same_object": True, "type": kind,
                              "last": ["fail", RAISE_LINE], "frames": frames}, facts[key]
        s = log.one(span)
        stop = log.stop_of(s["span_id"])
        assert stop is not None, where
        assert stop["info"]["etype"] == kind, where
        assert "boom" in stop["info"]["message"], where
    check_complete(log)


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_threads(interp, tmp_path_factory):
    run, facts, _, log, _ = api_run(interp, tmp_path_factory)
    where = log.summary()
    tids = facts["thread_tids"]
    assert len(set(tids)) == 3 and facts["main_tid"] not in tids, facts
    for i, tid in enumerate(tids):
        s = log.one("thread-%d" % i)
        stop = log.stop_of(s["span_id"])
        assert s["tid"] == tid and stop["tid"] == tid, where
        assert log.threads[s["thread_idx"]][0] == tid, where
        assert s["info"] == {"i": i} and s["parent_span"] == 0, where
        assert stop["t_us"] >= s["t_us"], where
        # The thread burns CPU in burn() only inside its span: each of those samples
        # lies inside the span's times (same clock, same file), and there are some.
        burning = [smp for smp in log.samples
                   if smp[1] == s["thread_idx"] and "burn" in log.functions_of(smp)]
        assert burning, "no sample of thread-%d in burn()\n%s" % (i, where)
        outside = [smp for smp in burning if not s["t_us"] <= smp[0] <= stop["t_us"]]
        assert not outside, ("samples of thread-%d in burn() outside its span [%d, %d]: "
                             "%r\n%s" % (i, s["t_us"], stop["t_us"], outside[:5], where))
        # One span object entered by every thread at once: each thread's span is its
        # own, started and stopped on it.
        inner = log.one("in-shared-%d" % i)
        shared = [x for x in log.named("shared") if x["span_id"] == inner["parent_span"]]
        assert len(shared) == 1 and shared[0]["tid"] == tid == inner["tid"], where
        assert log.stop_of(shared[0]["span_id"])["order"] > log.stop_of(
            inner["span_id"])["order"], where
    assert len(log.named("shared")) == 3, where
    check_complete(log)


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_fork(interp, tmp_path_factory):
    run, facts, child_facts, log, child = api_run(interp, tmp_path_factory)
    where = "%s\n%s" % (log.summary(), child.summary())
    assert facts["child_status"] == 0 and child_facts["active"] is True, (facts, child_facts)
    parent_span = log.one("fork-parent")
    assert log.stop_of(parent_span["span_id"]) is not None, where
    assert not log.named("fork-child"), where
    # The child's log: its own span only, whose stop it wrote; nothing of the parent's
    # spans, no stop of a span it did not start (it left "fork-parent" too).
    assert [s["name"] for s in child.starts] == ["fork-child"], where
    cs = child.starts[0]
    assert [s["span_id"] for s in child.stops] == [cs["span_id"]], where
    assert cs["parent_span"] == 0, where
    assert cs["parent_id"] == parent_span["trace_id"], where
    assert cs["base_id"] == parent_span["base_id"], where
    assert child.header["ppid"] == run.pid, where
    check_complete(child)
    check_complete(log)


NOOP_TIMING = r"""
import sys, time
import pyprof

class Dummy(object):
    def __init__(self, name, **info):
        self.name, self.info = name, info
    def __enter__(self):
        return self
    def __exit__(self, *a):
        return False

# CPU time, not wall time: what a span costs, whatever else the machine runs.
clock = getattr(time, "process_time", None) or time.clock

def loop(cm, n=20000):
    t0 = clock()
    for _ in range(n):
        with cm("x"):
            pass
    return clock() - t0

best = [min(loop(cm) for _ in range(5)) for cm in (pyprof.span, Dummy)]
print("%r %r %r %r" % (best[0], best[1], pyprof._lib, pyprof.start("x")))
"""


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_noop_without_library(interp, tmp_path):
    """Without the library: the same results and exceptions, nothing recorded, nothing
    written (PYPROF_OUTPUT is set, and stays empty), and a span costs about what a
    trivial context manager does."""
    interp.require()
    out = str(tmp_path / "out")
    os.mkdir(out)
    env = {"PYTHONPATH": PYPKG, "PYPROF_OUTPUT": out,
           "SPANS_CHILD_OUT": str(tmp_path / "child.json"), "SPANS_BURN": "1000"}
    run = t.run([interp.path, API], None, profile=False, env=env)
    assert run.rc == 0 and not run.stderr, run.describe()
    facts = json.loads(run.stdout.decode())
    assert facts["active"] is False
    assert facts["manual_id"] == 0 and facts["manual_inner_id"] == 0, facts
    assert facts["manual_stops"] == [False, False, False], facts
    assert facts["deco"] == [6, 20, 11, 12, ["Klass", 7], 7, "bare", "deco_func",
                             "doc of deco_func"], facts
    for key, kind, frames in (("exc_with", "KeyError", ["<module>", "fail"]),
                              ("exc_deco", "ValueError",
                               ["<module>", "traced", "fail_deco", "fail"])):
        assert facts[key] == {"same_object": True, "type": kind,
                              "last": ["fail", RAISE_LINE], "frames": frames}, facts[key]
    assert facts["child_status"] == 0
    assert os.listdir(out) == [], "files written without the library: %r" % os.listdir(out)
    timing = t.run([interp.path, "-c", NOOP_TIMING], None, profile=False, env=env)
    assert timing.rc == 0, timing.describe()
    span_s, dummy_s, lib, sid = timing.stdout.decode().split()
    assert lib == "False" and sid == "0", timing.stdout
    assert float(span_s) <= 10 * float(dummy_s), (
        "a no-op span costs %.0f ns, a trivial context manager %.0f ns"
        % (float(span_s) / 20000 * 1e9, float(dummy_s) / 20000 * 1e9))
    assert os.listdir(out) == []


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_rotation_and_pause(interp, tmp_path):
    """A span open across a rotation: its start in the first file, its stop in the next,
    after the THREAD record of its thread there; the series' files count no loss.
    Paused, nothing is recorded; resumed, ids go on growing, and a span started inside
    one that was not recorded hangs under the recorded one around both."""
    interp.require()
    out = str(tmp_path / "logs")
    run = t.run([interp.path, ROTATE], out, env={
        "PYTHONPATH": PYPKG, "PYPROF_ROTATE": "1s", "SPANS_TOOL": t.TOOL,
        "SPANS_DIR": out})
    assert run.rc == 0, run.describe()
    facts = json.loads(run.stdout.decode())
    logs = [log for log in spanlog.logs_in(out) if log.pid == run.pid]
    where = "%s\n%s" % (run.describe(), "\n".join(log.summary() for log in logs))
    first = [log for log in logs if log.header["window"] == 0 and log.seq == 0]
    assert len(first) == 1, where
    first = first[0]
    nxt = [log for log in logs if log.header["window"] == 0 and log.seq == 1]
    assert len(nxt) == 1, where
    nxt = nxt[0]
    across = first.one("across")
    assert across["span_id"] == facts["across"] > 0, where
    assert first.stop_of(across["span_id"]) is None, where
    assert not nxt.named("across"), where
    stop = nxt.stop_of(across["span_id"])
    assert stop is not None and stop["info"] == {"done": True}, where
    assert stop["tid"] == across["tid"], where
    # The thread is announced in the new file before the stop (spanlog resolves the
    # tid from the THREAD records read so far: a missing one would have failed there).
    second = nxt.one("second")
    assert second["span_id"] == facts["second"], where
    assert second["parent_span"] == across["span_id"], where
    assert second["parent_id"] == across["trace_id"], where
    assert nxt.stop_of(second["span_id"])["order"] < stop["order"], where
    assert facts["stops"] == [True, True], facts
    assert facts["pause"].startswith("ok") and facts["resume"].startswith("ok"), facts
    assert facts["paused"] == [False, 0, False], facts
    active, resumed_id, resumed_stop = facts["resumed"]
    assert active is True and resumed_id > facts["second"] and resumed_stop is True, facts
    later = [log for log in logs if log.header["window"] == 1]
    assert later, where
    found = [s for log in later for s in log.named("resumed")]
    assert [s["span_id"] for s in found] == [resumed_id], where
    assert not any(log.named("while-paused") for log in logs), where
    outer = [s for log in logs if log.header["window"] == 0 for s in log.named("outer")]
    assert len(outer) == 1 and outer[0]["span_id"] == facts["outer"], where
    outer = outer[0]
    assert found[0]["parent_span"] == outer["span_id"], where
    assert found[0]["parent_id"] == outer["trace_id"], where
    assert found[0]["base_id"] == outer["base_id"], where
    assert facts["outer_stop"] is True, facts
    for log in logs:
        if log.footer is not None:
            assert log.spans_lost == 0, where
