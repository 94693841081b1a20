"""Stacks that are true, whatever the process does and however it was started.

* Wall clock reads other threads' stacks while they run.  A stack is recorded only if it
  is one the thread really had (docs/ARCHITECTURE.md, "What a wall-clock stack
  guarantees"); otherwise it is counted as dropped.  A deep recursion whose every real
  stack is known (<module>, then 1 to 21 recurse frames) is sampled at 1 ms and 100 us:
  not one recorded stack may be anything else.
* Names are copied only from code objects alive at the time: code objects made and freed
  continuously, sampled at 100 us in wall mode, every name valid UTF-8 and the file of
  its own code.
* A code object made where a freed one was gets its own name: recursions of K frames of
  f_d<K>, each new function's code object at the address of one with another K, sampled
  in both modes: every stack spinning in f_d<K> holds exactly K frames of it.
* Python as the first process of a pid namespace (a container's entrypoint), both modes.
* fork() from C, which bypasses Python's after-fork hook, both modes: the child's thread
  under the child's own tid and its Python name.
* Frames CPython itself hides (3.13's __init__ clean-up frame) never appear.
* The achieved rate counts samples recorded, never passes that recorded nothing.
"""

import json
import math
import os
import re
import shutil

import pytest

import pyprof_testlib as t

ALL = t.params(t.INTERPRETERS)
RECURSIVE = t.workload("recursive.py")
CHURN = t.workload("code_churn.py")
REUSE = t.workload("code_reuse.py")
WALL_MIX = t.workload("wall_mix.py")
WALL_IDLE = t.workload("wall_idle.py")
RAW_FORK = t.workload("raw_fork.py")
INIT_LOOP = t.workload("init_loop.py")
PID_ONE = t.workload("pid_one.py")

FRAME = re.compile(r"^(.*) \((.*):(-?\d+)\)$")
# With the line running in the frame, which may be unknown.
FRAME_LINE = re.compile(r"^(.*) \((.*):(-?\d+|\?)\)$")
# Where a stack's callers could not be read (a wall-clock stack that changed under the
# read keeps its innermost frame only, under this marker).
UNREADABLE = "[unreadable]"


