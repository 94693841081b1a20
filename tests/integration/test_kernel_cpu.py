"""CPU samples stand for the CPU time the kernel accounts to each thread, whatever the
timer counted.

The timer (a perf task-clock event per thread) counts on-CPU time, which on a virtual
machine includes the time the hypervisor took the virtual CPU away (steal); the kernel's
own account of a thread (its CPU clock, CLOCK_THREAD_CPUTIME_ID) does not.  The library
reads that clock at every signal and records the whole periods of it that the signal
closed, so a function's samples follow the CPU its threads were given on any host.

The workload (workloads/kernel_cpu.py) runs three shapes of thread, each burning CPU in a
function of its own and measuring that CPU with its own thread clock: 1,200 short
threads of 0.5 ms (under a period each at 1 ms: each gets a sample with probability
0.5), one thread that wakes 600 times to work 1 ms and sleep 1 ms, and one busy thread.
Each function's samples are held to its measured CPU / period, within 15 %.  The counts
are sums of independent per-period counts, each of variance at most its expectation, so
with E = 600 (0.6 s at 1 ms) 15 % is 3.7 standard deviations.

No machine here can be made to steal on demand, so PYPROF_TEST_SKEW=1.3 (a test
setting) makes every timer count 1.3 times as fast as its thread's CPU, and the same
bounds must hold; and with PYPROF_TEST_UNCORRECTED=1 as well (a sample per signal, as
the timer counted, as before the correction) the busy function gets about 1.3 times its
CPU's samples, which shows that the bounds can fail.  What the host itself did while
the suite ran (the timers' count against the kernel's, from the log) is printed.
"""

import json

import pytest

import pyprof_testlib as t

SCRIPT = t.workload("kernel_cpu.py")
ALL = t.params(t.INTERPRETERS)
PERIOD, PERIOD_S = "1ms", 0.001
BURNS = ("short_burn", "sleepy_burn", "busy_burn")
TOLERANCE = 0.15
SKEW = 1.3


def profile(interp, tmp_path, env=None):
    """The workload under the library: its one log's Profile and its measurements."""
    interp.require()
    result = str(tmp_path / "result.json")
    prof = t.run([interp.path, SCRIPT], str(tmp_path / "logs"),
                 env=dict(env or {}, PYPROF_PERIOD=PERIOD, SHORT_RESULT=result))
    assert prof.rc == 0, prof.describe()
    assert prof.stdout.startswith(b"kernel_cpu: 1200 short threads"), prof.describe()
    p = t.one_log(prof, ended="exit")
    assert p.proc["timer"].startswith("perf-task-clock"), p.dump()
    with open(result) as f:
        return p, json.load(f)


def burn_counts(p, measured):
    """Per burn function: (samples with it on the stack, its measured CPU / period)."""
    return dict((name, (sum(f["total"] for f in p.functions(name, SCRIPT)),
                        measured["cpu"][name] / PERIOD_S)) for name in BURNS)


def host_line(p):
    """What the timers counted against the kernel's CPU of the same intervals."""
    cost = p.proc["cost"]
    timer, kernel = cost["clock_timer_ns"], cost["clock_kernel_ns"]
    return ("timers %.3f s, kernel %.3f s: the timer ran %+.1f %% against the kernel's "
            "CPU clock" % (timer / 1e9, kernel / 1e9, 100.0 * (timer / float(kernel) - 1)))


def check_follows_cpu(p, measured, what):
    counts = burn_counts(p, measured)
    lines = ["%s: %d samples, %.0f expected from its CPU (%+.1f %%)"
             % (name, got, want, 100.0 * (got / want - 1))
             for name, (got, want) in sorted(counts.items())]
    print("%s [%s]: %s\n  %s" % (what, p.proc["python"], host_line(p), "\n  ".join(lines)))
    bad = [line for line, (got, want) in zip(lines, [counts[n] for n in sorted(counts)])
           if abs(got - want) > TOLERANCE * want]
    assert not bad, "%s, outside +- %d %%:\n%s\n%s\n%s" % (
        what, 100 * TOLERANCE, "\n".join(bad), host_line(p), p.dump())


@pytest.mark.parametrize("interp", ALL)
def test_samples_follow_each_threads_cpu(interp, tmp_path):
    """As the host gives it: the samples follow the kernel's CPU, and the log says what
    the timers counted against it."""
    p, measured = profile(interp, tmp_path)
    cost = p.proc["cost"]
    assert cost["clock_corrected"] is True, p.dump()
    assert cost["clock_kernel_ns"] > 0.5 * sum(measured["cpu"].values()) * 1e9, p.dump()
    check_follows_cpu(p, measured, "as the host runs")


@pytest.mark.parametrize("interp", ALL)
def test_timer_counting_more_than_the_cpu(interp, tmp_path):
    """Timers counting 1.3 times the threads' CPU (as under steal): the samples still
    follow the CPU, and the log says the timer ran ahead."""
    p, measured = profile(interp, tmp_path, {"PYPROF_TEST_SKEW": str(SKEW)})
    check_follows_cpu(p, measured, "timers counting x%.1f" % SKEW)
    # The host's own difference comes on top (steal raises it; a thread's switches,
    # which the kernel counts to it and the timer does not, lower it by a few %).
    cost = p.proc["cost"]
    ahead = cost["clock_timer_ns"] / float(cost["clock_kernel_ns"])
    assert ahead > 1.15, "timer / kernel = %.3f, expected about %.1f: %s\n%s" % (
        ahead, SKEW, host_line(p), p.dump())


@pytest.mark.parametrize("interp", t.params(t.by_id("py3.11", "py3.14")))
def test_uncorrected_samples_follow_the_timer(interp, tmp_path):
    """The same timers with the correction off: a sample per signal, so the busy
    function gets about 1.3 times its CPU's samples, outside the bounds above."""
    p, measured = profile(interp, tmp_path,
                          {"PYPROF_TEST_SKEW": str(SKEW), "PYPROF_TEST_UNCORRECTED": "1"})
    got, want = burn_counts(p, measured)["busy_burn"]
    print("uncorrected, timers counting x%.1f [%s]: busy_burn %d samples, %.0f expected "
          "from its CPU (%+.1f %%)" % (SKEW, p.proc["python"], got, want,
                                       100.0 * (got / want - 1)))
    assert got > (1 + TOLERANCE) * want, p.dump()
    assert p.proc["cost"]["clock_corrected"] is False, p.dump()
