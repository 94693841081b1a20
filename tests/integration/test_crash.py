"""Killed processes.  SIGKILL leaves a log without a footer that is readable up to its
last periodic flush (PYPROF_FLUSH): `pyprof report` reads it with a one-line warning that
it was cut short and exits 0, `pyprof info` says TRUNCATED and how many samples survived.
A signal whose default action ends the process (SIGTERM, SIGINT) finalizes the log first:
footer present, "ended": "signal", the signal number; the target still dies of that
signal, as it would without the library.

workloads/until_killed.py burns CPU in burn_until_killed() until it is killed, and says
"ready" once it has burned a given amount of CPU: the signals wait for that line.
"""

import json
import os
import re
import select
import signal
import time

import pytest

import pyprof_testlib as t

UNTIL_KILLED = t.workload("until_killed.py")
READY = b"until_killed: ready\n"
PERIOD = 0.005
ENV = {"PYPROF_PERIOD": "5ms"}
# The workload says "ready" once it has burned READY_CPU seconds of CPU; the tests send
# their signal only then, so that what must be in the log does not depend on how busy
# the machine is.  At 5 ms that CPU is worth ~READY_CPU * 200 samples (either timer);
# half of that is the floor.
READY_CPU = 1.0
MIN_SAMPLES = int(0.5 * READY_CPU / PERIOD)
# SIGKILL: the program burns KILL_READY_CPU seconds, then runs on for 3 flush periods
# (and more than 2 s in all) before the kill; everything up to "ready" must survive.
FLUSH = 0.5
KILL_READY_CPU = 1.5
KILL_AFTER = 3 * FLUSH
MIN_SURVIVED = int(0.5 * KILL_READY_CPU / PERIOD)
READY_TIMEOUT = 90


def wait_ready(pending, t0):
    """Reads the program's stdout up to its ready line; returns (what it read, seconds
    from t0 to the line)."""
    fd = pending.proc.stdout.fileno()
    got = b""
    while READY not in got:
        left = t0 + READY_TIMEOUT - time.time()
        if left <= 0:
            pending.proc.kill()
            break
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            got += chunk
    if READY not in got:
        run = pending.wait()
        run.stdout = got + run.stdout
        pytest.fail("the workload never said it was ready\n" + run.describe())
    return got, time.time() - t0


def start_and_signal(interp, tmp_path, sig, env=None, baseline=True, ready_cpu=READY_CPU,
                     after=0.0, ignored=False):
    """Starts the workload under the library (and, with `baseline`, without it at the
    same time); once it has burned `ready_cpu` seconds of CPU and `after` more seconds
    have passed, sends it `sig`.  With `ignored`, the workload starts with SIGINT
    ignored, as a shell's background job does.  Returns (profiled run, baseline run or
    None, seconds from the start of the profiled run to its ready line)."""
    outdir = str(tmp_path / "logs")
    e = dict(ENV, READY_CPU=str(ready_cpu))
    e.update(env or {})
    argv = [interp.path, UNTIL_KILLED]
    if ignored:
        argv = ["/bin/sh", "-c", "trap '' INT; exec \"$0\" \"$@\""] + argv
    t0 = time.time()
    prof = t.start(argv, outdir, True, e)
    base = t.start(argv, None, False, e) if baseline else None
    runs = []
    t_ready = None
    for p in (prof, base):
        if p is None:
            continue
        got, when = wait_ready(p, t0)
        if p is prof:
            t_ready = when
        runs.append((p, got))
    time.sleep(after)
    for p, _ in runs:
        p.proc.send_signal(sig)
    done = []
    for p, got in runs:
        run = p.wait()
        run.stdout = got + run.stdout
        done.append(run)
    return done[0], (done[1] if baseline else None), t_ready


def one_report(prof):
    assert len(prof.logs) == 1, "expected one log\n" + prof.describe()
    path = prof.logs[0]
    res = t.tool("report", "--json", path)
    return path, res


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.11-debian", "py3.13",
                                                    *t.SID_IDS)))