def folded(log, tmp_path, lines=False):
    """[(frames root first as (name, file), count)] of `log`, read through the tool, the
    bytes decoded strictly (a name that is not UTF-8 fails the test).  With `lines`,
    frames are (name, file, line running)."""
    out = str(tmp_path / ("stacks-%s.folded" % os.path.basename(log)))
    res = t.tool("export", "-f", "folded", log, "-o", out, *(["--lines"] if lines else []))
    assert res.returncode == 0, res.stderr
    with open(out, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError("the folded export is not valid UTF-8 (%s) near %r"
                             % (e, raw[max(0, e.start - 200):e.end + 50]))
    stacks = []
    for line in text.splitlines():
        stack, n = line.rsplit(" ", 1)
        frames = []
        for fr in stack.split(";"):
            if fr == UNREADABLE:
                frames.append((fr, None))
                continue
            m = (FRAME_LINE if lines else FRAME).match(fr)
            assert m, "bad frame %r in %r" % (fr, line)
            frames.append(m.groups() if lines else (m.group(1), m.group(2)))
        stacks.append((frames, int(n)))
    return stacks


def dropped(p, *reasons):
    return sum(p.proc["dropped"].get(r, 0) for r in reasons)


def check_rate(p):
    """In wall mode the achieved rate counts the passes that sampled a thread or found
    one running and left it to its own CPU timer, never the passes that found nothing:
    it can claim no more passes than there are samples (and samples dropped), but for
    the timers' spread (a thread running a share s of the time is found running by a
    pass with chance s, and its timer fires s times per period on average)."""
    if p.proc["clock"] != "wall":
        return
    duration = p.proc["duration_s"]
    samples = p.proc["samples"] + sum(p.proc["dropped"].values())
    passes = p.proc["achieved_hz"] * duration
    assert passes <= samples * 1.01 + 3 * math.sqrt(samples) + 2, (
        "achieved %.1f Hz over %.3f s claims %d passes, more than the %d samples recorded "
        "or dropped\n%s" % (p.proc["achieved_hz"], duration, passes, samples, p.dump()))


# ---- wall clock: no torn stack -----------------------------------------------------------


@pytest.mark.parametrize("period", ["1ms", "100us"])
@pytest.mark.parametrize("interp", ALL)
def test_wall_recursion_consistent(interp, period, tmp_path):
    interp.require()
    prof = t.run([interp.path, RECURSIVE], str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": period})
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")
    wrong, inner, partial = [], 0, 0
    for frames, n in folded(prof.logs[0], tmp_path):
        names = [name for name, _ in frames]
        if "recurse" not in names:
            continue  # start-up, imports, the loop itself
        if names == [UNREADABLE, "recurse"]:
            partial += n  # the innermost frame of a stack that changed under the read
            continue
        root_ok = names[0] == "<module>" and t.same_file(frames[0][1], RECURSIVE)
        rest = names[1:]
        if not root_ok or any(x != "recurse" for x in rest) or len(rest) > 21:
            wrong.append((n, ";".join(names)))
        else:
            inner += n
    assert not wrong, ("%d recorded stacks the program never had (torn while read), "
                       "e.g. %s\n%s" % (sum(n for n, _ in wrong), wrong[:5], p.dump()))
    # Stacks that changed too often to be read are dropped and counted; what is left
    # must still be most of the samples, or the profile would say little.
    lost = dropped(p, "changing", "unreadable")
    assert inner > 0 and 4 * (inner + partial) >= lost, (
        "%d whole and %d innermost-only samples of the recursion, %d dropped as changing "
        "or unreadable\n%s" % (inner, partial, lost, p.dump()))
    # With a CPU timer per thread (perf events), the sampler thread keeps only stacks of
    # threads that ran no instruction while read, and a running thread samples itself:
    # every recorded stack is whole, on every version.
    if "perf-task-clock" in p.proc["timer"]:
        assert partial == 0, "%d stacks cut to their innermost frame\n%s" % (partial, p.dump())
    check_rate(p)


@pytest.mark.parametrize("interp", ALL)
def test_wall_every_thread_every_period(interp, tmp_path):
    """Wall mode samples every thread once per period whatever it does: a thread running
    Python code (sampled by its own CPU timer while it runs), one running C code without
    the GIL (read by the sampler thread on 3.7+, whose Python frames keep still; by its
    timer on 2.7/3.6) and a sleeping one (read by the sampler thread)."""
    interp.require()
    prof = t.run([interp.path, WALL_MIX], str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": "5ms"})
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")
    if "perf-task-clock" not in p.proc["timer"]:
        pytest.fail("no CPU timer per thread: " + p.proc["timer"])
    hz = p.proc["achieved_hz"]
    by_name = dict((th["name"], th["samples"]) for th in p.rep["threads"])
    # Each thread lives for the program's 2 s sleep at least: one sample per pass over
    # that time, fewer only by the passes the timers' spread takes from the running
    # ones (about the square root of the count), and at most the passes of the whole run.
    passes = hz * p.proc["duration_s"]
    least = hz * 2.0
    for name in ("python_spin", "c_hash", "sleeper"):
        got = by_name.get(name, 0)
        assert least - 4 * math.sqrt(least) - 5 <= got <= passes * 1.05 + 5, (
            "%s: %d samples, expected %d to %d (%.1f Hz)\n%s"
            % (name, got, least, passes, hz, p.dump()))
    check_rate(p)


# ---- names only from live code objects ---------------------------------------------------


@pytest.mark.parametrize("interp", ALL)
def test_wall_code_churn_names(interp, tmp_path):
    interp.require()
    prof = t.run([interp.path, CHURN], str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": "100us"})
    assert prof.rc == 0, prof.describe()
    t.one_log(prof, ended="exit")
    seen, bad = 0, []
    for frames, n in folded(prof.logs[0], tmp_path):
        for name, filename in frames:
            if not (name.startswith("f_") or "churn_" in (filename or "")):
                continue
            m = re.match(r"^f_(\d+)$", name)
            if m:
                ok = filename == u"churn_%s_\u00e9t\u00e9.py" % m.group(1)
            else:  # the module code each round compiles, in the same file
                ok = name == "<module>" and re.match(u"^churn_\\d+_\u00e9t\u00e9.py$", filename)
            if not ok:
                bad.append((name, filename))
            seen += n
    assert not bad, "names that do not belong to their code: %r" % bad[:10]
    assert seen > 0, "no sample of the churned functions"


@pytest.mark.parametrize("clock", ["cpu", "wall"])
@pytest.mark.parametrize("interp", ALL)
def test_code_address_reuse(interp, clock, tmp_path):
    """Code ids are keyed by a code object's address and what it holds, and the signal
    handler's walk looks an address up once per walk: none of it may give a new code
    object the name of a freed one whose memory it took."""
    interp.require()
    prof = t.run([interp.path, REUSE], str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": clock,
                      "PYPROF_PERIOD": "200us" if clock == "cpu" else "100us"})
    assert prof.rc == 0, prof.describe()
    m = re.match(r"^rounds (\d+) other (\d+)$", prof.stdout.decode().strip())
    assert m, prof.describe()
    rounds, other = int(m.group(1)), int(m.group(2))
    # What the test is about has to happen: pymalloc hands a freed code object's memory
    # to the next one of its size (every round, as measured on every version).
    assert other >= rounds // 2 and other >= 100, prof.describe()
    p = t.one_log(prof, ended="exit")
    checked, recursing, bad = 0, 0, []
    for frames, n in folded(prof.logs[0], tmp_path, lines=True):
        name, line = frames[-1][0], frames[-1][-1]
        k = re.match(r"^f_d(\d)$", name)
        recursing += n if k else 0
        # Only whole stacks spinning at the bottom of the recursion, where it is K deep
        # (line K + 4); a stack on its way down or up holds fewer, and one that changed
        # under a wall-clock read keeps only its innermost frame (UNREADABLE).
        if not k or line != str(int(k.group(1)) + 4) or frames[0][0] == UNREADABLE:
            continue
        run = 0
        while run < len(frames) and frames[-1 - run][0] == name:
            run += 1
        if run != int(k.group(1)):
            bad.append((run, name, n))
        checked += n
    assert not bad, ("stacks of N frames named after a recursion of another depth "
                     "(N, name, samples): %r" % bad[:10])
    # The workload spends nearly all of its 1.5 s of CPU spinning at the bottom of each
    # recursion: of the samples in a recursion, at least half are whole stacks there.
    # In cpu mode the samples are one per 200 us of that CPU (over 90 % of them at the
    # bottom).  In wall mode they are the passes a busy machine let the sampler make,
    # and they also find the thread where it waited for a CPU (mostly as it returned
    # from reading its CPU clock, outside any recursion): no share of the whole.
    if clock == "cpu":
        t.check_cpu_samples(p, 1.5, got=checked, what="samples at the recursions' bottom")
    assert checked >= 0.5 * recursing > 0, (
        "only %d of the %d samples in a recursion are whole stacks at its bottom\n%s"
        % (checked, recursing, p.dump()))
    check_rate(p)


# ---- Python as pid 1 ---------------------------------------------------------------------


def unshare_argv(argv):
    """`argv` as the first process of new user and pid namespaces."""
    unshare = shutil.which("unshare")
    assert unshare, "unshare (util-linux) is missing"
    return [unshare, "--user", "--map-root-user", "--pid", "--fork", "--"] + argv


@pytest.mark.parametrize("clock", ["cpu", "wall"])
@pytest.mark.parametrize("interp", ALL)
def test_pid_one(interp, clock, tmp_path):
    interp.require()
    prof = t.run(unshare_argv([interp.path, PID_ONE]), str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": clock, "PYPROF_PERIOD": "5ms"})
    assert prof.rc == 0, prof.describe()
    assert b"pid 1\n" in prof.stdout, prof.describe()
    p = t.one_log(prof, ended="exit", check_pid=False)
    assert p.proc["pid"] == 1, p.dump()
    spin = p.function("spin", PID_ONE)
    # spin() burns 0.8 s of its own CPU: at 5 ms, about 160 samples on any machine, at
    # least half of them; far fewer means the thread went unseen.
    # In wall mode the passes that happen are what a busy machine lets the sampler
    # make: the bound is half of what its achieved rate gives over 0.8 s (spinning) and
    # 0.3 s (asleep), each at least that long.
    if clock == "cpu":
        t.check_cpu_samples(p, 0.8, got=spin["self"], what="samples in spin()")
    else:
        hz = p.proc["achieved_hz"]
        assert spin["self"] >= 0.5 * hz * 0.8, p.dump()
        nap = p.function("nap", PID_ONE)
        assert nap["self"] >= 0.5 * hz * 0.3, p.dump()
    threads = p.rep["threads"]
    assert [th["tid"] for th in threads] == [1], p.dump()
    check_rate(p)


# ---- fork() from C -----------------------------------------------------------------------


@pytest.mark.parametrize("where", ["main", "thread"])
@pytest.mark.parametrize("clock", ["cpu", "wall"])
@pytest.mark.parametrize("interp", ALL)
def test_raw_fork_child_tids(interp, clock, where, tmp_path):
    interp.require()
    out = str(tmp_path / "child_pid")
    prof = t.run([interp.path, RAW_FORK], str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": clock, "PYPROF_PERIOD": "5ms",
                      "RAW_FORK_FROM": where, "RAW_FORK_OUT": out})
    assert prof.rc == 0, prof.describe()
    with open(out) as f:
        child = int(f.read())
    logs = [l for l in prof.logs if ".%d." % child in os.path.basename(l)]
    assert len(logs) == 1, "no log of child %d\n%s" % (child, prof.describe())
    rep = t.report(logs[0])
    proc = rep["processes"][0]
    assert proc["pid"] == child and not proc["truncated"], t.dump(rep)
    threads = [(th["tid"], th["name"], th["samples"]) for th in rep["threads"]]
    # The child has one thread, the one that forked: its tid is the child's pid.
    assert [tid for tid, _, _ in threads] == [child], (
        "the child's samples are under %r, expected tid %d only\n%s"
        % (threads, child, t.dump(rep)))
    name = "MainThread" if where == "main" else "forking-thread"
    assert threads[0][1] == name, t.dump(rep)
    # The child burns 0.5 s of its own CPU: at 5 ms, about 100 samples on any machine,
    # at least half of them; in wall mode, half of what the achieved rate gives over
    # those (at least) 0.5 s.
    if clock == "cpu":
        t.check_cpu_samples(t.Profile(prof, rep), 0.5, got=threads[0][2])
    else:
        assert threads[0][2] >= 0.5 * proc["achieved_hz"] * 0.5, t.dump(rep)


# ---- frames Python hides -----------------------------------------------------------------


@pytest.mark.parametrize("clock", ["cpu", "wall"])
@pytest.mark.parametrize("interp", ALL)
def test_no_hidden_frames(interp, clock, tmp_path):
    interp.require()
    prof = t.run([interp.path, INIT_LOOP], str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": clock, "PYPROF_PERIOD": "2ms"})
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")
    init = interp.qualified("P.__init__")
    wrong, inits = [], 0
    for frames, n in folded(prof.logs[0], tmp_path):
        names = [name for name, _ in frames]
        if not any(t.same_file(f, INIT_LOOP) for _, f in frames):
            continue  # start-up
        if (names[0] == UNREADABLE and len(frames) == 2 and t.same_file(frames[1][1], INIT_LOOP)
                and names[1] in ("<module>", "P", "main", init)):
            continue  # the innermost frame of a stack that changed under the read
        if names[:2] != ["<module>", "main"] or names[2:] not in ([], [init]) or any(
                not t.same_file(f, INIT_LOOP) for _, f in frames):
            if names in (["<module>"], ["<module>", "P"]) or names[1:2] == ["_find_and_load"]:
                continue  # the module itself (class P's body too, a frame Python shows), or
                # its imports
            if names[1:2] in (["Mapping.get"], ["get"]):
                continue  # the module's os.environ.get("CPU"), before main()
            wrong.append((n, ";".join("%s (%s)" % fr for fr in frames)))
        elif names[2:]:
            inits += n
    assert not wrong, "frames Python does not show: %r\n%s" % (wrong[:5], p.dump())
    assert inits > 0, p.dump()


# ---- an idle daemon is not woken ------------------------------------------------------


@pytest.mark.parametrize("interp", ALL)
def test_wall_wakes_no_idle_thread(interp, tmp_path):
    """Wall mode at 1 ms samples eight threads blocked on an Event, a lock, a sleep and a
    select for 2 s without waking one of them: their context switches over those 2 s
    (the program's own count, /proc/self/task/TID/status) are none, and each has about
    one sample per pass all the same."""
    interp.require()
    prof = t.run([interp.path, WALL_IDLE], str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": "1ms"})
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")
    woken = []
    seen = 0
    by_name = dict((th["name"], th["samples"]) for th in p.rep["threads"])
    hz = p.proc["achieved_hz"]
    for line in t._text(prof.stdout).splitlines():
        r = json.loads(line)
        seen += 1
        if r["switches"]:
            woken.append(r)
        # In its wait for the 2.5 s measured: one sample per pass over that time at least.
        least = hz * 2.5
        got = by_name.get(r["name"], 0)
        assert got >= least - 4 * math.sqrt(least) - 5, (r["name"], got, least)
    assert seen == 8, t._text(prof.stdout)
    assert not woken, "idle threads woken while profiled: %r" % woken
