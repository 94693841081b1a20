"""asyncio tasks in samples (docs/ASYNCIO.md): every sample of a thread whose event loop
runs a task carries the task's frame, named as get_name() names it, right outside the
task's outermost coroutine, then the suspended coroutines of the task awaiting it and its
frame, up to the root task (3.14+: as each task says; before, as the library's look at
asyncio's own links every 20 ms last found them).

workloads/asyncio_tasks.py burns CPU in named tasks (a gather of three `orders-N`, an
awaited `audit`, a TaskGroup's `report`, a shielded `shielded`, their parent `boss` and
a task left with its default name), measures what each burnt (time.thread_time) and
writes each one's expected awaiter chain.  Checked against the samples: every stack's
task frames are the chain the workload expects for its innermost task, with the right
coroutines between them; each task's share of the burning samples is its share of the
CPU burnt (wall mode: of the wall-clock time its steps took), within 5 points (about 470 samples at 2 ms); `report --tasks` and `--task`
agree with the stacks, and go tool pprof reads each sample's task label; in wall mode too, where a thread found keeping still (not
scheduled: the machine is busy) is read by the wall-clock pass from outside, the same
task frames included.  3.7's tasks have no name: there every burning sample must have a
task frame, named "Task"."""

import json
import os
import re
import subprocess

import pytest

import pyprof_testlib as t
import test_json_schema

WORKLOAD = t.workload("asyncio_tasks.py")
TOLERANCE = 0.05
TASK = re.compile(r"^<task (.*)>$")
DEFAULT = re.compile(r"^Task-\d+$")
ASYNCIO = [i for i in t.INTERPRETERS if i.minor >= (3, 7)]  # asyncio.run


# uvloop: Debian's python3-uvloop, for Debian's own 3.11.
UVLOOP = [i for i in t.INTERPRETERS if i.id == "py3.11-debian"]


def run(interp, tmp_path, clock="cpu", late=False, uvloop=False):
    result = str(tmp_path / "measured.json")
    argv = [interp.path, WORKLOAD] + (["late"] if late else [])
    loop = {"WORKLOAD_UVLOOP": "1"} if uvloop else {}
    prof, base = t.run_pair(argv, tmp_path,
                            env=dict(loop, PYPROF_PERIOD="2ms", PYPROF_CLOCK=clock,
                                     WORKLOAD_RESULT=result),
                            base_env=dict(loop, WORKLOAD_RESULT=str(tmp_path / "base.json")))
    t.assert_transparent(prof, base)
    p = t.one_log(prof, ended="exit")
    with open(result) as f:
        measured = json.load(f)
    return p, measured, t.folded(*(t.root_opts(prof) + [prof.logs[0]]))


def tasks_of(frames):
    """The task names of a stack's task frames, outermost first, with where each is."""
    return [(i, TASK.match(name).group(1)) for i, (name, _) in enumerate(frames)
            if TASK.match(name)]


def key_of(name, measured):
    """The workload's name for a task: its own, or "unnamed" for the default one."""
    if name in measured["cpu"]:
        return name
    if DEFAULT.match(name) and name != measured["main"]:
        return "unnamed"
    return None


# The coroutines between a task's frame and its child's (or the leaf), outermost first.
BETWEEN = {
    ("boss", "orders"): ["boss_main", "boss_gather"],
    ("boss", "audit"): ["boss_main"],
    ("boss", "report"): ["boss_main", "TaskGroup.__aexit__", "TaskGroup._aexit"],
    ("boss", "shielded"): ["boss_main"],
    ("main", "boss"): ["main"],
}


def check_tasks(interp, p, measured, stacks, clock="cpu"):
    where = p.dump()
    if interp.minor < (3, 8):
        check_unnamed(p, stacks)
        return None
    # 3.14+: each task says who awaits it, so every chain is whole.  Before, the
    # library's look at asyncio's links every 20 ms finds them: a chain may lack the
    # awaiters a task got since the last look (a prefix of the expected one), and each
    # awaited task must show its whole chain in some samples.
    exact = interp.minor >= (3, 14)
    burning = {}    # workload name -> samples in spin under account
    untasked = 0    # burning samples with no task frame
    whole = {}      # workload name -> [samples with the whole chain, samples]
    for frames, n in stacks:
        names = [name for name, _ in frames]
        tasks = tasks_of(frames)
        burns = len(names) >= 2 and names[-1] == "spin" and names[-2] == "account"
        if not tasks:
            untasked += n * burns
            continue
        inner = tasks[-1][1]
        key = key_of(inner, measured)
        if key is None:
            continue    # the main task's own frames (asyncio.run's)
        chain = [name for _, name in reversed(tasks)]
        want = [inner] + measured["chains"][key][1:]
        if key == "unnamed":   # awaited by main only if still running at its await
            assert chain in ([inner], [inner, measured["main"]]), (frames, where)
        elif exact:
            assert chain == want, ("stack %r: task chain %r, expected %r\n%s"
                                   % (names, chain, want, where))
        else:
            assert chain == want[:len(chain)], ("stack %r: task chain %r, expected %r "
                                                "or a part of it\n%s"
                                                % (names, chain, want, where))
            counts = whole.setdefault(key, [0, 0])
            counts[0] += n * (chain == want)
            counts[1] += n
        # The awaiting tasks' coroutines sit between the task frames.
        for (i, outer), (j, inner_t) in zip(tasks, tasks[1:]):
            o = "main" if outer == measured["main"] else outer
            k = re.sub(r"-\d+$", "", key_of(inner_t, measured) or inner_t)
            if (o, k) in BETWEEN:
                between = BETWEEN[(o, k)]
                if interp.minor < (3, 14):   # __aexit__ does the waiting itself
                    between = [n for n in between if n != "TaskGroup._aexit"]
                assert names[i + 1:j] == between, (names, where)
        if burns:
            burning[key] = burning.get(key, 0) + n
    for key, (n_whole, n) in sorted(whole.items()):
        if len(measured["chains"][key]) > 1:
            assert n_whole > 0, ("no sample of %s has its whole chain %r: %r\n%s"
                                 % (key, measured["chains"][key], whole, where))
    total = sum(burning.values())
    assert total >= 200, (burning, where)
    # Samples taken before the layout was found carry no task: at most a few.
    assert untasked <= 0.03 * (total + untasked), (
        "%d of %d burning samples have no task frame\n%s" % (untasked, total + untasked,
                                                            where))
    cpu = measured[clock]   # a wall-clock sample stands for wall time
    cpu_total = sum(cpu.values())
    bad, lines = [], []
    for key in sorted(cpu):
        got = burning.get(key, 0) / float(total)
        want = cpu[key] / cpu_total
        lines.append("%-9s profile %5.1f%%  measured %5.1f%%" % (key, 100 * got, 100 * want))
        if abs(got - want) > TOLERANCE:
            bad.append(key)
    assert not bad, ("task shares off by more than %d points: %s\n%s\n%s"
                     % (100 * TOLERANCE, bad, "\n".join(lines), where))
    return burning