def test_sigkill_leaves_readable_log(interp, tmp_path):
    interp.require()
    prof, _, t_ready = start_and_signal(interp, tmp_path, signal.SIGKILL,
                                        env={"PYPROF_FLUSH": str(FLUSH)}, baseline=False,
                                        ready_cpu=KILL_READY_CPU, after=KILL_AFTER)
    assert prof.rc == -signal.SIGKILL, prof.describe()
    assert prof.stdout == b"until_killed: started\n" + READY, prof.describe()
    path, res = one_report(prof)
    where = "%s\n$ pyprof report --json %s\nexit %d\nstderr:\n%s\nstdout:\n%s" % (
        prof.describe(), path, res.returncode, res.stderr, res.stdout[:3000])
    # A truncated log is still reported, with a warning; exit status 0.
    assert res.returncode == 0, where
    warn = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(warn) == 1, "expected one warning line on stderr\n" + where
    assert "warning" in warn[0] and "truncated" in warn[0] and path in warn[0], where
    rep = json.loads(res.stdout)
    t.check_report_shape(rep)
    p = rep["processes"][0]
    assert p["pid"] == prof.pid, where
    assert p["truncated"] is True and p["ended"] == "truncated", where
    assert p["exit_status"] is None and p["signal"] is None, where
    # What survived: everything up to the ready line at least (three flush periods
    # passed after it), in samples and in time.
    assert p["samples"] >= MIN_SURVIVED, ("only %d samples survived\n%s"
                                          % (p["samples"], where))
    burn = [f for f in rep["functions"] if f["name"] == "burn_until_killed"]
    assert burn and burn[0]["total"] >= MIN_SURVIVED, where
    assert p["duration_s"] >= t_ready - FLUSH, (
        "the log covers %.2f s; the process said ready %.2f s after it started and was "
        "killed %.1f s later, with PYPROF_FLUSH=%s\n%s"
        % (p["duration_s"], t_ready, KILL_AFTER, FLUSH, where))
    # The warning gives the number of samples that survived.
    m = re.search(r"(\d+) samples survived", warn[0])
    assert m and int(m.group(1)) == p["samples"], where

    # `pyprof info`: exit 0, says it was cut short and how much survived.
    info = t.tool("info", path)
    iwhere = "$ pyprof info %s\nexit %d\nstdout:\n%s\nstderr:\n%s" % (
        path, info.returncode, info.stdout, info.stderr)
    assert info.returncode == 0, iwhere
    assert re.search(r"no footer|killed|truncated", info.stdout, re.I), iwhere
    m = re.search(r"TRUNCATED after \d+ records.*?(\d+) samples survived", info.stdout)
    assert m and int(m.group(1)) == p["samples"], iwhere


# A process a shell starts in the background gets SIGINT ignored; one that then sets it
# back to its default action must have its log finished by it all the same.
SIGNALS = [
    pytest.param(signal.SIGTERM, {}, False, id="SIGTERM"),
    pytest.param(signal.SIGINT, {"SIGINT_DFL": "1"}, False, id="SIGINT-default"),
    pytest.param(signal.SIGINT, {"SIGINT_DFL": "1"}, True, id="SIGINT-ignored-then-default"),
]


@pytest.mark.parametrize("sig,env,ignored", SIGNALS)
@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.8", "py3.11-debian",
                                                      "py3.12", "py3.13", *t.SID_IDS)))
def test_fatal_signal_finalizes_log(interp, sig, env, ignored, tmp_path):
    """The signal's default action ends the process: the log is finalized first."""
    interp.require()
    prof, base, _ = start_and_signal(interp, tmp_path, sig, env=env, ignored=ignored)
    assert base.rc == -sig, base.describe()
    t.assert_transparent(prof, base)
    p = t.one_log(prof, ended="signal")
    assert p.proc["signal"] == sig, ("signal %r, expected %d\n%s"
                                     % (p.proc["signal"], sig, p.dump()))
    assert p.proc["samples"] >= MIN_SAMPLES, p.dump()
    assert p.function("burn_until_killed", UNTIL_KILLED)["total"] >= MIN_SAMPLES, p.dump()


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.8", "py3.13", *t.SID_IDS)))
def test_sigint_keyboard_interrupt(interp, tmp_path):
    """SIGINT with python's own handler: KeyboardInterrupt unwinds the program; 3.8+
    then kills itself with SIGINT (default action) after finalizing, 2.7 exits with
    status 1.  Either way one complete log, ending as the process did."""
    interp.require()
    prof, base, _ = start_and_signal(interp, tmp_path, signal.SIGINT)
    want = -signal.SIGINT if interp.minor >= (3, 8) else 1
    assert base.rc == want, base.describe()
    # The traceback's line may differ between the two runs: compare what is stable.
    t.assert_transparent(prof, base, stderr_too=False)
    assert b"KeyboardInterrupt" in prof.stderr, prof.describe()
    if want < 0:
        p = t.one_log(prof, ended="signal")
        assert p.proc["signal"] == signal.SIGINT, p.dump()
    else:
        p = t.one_log(prof, ended="exit")
        assert p.proc["exit_status"] in (None, 1), p.dump()
    assert p.function("burn_until_killed", UNTIL_KILLED)["total"] >= MIN_SAMPLES, p.dump()
