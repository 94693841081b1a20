"""Suspended asyncio tasks in wall mode (docs/ASYNCIO.md): each wall-clock pass also
samples every task of a thread's event loop that is suspended at an await, one sample
each standing for a period of its waiting, in the AWAIT state: the task's coroutines
down to the innermost await, its task frame and its awaiters'.  Those samples are kept
apart: a report shows them only with --awaiting (or report --tasks).

workloads/asyncio_waiting.py keeps four `sleeper-N` tasks in asyncio.sleep, a `locker`
waiting for a held Lock and a `reader` on an empty Queue for about 1.2 s, all gathered
by the main task with a ticker task that wakes every 20 ms, and three finished `done-N`
tasks it keeps.  Checked on every interpreter 3.7+ (3.7's tasks have no names: there by
their coroutines): each waiting task has one awaiting
sample per pass of the loop's life (the loop thread's own wall samples under
run_forever count the passes), within 15 %; each one's innermost frames are its await
(asyncio's sleep, Lock.acquire, Queue.get under the workload's coroutines) and its
awaiter is the main task (before 3.14 as the library's look at asyncio's links every
20 ms found it: the first samples may lack it); a finished task has none; the default
views leave them out.  In cpu mode there are none.  `pyprof dump --tasks` lists the
same tasks, each at its await, at one moment."""

import json
import re
import time

import pytest

import pyprof_testlib as t
import test_json_schema

WORKLOAD = t.workload("asyncio_waiting.py")
TASK = re.compile(r"^<task (.*)>$")
DEFAULT = re.compile(r"^Task-\d+$")
ASYNCIO = [i for i in t.INTERPRETERS if i.minor >= (3, 7)]   # asyncio.run
NAMED = [i for i in ASYNCIO if i.minor >= (3, 8)]             # Task.set_name
# Each waiting task's coroutines, outermost first: its own, then asyncio's down to the
# innermost await (`async with` enters Lock.acquire through the mixin's __aenter__).
WAITS = {"sleeper": ["sleeper_outer", "sleeper_inner", "sleep"],
         "locker": ["locker_inner", "_ContextManagerMixin.__aenter__", "Lock.acquire"],
         "reader": ["reader_inner", "Queue.get"]}


def waits(kind, interp):
    """WAITS[kind] as interp names them: before 3.11 code objects have no qualified
    name, and a method is its bare name."""
    names = WAITS[kind]
    return names if interp.minor >= (3, 11) else [n.split(".")[-1] for n in names]


# uvloop: Debian's python3-uvloop, for Debian's own 3.11.
UVLOOP = [i for i in t.INTERPRETERS if i.id == "py3.11-debian"]


def run(interp, tmp_path, clock, uvloop=False):
    env = {"PYPROF_PERIOD": "10ms", "PYPROF_CLOCK": clock}
    prof, base = t.run_pair([interp.path, WORKLOAD], tmp_path,
                            env=dict(env, WORKLOAD_UVLOOP="1") if uvloop else env,
                            base_env={"WORKLOAD_UVLOOP": "1"} if uvloop else None)
    t.assert_transparent(prof, base)
    p = t.one_log(prof, ended="exit")
    log = prof.logs[0]
    stacks = t.folded(*(t.root_opts(prof) + ["--awaiting", log]))
    return p, log, stacks


def awaiting_of(stacks):
    """The awaiting samples' stacks (no loop frames: they start at a task frame)."""
    return [(frames, n) for frames, n in stacks if frames and TASK.match(frames[0][0])]


@pytest.mark.parametrize("interp", t.params(ASYNCIO))
def test_waiting_tasks(interp, tmp_path):
    interp.require()
    p, log, stacks = run(interp, tmp_path, "wall")
    passes = sum(n for frames, n in stacks
                 if any(name.endswith("run_forever") for name, _ in frames))
    check_waiting(interp, p, log, stacks, passes)


@pytest.mark.parametrize("interp", t.params(UVLOOP))
def test_waiting_tasks_uvloop(interp, tmp_path):
    """The same under uvloop's loop (its tasks are asyncio.Tasks): its run_forever is
    not Python, so the passes are the loop thread's samples under asyncio.Runner.run."""
    interp.require()
    p, log, stacks = run(interp, tmp_path, "wall", uvloop=True)
    assert not any(name.endswith("run_forever") for frames, _ in stacks
                   for name, _ in frames), "not uvloop's loop"
    passes = sum(n for frames, n in stacks if not TASK.match(frames[0][0])
                 and any(name == "Runner.run" for name, _ in frames))
    check_waiting(interp, p, log, stacks, passes)