def check_unnamed(p, stacks):
    """3.7: tasks have no names; every burning sample is a task's, its task frames (the
    task's and its awaiters') named "Task"."""
    burning = untasked = 0
    for frames, n in stacks:
        names = [name for name, _ in frames]
        if len(names) < 2 or names[-1] != "spin" or names[-2] != "account":
            continue
        tasks = tasks_of(frames)
        if not tasks:
            untasked += n
            continue
        assert set(name for _, name in tasks) == {"Task"}, (names, p.dump())
        burning += n
    assert burning >= 200 and untasked <= 0.03 * (burning + untasked), (
        burning, untasked, p.dump())


def check_views(p, prof_log, stacks, tmp_dir):
    """report --tasks and --task agree with the stacks."""
    rep = t.tool_json("report", "--tasks", "--json", prof_log)
    test_json_schema.check("report tasks", rep, "report --tasks --json")
    rows = {r["task"]: r for r in rep["tasks"]}
    orders = rows.get("orders-*")
    assert orders and orders["names"] == 3, rep
    want_self = sum(n for frames, n in stacks
                    if tasks_of(frames) and tasks_of(frames)[-1][1].startswith("orders-"))
    assert orders["self"] == want_self, (orders, want_self)
    assert rep["with_task"] == sum(n for frames, n in stacks if tasks_of(frames)), rep
    test_json_schema.check("report", t.report(prof_log), "report --json")
    # pprof: each sample's task as a label go tool pprof reads.
    out = str(tmp_dir / "tasks.pb.gz")
    res = t.tool("export", "-f", "pprof", "-o", out, prof_log)
    assert res.returncode == 0, res.stderr
    env = dict(os.environ, PPROF_TMPDIR=str(tmp_dir), HOME=str(tmp_dir))
    tags = subprocess.run(["go", "tool", "pprof", "-tags", "-sample_index=samples", out],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          universal_newlines=True, timeout=t.TIMEOUT)
    assert tags.returncode == 0, tags.stderr
    for n in (1, 2, 3):
        want = sum(k for frames, k in stacks
                   if tasks_of(frames) and tasks_of(frames)[-1][1] == "orders-%d" % n)
        assert re.search(r"^\s*%d(\.0)? \(.*%%\): orders-%d\s*$" % (want, n), tags.stdout,
                         re.M), (want, tags.stdout)
    kept = t.report("--task", "orders-*", prof_log)
    want = sum(n for frames, n in stacks
               if any(name.startswith("orders-") for _, name in tasks_of(frames)))
    assert kept["samples"] == want, (kept["samples"], want)


@pytest.mark.parametrize("interp", t.params(ASYNCIO))
def test_task_frames(interp, tmp_path):
    """cpu clock: task frames and awaiter chains."""
    interp.require()
    p, measured, stacks = run(interp, tmp_path)
    check_tasks(interp, p, measured, stacks)
    if interp.minor >= (3, 8):
        check_views(p, p.run.logs[0], stacks, tmp_path)


@pytest.mark.parametrize("interp", t.params(ASYNCIO))
def test_task_frames_wall(interp, tmp_path):
    """wall clock: the running task's samples carry it the same way, whether the thread
    took them itself or the wall-clock pass read it while it kept still."""
    interp.require()
    p, measured, stacks = run(interp, tmp_path, clock="wall")
    check_tasks(interp, p, measured, stacks, clock="wall")


@pytest.mark.parametrize("interp", t.params(UVLOOP))
@pytest.mark.parametrize("clock", ["cpu", "wall"])
def test_task_frames_uvloop(interp, clock, tmp_path):
    """uvloop's loop (Cython) runs the same asyncio.Tasks: the same task frames and
    chains, the same shares."""
    interp.require()
    p, measured, stacks = run(interp, tmp_path, clock=clock, uvloop=True)
    check_tasks(interp, p, measured, stacks, clock=clock)
    assert not any(name.endswith("run_forever") for frames, _ in stacks
                   for name, _ in frames), "not uvloop's loop"


@pytest.mark.parametrize("interp", t.params(t.SIDS))
def test_task_frames_late_import(interp, tmp_path):
    """asyncio imported 0.3 s after the start: the layout (3.14: in the _asyncio module
    loaded then) is found at the load, and the tasks are in the samples from the first."""
    interp.require()
    p, measured, stacks = run(interp, tmp_path, late=True)
    check_tasks(interp, p, measured, stacks)