def check_waiting(interp, p, log, stacks, passes):
    waiting = awaiting_of(stacks)
    where = p.dump()
    assert passes >= 60, (passes, where)
    if interp.minor < (3, 8):
        check_unnamed(interp, waiting, passes, where)
        return
    count = {}
    done = 0
    for frames, n in waiting:
        names = [name for name, _ in frames]
        tasks = [(i, TASK.match(x).group(1)) for i, x in enumerate(names) if TASK.match(x)]
        i, task = tasks[-1]
        kind = re.sub(r"-\d+$", "", task)
        if kind == "done":   # not started yet: they finish at the loop's first turn
            done += n
            continue
        if kind not in WAITS:
            continue   # the main task at its gather, the ticker in its sleep
        # Awaited by the main task (the gather), whose coroutine sits between; before
        # 3.14 a sample may come before the library's look found the link.
        counts = count.setdefault(task, [0, 0, 0])
        if len(tasks) == 2 or interp.minor >= (3, 14):
            assert len(tasks) == 2 and DEFAULT.match(tasks[0][1]), (names, where)
            assert names[0] == "<task %s>" % tasks[0][1] and names[1:i] == ["main"], names
            counts[2] += n
        else:
            assert i == 0, (names, where)
        if names[i + 1:] == waits(kind, interp):
            counts[0] += n
        counts[1] += n
    want = ["sleeper-%d" % k for k in (1, 2, 3, 4)] + ["locker", "reader"]
    assert sorted(count) == sorted(want), (count, where)
    # A finished task is not waiting: the three `done-N` may be seen before the loop
    # first ran them, never in each pass of the loop's life.
    assert done <= 0.1 * passes, (done, passes, where)
    for task in want:
        at_await, total, awaited = count[task]
        # Each pass of the loop's life sampled it once; the first may find it not
        # started yet (its coroutine at its first line).
        assert 0.85 * passes <= total <= 1.05 * passes, (task, total, passes, where)
        assert at_await >= total - 3, (task, count[task], where)
        assert awaited > 0, (task, count[task], where)
    # Kept apart: the default report has the loop thread's samples alone.
    plain = t.report(log)
    awaited = sum(n for _, n in waiting)
    with_them = t.report("--awaiting", log)
    assert with_them["samples"] == plain["samples"] + awaited, (plain["samples"], awaited)
    rep = t.tool_json("report", "--tasks", "--json", log)
    test_json_schema.check("report tasks", rep, "report --tasks --json")
    rows = {r["task"]: r for r in rep["tasks"]}
    assert rows["sleeper-*"]["awaiting"] == sum(count["sleeper-%d" % k][1]
                                                for k in (1, 2, 3, 4)), rows
    # Few tasks: each sample stands for one period of waiting.
    period = p.proc["period_ns"] / 1e9
    assert abs(rows["sleeper-*"]["awaiting_s"] - rows["sleeper-*"]["awaiting"] * period) \
        < 1e-3, rows["sleeper-*"]
    site = rows["locker"]["await_sites"][0]
    assert site["name"] == waits("locker", interp)[-1], rows["locker"]


def check_unnamed(interp, waiting, passes, where):
    """3.7: tasks have no names (each task frame is `<task Task>`): the waiting tasks are
    told apart by their coroutines, each kind with one sample per task and pass."""
    per = {}
    for frames, n in waiting:
        names = [name for name, _ in frames]
        tasks = [i for i, x in enumerate(names) if TASK.match(x)]
        assert all(names[i] == "<task Task>" for i in tasks), (names, where)
        kind = [k for k in WAITS if names[tasks[-1] + 1:] == waits(k, interp)]
        if kind:
            per[kind[0]] = per.get(kind[0], 0) + n
    for kind, tasks in (("sleeper", 4), ("locker", 1), ("reader", 1)):
        assert 0.85 * tasks * passes <= per.get(kind, 0) <= 1.05 * tasks * passes, (
            kind, per, passes, where)


@pytest.mark.parametrize("interp", t.params(NAMED))
def test_many_waiting_tasks(interp, tmp_path):
    """300 more idle tasks: more than the 32 a pass samples per thread, so every k-th is
    sampled, each sample standing for k periods of waiting: the waiting of the 300,
    summed, is still 300 times the loop's life, within 15 %."""
    interp.require()
    prof, base = t.run_pair([interp.path, WORKLOAD], tmp_path,
                            env={"PYPROF_PERIOD": "10ms", "PYPROF_CLOCK": "wall",
                                 "WORKLOAD_MANY": "300"})
    t.assert_transparent(prof, base)
    p = t.one_log(prof, ended="exit")
    log = prof.logs[0]
    stacks = t.folded(*(t.root_opts(prof) + [log]))
    passes = sum(n for frames, n in stacks
                 if any(name.endswith("run_forever") for name, _ in frames))
    rep = t.tool_json("report", "--tasks", "--json", log)
    rows = {r["task"]: r for r in rep["tasks"]}
    many = rows["many-*"]
    want = 300 * passes * p.proc["period_ns"] / 1e9
    assert many["names"] == 300 and 0.85 * want <= many["awaiting_s"] <= 1.15 * want, (
        many["names"], many["awaiting_s"], want, passes)
    # Far fewer samples than periods of waiting: at most 32 a pass for the thread.
    assert many["awaiting"] <= 32 * passes * 1.1, (many["awaiting"], passes)


@pytest.mark.parametrize("interp", t.params(ASYNCIO))
def test_waiting_tasks_cpu(interp, tmp_path):
    """cpu mode: no wall pass, no awaiting sample."""
    interp.require()
    p, log, stacks = run(interp, tmp_path, "cpu")
    rep = t.tool_json("report", "--tasks", "--json", log)
    assert rep["awaiting"] == 0 and rep["with_task"] > 0, (rep, p.dump())
    assert t.report("--awaiting", log)["samples"] == t.report(log)["samples"], p.dump()


def innermost_tasks(doc):
    """Each dumped task's frames (function names, innermost first), by its task's name."""
    seen = {}
    for task in doc.get("tasks", []):
        names = [f.get("function") for f in task["frames"]]
        mine = [n for n in names if n and TASK.match(n)]
        seen[TASK.match(mine[0]).group(1)] = names
    return seen


def linked(names):
    """Does a dumped task's chain end in its awaiter's (the main task's) frame?"""
    return len([n for n in names if n and TASK.match(n)]) == 2


def dump_tasks(pid):
    """`pyprof dump --tasks --json PID` once its waiting tasks are all there with their
    awaiter (the workload starts them 0.3 s in; before 3.14 the library finds the links
    within 20 ms of the gather): tries at most 100 dumps."""
    res = doc = None
    for _ in range(100):
        res = t.tool("dump", "--tasks", "--json", pid, timeout=60)
        if res.returncode == 0:   # else not started yet: no control socket
            doc = json.loads(res.stdout)
            seen = innermost_tasks(doc)
            if all(name in seen and linked(seen[name])
                   for name in ("sleeper-1", "sleeper-2", "sleeper-3", "sleeper-4",
                                "locker", "reader")):
                return doc
        time.sleep(0.1)
    raise AssertionError("the tasks never all showed in a dump: %r %r" % (res.stderr, doc))


@pytest.mark.parametrize("interp", t.params(NAMED))
def test_dump_tasks(interp, tmp_path):
    """`pyprof dump --tasks`: every suspended task now, its thread and frames down to
    its await, read by the library without stopping a thread; without --tasks the
    dump lists threads only."""
    interp.require()
    run = t.start([interp.path, WORKLOAD], str(tmp_path / "logs"),
                  env={"WORKLOAD_SECONDS": "30"})
    try:
        doc = dump_tasks(run.proc.pid)
        test_json_schema.check("dump", doc, "dump --tasks --json")
        tids = {th["tid"] for th in doc["threads"]}
        for task in doc["tasks"]:
            assert task["tid"] in tids, (task, doc["threads"])
        seen = innermost_tasks(doc)
        for name, kind in (("sleeper-1", "sleeper"), ("locker", "locker"),
                           ("reader", "reader")):
            names = seen[name]
            k = names.index("<task %s>" % name)
            assert names[:k] == list(reversed(waits(kind, interp))), (name, names)
            assert names[k + 1:-1] == ["main"], (name, names)
            assert names[-1] and DEFAULT.match(TASK.match(names[-1]).group(1)), names
        # The main task at its gather, the six waiting ones, and the ticker unless it
        # was running; never a finished one.
        assert 7 <= len(seen) <= 8 and not any(n.startswith("done-") for n in seen), seen
        plain = json.loads(t.tool("dump", "--json", run.proc.pid, timeout=60).stdout)
        assert "tasks" not in plain and len(plain["threads"]) == len(doc["threads"]), plain
    finally:
        run.proc.kill()
        run.wait()
