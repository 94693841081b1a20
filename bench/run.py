#!/usr/bin/env python3
"""pyprof's benchmark suite (overhead, samples achieved, the library's own cost, accuracy):
`make bench` runs it.

    python3 bench/run.py --lib build/libpyprof.so --tool build/pyprof --out build/bench.json
    python3 bench/run.py ... --quick          # a short smoke run
    python3 bench/run.py ... --only thread_per_request,thread_create   # some parts only
    python3 bench/run.py ... --only alloc --quick     # the allocation part alone, short

What it measures, in one run (stdlib only; memray and yappi where installed):

* overhead: every workload in bench/workloads runs without the library and with it at
  100 Hz and 1 kHz (PYPROF_PERIOD=10ms / 1ms, cpu clock; the threaded one also with
  PYPROF_CLOCK=wall), interleaved: each repetition runs every setting once, back to back,
  in an order that reverses from one repetition to the next (A B C, C B A, ...).  A ratio
  is a with-library run over the bare run of the same repetition; wall time is measured
  around the process, CPU time is the process's user+sys from wait4 (children included).
  Each ratio is given as median, min, max and a 95 % bootstrap interval of the median;
* the library's own cost, from each log's footer (`pyprof report --json`): library CPU
  (handler + writer) per second of process CPU, handler and writer time per sample, and
  the handler-time histogram by stack depth (median per depth bucket);
* the correction of cpu-clock samples (each signal's samples counted in periods of the
  thread's own CPU clock, which leaves out what the hypervisor stole, where the perf
  timer counts it): the cpu and deep30 workloads also run at 100 Hz and 1 kHz with
  PYPROF_TEST_UNCORRECTED=1 (a test setting: every signal one sample, as before the
  correction), in the same repetitions, rows "(correction off)" beside the default's,
  not checked against the targets, with the corrected run's CPU over the off run's of
  the same repetition; the whole-cost part runs work_rate.py both ways too (the off
  runs with half the windows); the handler times the sample alone, and the clock is
  read before it, so the correction's system call is timed apart as well
  (time.thread_time_ns).  And per cpu-clock run, the host's timer excess: the footer's
  clock_timer_ns / clock_kernel_ns - 1, what the timers counted over the kernel's CPU
  of the same threads (steal), per setting in the table and over the whole bench;
* samples achieved versus expected (expected = process CPU seconds x rate in cpu mode;
  sampling passes per wall second / rate in wall mode), per run and in the steady state
  (the difference between a long and a short run, which removes start-up and exit);
* thread per request (server.py): a threading TCP server whose every request is handled
  in a new thread that burns about 1.5 ms of CPU (less than one 10 ms period), so most of
  the CPU is spent in threads shorter than a period; in cpu mode each thread has its own
  timer with a random first period, so samples achieved / (process CPU x rate) should
  still be about 1.  Its overhead ratios and samples achieved, in a section of their own;
* thread creation and exit (thread_create.py): the time per create + join of a thread
  that does nothing, timed by the workload around its loop, with and without the library
  (in cpu mode the library opens a perf event for each new thread and releases it at the
  thread's exit); with threading.Thread, and with bare pthreads from C (thread_create.c,
  compiled here when a C compiler is found);
* log bytes per sample, per run and in the steady state;
* `pyprof report` throughput in samples per second on a directory of at least 1,000,000
  samples;
* accuracy: a workload that measures the CPU time of its own functions, and the error of
  each share the profile gives;
* spans (spans.py): the cost of one span start+stop of the pyprof package (with, start/stop,
  a decorated call, the C functions alone) with the library recording, with it loaded
  but paused, and without it (the no-op), on the main interpreter and Debian's python3.11;
* side by side: `python -m cProfile` on the same interpreter, and Debian's python3-yappi
  (CPU clock) with /usr/bin/python3.11, where present;
* per version (--versions, default 3.13 and 3.14): the overhead and handler figures of
  the cpu and deep30 workloads (sized on each interpreter to the same CPU per run, the
  same settings and method) on each of a list of interpreters, in repetitions of their
  own after the main ones (--versions-budget), every interpreter in every repetition.
  3.14 is the Debian sid root's (build/sid/bin/python3.14, `make sid-root`; `make bench`
  makes it first), run through its chroot wrapper, whose own CPU (measured once) is left
  out of the samples expected and of the library's share;
* allocation sampling (alloc; --alloc-budget): alloc_mix.py (json, dict/list/str churn,
  regex, str.format and string.Template over rows, objects built from rows, and three
  functions whose allocated bytes it counts exactly), sized to about 1.5 s of CPU on the
  main interpreter and on the sid root's 3.14, in interleaved repetitions of its own:
  bare; the library at 100 Hz with allocation sampling off (PYPROF_ALLOC unset), at
  PYPROF_ALLOC=512KB and at 64KB; `-X tracemalloc`; and on 3.14 `python -m memray run`
  (as it comes, which sees malloc but not pymalloc's small blocks, and with
  --trace-python-allocators, which sees them as the library does) when sid's
  python3-memray is in the root (`make bench` installs it; otherwise "memray: not
  available (why)").  Per setting the median CPU (user+sys, less the sid wrapper's) and
  its ratio to bare; the library's ALLOC records per run, log bytes per ALLOC record
  (less the allocation-off run's log), CPU per allocation over the allocation-off run
  and of one more sample; the library's extra CPU over each other tool's and over the
  cheapest's (checked at 512KB).  Accuracy: the library's bytes for the three known
  functions (self, pooled over the runs) against the exact count, in sigmas of the
  sampling error; the size of one block is checked once with tracemalloc (exact, from
  a run under -X tracemalloc with ALLOC_MIX_TRACE=1: tracemalloc counts live blocks,
  not bytes allocated, so it gives no per-function total of its own).  And a C
  program's malloc loop (alloc_loop.c, compiled here; malloc/free of 16..4096 bytes,
  no Python), its own loop CPU bare and with the library loaded, allocation sampling
  off and at 512KB: a process without Python is not profiled (no hooks, no log), so
  both should be about 1.00; its CPU ratio from the loop's windows (ratio_q), checked,
  and, where valgrind is installed, the instructions of a short run under callgrind,
  which the machine's load does not move.

It reports figures and checks them against the targets below; it never fails on a
figure (its exit status is 1 only when a run failed: a crash, a timeout, a log the tool
could not read).

The machine is usually shared and noisy: whole-run ratios move by 15-30 % from pair to
pair, so the library's own accounting is the primary overhead figure and the ratios are
its cross-check.  A --budget (seconds) bounds the run: repetitions stop once another one
would not fit (never fewer than --min-reps).
"""

import argparse
import datetime
import json
import math
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads")
REPO = os.path.dirname(HERE)
DEBIAN_PY = "/usr/bin/python3.11"

# The targets the figures are checked against (the table marks each: met, not met, or
# unclear when the 95 % interval of the median straddles it).
TARGETS = {
    "wall_ratio_100hz_cpu_workload": 1.01,
    "wall_ratio_1khz_cpu_workload": 1.05,
    "handler_median_ns_depth30": 2000.0,
    "achieved_100hz_cpu_clock": 0.99,
    "achieved_1khz_cpu_clock": 0.95,
    "library_cpu_share_100hz": 0.005,
    # The whole cost (whole_cost part): extra CPU as the A/B ratio of the work rate, and
    # the log's reported whole cost within this fraction of the measured one.
    "whole_cpu_ratio_100hz": 1.003,
    "whole_cpu_ratio_1khz": 1.015,
    "whole_reported_vs_measured": 0.25,
    "library_cpu_share_native_100hz": 0.01,
    "library_cpu_share_native_1khz": 0.03,
    "log_bytes_per_sample_cpu_workload": 8.0,
    "log_bytes_per_sample_steady_100hz": 4.0,
    "report_samples_per_s": 5e6,
    # Allocation sampling (alloc part): pyprof's extra CPU at PYPROF_ALLOC=512KB over the
    # cheapest other tool's (tracemalloc; memray's two modes, where installed), on
    # alloc_mix.py; a C program's malloc loop with the library loaded and allocation
    # sampling off, over the bare loop (its windows' CPU).
    "alloc_extra_cpu_over_cheaper_tool": 0.2,
    "alloc_c_loop_cpu_ratio_off": 1.005,
}

RESULT = "{result}"  # in a workload's argv: the JSON file it writes its own figures to
# Thread per request: the CPU each request's handler burns (server.py's loop is sized to
# it from deep.py's calibration); below one 10 ms period.
HANDLER_CPU_S = 0.0015

RUN_TIMEOUT = 120.0  # seconds; a run that takes longer is killed and counted as failed


WORKLOAD_NAMES = ["cpu", "threads", "wall1", "wall8", "wall64", "fork", "deep30", "deep200",
                  "native", "native_deep10", "native_deep50", "thread_per_request",
                  "thread_create", "thread_create_c", "cpu-debian"]
PART_NAMES = ["accuracy", "throughput", "steady_state", "whole_cost", "spans", "versions",
              "alloc"]

# The per-version section: interpreters by version (anything else given is a path), and
# the workloads it runs on each.
SID_BIN = os.path.join(REPO, "build", "sid", "bin")  # tests/sid/sid-root.sh's wrappers
VERSION_PYTHONS = {"3.13": ("pyenv", "3.13.0"), "3.14": ("sid", "python3.14"),
                   "3.15": ("sid", "python3.15")}
DEFAULT_VERSIONS = "3.13,3.14"
VERSION_WORKLOADS = ["cpu", "deep30"]

# The allocation part: PYPROF_ALLOC's mean intervals, and alloc_mix.py's functions whose
# allocated bytes it knows exactly (the accuracy check).
ALLOC_INTERVALS = ("512KB", "64KB")
ALLOC_KNOWN = ("blobs_small", "blobs_mid", "blobs_large")

T0 = time.monotonic()


def log(msg):
    sys.stderr.write("bench [%4.0f s]: %s\n" % (time.monotonic() - T0, msg))
    sys.stderr.flush()


# ---- statistics -------------------------------------------------------------------------

def boot_median_ci(xs, n=2000, seed=5):
    """95 % percentile-bootstrap interval of the median of xs."""
    if len(xs) < 3:
        return None
    rnd = random.Random(seed)
    meds = sorted(statistics.median(rnd.choices(xs, k=len(xs))) for _ in range(n))
    return [meds[int(0.025 * n)], meds[int(0.975 * n) - 1]]


def summary(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs),
            "ci95_median": boot_median_ci(xs), "values": xs}


def check(value, target, below=True, ci=None):
    """'met', 'not met', 'unclear' (the 95 % interval straddles the target) or None."""
    if value is None or target is None:
        return None
    ok = value < target if below else value >= target
    if ci is not None and ci[0] < target <= ci[1]:
        return "unclear (met)" if ok else "unclear (not met)"
    return "met" if ok else "not met"


# ---- running one process ------------------------------------------------------------------

class Runner:
    def __init__(self, args, work):
        self.lib = args.lib
        self.tool = args.tool
        self.work = work
        self.keep = args.keep_logs
        self.count = 0
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("PYPROF_") and k != "LD_PRELOAD"}
        base["PYTHONHASHSEED"] = "0"
        # Byte-code caches go to the scratch directory, never into the source tree.
        base["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        self.base_env = base

    def spawn(self, argv, env, stdout=subprocess.DEVNULL):
        """Runs argv to its end; returns wall seconds, user+sys CPU seconds (of the process
        and every descendant it waited for), the exit code and the start of stderr."""
        errpath = os.path.join(self.work, "stderr.txt")
        with open(errpath, "wb") as err:
            t0 = time.perf_counter()
            p = subprocess.Popen(argv, env=env, stdout=stdout, stderr=err,
                                 stdin=subprocess.DEVNULL, cwd=WORKLOADS)
            killed = []

            def kill():
                killed.append(1)
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except OSError:
                    pass
            timer = threading.Timer(RUN_TIMEOUT, kill)
            timer.start()
            try:
                _, status, ru = os.wait4(p.pid, 0)
            finally:
                timer.cancel()
            wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        with open(errpath, "rb") as fh:
            stderr = fh.read(2000).decode("utf-8", "replace")
        return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "user_s": ru.ru_utime,
                "sys_s": ru.ru_stime, "exit": p.returncode, "timed_out": bool(killed),
                "stderr": stderr.strip()[:500] or None,
                "ok": p.returncode == 0 and not killed}

    def run(self, python, argv, setting):
        """One run of a workload under a setting (see SETTINGS).  An argument "{result}"
        is replaced by the path of a JSON file the workload writes; what it holds goes to
        the run's "result" (or "result_error" when it is missing or unreadable)."""
        env = dict(self.base_env)
        result_path = None
        if RESULT in argv:
            result_path = os.path.join(self.work, "result.json")
            argv = [result_path if a == RESULT else a for a in argv]
            if os.path.exists(result_path):
                os.unlink(result_path)
        kind = setting["kind"]
        logdir = None
        extra = []
        if kind == "pyprof":
            self.count += 1
            logdir = os.path.join(self.work, "logs", "run%05d" % self.count)
            os.makedirs(logdir)
            env["LD_PRELOAD"] = self.lib
            env["PYPROF_OUTPUT"] = logdir
            env.update(setting["env"])
        elif kind == "cprofile":
            extra = ["-m", "cProfile", "-o", os.path.join(self.work, "cprofile.out")]
        elif kind == "yappi":
            extra = ["-m", "yappi", "-c", "cpu", "-o", os.path.join(self.work, "yappi.out")]
        elif kind == "tracemalloc":
            extra = ["-X", "tracemalloc"]
        elif kind == "memray":
            memray_out = os.path.join(self.work, "memray.bin")
            extra = (["-m", "memray", "run", "-q", "-f"] + setting.get("args", [])
                     + ["-o", memray_out])
        r = self.spawn([python] + extra + argv, env)
        r["setting"] = setting["name"]
        if kind == "memray":
            try:
                r["memray_file_bytes"] = os.path.getsize(memray_out)
                os.unlink(memray_out)
            except OSError:
                pass
        if result_path and r["ok"]:
            try:
                with open(result_path) as fh:
                    r["result"] = json.load(fh)
            except (OSError, ValueError) as e:
                r["result_error"] = "the workload's result: %s" % e
        if logdir:
            if setting.get("no_python"):
                # A program without Python: the library should leave it alone, no log.
                r["log_files"] = len(os.listdir(logdir))
            else:
                r.update(self.read_logs(logdir, setting))
                if setting.get("alloc") and not r.get("log_error"):
                    try:
                        r["memory"] = self.memory_json(logdir)
                    except (RuntimeError, ValueError) as e:
                        r["log_error"] = str(e)
            if not self.keep:
                shutil.rmtree(logdir, ignore_errors=True)
        return r

    def report_json(self, path, top=1):
        argv = [self.tool, "report", "--json"] + (["--top", str(top)] if top else []) + [path]
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), out.returncode,
                                                     out.stderr.decode()[:300]))
        return json.loads(out.stdout)

    def memory_json(self, path, keep=ALLOC_KNOWN, top=12):
        """`pyprof report --memory --json` of a run's logs, cut down: the totals, the
        domains, the footer's counts, and the functions of `keep` (alloc_mix.py's, by
        name) and the first `top` by self bytes allocated (name, file, self's samples
        and bytes)."""
        argv = [self.tool, "report", "--memory", "--json", path]
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), out.returncode,
                                                     out.stderr.decode()[:300]))
        j = json.loads(out.stdout)
        procs = j["processes"]
        foot = lambda key: sum(p.get(key) or 0 for p in procs)  # noqa: E731
        fns = [{"name": f["name"], "file": f["file"], "line": f["line"],
                "samples": f["self"]["samples"], "alloc_bytes": f["self"]["alloc_bytes"]}
               for i, f in enumerate(j["functions"])
               if i < top or f["name"] in keep]
        return {"samples": j["total"]["samples"], "alloc_bytes": j["total"]["alloc_bytes"],
                "alloc_objects": j["total"]["alloc_objects"],
                "interval": max(p["alloc_interval"] for p in procs) if procs else None,
                "alloc_lost": foot("alloc_lost"), "frees_lost": foot("frees_lost"),
                "untracked": j.get("untracked"),
                "domains": {k: v["alloc_bytes"] for k, v in j["domains"].items()},
                "functions": fns}

    def read_logs(self, logdir, setting):
        """The figures a run's logs give (summed over its processes)."""
        files = [os.path.join(logdir, f) for f in os.listdir(logdir)]
        r = {"log_files": len(files), "log_bytes": sum(os.path.getsize(f) for f in files),
             "rate_hz": setting["rate"], "clock": setting["env"].get("PYPROF_CLOCK", "cpu")}
        if not files:
            r["log_error"] = "no log written"
            return r
        try:
            j = self.report_json(logdir)
        except (RuntimeError, ValueError) as e:
            r["log_error"] = str(e)
            return r
        procs = j["processes"]
        if setting.get("keep_reports"):
            r["reports"] = procs
        tot = lambda key: sum(p.get(key) or 0 for p in procs)  # noqa: E731
        r["processes"] = len(procs)
        r["threads"] = len(j.get("threads", []))
        r["samples"] = tot("samples")
        r["library_cpu_ns"] = tot("library_cpu_ns")
        r["duration_s"] = max(p["duration_s"] for p in procs)
        r["timers"] = sorted({p.get("timer") for p in procs if p.get("timer")})
        r["ended"] = sorted({p.get("ended") for p in procs})
        drops = {}
        for p in procs:
            for k, v in (p.get("dropped") or {}).items():
                drops[k] = drops.get(k, 0) + v
        r["dropped"] = {k: v for k, v in drops.items() if v}
        r["achieved_hz_footer"] = [p.get("achieved_hz") for p in procs]
        nat = [p["native"] for p in procs if p.get("native") and p["native"].get("ok")
               is not None]
        if nat:
            walks = sum(n["ok"] + n["truncated"] for n in nat)
            r["native"] = {"walks": walks, "truncated": sum(n["truncated"] for n in nat),
                           "skipped": sum(n["skipped"] for n in nat),
                           "unmerged": sum(n["unmerged"] for n in nat),
                           "walk_ns_per_sample": (sum(n["walk_ns"] for n in nat) / walks
                                                  if walks else None)}
        costs = [p["cost"] for p in procs if p.get("cost")]
        if costs:
            r["handler_ns"] = sum(c["handler_ns"] for c in costs)
            r["writer_ns"] = sum(c["writer_ns"] for c in costs)
            # The whole cost (None where a log has no measured signal cost).
            wholes = [c.get("whole_ns") for c in costs]
            r["whole_ns"] = sum(wholes) if all(w is not None for w in wholes) else None
            r["process_cpu_ns"] = sum(c.get("process_cpu_ns") or 0 for c in costs)
            r["calib_ns"] = sum(c.get("calib_ns") or 0 for c in costs)
            sig = [c["signal_cost_ns"] for c in costs if c.get("signal_cost_ns")]
            r["signal_cost_ns"] = max(sig) if sig else None
            # What the per-thread timers counted over the intervals their signals closed,
            # and the kernel's CPU of the same threads over the same intervals: a timer
            # that runs ahead of the kernel's clock counts time the host took (steal).
            r["clock_timer_ns"] = sum(c.get("clock_timer_ns") or 0 for c in costs)
            r["clock_kernel_ns"] = sum(c.get("clock_kernel_ns") or 0 for c in costs)
            r["clock_corrected"] = all(c.get("clock_corrected") for c in costs)
            r["timer_excess"] = (r["clock_timer_ns"] / r["clock_kernel_ns"] - 1
                                 if r["clock_kernel_ns"] else None)
            # Histogram by depth: counts summed over processes; median and p90 of the
            # process with the most samples in that bucket.
            by = {}
            for c in costs:
                for b in c["by_depth"]:
                    k = b["max_depth"]
                    cur = by.get(k)
                    if cur is None or b["samples"] > cur["best"]:
                        by[k] = {"max_depth": k, "samples": (cur or {}).get("samples", 0)
                                 + b["samples"], "median_ns": b["median_ns"],
                                 "p90_ns": b["p90_ns"], "best": b["samples"]}
                    else:
                        cur["samples"] += b["samples"]
            order = [b["max_depth"] for b in costs[0]["by_depth"]]
            r["handler_by_depth"] = [{k: v for k, v in by[d].items() if k != "best"}
                                     for d in order if d in by]
        else:
            r["handler_ns"] = r["writer_ns"] = None
            r["handler_by_depth"] = None
        rate = setting["rate"]
        samples = r["samples"]
        if samples:
            r["log_bytes_per_sample"] = r["log_bytes"] / samples
            r["handler_ns_per_sample"] = (r["handler_ns"] / samples
                                          if r["handler_ns"] is not None else None)
            r["writer_ns_per_sample"] = (r["writer_ns"] / samples
                                         if r["writer_ns"] is not None else None)
            r["library_ns_per_sample"] = r["library_cpu_ns"] / samples
        if r["clock"] == "cpu":
            # Strict: every CPU second of the process (wait4) should give `rate` samples.
            # Python-running: the writer thread's CPU is not sampled, and ticks that found
            # no interpreter running (start-up, finalization; counted by the library) had
            # nothing to sample.
            r["nothing_to_sample"] = drops.get("not_ready", 0) + drops.get("no_python", 0)
        else:
            hz = [p.get("achieved_hz") for p in procs if p.get("achieved_hz") is not None]
            r["achieved"] = (sum(hz) / len(hz) / rate) if hz else None
        return r


def finish_run(r, launcher_cpu_s=0.0):
    """Figures that need both the process's own CPU time and the log's.  launcher_cpu_s:
    the CPU of a wrapper that runs before the interpreter (the sid root's chroot), which
    the library never sees, left out of the process's CPU here."""
    if r.get("samples") is None or not r.get("ok"):
        return r
    cpu = r["cpu_s"] - launcher_cpu_s
    if launcher_cpu_s:
        r["launcher_cpu_s"] = launcher_cpu_s
    if cpu > 0:
        r["library_cpu_share"] = r["library_cpu_ns"] / 1e9 / cpu
    if r["clock"] == "cpu" and cpu > 0:
        rate = r["rate_hz"]
        r["expected_strict"] = cpu * rate
        r["achieved_strict"] = r["samples"] / r["expected_strict"]
        writer = (r.get("writer_ns") or 0) / 1e9
        r["expected"] = max((cpu - writer) * rate - r["nothing_to_sample"], 1e-9)
        r["achieved"] = r["samples"] / r["expected"]
    return r


# ---- workloads and settings ---------------------------------------------------------------

CORRECTION_OFF = " (correction off)"


def pyprof_setting(rate, clock="cpu", native=False, uncorrected=False):
    """The library at `rate` Hz.  uncorrected: with PYPROF_TEST_UNCORRECTED=1, a test
    setting that turns off the correction of each cpu-clock sample by the thread's own
    CPU clock (every timer signal one sample, as before the correction), to show the
    correction's cost beside the default; its rows are not checked against the targets,
    which are for what users run."""
    period = {100: "10ms", 1000: "1ms", 10000: "100us"}[rate]
    name = "pyprof %s %s%s" % ("100 Hz" if rate == 100 else "1 kHz", clock,
                               " native" if native else "")
    env = {"PYPROF_PERIOD": period}
    if clock != "cpu":
        env["PYPROF_CLOCK"] = clock
    if native:
        env["PYPROF_NATIVE"] = "1"
    out = {"name": name, "kind": "pyprof", "rate": rate, "env": env}
    if uncorrected:
        env["PYPROF_TEST_UNCORRECTED"] = "1"
        out.update(name=name + CORRECTION_OFF, test_only=True, corrected_name=name)
    return out


def with_correction_off(settings):
    """settings with, after each cpu-clock pyprof setting, the same with the correction
    off: side by side in the table, and run back to back in every repetition."""
    out = []
    for s in settings:
        out.append(s)
        if s["kind"] == "pyprof" and "PYPROF_CLOCK" not in s["env"] and \
                "PYPROF_NATIVE" not in s["env"]:
            out.append(pyprof_setting(s["rate"], uncorrected=True))
    return out


BARE = {"name": "bare", "kind": "bare", "rate": None, "env": {}}
CPROFILE = {"name": "cProfile", "kind": "cprofile", "rate": None, "env": {}}
YAPPI = {"name": "yappi (cpu clock)", "kind": "yappi", "rate": None, "env": {}}


def make_groups(py, rounds, debian, clib, want):
    """The workloads of `want`, each with its settings.  rounds: calibrated work sizes;
    clib: thread_create.c compiled (None: no C loop)."""
    std = [BARE, pyprof_setting(100), pyprof_setting(1000)]
    groups = [
        {"name": "cpu", "python": py, "argv": lambda: ["cpu.py", str(rounds["cpu"])],
         "what": "CPU-bound pure Python: calls, object churn, json, regex, recursion",
         "settings": with_correction_off(std) + [CPROFILE]},
        {"name": "threads", "python": py,
         "argv": lambda: ["threads.py", str(rounds["threads"])],
         "what": "four CPU-bound threads and two sleeping ones",
         "settings": std + [pyprof_setting(100, "wall"), pyprof_setting(1000, "wall")]},
    ] + [
        {"name": "wall%d" % n, "python": py,
         "argv": (lambda n=n: ["wall_threads.py", str(n), str(rounds["wall"])]),
         "what": "%d thread%s each working a fifth of the time (rounds of the CPU-bound mix, "
                 "each followed by a sleep four times as long): wall mode's cost"
                 % (n, "" if n == 1 else "s"),
         "settings": [BARE, pyprof_setting(100, "wall"), pyprof_setting(1000, "wall")]}
        for n in (1, 8, 64)
    ] + [
        {"name": "fork", "python": py, "argv": lambda: ["fork.py", str(rounds["fork"])],
         "what": "a parent that forks three CPU-bound workers (os._exit) and waits",
         "settings": list(std)},
        {"name": "deep30", "python": py,
         "argv": lambda: ["deep.py", "30", str(rounds["deep30"])],
         "what": "CPU-bound loop with 30 Python frames on the stack", "depth": 30,
         "settings": with_correction_off(std)},
        {"name": "deep200", "python": py,
         "argv": lambda: ["deep.py", "200", str(rounds["deep200"])],
         "what": "CPU-bound loop with 200 Python frames on the stack", "depth": 200,
         "settings": list(std)},
        {"name": "native", "python": py, "argv": lambda: ["cpu.py", str(rounds["cpu"])],
         "what": "the CPU-bound workload with native frames recorded (PYPROF_NATIVE=1)",
         "settings": [BARE, pyprof_setting(1000), pyprof_setting(100, native=True),
                      pyprof_setting(1000, native=True)]},
        {"name": "native_deep10", "python": py,
         "argv": lambda: ["deep_c.py", "10", str(rounds["native_deep10"])],
         "what": "CPU-bound loop under 10 Python frames each called from C (map), native "
                 "frames recorded", "native_depth": 10,
         "settings": [BARE, pyprof_setting(1000), pyprof_setting(1000, native=True)]},
        {"name": "native_deep50", "python": py,
         "argv": lambda: ["deep_c.py", "50", str(rounds["native_deep50"])],
         "what": "CPU-bound loop under 50 Python frames each called from C (map), native "
                 "frames recorded", "native_depth": 50,
         "settings": [BARE, pyprof_setting(1000), pyprof_setting(1000, native=True)]},
        {"name": "thread_per_request", "python": py,
         "argv": lambda: ["server.py", str(rounds["thread_per_request"]),
                          str(rounds["thread_per_request_loop"]), RESULT],
         "what": "a socketserver.ThreadingMixIn TCP server answering requests sent one "
                 "after another by a client thread, each in a new thread that burns about "
                 "%.1f ms of CPU" % (HANDLER_CPU_S * 1e3),
         "settings": list(std)},
        {"name": "thread_create", "python": py,
         "argv": lambda: ["thread_create.py", str(rounds["thread_create"]), RESULT],
         "what": "creates and joins threading.Thread objects that do nothing, one at a time",
         "loop": "threading", "no_targets": True, "settings": list(std)},
        {"name": "thread_create_c", "python": py,
         "argv": lambda: ["thread_create.py", str(rounds["thread_create"]), RESULT, clib],
         "what": "creates and joins pthreads that do nothing, one at a time, in C "
                 "(thread_create.c through ctypes)",
         "loop": "pthread", "no_targets": True, "settings": list(std)},
    ]
    if debian:
        sets = [BARE, pyprof_setting(100), pyprof_setting(1000), CPROFILE]
        if debian.get("yappi"):
            sets.append(YAPPI)
        groups.append({"name": "cpu-debian", "python": DEBIAN_PY,
                       "argv": lambda: ["cpu.py", str(rounds["cpu-debian"])],
                       "what": "the CPU-bound workload (a quarter of its size) on Debian's "
                               "/usr/bin/python3.11, for yappi (packaged only for it)",
                       "settings": sets})
    out = []
    for g in groups:
        if g["name"] not in want or (g["name"] == "thread_create_c" and not clib):
            continue
        g["argv"] = g["argv"]()
        out.append(g)
    return out


# ---- calibration --------------------------------------------------------------------------

def cpu_of(runner, py, argv, tries=2):
    best = None
    for _ in range(tries):
        r = runner.spawn([py] + argv, runner.base_env)
        if not r["ok"]:
            raise RuntimeError("calibration run %s failed: exit %s %s"
                               % (argv, r["exit"], r["stderr"]))
        best = r["cpu_s"] if best is None else min(best, r["cpu_s"])
    return best


def per_round(runner, py, argv_of, lo, hi):
    """CPU seconds per round of a workload: the slope between two sizes (start-up out)."""
    a = cpu_of(runner, py, argv_of(lo))
    b = cpu_of(runner, py, argv_of(hi))
    return max((b - a) / (hi - lo), 1e-7), a - lo * max((b - a) / (hi - lo), 0)


def calibrate(runner, py, secs, debian, want):
    """Work sizes of the parts in `want` (names of workloads and parts), from the CPU a
    round of each takes here."""
    rounds, per = {}, {}
    start = None
    if want & {"cpu", "threads", "wall1", "wall8", "wall64", "fork", "cpu-debian", "native",
               "throughput", "steady_state"}:
        cpu_round, start = per_round(runner, py, lambda n: ["cpu.py", str(n)], 20, 120)
        per["cpu"] = cpu_round
        rounds["cpu"] = max(8, int(secs["cpu"] / cpu_round))
        rounds["threads"] = max(8, int(secs["threads"] / cpu_round) // 4 * 4)
        rounds["wall"] = max(64, int(secs["threads"] / cpu_round) // 64 * 64)
        rounds["fork"] = max(6, int(secs["fork"] / cpu_round) // 3 * 3)
        if debian:
            rounds["cpu-debian"] = max(4, rounds["cpu"] // 4)
    if "deep30" in want:
        per["deep30"], _ = per_round(runner, py, lambda n: ["deep.py", "30", str(n)],
                                     200, 1200)
        rounds["deep30"] = max(50, int(secs["deep"] / per["deep30"]))
    for d in (10, 50):
        name = "native_deep%d" % d
        if name in want:
            per[name], _ = per_round(runner, py,
                                     lambda n, d=d: ["deep_c.py", str(d), str(n)], 200, 1200)
            rounds[name] = max(50, int(secs["deep"] / per[name]))
    if "deep200" in want:
        per["deep200"], _ = per_round(runner, py, lambda n: ["deep.py", "200", str(n)],
                                      200, 1200)
        rounds["deep200"] = max(50, int(secs["deep"] / per["deep200"]))
    if "accuracy" in want:
        per["shares"], _ = per_round(runner, py,
                                     lambda n: ["shares.py", str(n), os.devnull], 5, 30)
        rounds["shares"] = max(10, int(secs["shares"] / per["shares"]))
    if "thread_per_request" in want:
        lo, hi = secs["requests_calibration"]
        loop = handler_loop(runner, py, lo)
        per["thread_per_request"], _ = per_round(
            runner, py, lambda n: ["server.py", str(n), str(loop)], lo, hi)
        rounds["thread_per_request"] = max(50, int(secs["thread_per_request"]
                                                   / per["thread_per_request"]))
        rounds["thread_per_request_loop"] = loop
    if want & {"thread_create", "thread_create_c"}:
        rounds["thread_create"] = secs["thread_create_n"]
    return rounds, {"cpu_s_per_round": per, "interpreter_startup_cpu_s": start,
                    "cpu_s_per_round_note": "deep30/deep200: 1000 loop iterations; "
                    "thread_per_request: one request (handler thread, its loop, the "
                    "connection, both ends)"}


def handler_loop(runner, py, requests, guess=20000):
    """server.py's loop size for HANDLER_CPU_S of CPU per request: scaled twice by what
    the handler threads of a short run measured (their own CPU clock)."""
    loop = guess
    for _ in range(2):
        r = runner.run(py, ["server.py", str(requests), str(loop), RESULT], BARE)
        if not r["ok"] or not r.get("result", {}).get("handler_calls"):
            raise RuntimeError("calibration run server.py failed: exit %s %s %s"
                               % (r["exit"], r.get("result_error") or "", r["stderr"]))
        per_call = r["result"]["handler_cpu_s"] / r["result"]["handler_calls"]
        loop = max(1000, int(loop * HANDLER_CPU_S / max(per_call, 1e-6)))
    return loop


def compile_clib(work):
    """thread_create.c as a shared object in the scratch directory; (path, None), or
    (None, why not)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None, "no C compiler (cc, gcc or $CC): no C-level thread create+join"
    out = os.path.join(work, "thread_create.so")
    r = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-pthread", "-o", out,
                        os.path.join(WORKLOADS, "thread_create.c")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        return None, "compiling thread_create.c failed: %s" % r.stdout.decode()[:300]
    return out, None


# ---- the parts ----------------------------------------------------------------------------

def run_reps(runner, groups, budget_end, min_reps, max_reps, reserve, hard_slack=30.0):
    """Interleaved repetitions until max_reps, or until another would pass the budget
    (min_reps of them while they fit within hard_slack past it, and never fewer than 3)."""
    runs = {g["name"]: [] for g in groups}
    rep_times = []
    failures = []
    for rep in range(max_reps if groups else 0):
        t0 = time.monotonic()
        for g in groups:
            order = g["settings"] if rep % 2 == 0 else list(reversed(g["settings"]))
            for s in order:
                r = finish_run(runner.run(g["python"], g["argv"], s),
                               g.get("launcher_cpu_s", 0.0))
                r["rep"] = rep
                r["load1"] = os.getloadavg()[0]
                runs[g["name"]].append(r)
                if not r["ok"] or r.get("log_error") or r.get("result_error"):
                    failures.append({"workload": g["name"], "setting": s["name"],
                                     "rep": rep, "exit": r["exit"],
                                     "timed_out": r["timed_out"], "stderr": r["stderr"],
                                     "log_error": r.get("log_error"),
                                     "result_error": r.get("result_error")})
                    log("FAILED: %s / %s rep %d: exit %s %s %s" % (
                        g["name"], s["name"], rep, r["exit"],
                        r.get("log_error") or r.get("result_error") or "",
                        (r["stderr"] or "")[:200]))
        rep_times.append(time.monotonic() - t0)
        left = budget_end - time.monotonic() - reserve
        log("repetition %d done in %.1f s (load %.1f); %.0f s of budget left"
            % (rep + 1, rep_times[-1], os.getloadavg()[0], left))
        need = max(rep_times[-3:]) * 1.1
        if left < need and (rep + 1 >= min_reps or
                            (rep + 1 >= 3 and left + hard_slack < need)):
            break
    return runs, rep_times, failures


def analyse_group(g, runs):
    """Ratios and log figures of one workload, per setting."""
    bare = {r["rep"]: r for r in runs if r["setting"] == "bare" and r["ok"]}
    out = {"what": g["what"], "python": g["python"], "argv": g["argv"], "settings": {}}
    if "depth" in g:
        out["depth"] = g["depth"]
    if g.get("no_targets"):
        # Thread creation and exit only: most of the CPU is the kernel's, making and
        # ending threads, partly outside any thread's timer; its figures are shown, not
        # checked against the targets, which are for workloads that run Python.
        out["checked_against_targets"] = False
    for s in g["settings"]:
        mine = [r for r in runs if r["setting"] == s["name"] and r["ok"]]
        res = {"kind": s["kind"], "env": s["env"], "runs_ok": len(mine),
               "runs_failed": len([r for r in runs if r["setting"] == s["name"]
                                   and not r["ok"]]),
               "wall_s": summary([r["wall_s"] for r in mine]),
               "cpu_s": summary([r["cpu_s"] for r in mine])}
        if s["kind"] != "bare":
            pairs = [(r, bare[r["rep"]]) for r in mine if r["rep"] in bare]
            res["wall_ratio"] = summary([r["wall_s"] / b["wall_s"] for r, b in pairs])
            res["cpu_ratio"] = summary([r["cpu_s"] / b["cpu_s"] for r, b in pairs])
        if s["kind"] == "pyprof":
            logged = [r for r in mine if r.get("samples")]
            res["rate_hz"] = s["rate"]
            res["clock"] = s["env"].get("PYPROF_CLOCK", "cpu")
            res["timers"] = sorted({t for r in logged for t in r.get("timers", [])})
            res["samples"] = summary([r["samples"] for r in logged])
            res["log_bytes_per_sample"] = summary([r["log_bytes_per_sample"] for r in logged])
            res["library_cpu_share"] = summary([r.get("library_cpu_share") for r in logged])
            res["library_ns_per_sample"] = summary([r["library_ns_per_sample"]
                                                    for r in logged])
            res["handler_ns_per_sample"] = summary([r.get("handler_ns_per_sample")
                                                    for r in logged])
            res["writer_ns_per_sample"] = summary([r.get("writer_ns_per_sample")
                                                   for r in logged])
            res["achieved"] = summary([r.get("achieved") for r in logged])
            if res["clock"] == "cpu":
                res["achieved_strict"] = summary([r.get("achieved_strict") for r in logged])
                exp = sum(r["expected"] for r in logged if r.get("expected"))
                res["achieved_pooled"] = (sum(r["samples"] for r in logged) / exp
                                          if exp else None)
            drops = {}
            for r in logged:
                for k, v in r.get("dropped", {}).items():
                    drops[k] = drops.get(k, 0) + v
            res["dropped_total"] = drops
            res["handler_by_depth"] = depth_histogram(logged)
            nat = [r["native"] for r in logged if r.get("native")]
            if nat:
                res["native_walk_ns_per_sample"] = summary([n["walk_ns_per_sample"]
                                                            for n in nat])
                res["native_truncated_share"] = summary(
                    [n["truncated"] / n["walks"] for n in nat if n["walks"]])
                res["native_unmerged"] = sum(n["unmerged"] for n in nat)
            if "depth" in g:
                res["handler_at_depth"] = at_depth(res["handler_by_depth"], g["depth"])
            if res["clock"] == "cpu":
                res["timer_excess"] = summary([r.get("timer_excess") for r in logged])
                res["clock_corrected"] = bool(logged) and all(r.get("clock_corrected")
                                                              for r in logged)
                # Whether the library read the threads' CPU clock at all (the log's
                # counters): tells what the correction-off rows leave out.
                res["clock_read"] = any(r.get("clock_kernel_ns") for r in logged)
            if s.get("test_only"):
                res["test_only"] = True
            if s.get("corrected_name"):
                # The correction's whole cost, paired as the bare ratios are: the
                # corrected run over the correction-off run of the same repetition.
                on = {r["rep"]: r for r in runs
                      if r["setting"] == s["corrected_name"] and r["ok"]}
                pairs = [(on[r["rep"]], r) for r in mine if r["rep"] in on]
                res["corrected_over_off"] = {
                    "setting": s["corrected_name"],
                    "cpu_ratio": summary([a["cpu_s"] / b["cpu_s"] for a, b in pairs]),
                    "wall_ratio": summary([a["wall_s"] / b["wall_s"] for a, b in pairs])}
        out["settings"][s["name"]] = res
    return out


def depth_histogram(logged):
    """Per depth bucket: samples summed over the runs; the median over runs of each run's
    median and p90 handler time in that bucket (runs with at least 20 samples there)."""
    buckets = {}
    order = []
    for r in logged:
        for b in r.get("handler_by_depth") or []:
            k = b["max_depth"]
            if k not in buckets:
                buckets[k] = {"samples": 0, "medians": [], "p90s": []}
                order.append(k)
            buckets[k]["samples"] += b["samples"]
            if b["samples"] >= 20:
                buckets[k]["medians"].append(b["median_ns"])
                buckets[k]["p90s"].append(b["p90_ns"])
    if not order:
        return None
    out = []
    lo = 0
    for k in order:
        b = buckets[k]
        out.append({"depth_from": lo + 1, "depth_to": k, "samples": b["samples"],
                    "median_ns": statistics.median(b["medians"]) if b["medians"] else None,
                    "p90_ns": statistics.median(b["p90s"]) if b["p90s"] else None,
                    "runs": len(b["medians"])})
        lo = k if k is not None else lo
    return out


def at_depth(hist, depth):
    for b in hist or []:
        if b["depth_from"] <= depth and (b["depth_to"] is None or depth <= b["depth_to"]):
            return b
    return None


def analyse_thread_per_request(g, runs):
    """The thread-per-request workload: per setting, the overhead ratios, the CPU per
    request, and samples achieved against expected = process CPU x rate (every thread's
    CPU, however short its life, should be sampled in proportion)."""
    n = int(g["argv"][1])
    ok = [r for r in runs if r["ok"] and r.get("result")]
    bare = {r["rep"]: r for r in ok if r["setting"] == "bare"}
    handler = [r["result"]["handler_cpu_s"] / r["result"]["handler_calls"]
               for r in bare.values() if r["result"].get("handler_calls")]
    out = {"what": g["what"], "requests": n, "handler_loop": int(g["argv"][2]),
           "handler_cpu_ms_aimed": HANDLER_CPU_S * 1e3,
           "handler_cpu_ms": summary([1e3 * x for x in handler]),
           "settings": {}}
    for s in g["settings"]:
        mine = [r for r in ok if r["setting"] == s["name"]]
        res = {"runs_ok": len(mine), "wall_s": summary([r["wall_s"] for r in mine]),
               "cpu_ms_per_request": summary([1e3 * r["cpu_s"] / n for r in mine]),
               "answered": sum(r["result"]["answered"] for r in mine),
               "sent": n * len(mine)}
        if s["kind"] == "pyprof":
            pairs = [(r, bare[r["rep"]]) for r in mine if r["rep"] in bare]
            res["wall_ratio"] = summary([r["wall_s"] / b["wall_s"] for r, b in pairs])
            res["cpu_ratio"] = summary([r["cpu_s"] / b["cpu_s"] for r, b in pairs])
            logged = [r for r in mine if r.get("samples") is not None and r.get("cpu_s")]
            res["rate_hz"] = s["rate"]
            res["samples"] = summary([r["samples"] for r in logged])
            res["expected"] = summary([r["cpu_s"] * s["rate"] for r in logged])
            res["achieved"] = summary([r["samples"] / (r["cpu_s"] * s["rate"])
                                       for r in logged])
            exp = sum(r["cpu_s"] * s["rate"] for r in logged)
            res["achieved_pooled"] = sum(r["samples"] for r in logged) / exp if exp else None
            res["achieved_python_running"] = summary([r.get("achieved") for r in logged])
            res["threads_in_profile"] = summary([r.get("threads") for r in logged])
            res["library_cpu_share"] = summary([r.get("library_cpu_share") for r in logged])
            drops = {}
            for r in logged:
                for k, v in r.get("dropped", {}).items():
                    drops[k] = drops.get(k, 0) + v
            res["dropped_total"] = drops
        out["settings"][s["name"]] = res
    return out


def analyse_thread_create(g, runs):
    """Thread create+join: the workload's own timing of its loop (wall, perf_counter; and
    the process CPU across the loop), per thread, with and without the library, and the
    with/without ratio and difference of the same repetition."""
    n = int(g["argv"][1])
    ok = [r for r in runs if r["ok"] and r.get("result")]
    bare = {r["rep"]: r for r in ok if r["setting"] == "bare"}

    def us(r):
        return 1e6 * r["result"]["loop_s"] / n

    def cus(r):
        return 1e6 * r["result"]["loop_cpu_s"] / n
    out = {"what": g["what"], "loop": g["loop"], "threads": n, "settings": {}}
    for s in g["settings"]:
        mine = [r for r in ok if r["setting"] == s["name"]]
        res = {"runs_ok": len(mine),
               "us_per_thread": summary([us(r) for r in mine]),
               "cpu_us_per_thread": summary([cus(r) for r in mine]),
               "process_cpu_s": summary([r["cpu_s"] for r in mine])}
        if s["kind"] != "bare":
            pairs = [(r, bare[r["rep"]]) for r in mine if r["rep"] in bare]
            res["ratio"] = summary([us(r) / us(b) for r, b in pairs])
            res["added_us_per_thread"] = summary([us(r) - us(b) for r, b in pairs])
            res["cpu_ratio"] = summary([cus(r) / cus(b) for r, b in pairs if cus(b) > 0])
            res["added_cpu_us_per_thread"] = summary([cus(r) - cus(b) for r, b in pairs])
        out["settings"][s["name"]] = res
    return out


def long_runs(runner, py, rounds, factor):
    """One long cpu.py run per rate, for the steady-state figures (see steady_state)."""
    out = {}
    for setting in (pyprof_setting(100), pyprof_setting(1000)):
        out[setting["name"]] = finish_run(
            runner.run(py, ["cpu.py", str(int(rounds * factor))], setting))
    return out


def steady_bytes_target(name):
    """The steady state's target of log bytes per sample: 4 at 100 Hz, the whole runs'
    elsewhere."""
    return TARGETS["log_bytes_per_sample_steady_100hz" if "100 Hz" in name
                   else "log_bytes_per_sample_cpu_workload"]


def steady_state(longs, short_runs):
    """Samples achieved and log bytes per sample past start-up and exit: a long cpu.py run
    per rate, set against the median of the short runs of the repetitions."""
    out = {}
    for name, r in longs.items():
        rate = r["rate_hz"]
        shorts = [x for x in short_runs if x["setting"] == name and x["ok"]
                  and x.get("samples")]
        if not r["ok"] or not r.get("samples"):
            out[name] = {"error": r.get("log_error") or r["stderr"] or "exit %s" % r["exit"]}
            continue
        if not shorts:
            continue
        s_samples = statistics.median(x["samples"] for x in shorts)
        s_bytes = statistics.median(x["log_bytes"] for x in shorts)
        s_cpu = statistics.median(x["cpu_s"] - (x.get("writer_ns") or 0) / 1e9
                                  for x in shorts)
        l_cpu = r["cpu_s"] - (r.get("writer_ns") or 0) / 1e9
        ds = r["samples"] - s_samples
        res = {"long_run": {k: r.get(k) for k in ("cpu_s", "wall_s", "samples", "log_bytes",
                                                  "achieved", "achieved_strict",
                                                  "library_cpu_share", "dropped",
                                                  "handler_ns_per_sample",
                                                  "writer_ns_per_sample")},
               "short_runs_median": {"samples": s_samples, "log_bytes": s_bytes,
                                     "python_cpu_s": s_cpu}}
        if ds > 0 and l_cpu > s_cpu:
            res["log_bytes_per_sample"] = (r["log_bytes"] - s_bytes) / ds
            res["achieved"] = ds / ((l_cpu - s_cpu) * rate)
        out[name] = res
    return out


def ratio_q(off, on, q=0.75):
    """The work rate with sampling off over the rate with it on, each taken at its q
    quantile over the windows: the host's interference only ever slows a window down,
    so the faster windows of each kind are the cleaner measure."""
    def at(xs):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))]
    return at(off) / at(on)


def boot_ratio_ci(off, on, n=2000, seed=7):
    """95 % percentile-bootstrap interval of ratio_q (windows resampled in each kind)."""
    rnd = random.Random(seed)
    vals = sorted(ratio_q(rnd.choices(off, k=len(off)), rnd.choices(on, k=len(on)))
                  for _ in range(n))
    return [vals[int(0.025 * n)], vals[int(0.975 * n) - 1]]


def whole_cost(runner, py, quick):
    """The whole cost of sampling, measured against what the log reports.

    work_rate.py runs cpu.py's rounds in one process, in windows of its main thread's
    CPU with sampling paused and running in turn (the control socket's pause and
    resume), after a warm-up long enough for the library to have measured its signal's
    cost.  A window's work rate is rounds per second of the main thread's CPU (the
    handler, the timer's interrupts and signal delivery all run there); its spread is
    the process's CPU over the main thread's (the library's own threads).  Measured:
    the CPU the same work takes with sampling over without,
    (rate off / rate on) x (spread on / spread off), the rates at the 75th percentile
    of their windows (ratio_q), with a bootstrap interval.  Reported: each running
    window's own log, P / (P - whole), where P is the process's CPU in the window and
    whole = library CPU + signals x signal_cost_ns; its median over the windows.

    Each rate is measured with the correction of cpu-clock samples on (the default) and
    off (PYPROF_TEST_UNCORRECTED=1), in separate processes, in the order on, off at
    100 Hz and off, on at 1 kHz, so that a drift of the host's speed over the part does
    not side with one of them.  The correction-off runs have half the windows: they
    are there for the comparison, and the whole part's time is taken out of the
    budget of the repetitions."""
    out = {}
    for i, (rate, warm) in enumerate(((100, 28.0), (1000, 9.0))):
        pair = [pyprof_setting(rate), pyprof_setting(rate, uncorrected=True)]
        for setting in pair if i % 2 == 0 else pair[::-1]:
            out[setting["name"]] = whole_cost_run(runner, py, setting, warm, quick)
    return out


def whole_cost_run(runner, py, setting, warm, quick):
    """One work_rate.py process of whole_cost under setting, and its figures."""
    secs, cycles = (0.4, 8) if quick else (0.4, 30)
    if setting.get("test_only"):
        cycles //= 2
    self_warm = 3.0 if quick else warm
    r = runner.run(py, ["work_rate.py", str(self_warm), str(secs), str(cycles), RESULT],
                   dict(setting, keep_reports=True))
    if not r["ok"] or "result" not in r:
        raise RuntimeError("work_rate.py under %s failed: exit %s %s" % (
            setting["name"], r["exit"], r.get("stderr") or r.get("result_error")))
    wins = r["result"]["windows"]
    rate_of = lambda w: w["rounds"] / w["thread_cpu_s"]  # noqa: E731
    spread_of = lambda w: w["process_cpu_s"] / w["thread_cpu_s"]  # noqa: E731
    off = [rate_of(w) for w in wins if not w["on"]]
    on = [rate_of(w) for w in wins if w["on"]]
    s_off = statistics.median(spread_of(w) for w in wins if not w["on"])
    s_on = statistics.median(spread_of(w) for w in wins if w["on"])
    sp = s_on / s_off
    measured = ratio_q(off, on) * sp
    ci = [x * sp for x in boot_ratio_ci(off, on)]
    neigh = []
    for i in range(1, len(wins) - 1):
        if wins[i]["on"] and not wins[i - 1]["on"] and not wins[i + 1]["on"]:
            o = (rate_of(wins[i - 1]) + rate_of(wins[i + 1])) / 2
            so = (spread_of(wins[i - 1]) + spread_of(wins[i + 1])) / 2
            neigh.append(o / rate_of(wins[i]) * spread_of(wins[i]) / so)
    procs = sorted(r.get("reports", []), key=lambda p: p["window"])
    running = [p for p in procs if p["window"] >= 1]
    rep_whole, rep_handler, per_m, per_r, sig = [], [], [], [], []
    for p in running:
        c = p.get("cost") or {}
        P, W = c.get("process_cpu_ns"), c.get("whole_ns")
        if c.get("signal_cost_ns"):
            sig.append(c["signal_cost_ns"] / 1e3)
        if not (P and W and P > W and p.get("samples")):
            continue
        rep_whole.append(P / (P - W))
        rep_handler.append(P / (P - c["handler_ns"]))
        per_r.append(W / p["samples"] / 1e3)
        per_m.append(P * (1 - 1 / measured) / p["samples"] / 1e3)
    res = {"windows_on": len(on), "window_s": secs, "warmup_s": self_warm,
           "cpu_ratio_measured": measured, "cpu_ratio_measured_ci95": ci,
           "cpu_ratio_neighbours": summary(neigh),
           "cpu_ratio_reported_whole": summary(rep_whole),
           "cpu_ratio_reported_handler_only": summary(rep_handler),
           "us_per_sample_measured": summary(per_m),
           "us_per_sample_reported": summary(per_r),
           "signal_cost_us": summary(sig),
           "calib_signals": max([(p.get("cost") or {}).get("calib_signals") or 0
                                 for p in procs] or [0])}
    if rep_whole and measured > 1:
        res["reported_over_measured"] = ((statistics.median(rep_whole) - 1)
                                         / (measured - 1))
    res["timer_excess"] = r.get("timer_excess")
    res["clock_read"] = bool(r.get("clock_kernel_ns"))
    return res


CLOCK_READ_CODE = """
import gc, sys, time
n, tries = int(sys.argv[1]), int(sys.argv[2])
def per(f):
    best = None
    for _ in range(tries):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            f()
        d = (time.perf_counter_ns() - t0) / n
        best = d if best is None else min(best, d)
    return best
print(per(time.thread_time_ns), per(gc.isenabled))
"""


def clock_read_cost(runner, py, n=100000, tries=5):
    """The system call the correction adds to every signal, timed apart: the handler's
    own time does not hold it (the clock is read before the sample is timed), and a
    microsecond or two per signal is below what whole runs resolve.
    time.thread_time_ns is the same clock_gettime(CLOCK_THREAD_CPUTIME_ID) (a system
    call: the vDSO does not serve thread CPU clocks); gc.isenabled, a C function that
    does nothing, takes the loop's and the call's own cost out.  Best of `tries` loops
    of n calls, in ns."""
    r = subprocess.run([py, "-c", CLOCK_READ_CODE, str(n), str(tries)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                       env=runner.base_env)
    if r.returncode != 0:
        raise RuntimeError("timing thread_time_ns: exit %d %s" % (
            r.returncode, r.stderr.decode()[-300:]))
    call, empty = (float(x) for x in r.stdout.split())
    read = max(call - empty, 0.0)
    return {"thread_time_ns_call_ns": call, "empty_call_ns": empty, "clock_read_ns": read,
            "extra_cpu_share": {"100": read * 100 / 1e9, "1000": read * 1000 / 1e9}}


def correction_summary(workloads, whole, clock_read):
    """The correction's cost, on and off beside each other, from the figures the parts
    already hold: per workload that ran both and per rate, the handler's median (at
    the workload's depth, else the bucket with most samples) and mean per sample, the
    library's CPU share, CPU and wall over bare, the corrected run's CPU over the
    correction-off run's of the same repetition, samples achieved and the timers'
    excess; the whole-cost part's measured and reported figures; and the clock read's
    own cost."""
    def med(x):
        return x["median"] if x else None

    def figs(s):
        hd = s.get("handler_at_depth")
        if not hd and s.get("handler_by_depth"):
            hd = max(s["handler_by_depth"], key=lambda b: b["samples"])
        return {"handler_median_ns": hd.get("median_ns") if hd else None,
                "handler_depths": [hd["depth_from"], hd["depth_to"]] if hd else None,
                "handler_mean_ns": med(s.get("handler_ns_per_sample")),
                "library_cpu_share": med(s.get("library_cpu_share")),
                "cpu_ratio": med(s.get("cpu_ratio")), "wall_ratio": med(s.get("wall_ratio")),
                "achieved_pooled": s.get("achieved_pooled"),
                "timer_excess": med(s.get("timer_excess")),
                "clock_read": s.get("clock_read"), "runs": s.get("runs_ok")}
    out = {"clock_read_cost": clock_read, "workloads": {}, "whole_cost": {}}
    for wname, w in workloads.items():
        for sname, s in w["settings"].items():
            co = s.get("corrected_over_off")
            if not co or co["setting"] not in w["settings"]:
                continue
            out["workloads"].setdefault(wname, {})[str(s["rate_hz"])] = {
                "on": figs(w["settings"][co["setting"]]), "off": figs(s),
                "corrected_over_off_cpu_ratio": co["cpu_ratio"],
                "corrected_over_off_wall_ratio": co["wall_ratio"]}
    for name, v in (whole or {}).items():
        if not isinstance(v, dict) or "error" in v:
            continue
        rep_ = v.get("cpu_ratio_reported_whole")
        key = "off" if name.endswith(CORRECTION_OFF) else "on"
        rate = "100" if "100 Hz" in name else "1000"
        out["whole_cost"].setdefault(rate, {})[key] = {
            "cpu_ratio_measured": v.get("cpu_ratio_measured"),
            "cpu_ratio_measured_ci95": v.get("cpu_ratio_measured_ci95"),
            "cpu_ratio_reported_whole": med(rep_), "windows_on": v.get("windows_on"),
            "timer_excess": v.get("timer_excess"), "clock_read": v.get("clock_read")}
    offs = [x["off"] for r in out["workloads"].values() for x in r.values()] + \
        [x["off"] for x in out["whole_cost"].values() if "off" in x]
    # What the correction-off rows leave out depends on whether the library still read
    # the clock in them: its counters in the log say.
    out["off_reads_clock"] = (any(o["clock_read"] for o in offs) if offs else None)
    return out


def excess_by_run(parts):
    """The timers' excess over the kernel's CPU clock of every cpu-clock run that read
    the clock, over the parts' runs: a summary, and the median per repetition of the
    main ones (what the host did as the bench went on)."""
    xs, reps = [], {}
    for part, runs in parts:
        for r in runs or []:
            x = r.get("timer_excess")
            if x is None or r.get("clock") != "cpu":
                continue
            xs.append(x)
            if part == "main":
                reps.setdefault(r["rep"], []).append(x)
    out = summary(xs) or {}
    out["by_repetition"] = [statistics.median(reps[k]) for k in sorted(reps)]
    return out


def accuracy(runner, py, rounds):
    """Known CPU shares (shares.py measures its own functions) against the profile's."""
    out = {}
    for setting in (pyprof_setting(1000), pyprof_setting(100)):
        truth_path = os.path.join(runner.work, "shares.json")
        runner.count += 1
        logdir = os.path.join(runner.work, "logs", "shares%05d" % runner.count)
        os.makedirs(logdir)
        env = dict(runner.base_env, LD_PRELOAD=runner.lib, PYPROF_OUTPUT=logdir,
                   **setting["env"])
        n = rounds if setting["rate"] == 1000 else rounds * 2
        r = runner.spawn([py, "shares.py", str(n), truth_path], env)
        if not r["ok"]:
            out[setting["name"]] = {"error": r["stderr"] or "exit %s" % r["exit"]}
            continue
        with open(truth_path) as fh:
            truth = json.load(fh)
        j = runner.report_json(logdir, top=0)
        got = {f["name"]: f["total"] for f in j["functions"] if f["name"] in truth}
        n_s = sum(got.values())
        t_s = sum(truth.values())
        funcs = {}
        for name in sorted(truth):
            p_true = truth[name] / t_s
            p_got = got.get(name, 0) / n_s if n_s else 0.0
            sigma = (p_true * (1 - p_true) / n_s) ** 0.5 if n_s else None
            funcs[name] = {"cpu_s": truth[name], "share_known": p_true, "samples":
                           got.get(name, 0), "share_measured": p_got,
                           "error_pp": 100 * (p_got - p_true),
                           "sampling_sigma_pp": 100 * sigma if sigma else None}
        errs = [abs(f["error_pp"]) for f in funcs.values()]
        sig = [f["error_pp"] / f["sampling_sigma_pp"] for f in funcs.values()
               if f["sampling_sigma_pp"]]
        out[setting["name"]] = {"samples_in_functions": n_s, "cpu_s": r["cpu_s"],
                                "functions": funcs, "max_abs_error_pp": max(errs),
                                "max_abs_error_in_sigmas": max(abs(x) for x in sig)
                                if sig else None}
        if not runner.keep:
            shutil.rmtree(logdir, ignore_errors=True)
    return out


def span_cost(runner, pythons, n, reps):
    """One span's start+stop (spans.py, the pyprof package) without the library, with it,
    and with it loaded but paused (PYPROF_SIGNAL: the process starts paused), per
    interpreter: the median over `reps` runs of each run's best loop, in ns."""
    out = {}
    keys = ("with_span_ns", "start_stop_ns", "decorated_extra_ns", "c_functions_ns",
            "empty_ns")
    for py in pythons:
        kinds = ["without", "with", "paused"]
        per = dict((k, []) for k in kinds)
        for rep in range(reps):
            for name in kinds[rep % 3:] + kinds[:rep % 3]:
                runner.count += 1
                res_path = os.path.join(runner.work, "spans.json")
                env = dict(runner.base_env, PYTHONPATH=os.path.join(REPO, "utils", "python"))
                logdir = None
                if name != "without":
                    logdir = os.path.join(runner.work, "logs", "spans%05d" % runner.count)
                    os.makedirs(logdir)
                    env.update(LD_PRELOAD=runner.lib, PYPROF_OUTPUT=logdir)
                if name == "paused":
                    env.update(PYPROF_SIGNAL="SIGUSR2")
                r = runner.spawn([py, "spans.py", str(n), res_path], env)
                if logdir and not runner.keep:
                    shutil.rmtree(logdir, ignore_errors=True)
                if not r["ok"]:
                    return {"error": r["stderr"] or "exit %s" % r["exit"]}
                with open(res_path) as fh:
                    per[name].append(json.load(fh))
        out[py] = {"version": interp_version(py), "spans_per_loop": n}
        for name, runs in per.items():
            out[py][name] = {k: statistics.median(r[k] for r in runs) for k in keys}
            out[py][name]["recording"] = all(r["recording"] for r in runs)
    return out


def throughput(runner, py, rounds, target_samples, secs, quick):
    """`pyprof report` speed on a directory of >= target_samples samples: real logs of two
    processes sampled every 100 us, hard-linked under other names until the directory
    holds enough (each link is read as a log of its own)."""
    d = os.path.join(runner.work, "big")
    os.makedirs(d)
    env = dict(runner.base_env, LD_PRELOAD=runner.lib, PYPROF_OUTPUT=d,
               PYPROF_PERIOD="100us")
    nproc = 1 if quick else 2
    t0 = time.perf_counter()
    procs = [subprocess.Popen([py, "threads.py", str(max(4, int(rounds * secs) // 4 * 4))],
                              env=env, cwd=WORKLOADS, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(nproc)]
    codes = [p.wait() for p in procs]
    gen_s = time.perf_counter() - t0
    if any(codes):
        return {"error": "generating the log: exits %s" % codes}
    real = [os.path.join(d, f) for f in sorted(os.listdir(d))]
    j = runner.report_json(d, top=1)
    real_samples = j["samples"]
    real_bytes = sum(os.path.getsize(f) for f in real)
    copies = 0
    total = real_samples
    while total < target_samples and real_samples:
        copies += 1
        for f in real:
            dst = os.path.join(d, "copy%03d.%s" % (copies, os.path.basename(f)))
            try:
                os.link(f, dst)
            except OSError:
                shutil.copyfile(f, dst)
        total += real_samples
    res = {"generated": {"processes": nproc, "period": "100us", "wall_s": gen_s,
                         "samples": real_samples, "log_bytes": real_bytes,
                         "log_bytes_per_sample": real_bytes / real_samples
                         if real_samples else None,
                         "per_process": [{"samples": p["samples"],
                                          "achieved_hz": p["achieved_hz"],
                                          "library_cpu_ns": p["library_cpu_ns"],
                                          "dropped": {k: v for k, v in p["dropped"].items()
                                                      if v}}
                                         for p in j["processes"]]},
           "links_of_each_log": copies, "logs": len(os.listdir(d)), "samples": total,
           "bytes": real_bytes * (copies + 1)}
    for mode, extra in (("text", []), ("json", ["--json"])):
        times = []
        for _ in range(3):
            r = runner.spawn([runner.tool, "report"] + extra + [d], runner.base_env)
            if not r["ok"]:
                res[mode] = {"error": r["stderr"] or "exit %s" % r["exit"]}
                break
            times.append(r)
        else:
            wall = statistics.median(t["wall_s"] for t in times)
            cpu = statistics.median(t["cpu_s"] for t in times)
            res[mode] = {"wall_s": [t["wall_s"] for t in times],
                         "cpu_s": [t["cpu_s"] for t in times],
                         "samples_per_s": total / wall,
                         "samples_per_cpu_s": total / cpu if cpu > 0 else None,
                         "best_samples_per_s": total / min(t["wall_s"] for t in times)}
    shutil.rmtree(d, ignore_errors=True)
    return res


def version_pythons(specs):
    """The interpreters of --versions: [(spec, path or None, why it is missing)].  A spec
    is a version of VERSION_PYTHONS (pyenv's build, or the sid root's wrapper) or a path."""
    out = []
    for spec in specs:
        where = VERSION_PYTHONS.get(spec)
        if where is None:
            p = shutil.which(spec)
            out.append((spec, p and os.path.abspath(p), None if p else "not found"))
        elif where[0] == "pyenv":
            p = pyenv_python(where[1])
            ok = os.access(p, os.X_OK)
            out.append((spec, p if ok else None, None if ok else "pyenv's %s not found (%s)"
                        % (where[1], p)))
        else:
            p = os.path.join(SID_BIN, where[1])
            ok = os.access(p, os.X_OK)
            out.append((spec, p if ok else None, None if ok else
                        "the sid root is missing (no %s; `make sid-root` makes it, "
                        "`make bench` does first)" % p))
    return out


def launcher_cpu(runner, py, n=5):
    """The CPU a wrapper takes before the interpreter starts, when py is one of the sid
    root's (the sid-run beside it running the root's /bin/true; median of n runs); 0 for
    any other interpreter."""
    sid_run = os.path.join(os.path.dirname(py), "sid-run")
    if not os.access(sid_run, os.X_OK):
        return 0.0
    xs = []
    for _ in range(n):
        r = runner.spawn([sid_run, "/bin/true"], runner.base_env)
        if not r["ok"]:
            raise RuntimeError("%s /bin/true failed: exit %s %s" % (sid_run, r["exit"],
                                                                   r["stderr"]))
        xs.append(r["cpu_s"])
    return statistics.median(xs)


def versions_part(runner, interps, secs, budget_s, min_reps, max_reps):
    """The overhead and handler figures of VERSION_WORKLOADS on each interpreter of
    interps ({spec: {"python", "version", "launcher_cpu_s"}}), each workload sized on
    each interpreter to the CPU of secs (as the main interpreter's): interleaved
    repetitions of their own, each running every workload on every interpreter (cpu on
    each, then deep30 on each), every setting (bare, 100 Hz and 1 kHz cpu clock) against
    the bare run of the same repetition."""
    t0 = time.monotonic()
    for spec, it in interps.items():
        log("per version: calibrating %s" % spec)
        rounds, calib = calibrate(runner, it["python"], secs, None, set(VERSION_WORKLOADS))
        it["rounds"] = {w: rounds[w] for w in VERSION_WORKLOADS}
        it["cpu_s_per_round"] = calib["cpu_s_per_round"]
    groups = []
    for wname in VERSION_WORKLOADS:
        for spec, it in interps.items():
            for g in make_groups(it["python"], it["rounds"], None, None, {wname}):
                # The correction-off settings are the main interpreter's alone: the
                # correction's cost does not depend on the interpreter.
                sets = [x for x in g["settings"] if x["kind"] in ("bare", "pyprof")
                        and not x.get("test_only")]
                groups.append(dict(g, name="%s@%s" % (wname, spec), workload=wname,
                                   spec=spec, launcher_cpu_s=it["launcher_cpu_s"],
                                   settings=sets))
    runs, rep_times, failures = run_reps(runner, groups, t0 + budget_s, min_reps,
                                         max_reps, 0.0)
    out = {"workloads_run": VERSION_WORKLOADS,
           "cpu_s_per_run": {"cpu": secs["cpu"], "deep30": secs["deep"]},
           "repetitions": len(rep_times),
           "repetition_s": rep_times, "failures": failures,
           "interpreters": {spec: dict(it, workloads={}) for spec, it in interps.items()}}
    for g in groups:
        out["interpreters"][g["spec"]]["workloads"][g["workload"]] = analyse_group(
            g, runs[g["name"]])
    out["runs"] = [dict(r, workload=w) for w, rs in runs.items() for r in rs]
    out["elapsed_s"] = time.monotonic() - t0
    return out


# ---- allocation sampling ------------------------------------------------------------------

def alloc_setting(interval=None, no_python=False):
    """pyprof at 100 Hz (cpu clock), with allocation sampling every `interval` bytes on
    average (PYPROF_ALLOC), or without it (None: PYPROF_ALLOC unset)."""
    env = {"PYPROF_PERIOD": "10ms"}
    if interval:
        env["PYPROF_ALLOC"] = interval
    return {"name": "pyprof alloc %s" % (interval or "off"), "kind": "pyprof", "rate": 100,
            "env": env, "alloc": None if no_python else interval, "no_python": no_python}


TRACEMALLOC = {"name": "tracemalloc", "kind": "tracemalloc", "rate": None, "env": {}}
MEMRAY = {"name": "memray", "kind": "memray", "rate": None, "env": {}, "args": []}
MEMRAY_PYALLOC = {"name": "memray --trace-python-allocators", "kind": "memray",
                  "rate": None, "env": {}, "args": ["--trace-python-allocators"]}
ALLOC_OFF = "pyprof alloc off"


def memray_version(py):
    """(version, None) of memray for interpreter py, or (None, why not)."""
    try:
        r = subprocess.run([py, "-c", "import importlib.metadata as m, memray; "
                            "print(m.version('memray'))"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if r.returncode == 0:
        return r.stdout.decode().strip(), None
    err = (r.stderr.decode().strip().splitlines() or ["exit %d" % r.returncode])[-1]
    return None, "%s (sid's python3-memray: `make bench` installs it into the sid root, " \
                 "or SID_EXTRA_PACKAGES=python3-memray make sid-root)" % err


def compile_alloc_loop(work):
    """alloc_loop.c as a program in the scratch directory; (path, None) or (None, why)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None, "no C compiler (cc, gcc or $CC): no C malloc loop"
    out = os.path.join(work, "alloc_loop")
    r = subprocess.run([cc, "-O2", "-o", out, os.path.join(WORKLOADS, "alloc_loop.c")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        return None, "compiling alloc_loop.c failed: %s" % r.stdout.decode()[:300]
    return out, None


def c_loop_instructions(runner, exe, settings, n=300000):
    """Instructions alloc_loop.c executes (n iterations) under callgrind, per setting:
    a count no other process's load moves, where valgrind is installed.  ({name: count}
    or {"error": why})."""
    vg = shutil.which("valgrind")
    if not vg:
        return {"error": "valgrind is not installed"}
    out = {}
    for s in settings:
        cg = os.path.join(runner.work, "callgrind.out")
        env = dict(runner.base_env)
        logdir = None
        if s["kind"] == "pyprof":
            logdir = tempfile.mkdtemp(dir=runner.work, prefix="cg-logs.")
            env.update(s["env"], LD_PRELOAD=runner.lib, PYPROF_OUTPUT=logdir)
        r = subprocess.run([vg, "-q", "--tool=callgrind", "--callgrind-out-file=" + cg, exe,
                            str(n)], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, cwd=runner.work)
        try:
            with open(cg) as fh:
                total = [int(line.split()[1]) for line in fh if line.startswith("summary:")]
            os.unlink(cg)
        except (OSError, ValueError):
            total = []
        if logdir:
            shutil.rmtree(logdir, ignore_errors=True)
        if r.returncode != 0 or not total:
            return {"error": "valgrind --tool=callgrind %s: exit %d %s" % (
                s["name"], r.returncode, r.stderr.decode()[-300:])}
        out[s["name"]] = total[0]
    return {"iterations": n, "instructions": out}


def alloc_part(runner, py, secs, quick, budget_s, min_reps, max_reps):
    """Allocation sampling: its cost against Python's tracemalloc and memray, its log
    bytes per sample, its accuracy on functions of known bytes, and a C program's malloc
    loop with the library loaded (see the module's docstring)."""
    t0 = time.monotonic()
    notes = []
    interps = {interp_version(py) or py: {"python": py, "launcher_cpu_s": 0.0}}
    memray = {"version": None, "why": "runs only on the sid root's python3.14"}
    for spec, p, why in version_pythons(["3.14"]):
        if p is None:
            memray["why"] = "the sid root's python3.14 is missing: %s" % why
            notes.append("alloc: no python3.14: %s" % why)
            continue
        v = interp_version(p)
        if not v:
            memray["why"] = "%s does not run" % p
            notes.append("alloc: %s does not run" % p)
            continue
        if os.path.realpath(p) == os.path.realpath(py):
            del interps[v]  # the main interpreter is the sid root's: once, with memray
        elif v in interps:
            v += " (sid)"
        interps[v] = {"python": p, "launcher_cpu_s": launcher_cpu(runner, p)}
        memray["version"], memray["why"] = memray_version(p)
        memray["python"] = v
    groups = []
    for v, it in interps.items():
        log("alloc: calibrating alloc_mix.py on %s" % v)
        per, _ = per_round(runner, it["python"], lambda n: ["alloc_mix.py", str(n)],
                           10 if quick else 20, 60 if quick else 120)
        it["rounds"] = max(10, int(secs["alloc"] / per))
        it["cpu_s_per_round"] = per
        sets = [BARE, alloc_setting()] + [alloc_setting(i) for i in ALLOC_INTERVALS] + \
            [TRACEMALLOC]
        if memray["version"] and it["python"].startswith(SID_BIN):
            sets += [MEMRAY, MEMRAY_PYALLOC]
        groups.append({"name": "alloc_mix@%s" % v, "python": it["python"], "version": v,
                       "argv": ["alloc_mix.py", str(it["rounds"]), RESULT],
                       "launcher_cpu_s": it["launcher_cpu_s"], "settings": sets})
    exe, why = compile_alloc_loop(runner.work)
    c_n = None
    if why:
        notes.append("alloc: %s" % why)
    else:
        r = runner.run(exe, ["2000000", RESULT], BARE)
        if not r["ok"] or not r.get("result"):
            notes.append("alloc: alloc_loop does not run: exit %s %s" % (r["exit"],
                                                                         r["stderr"]))
        else:
            c_n = max(100000, int(secs["alloc_c"] * 2000000 / r["result"]["loop_cpu_s"]))
            groups.append({"name": "alloc_loop.c", "python": exe, "c_loop": True,
                           "argv": [str(c_n), RESULT],
                           "settings": [BARE, alloc_setting(no_python=True),
                                        alloc_setting("512KB", no_python=True)]})
    log("alloc: repetitions %d to %d, %.0f s left of %.0f s: %s" % (
        min_reps, max_reps, budget_s - (time.monotonic() - t0), budget_s,
        ", ".join("%s (%s)" % (g["name"], g["argv"][0] if g.get("c_loop") else
                               g["argv"][1]) for g in groups)))
    runs, rep_times, failures = run_reps(runner, groups, t0 + budget_s, min_reps,
                                         max_reps, 0.0)
    # One run under tracemalloc that measures alloc_mix.py's known block sizes itself.
    traced = {}
    for g in groups:
        if g.get("c_loop"):
            continue
        path = os.path.join(runner.work, "alloc_trace.json")
        env = dict(runner.base_env, ALLOC_MIX_TRACE="1")
        r = runner.spawn([g["python"], "-X", "tracemalloc", "alloc_mix.py",
                          str(max(5, int(g["argv"][1]) // 10)), path], env)
        try:
            with open(path) as fh:
                traced[g["version"]] = json.load(fh)
            os.unlink(path)
        except (OSError, ValueError) as e:
            traced[g["version"]] = {"error": "exit %s %s %s" % (r["exit"], r["stderr"], e)}
    out = {"memray": memray, "notes": notes, "repetitions": len(rep_times),
           "repetition_s": rep_times, "failures": failures,
           "cpu_s_per_run": secs["alloc"], "c_loop_cpu_s_per_run": secs["alloc_c"],
           "interpreters": {}, "c_loop": None, "tracemalloc_check": traced}
    for g in groups:
        if g.get("c_loop"):
            out["c_loop"] = analyse_c_loop(g, runs[g["name"]])
            log("alloc: the C loop's instructions under callgrind")
            out["c_loop"]["callgrind"] = c_loop_instructions(runner, g["python"],
                                                             g["settings"])
        else:
            it = interps[g["version"]]
            res = analyse_alloc(g, runs[g["name"]])
            res.update(rounds=it["rounds"], cpu_s_per_round=it["cpu_s_per_round"],
                       launcher_cpu_s=it["launcher_cpu_s"],
                       accuracy=alloc_accuracy(runs[g["name"]]))
            out["interpreters"][g["version"]] = res
    out["runs"] = [dict(r, workload=w) for w, rs in runs.items() for r in rs]
    out["elapsed_s"] = time.monotonic() - t0
    return out


def by_rep(runs, name):
    return {r["rep"]: r for r in runs if r["setting"] == name and r["ok"]
            and not r.get("log_error") and not r.get("result_error")}


def analyse_alloc(g, runs):
    """Per setting of alloc_mix.py: CPU (less the sid wrapper's), the ratios to the bare
    run of the same repetition, pyprof's allocation samples and log bytes per allocation
    sample, and pyprof's extra CPU over each other tool's."""
    launcher = g.get("launcher_cpu_s") or 0.0
    cpu = lambda r: r["cpu_s"] - launcher  # noqa: E731
    bare = by_rep(runs, "bare")
    off = by_rep(runs, ALLOC_OFF)
    out = {"python": g["python"], "argv": g["argv"], "settings": {}}
    for s in g["settings"]:
        mine = by_rep(runs, s["name"])
        res = {"kind": s["kind"], "env": s["env"], "runs_ok": len(mine),
               "runs_failed": len([r for r in runs if r["setting"] == s["name"]]) - len(mine),
               "cpu_s": summary([cpu(r) for r in mine.values()]),
               "wall_s": summary([r["wall_s"] for r in mine.values()])}
        if s["kind"] != "bare":
            pairs = [(r, bare[k]) for k, r in mine.items() if k in bare]
            res["cpu_ratio"] = summary([cpu(r) / cpu(b) for r, b in pairs])
            res["wall_ratio"] = summary([r["wall_s"] / b["wall_s"] for r, b in pairs])
        if s.get("alloc"):
            mem = {k: r["memory"] for k, r in mine.items() if r.get("memory")}
            res["interval"] = max([m["interval"] for m in mem.values()] or [None])
            res["alloc_samples"] = summary([m["samples"] for m in mem.values()])
            res["alloc_lost"] = sum(m["alloc_lost"] for m in mem.values())
            res["frees_lost"] = sum(m["frees_lost"] for m in mem.values())
            res["alloc_bytes_estimated"] = summary([m["alloc_bytes"] for m in mem.values()])
            res["alloc_objects_estimated"] = summary([m["alloc_objects"]
                                                      for m in mem.values()])
            # The CPU added over the allocation-off run per allocation the process made
            # (estimated from the samples): the hooks' cost on every allocation and free,
            # the samples' own included.
            res["extra_ns_per_allocation_vs_off"] = summary(
                [1e9 * (cpu(mine[k]) - cpu(off[k])) / m["alloc_objects"]
                 for k, m in mem.items() if k in off and m["alloc_objects"]])
            res["log_bytes"] = summary([r["log_bytes"] for r in mine.values()])
            res["log_bytes_per_alloc_sample"] = summary(
                [(mine[k]["log_bytes"] - off[k]["log_bytes"]) / m["samples"]
                 for k, m in mem.items() if k in off and m["samples"]])
            res["cpu_ratio_vs_alloc_off"] = summary(
                [cpu(r) / cpu(off[k]) for k, r in mine.items() if k in off])
        if s["kind"] == "memray":
            res["output_bytes"] = summary([r.get("memray_file_bytes") for r in mine.values()])
        out["settings"][s["name"]] = res
    # The CPU of one more sample: the difference between the two intervals' runs of a
    # repetition over the difference of their ALLOC records.
    a, b = [by_rep(runs, alloc_setting(iv)["name"]) for iv in ALLOC_INTERVALS[:2]]
    out["marginal_us_per_alloc_sample"] = summary(
        [1e6 * (cpu(b[k]) - cpu(a[k])) / (b[k]["memory"]["samples"] - a[k]["memory"]["samples"])
         for k in a if k in b and a[k].get("memory") and b[k].get("memory")
         and b[k]["memory"]["samples"] != a[k]["memory"]["samples"]])
    # pyprof's extra CPU (over bare) over each other tool's, and over the cheaper's.
    others = [s["name"] for s in g["settings"] if s["kind"] in ("tracemalloc", "memray")]
    sets = {s["name"]: by_rep(runs, s["name"]) for s in g["settings"]}
    for iv in ALLOC_INTERVALS:
        name = alloc_setting(iv)["name"]
        res = out["settings"][name]
        res["extra_cpu_over"] = {o: extra_quotient(cpu, bare, sets[name], [sets[o]])
                                 for o in others}
        res["extra_cpu_over_cheaper"] = extra_quotient(cpu, bare, sets[name],
                                                       [sets[o] for o in others])
        if res["extra_cpu_over_cheaper"]:
            res["extra_cpu_over_cheaper"]["cheaper"] = min(
                others, key=lambda o: (out["settings"][o]["cpu_ratio"] or {}).get(
                    "median", float("inf")))
    return out


def extra_quotient(cpu, bare, mine, tools, n=2000, seed=11):
    """(median of mine's CPU ratio to bare - 1) / (the same for the cheapest of tools),
    over the repetitions that have every one of them; with a 95 % percentile-bootstrap
    interval (the repetitions resampled, the cheapest taken anew in each resample)."""
    reps = sorted(set(bare).intersection(mine, *tools))
    if len(reps) < 1:
        return None

    def q(rs):
        extra = lambda runs: statistics.median(  # noqa: E731
            cpu(runs[k]) / cpu(bare[k]) for k in rs) - 1
        cheapest = min(extra(t) for t in tools)
        return extra(mine) / cheapest if cheapest > 0 else None
    value = q(reps)
    ci = None
    if len(reps) >= 3:
        rnd = random.Random(seed)
        vals = sorted(v for v in (q(rnd.choices(reps, k=len(reps))) for _ in range(n))
                      if v is not None)
        if len(vals) > n // 2:
            ci = [vals[int(0.025 * len(vals))], vals[int(0.975 * len(vals)) - 1]]
    return {"value": value, "ci95": ci, "repetitions": len(reps)}


def alloc_accuracy(runs):
    """Per interval, pooled over its runs: pyprof's estimate of the bytes each of
    alloc_mix.py's known functions allocated (self: the innermost frame) against the
    workload's exact count, with the estimate's sampling sigma (an allocation of X bytes
    is sampled with p = 1 - exp(-X/I) and counts X/p: variance X^2 (1-p)/p each); and
    the first functions' shares of all bytes allocated (no truth to set them against)."""
    out = {}
    for iv in ALLOC_INTERVALS:
        name = alloc_setting(iv)["name"]
        mine = [r for r in by_rep(runs, name).values() if r.get("memory")
                and r.get("result")]
        if not mine:
            continue
        interval = mine[0]["memory"]["interval"]
        res = {"runs": len(mine), "interval": interval, "known": {}}
        for fn in ALLOC_KNOWN:
            est = true = var = 0
            samples = 0
            for r in mine:
                k = r["result"]["known"][fn]
                x = k["block_bytes"]
                p = -math.expm1(-x / interval)
                true += k["bytes"]
                var += k["calls"] * x * x * (1 - p) / p
                for f in r["memory"]["functions"]:
                    if f["name"] == fn and f["file"].endswith("alloc_mix.py"):
                        est += f["alloc_bytes"]
                        samples += f["samples"]
            sigma = var ** 0.5
            res["known"][fn] = {"block_bytes": x, "true_bytes": true, "estimated_bytes": est,
                                "samples": samples, "error": est / true - 1,
                                "sigma": sigma / true, "error_in_sigmas": (est - true) / sigma}
        shares = {}
        total = sum(r["memory"]["alloc_bytes"] for r in mine)
        for r in mine:
            for f in r["memory"]["functions"]:
                key = "%s (%s:%d)" % (f["name"], os.path.basename(f["file"]), f["line"])
                shares[key] = shares.get(key, 0) + f["alloc_bytes"]
        res["top_self_shares"] = dict(sorted(((k, v / total) for k, v in shares.items()),
                                             key=lambda kv: -kv[1])[:10]) if total else {}
        out[name] = res
    return out


def analyse_c_loop(g, runs):
    """alloc_loop.c: its loop's own CPU time (and the process's) with the library loaded
    (allocation sampling off, and at 512KB) over the bare run of the same repetition;
    the same from the loop's windows (its 20 equal parts, every run's pooled): the
    iterations per CPU second bare over loaded, each at its 75th percentile (ratio_q),
    with a bootstrap interval; and the logs the library wrote for it (none expected: no
    Python, not profiled)."""
    bare = by_rep(runs, "bare")
    loop = lambda r: r["result"]["loop_cpu_s"]  # noqa: E731

    def rates(rs):
        return [r["result"]["chunk_iterations"] / c for r in rs
                for c in r["result"].get("chunk_cpu_s", []) if c > 0]
    bare_rates = rates([r for r in bare.values() if r.get("result")])
    out = {"argv": g["argv"], "iterations": int(g["argv"][0]), "settings": {}}
    for s in g["settings"]:
        mine = {k: r for k, r in by_rep(runs, s["name"]).items() if r.get("result")}
        res = {"kind": s["kind"], "env": s["env"], "runs_ok": len(mine),
               "loop_cpu_s": summary([loop(r) for r in mine.values()]),
               "cpu_s": summary([r["cpu_s"] for r in mine.values()])}
        if s["kind"] != "bare":
            pairs = [(r, bare[k]) for k, r in mine.items() if k in bare]
            res["loop_cpu_ratio"] = summary([loop(r) / loop(b) for r, b in pairs])
            res["cpu_ratio"] = summary([r["cpu_s"] / b["cpu_s"] for r, b in pairs])
            res["log_files"] = sum(r.get("log_files", 0) for r in mine.values())
            on = rates(mine.values())
            if bare_rates and on:
                res["window_cpu_ratio_q75"] = ratio_q(bare_rates, on)
                res["window_cpu_ratio_q75_ci95"] = boot_ratio_ci(bare_rates, on)
                res["windows"] = len(on)
        out["settings"][s["name"]] = res
    return out


def alloc_rows(a, checks):
    """The alloc part's three tables (rows), with its checks appended to checks."""
    rows, crows, arows, qrows = [], [], [], []
    for v, it in a["interpreters"].items():
        for sname, s in it["settings"].items():
            row = {"alloc_mix.py": v, "setting": sname,
                   "CPU s": fmt_summary(s.get("cpu_s"), "%.2f", ci=False)}
            if s["kind"] != "bare":
                row["cpu x bare: median [95% CI] min-max"] = fmt_ratio(s.get("cpu_ratio"))
            if "cpu_ratio_vs_alloc_off" in s:
                cr = s["cpu_ratio_vs_alloc_off"]
                row["x alloc off"] = "%.3f" % cr["median"] if cr else "-"
                npa = s.get("extra_ns_per_allocation_vs_off")
                row["ns/allocation vs off"] = "%.1f" % npa["median"] if npa else "-"
                sm, bps = s.get("alloc_samples"), s.get("log_bytes_per_alloc_sample")
                row["alloc samples/run"] = "%.0f" % sm["median"] if sm else "-"
                row["B/alloc sample"] = "%.2f" % bps["median"] if bps else "-"
                lost = s.get("alloc_lost", 0) + s.get("frees_lost", 0)
                row["lost, output"] = "%d lost" % lost if lost else ""
                qrows.append(extra_row(v, sname, s, checks))
            if s["kind"] == "memray" and s.get("output_bytes"):
                row["lost, output"] = "%.1f MB out" % (s["output_bytes"]["median"] / 1e6)
            rows.append(row)
    # Every tool's column in each row (3.14 has memray), the cheapest last.
    tools = []
    for r in qrows:
        tools += [k for k in r if k.startswith("/ ") and k not in tools]
    last = "/ the cheapest [95% CI]"
    keys = [k for k in tools if k != last] + [last]
    qrows = [dict([(k, v) for k, v in r.items() if not k.startswith("/ ")] +
                  [(k, r.get(k, "-")) for k in keys]) for r in qrows]
    c = a.get("c_loop")
    if c:
        for sname, s in c["settings"].items():
            row = {"alloc_loop.c (no Python)": sname,
                   "loop CPU s": fmt_summary(s.get("loop_cpu_s"), "%.3f", ci=False)}
            if s["kind"] != "bare":
                wr, wci = s.get("window_cpu_ratio_q75"), s.get("window_cpu_ratio_q75_ci95")
                st = None
                tgt = TARGETS["alloc_c_loop_cpu_ratio_off"]
                if wr is not None and not s["env"].get("PYPROF_ALLOC"):
                    st = check(wr, tgt, ci=wci)
                    checks.append({"what": "C malloc loop CPU, library loaded (allocation "
                                   "sampling off) / bare (windows, q75)", "value": wr,
                                   "ci95": wci, "target": "< %.3f" % tgt, "status": st})
                row["windows: cpu x bare (q75) [95% CI]"] = (
                    "%.4f [%.4f,%.4f]" % (wr, wci[0], wci[1]) if wr is not None else "-") + (
                    " (<%.3f %s)" % (tgt, mark(st)) if st else "")
                row["loop: cpu x bare, paired median [95% CI] min-max"] = fmt_ratio(
                    s.get("loop_cpu_ratio"))
                row["process cpu x bare"] = fmt_ratio(s.get("cpu_ratio")).rsplit(" ", 1)[0] \
                    if s.get("cpu_ratio") else "-"
                ins = (c.get("callgrind") or {}).get("instructions") or {}
                if ins.get(sname) and ins.get("bare"):
                    row["instructions x bare (callgrind)"] = "%.5f" % (ins[sname] / ins["bare"])
                row["logs written"] = s.get("log_files")
            crows.append(row)
    for v, it in a["interpreters"].items():
        for sname, acc in (it.get("accuracy") or {}).items():
            row = {"accuracy (known bytes)": v, "setting": sname, "runs": acc["runs"]}
            for fn, k in acc["known"].items():
                row["%s (%d B)" % (fn, k["block_bytes"])] = "%+.1f%% (%+.1f sigma, %d)" % (
                    100 * k["error"], k["error_in_sigmas"], k["samples"])
            arows.append(row)
    return rows, qrows, crows, arows


def extra_row(v, sname, s, checks):
    """pyprof's extra CPU over each other tool's, and over the cheapest's (checked at
    512KB), as a row."""
    fmt = lambda q: "-" if not q or q["value"] is None else "%.3f%s" % (  # noqa: E731
        q["value"], " [%.3f,%.3f]" % tuple(q["ci95"]) if q["ci95"] else "")
    row = {"pyprof extra CPU / a tool's": v, "setting": sname}
    for o, q in s.get("extra_cpu_over", {}).items():
        row["/ %s" % o] = fmt(q)
    q = s.get("extra_cpu_over_cheaper")
    tgt = TARGETS["alloc_extra_cpu_over_cheaper_tool"]
    st = None
    if q and q["value"] is not None and s.get("interval") == 512 << 10:
        st = check(q["value"], tgt, ci=q["ci95"])
        checks.append({"what": "extra CPU, pyprof allocation sampling at 512KB / the "
                       "cheapest of %s, Python %s" % (", ".join(s["extra_cpu_over"]), v),
                       "value": q["value"], "ci95": q["ci95"], "target": "< %.2f" % tgt,
                       "status": st})
    row["/ the cheapest [95% CI]"] = fmt(q) + (" (%s)" % q["cheaper"] if q and
                                               q.get("cheaper") else "") + (
        " (<%.2f %s)" % (tgt, mark(st)) if st else "")
    return row


def guarded(fn, *a):
    """A part that fails (the tool refuses a log, ...) is reported, and the rest goes on."""
    try:
        return fn(*a)
    except Exception as e:  # noqa: BLE001
        log("%s failed: %s: %s" % (fn.__name__, type(e).__name__, e))
        return {"error": "%s: %s" % (type(e).__name__, e)}


# ---- the machine --------------------------------------------------------------------------

def machine_info(py):
    info = {"uname": " ".join(platform.uname()[:3]), "cpus": os.cpu_count(),
            "load_at_start": os.getloadavg()}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/etc/os-release") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    info["os"] = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return info


def interp_version(py):
    try:
        return subprocess.run([py, "-c", "import sys; print(sys.version.split()[0])"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=30).stdout.decode().strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def git_info():
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL).stdout.decode().strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "src",
                                "preload", "include", "utils", "Makefile"],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL).stdout.decode().strip()
        return {"commit": head or None, "library_sources_modified": bool(dirty)}
    except OSError:
        return None


def pyenv_python(version):
    try:
        root = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL).stdout.decode().strip()
    except OSError:
        root = os.path.expanduser("~/.pyenv")
    return os.path.join(root or os.path.expanduser("~/.pyenv"), "versions", version, "bin",
                        "python")


def default_python():
    p = pyenv_python("3.11.7")
    if os.access(p, os.X_OK):
        return p
    return DEBIAN_PY if os.access(DEBIAN_PY, os.X_OK) else sys.executable


# ---- the table ----------------------------------------------------------------------------

def fmt_ratio(s):
    if not s:
        return "-"
    ci = s.get("ci95_median")
    txt = "%.3f" % s["median"]
    if ci:
        txt += " [%.3f,%.3f]" % (ci[0], ci[1])
    return txt + " %.2f-%.2f" % (s["min"], s["max"])


def fmt_summary(s, fmt, scale=1.0, ci=True):
    """median [95% CI] min-max of a summary, each value times scale, in fmt."""
    if not s:
        return "-"
    f = lambda x: fmt % (x * scale)  # noqa: E731
    txt = f(s["median"])
    if ci and s.get("ci95_median"):
        txt += " [%s,%s]" % (f(s["ci95_median"][0]), f(s["ci95_median"][1]))
    return txt + " %s-%s" % (f(s["min"]), f(s["max"]))


def fmt_excess(s):
    """The timers' excess over the kernel's CPU clock, median (min..max), in per cent."""
    if not s:
        return "-"
    return "%+.2f%% (%+.2f..%+.2f)" % (100 * s["median"], 100 * s["min"], 100 * s["max"])


def mark(status):
    return {"met": "ok", "not met": "NO", "unclear (met)": "ok?",
            "unclear (not met)": "NO?"}.get(status, "")


def cell(value, fmt, target=None, tfmt=None, status=None):
    if value is None:
        return "-"
    txt = fmt % value
    if target is not None:
        txt += " (%s %s)" % (tfmt % target, mark(status))
    return txt


def build_rows(workloads, checks, interp=None):
    """One row per workload x setting, with the figures checked where a target is set.
    Appends to checks as it goes.  interp: the interpreter, in a first column and in the
    checks' names (the per-version section)."""
    rows = []
    first = len(checks)
    for wname, w in workloads.items():
        checked = w.get("checked_against_targets", True)
        for sname, s in w["settings"].items():
            if s["kind"] == "bare":
                continue
            # A test setting (the correction off) is shown, not checked.
            checked_s = checked and not s.get("test_only")
            row = {"interpreter": interp} if interp else {}
            row.update({"workload": wname, "setting": sname})
            wr = s.get("wall_ratio")
            tgt = None
            if wname == "cpu" and s["kind"] == "pyprof" and s["clock"] == "cpu" and checked_s:
                tgt = TARGETS["wall_ratio_100hz_cpu_workload" if s["rate_hz"] == 100
                              else "wall_ratio_1khz_cpu_workload"]
            st = check(wr["median"], tgt, ci=wr["ci95_median"]) if wr and tgt else None
            if st:
                checks.append({"what": "wall ratio, %s, %s" % (wname, sname), "value":
                               wr["median"], "ci95": wr["ci95_median"], "target": "< %.2f" % tgt,
                               "status": st})
            row["wall x: median [95% CI] min-max"] = fmt_ratio(wr) + (
                " (<%.2f %s)" % (tgt, mark(st)) if tgt else "")
            row["cpu x: median [95% CI]"] = fmt_ratio(s.get("cpu_ratio")).rsplit(" ", 1)[0] \
                if s.get("cpu_ratio") else "-"
            if s["kind"] != "pyprof":
                rows.append(row)
                continue
            if s.get("corrected_over_off"):
                # The correction's whole cost: corrected run / this run, same repetition.
                co = s["corrected_over_off"]["cpu_ratio"]
                row["on/off cpu x [95% CI]"] = fmt_ratio(co).rsplit(" ", 1)[0] if co else "-"
            # samples achieved
            ach = s.get("achieved_pooled") if s["clock"] == "cpu" else (
                s["achieved"]["median"] if s.get("achieved") else None)
            tgt = None
            if s["clock"] == "cpu" and checked_s:
                tgt = TARGETS["achieved_100hz_cpu_clock" if s["rate_hz"] == 100
                              else "achieved_1khz_cpu_clock"]
            st = check(ach, tgt, below=False)
            if st:
                checks.append({"what": "samples achieved (whole runs), %s, %s"
                               % (wname, sname), "value": ach, "target": ">= %.2f" % tgt,
                               "status": st})
            row["achieved (whole run)"] = cell(100 * ach if ach is not None else None, "%.1f%%",
                                   100 * tgt if tgt else None, ">=%.0f%%", st)
            # library CPU share
            lc = s["library_cpu_share"]["median"] if s.get("library_cpu_share") else None
            tgt = (TARGETS["library_cpu_share_100hz"] if s["rate_hz"] == 100 and checked_s
                   else None)
            native = s["env"].get("PYPROF_NATIVE") == "1"
            if native and checked_s:
                tgt = TARGETS["library_cpu_share_native_%s" % (
                    "100hz" if s["rate_hz"] == 100 else "1khz")]
            st = check(lc, tgt)
            if st:
                checks.append({"what": "library CPU / process CPU, %s, %s" % (wname, sname),
                               "value": lc, "target": "< %.3f" % tgt, "status": st})
            row["lib CPU"] = cell(100 * lc if lc is not None else None, "%.2f%%",
                                  100 * tgt if tgt else None, "<%.1f%%", st)
            hp = s["handler_ns_per_sample"]["median"] if s.get("handler_ns_per_sample") \
                else None
            row["handler mean"] = cell(hp / 1e3 if hp is not None else None, "%.2fus")
            hd = s.get("handler_at_depth")
            if not hd and s.get("handler_by_depth"):
                # No set depth: the bucket that holds most of the samples.
                hd = max(s["handler_by_depth"], key=lambda b: b["samples"])
            if hd and hd.get("median_ns") is not None:
                tgt = (TARGETS["handler_median_ns_depth30"]
                       if w.get("depth") == 30 and checked_s else None)
                st = check(hd["median_ns"], tgt)
                if st:
                    checks.append({"what": "handler time median at depth 30, %s" % sname,
                                   "value": hd["median_ns"], "target": "< %.0f ns" % tgt,
                                   "status": st})
                row["handler median (depths)"] = cell(
                    hd["median_ns"] / 1e3, "%%.2fus @%s-%s" % (hd["depth_from"],
                                                              hd["depth_to"] or ""),
                    tgt / 1e3 if tgt else None, "<%.0fus", st)
            else:
                row["handler median (depths)"] = "-"
            bps = s["log_bytes_per_sample"]["median"] if s.get("log_bytes_per_sample") \
                else None
            tgt = (TARGETS["log_bytes_per_sample_cpu_workload"]
                   if wname == "cpu" and checked_s else None)
            st = check(bps, tgt)
            if st:
                checks.append({"what": "log bytes per sample (whole runs), %s, %s"
                               % (wname, sname), "value": bps, "target": "< %.0f" % tgt,
                               "status": st})
            row["B/sample (whole run)"] = cell(bps, "%.1f", tgt, "<%.0f", st)
            nw = s.get("native_walk_ns_per_sample")
            row["native walk"] = (cell(nw["median"] / 1e3, "%.2fus") if nw and
                                  nw.get("median") is not None else "-")
            row["timer excess"] = fmt_excess(s.get("timer_excess")) \
                if s["clock"] == "cpu" else ""
            rows.append(row)
    if interp:
        for c in checks[first:]:
            c["what"] += ", Python %s" % interp
    return rows


def print_correction(cor, clock_read):
    """The correction of cpu-clock samples, on and off, beside each other: a few lines
    on what the figures hold, and a row per workload and rate."""
    if clock_read and "error" in clock_read:
        print("one thread CPU clock read: %s" % clock_read["error"])
    if not cor:
        return
    print("the correction of cpu-clock samples (a signal's samples counted in periods of "
          "the thread's own CPU clock, not the timer's): '(correction off)' rows are the "
          "same workload with PYPROF_TEST_UNCORRECTED=1, a test setting, run back to back "
          "with the default in every repetition; on/off cpu x: the corrected run's CPU "
          "over the correction-off run's of the same repetition; whole cost: one "
          "work_rate.py process each way.")
    if cor.get("off_reads_clock"):
        print("In the correction-off runs the library still read the thread's CPU clock "
              "at every signal (the log's clock counters are not 0): the off rows leave "
              "out the correction's arithmetic, not its system call.")
    elif cor.get("off_reads_clock") is False:
        print("In the correction-off runs the library read no thread CPU clock (the log's "
              "clock counters are 0): the off rows leave out the correction's system "
              "call and its arithmetic.")
    print("The handler figures (mean, median, lib CPU) time the sample alone and the "
          "clock is read before it: they do not hold the correction's system call, which "
          "shows only in the CPU ratios (and whole cost, measured).")
    if clock_read and "error" not in clock_read:
        ex = clock_read["extra_cpu_share"]
        print("One read of the thread's CPU clock, timed apart (time.thread_time_ns less "
              "an empty C call): %.0f ns; once per signal that is %.3f%% of the CPU at "
              "100 Hz, %.2f%% at 1 kHz." % (clock_read["clock_read_ns"], 100 * ex["100"],
                                            100 * ex["1000"]))

    def pair(on, off, fmt, scale=1.0):
        f = lambda x: "-" if x is None else fmt % (x * scale)  # noqa: E731
        return "%s / %s" % (f(on), f(off))
    rows = []
    for wname, by_rate in cor["workloads"].items():
        for rate, v in by_rate.items():
            on, off = v["on"], v["off"]
            d = on["handler_depths"] or off["handler_depths"]
            co = v["corrected_over_off_cpu_ratio"]
            row = {"correction on / off": "%s %s" % (wname, "100 Hz" if rate == "100"
                                                     else "1 kHz"),
                   "handler median, us": pair(on["handler_median_ns"],
                                              off["handler_median_ns"], "%.2f", 1e-3)
                   + (" @%s-%s" % (d[0], d[1] or "") if d else ""),
                   "handler mean, us": pair(on["handler_mean_ns"], off["handler_mean_ns"],
                                            "%.2f", 1e-3),
                   "lib CPU": pair(on["library_cpu_share"], off["library_cpu_share"],
                                   "%.2f%%", 100),
                   "cpu x bare": pair(on["cpu_ratio"], off["cpu_ratio"], "%.3f"),
                   "on/off cpu x [95% CI]": fmt_ratio(co).rsplit(" ", 1)[0] if co else "-",
                   "achieved": pair(on["achieved_pooled"], off["achieved_pooled"],
                                    "%.1f%%", 100)}
            wc = cor["whole_cost"].get(rate)
            if wname == "cpu" and wc:
                row["whole cost, measured cpu x (work_rate.py)"] = pair(
                    (wc.get("on") or {}).get("cpu_ratio_measured"),
                    (wc.get("off") or {}).get("cpu_ratio_measured"), "%.4f")
            rows.append(row)
    if not cor["workloads"]:
        for rate, wc in cor["whole_cost"].items():
            rows.append({"correction on / off": "whole cost %s" % (
                "100 Hz" if rate == "100" else "1 kHz"),
                "whole cost, measured cpu x (work_rate.py)": pair(
                    (wc.get("on") or {}).get("cpu_ratio_measured"),
                    (wc.get("off") or {}).get("cpu_ratio_measured"), "%.4f")})
    print()
    print_table(rows)


def print_table(rows, title=None):
    if not rows:
        return
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    width = {c: max(len(c), max(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    if title:
        print(title)
    print("  ".join(c.ljust(width[c]) for c in cols))
    print("  ".join("-" * width[c] for c in cols))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(width[c]) for c in cols))
    print()


# ---- main ---------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True, help="libpyprof.so (absolute path)")
    ap.add_argument("--tool", required=True, help="the pyprof tool")
    ap.add_argument("--out", required=True, help="JSON file to write every figure to")
    ap.add_argument("--python", default=None,
                    help="main interpreter (default: pyenv's 3.11.7, else /usr/bin/python3.11)")
    ap.add_argument("--quick", action="store_true", help="a short smoke run")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds for the whole run (default 480, quick 100)")
    ap.add_argument("--reps", type=int, default=None, help="at most this many repetitions")
    ap.add_argument("--min-reps", type=int, default=None)
    ap.add_argument("--keep-logs", action="store_true", help="keep every log (in --workdir)")
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a new one)")
    ap.add_argument("--no-debian", action="store_true",
                    help="skip the /usr/bin/python3.11 comparison (cProfile, yappi)")
    ap.add_argument("--only", default=None, metavar="PART,...",
                    help="run only these parts (comma-separated): workloads %s; parts %s "
                         "(steady_state brings in cpu)" % (", ".join(WORKLOAD_NAMES),
                                                          ", ".join(PART_NAMES)))
    ap.add_argument("--versions", default=DEFAULT_VERSIONS, metavar="VERSION,...",
                    help="interpreters of the per-version section: %s (pyenv's 3.13.0, the "
                         "sid root's 3.14, 3.15) or paths; 'none' for no section "
                         "(default %s, those present)" % (", ".join(VERSION_PYTHONS),
                                                          DEFAULT_VERSIONS))
    ap.add_argument("--versions-budget", type=float, default=None, metavar="SECONDS",
                    help="seconds for the per-version section's repetitions, on top of "
                         "--budget (default 90, quick 25)")
    ap.add_argument("--alloc-budget", type=float, default=None, metavar="SECONDS",
                    help="seconds for the allocation part (calibration, repetitions), on "
                         "top of --budget (default 300, quick 120)")
    args = ap.parse_args()
    want = set(WORKLOAD_NAMES + PART_NAMES)
    if args.only:
        want = {w.strip() for w in args.only.split(",") if w.strip()}
        bad = sorted(want - set(WORKLOAD_NAMES + PART_NAMES))
        if bad:
            sys.exit("bench: --only: unknown %s (known: %s)" % (
                ", ".join(bad), ", ".join(WORKLOAD_NAMES + PART_NAMES)))
        if "steady_state" in want:
            want.add("cpu")  # its short runs are the cpu workload's
    args.lib = os.path.abspath(args.lib)
    args.tool = os.path.abspath(args.tool)
    for what, p in (("--lib", args.lib), ("--tool", args.tool)):
        if not os.path.isfile(p):
            sys.exit("bench: %s %s: no such file (run `make` first)" % (what, p))

    quick = args.quick
    budget = args.budget or (100.0 if quick else 480.0)
    max_reps = args.reps or (3 if quick else 15)
    min_reps = args.min_reps or (2 if quick else 5)
    min_reps = min(min_reps, max_reps)
    # CPU seconds per bare run of each workload; requests of the two thread-per-request
    # calibration runs; threads created and joined by the thread_create workloads.
    secs = ({"cpu": 0.35, "threads": 0.35, "fork": 0.45, "deep": 0.3, "shares": 0.6,
             "thread_per_request": 0.35, "requests_calibration": (30, 120),
             "thread_create_n": 5000, "alloc": 1.0, "alloc_c": 0.3}
            if quick else
            {"cpu": 0.8, "threads": 0.8, "fork": 1.0, "deep": 0.5, "shares": 2.0,
             "thread_per_request": 1.0, "requests_calibration": (100, 400),
             "thread_create_n": 20000, "alloc": 1.5, "alloc_c": 0.4})
    t_start = time.monotonic()
    budget_end = t_start + budget
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

    py = args.python or default_python()
    work = args.workdir or tempfile.mkdtemp(prefix="pyprof-bench.")
    os.makedirs(work, exist_ok=True)
    runner = Runner(args, work)

    notes = []
    debian = None
    if "cpu-debian" not in want:
        args.no_debian = True
    if not args.no_debian and os.access(DEBIAN_PY, os.X_OK) and \
            os.path.realpath(py) != os.path.realpath(DEBIAN_PY):
        has_yappi = subprocess.run([DEBIAN_PY, "-c", "import yappi"],
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL).returncode == 0
        debian = {"python": DEBIAN_PY, "version": interp_version(DEBIAN_PY),
                  "yappi": has_yappi}
        if not has_yappi:
            log("python3-yappi is not installed for %s: yappi left out "
                "(apt-get install python3-yappi)" % DEBIAN_PY)

    vpys = {}
    if "versions" in want and args.versions.strip().lower() not in ("", "none"):
        specs = [v.strip() for v in args.versions.split(",") if v.strip()]
        for spec, p, why in version_pythons(specs):
            if p is None:  # one line, with the table's notes
                notes.append("per version: %s left out: %s" % (spec, why))
                continue
            version = interp_version(p)
            launcher = guarded(launcher_cpu, runner, p) if version else None
            if not version or isinstance(launcher, dict):
                why = "%s does not run" % p if not version else launcher["error"]
                notes.append("per version: %s left out: %s" % (spec, why))
                continue
            vpys[spec] = {"python": p, "version": version, "launcher_cpu_s": launcher}

    results = {
        "schema": "pyprof-bench/1",
        "started": started,
        "quick": quick,
        "machine": machine_info(py),
        "git": git_info(),
        "library": args.lib,
        "tool": args.tool,
        "python": {"path": py, "version": interp_version(py)},
        "debian_python": debian,
        "only": sorted(want) if args.only else None,
        "targets": TARGETS,
        "method": {
            "pairs": "each repetition runs every setting of a workload once, back to back, "
                     "in an order that reverses every repetition; a ratio is a run over the "
                     "bare run of the same repetition",
            "wall": "perf_counter around the process, start-up and exit included",
            "cpu": "user+sys of the process and its waited-for children, from wait4",
            "ci95_median": "95 % percentile bootstrap interval of the median (2000 "
                           "resamples)",
            "achieved": "cpu clock: samples / ((process CPU - writer thread CPU) x rate - "
                        "ticks that found no interpreter running); achieved_strict: "
                        "samples / (process CPU x rate); wall clock: sampling passes per "
                        "wall second (the footer's achieved_hz) / rate; steady_state: "
                        "(samples of a long run - of a short run) / (their CPU difference "
                        "x rate)",
            "library_cpu_share": "the footer's library CPU (handler + writer) / the "
                                 "process's CPU from wait4",
            "handler_by_depth": "from the footer's cost histogram (pyprof report --json "
                                "processes[].cost.by_depth): per depth bucket, the median "
                                "over runs of each run's median handler time (interpolated "
                                "within the histogram's time buckets)",
            "log_bytes_per_sample": "log file size / samples; steady_state: the "
                                    "difference between a long and a short run",
            "thread_per_request": "server.py: each request handled in a new thread that "
                                  "burns about %.1f ms of CPU (an inline loop sized from "
                                  "deep.py's calibration; handler_cpu_ms: the loop's CPU "
                                  "as each handler thread measured it, bare runs); "
                                  "achieved: samples / (process CPU from wait4 x rate), "
                                  "achieved_pooled: the same over all runs summed; "
                                  "achieved_python_running: as 'achieved' above"
                                  % (HANDLER_CPU_S * 1e3),
            "spans": "spans.py: N span start+stop pairs of the pyprof package per loop, "
                     "best of 5 loops per run; median over runs, with the library "
                     "(recording into a log), with it paused (PYPROF_SIGNAL set: it "
                     "starts paused) and without (the package's no-op); "
                     "c_functions_ns: pyprof_span_start + pyprof_span_stop through ctypes",
            "versions": "per version: the cpu and deep30 workloads, sized on each "
                        "interpreter to the main interpreter's CPU per run, bare and with "
                        "the library at 100 Hz and 1 kHz (cpu clock), in interleaved "
                        "repetitions of their own after the main ones; ratios and log "
                        "figures as for "
                        "the main interpreter; launcher_cpu_s: the CPU of the sid root's "
                        "chroot wrapper alone (sid-run /bin/true, median of 5), taken off "
                        "the process's CPU for samples expected and the library's share",
            "alloc": "alloc_mix.py, sized on each interpreter (the main one, and the sid "
                     "root's 3.14) to cpu_s_per_run of CPU, and alloc_loop.c (a C program, "
                     "no Python), in interleaved repetitions of their own after the others: "
                     "bare, the library at 100 Hz with allocation sampling off (PYPROF_ALLOC "
                     "unset) and at PYPROF_ALLOC=512KB and 64KB, -X tracemalloc, and on 3.14 "
                     "memray run (default, and --trace-python-allocators) where sid's "
                     "python3-memray is installed; cpu: user+sys from wait4 less the sid "
                     "wrapper's own (launcher_cpu_s); ratios against the bare run of the same "
                     "repetition (median, bootstrap CI); extra_cpu_over: (median cpu ratio - "
                     "1) of pyprof over the same of another tool (or the cheapest of them), "
                     "CI by resampling repetitions; alloc_samples: the ALLOC records of `pyprof "
                     "report --memory --json`; log_bytes_per_alloc_sample: (log bytes of the "
                     "run - of the allocation-off run of the same repetition) / its ALLOC "
                     "records; accuracy: pyprof's self bytes of alloc_mix.py's blobs_* "
                     "functions, pooled over the runs, against the bytes they allocate "
                     "(calls x sys.getsizeof of one block, exact; tracemalloc_check: that "
                     "size as -X tracemalloc traces it), sigma the estimator's sampling "
                     "error; c_loop: the loop's own CPU (CLOCK_PROCESS_CPUTIME_ID) over the "
                     "bare run's, paired, and from its 20 windows (ratio_q: iterations per "
                     "CPU second at the 75th percentile, bare over loaded; boot_ratio_ci), "
                     "the logs written (a program without Python is not profiled: none, and "
                     "nothing is hooked), and callgrind's instruction count of a short run "
                     "per setting (where valgrind is installed)",
            "correction": "the cpu and deep30 workloads also with PYPROF_TEST_UNCORRECTED=1 "
                          "(settings named '... (correction off)', in the same "
                          "repetitions, not checked against the targets); "
                          "corrected_over_off: the corrected run's CPU (wall) over the "
                          "off run's of the same repetition; whole_cost: work_rate.py "
                          "both ways, the off runs with half the windows; clock_read: "
                          "time.thread_time_ns (clock_gettime(CLOCK_THREAD_CPUTIME_ID), "
                          "the system call the correction adds to each signal) less "
                          "gc.isenabled, best of 5 loops, ns per call, not in the "
                          "handler's figures (the handler times the sample alone); "
                          "off_reads_clock: whether the off runs' logs count any clock "
                          "reading",
            "timer_excess": "per cpu-clock run: the footer's clock_timer_ns / "
                            "clock_kernel_ns - 1 (pyprof report --json "
                            "processes[].cost, summed over processes): the CPU the "
                            "perf timers counted over the intervals their signals "
                            "closed, over the kernel's CPU of the same threads over "
                            "them; None where no clock was read",
            "thread_create": "thread_create.py: N threads created and joined one at a time, "
                             "each doing nothing; us_per_thread: perf_counter around the "
                             "loop / N; cpu_us_per_thread: process_time around the loop / "
                             "N; ratio and added_us_per_thread: against the bare run of "
                             "the same repetition; threading: threading.Thread, pthread: "
                             "the loop in C (thread_create.c) through ctypes",
        },
        "checks": [],
        "notes": notes,
    }

    log("main interpreter %s (%s); scratch %s; budget %.0f s" %
        (py, results["python"]["version"], work, budget))
    try:
        log("calibrating work sizes")
        rounds, calib = calibrate(runner, py, secs, debian, want)
        results["rounds"] = rounds
        results["calibration"] = calib
        log("rounds: %s" % rounds)

        clib = None
        if "thread_create_c" in want:
            clib, why = compile_clib(work)
            if why:
                log(why)
                results["notes"].append(why)

        if "accuracy" in want:
            log("accuracy (known CPU shares)")
            results["accuracy"] = guarded(accuracy, runner, py, rounds["shares"])

        if "throughput" in want:
            log("report throughput (generating logs at 100 us)")
            results["report_throughput"] = guarded(
                throughput, runner, py, rounds["cpu"], 1_000_000, 2.0 if quick else 8.0,
                quick)

        if "whole_cost" in want:
            log("whole cost of a sample (work rate with and without the library)")
            results["whole_cost"] = guarded(whole_cost, runner, py, quick)

        if "spans" in want:
            log("span start+stop cost, with and without the library")
            pys = [py] + ([DEBIAN_PY] if os.access(DEBIAN_PY, os.X_OK) and
                          os.path.realpath(py) != os.path.realpath(DEBIAN_PY) else [])
            results["spans"] = guarded(span_cost, runner, pys, 20000 if quick else 100000,
                                       2 if quick else 4)

        longs = None
        if "steady_state" in want:
            log("long runs (steady state)")
            longs = guarded(long_runs, runner, py, rounds["cpu"], 3.0 if quick else 4.0)

        if want & {"cpu", "deep30"}:
            log("one read of the thread CPU clock (the correction's system call)")
            results["correction_clock_read"] = guarded(clock_read_cost, runner, py)

        groups = make_groups(py, rounds, debian, clib, want)
        reserve = 5.0  # the write-up
        log("repetitions: %d to %d, %.0f s left" %
            (min_reps, max_reps, budget_end - time.monotonic()))
        runs, rep_times, failures = run_reps(runner, groups, budget_end, min_reps, max_reps,
                                             reserve)
        results["repetitions"] = len(rep_times)
        results["repetition_s"] = rep_times
        results["failures"] = failures
        results["workloads"] = {g["name"]: analyse_group(g, runs[g["name"]]) for g in groups}
        for g in groups:
            if g["name"] == "thread_per_request":
                results["thread_per_request"] = guarded(analyse_thread_per_request, g,
                                                        runs[g["name"]])
            elif g["name"].startswith("thread_create"):
                results.setdefault("thread_create", {})[g["loop"]] = guarded(
                    analyse_thread_create, g, runs[g["name"]])

        if vpys:
            vbudget = args.versions_budget or (25.0 if quick else 90.0)
            vmax = args.reps or (3 if quick else 11)
            vmin = min(args.min_reps or (2 if quick else 5), vmax)
            log("per version: %s; repetitions %d to %d, %.0f s" % (
                ", ".join("%s %s" % (v["version"], v["python"]) for v in vpys.values()),
                vmin, vmax, vbudget))
            results["versions"] = guarded(versions_part, runner, vpys, secs, vbudget,
                                          vmin, vmax)
            failures.extend(results["versions"].get("failures") or [])

        if "alloc" in want:
            abudget = args.alloc_budget or (120.0 if quick else 300.0)
            amax = args.reps or (3 if quick else 9)
            amin = min(args.min_reps or (3 if quick else 5), amax)
            log("allocation sampling: repetitions %d to %d, %.0f s" % (amin, amax, abudget))
            results["alloc"] = guarded(alloc_part, runner, py, secs, quick, abudget, amin,
                                       amax)
            failures.extend(results["alloc"].get("failures") or [])

        if longs is not None:
            results["steady_state"] = (guarded(steady_state, longs, runs["cpu"])
                                       if "error" not in longs else longs)
        results["runs"] = [dict(r, workload=w) for w, rs in runs.items() for r in rs]
    finally:
        if not args.keep_logs and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    cor = correction_summary(results["workloads"], results.get("whole_cost"),
                             results.get("correction_clock_read"))
    if cor["workloads"] or cor["whole_cost"]:
        results["correction"] = cor
    wc_runs = [{"timer_excess": v.get("timer_excess"), "clock": "cpu"}
               for v in (results.get("whole_cost") or {}).values() if isinstance(v, dict)]
    results["timer_excess"] = excess_by_run([
        ("main", results.get("runs")), ("whole_cost", wc_runs),
        ("versions", (results.get("versions") or {}).get("runs")),
        ("alloc", (results.get("alloc") or {}).get("runs"))])

    # The handler-time histogram by stack depth comes from the log footer's cost section.
    results["handler_time_histogram"] = {
        w: {s: v.get("handler_by_depth") for s, v in d["settings"].items()
            if v["kind"] == "pyprof"}
        for w, d in results["workloads"].items()}

    rows = build_rows(results["workloads"], results["checks"])
    checks = results["checks"]
    ss = results.get("steady_state", {})
    for name, tkey, bkey in (("pyprof 100 Hz cpu", "achieved_100hz_cpu_clock", None),
                             ("pyprof 1 kHz cpu", "achieved_1khz_cpu_clock", None)):
        v = ss.get(name, {})
        if v.get("achieved") is not None:
            checks.append({"what": "samples achieved, steady state, cpu, %s" % name,
                           "value": v["achieved"], "target": ">= %.2f" % TARGETS[tkey],
                           "status": check(v["achieved"], TARGETS[tkey], below=False)})
        if v.get("log_bytes_per_sample") is not None:
            t = steady_bytes_target(name)
            checks.append({"what": "log bytes per sample, steady state, cpu, %s" % name,
                           "value": v["log_bytes_per_sample"], "target": "< %.0f" % t,
                           "status": check(v["log_bytes_per_sample"], t)})
    tp = results.get("report_throughput", {})
    if tp.get("text", {}).get("samples_per_s"):
        t = TARGETS["report_samples_per_s"]
        for mode in ("text", "json"):
            if tp.get(mode, {}).get("samples_per_s"):
                checks.append({"what": "pyprof report%s throughput, samples/s" %
                               (" --json" if mode == "json" else ""),
                               "value": tp[mode]["samples_per_s"], "target": ">= %.0e" % t,
                               "status": check(tp[mode]["samples_per_s"], t, below=False)})

    # ---- print ----
    m = results["machine"]
    print("pyprof bench: %s, %d CPUs, %s; load %.1f at start, %.1f at end" % (
        m.get("cpu_model", "?"), m["cpus"], m["uname"], m["load_at_start"][0],
        os.getloadavg()[0]))
    print("main interpreter %s (Python %s); %d interleaved repetitions; work sizes %s" % (
        py, results["python"]["version"], results["repetitions"], results["rounds"]))
    print("ratios are with/without the library (or profiler), same repetition: median, "
          "[95% bootstrap CI of the median], min-max.\n"
          "targets in brackets: ok = met, NO = not met, ? = the CI straddles the target.\n")
    print_table(rows)
    print_correction(results.get("correction"), results.get("correction_clock_read"))
    tx = results["timer_excess"]
    if tx.get("n"):
        print("the host's timer excess (each cpu-clock run's footer: the CPU the perf "
              "task-clock timers counted over the intervals their signals closed / the "
              "kernel's CPU of the same threads over them, less 1; time the hypervisor "
              "stole shows as excess): %d runs, median %+.2f%%, min %+.2f%%, max %+.2f%%; "
              "median per repetition: %s\n" % (
                  tx["n"], 100 * tx["median"], 100 * tx["min"], 100 * tx["max"],
                  " ".join("%+.2f%%" % (100 * x) for x in tx["by_repetition"]) or "-"))

    vs = results.get("versions")
    if vs and "error" in vs:
        print("per version: %s\n" % vs["error"])
    elif vs:
        sizes = "; ".join("%s: %s" % (it["version"], ", ".join(
            "%s %d" % (w, it["rounds"][w]) for w in VERSION_WORKLOADS))
            for it in vs["interpreters"].values())
        print("per version: the cpu and deep30 workloads, sized on each interpreter to "
              "%.2f s and %.2f s of CPU per run (%s); %d interleaved repetitions of their "
              "own, every interpreter in each (%.0f s with calibration)" % (
                  vs["cpu_s_per_run"]["cpu"], vs["cpu_s_per_run"]["deep30"], sizes,
                  vs["repetitions"], vs["elapsed_s"]))
        vrows = []
        for it in vs["interpreters"].values():
            vrows += build_rows(it["workloads"], checks, it["version"])
        print_table(vrows)

    tpr = results.get("thread_per_request")
    if tpr and "error" in tpr:
        print("thread per request: %s\n" % tpr["error"])
    elif tpr:
        hc = tpr.get("handler_cpu_ms")
        print("thread per request (server.py): %d requests, each in a new thread whose loop "
              "(%d iterations) took %s ms of CPU (bare runs: median min-max); "
              "expected = process CPU x rate" % (
                  tpr["requests"], tpr["handler_loop"],
                  fmt_summary(hc, "%.2f", ci=False) if hc else "?"))
        prows = []
        for sname, v in tpr["settings"].items():
            row = {"thread per request": sname,
                   "CPU ms/request": fmt_summary(v.get("cpu_ms_per_request"), "%.2f",
                                                 ci=False)}
            if sname != "bare":
                row["wall x: median [95% CI] min-max"] = fmt_ratio(v.get("wall_ratio"))
                row["cpu x: median [95% CI]"] = (fmt_ratio(v["cpu_ratio"]).rsplit(" ", 1)[0]
                                                 if v.get("cpu_ratio") else "-")
                smp, exp = v.get("samples"), v.get("expected")
                row["samples / expected (median)"] = "%.0f / %.1f" % (
                    smp["median"], exp["median"]) if smp and exp else "-"
                ap = v.get("achieved_pooled")
                row["achieved: pooled; median [CI] min-max"] = (
                    "%.1f%%; %s" % (100 * ap, fmt_summary(v.get("achieved"), "%.1f%%", 100))
                    if ap is not None else "-")
                apr = v.get("achieved_python_running")
                row["achieved (Python-running)"] = (
                    "%.1f%%" % (100 * apr["median"]) if apr else "-")
                th = v.get("threads_in_profile")
                row["threads in profile"] = "%.0f" % th["median"] if th else "-"
                lc = v.get("library_cpu_share")
                row["lib CPU"] = "%.2f%%" % (100 * lc["median"]) if lc else "-"
            if v.get("answered") != v.get("sent"):
                row["answered"] = "%d of %d" % (v.get("answered"), v.get("sent"))
            prows.append(row)
        print_table(prows)

    sp = results.get("spans") or {}
    if "error" in sp:
        print("span cost: %s\n" % sp["error"])
    else:
        srows = []
        for spy, v in sp.items():
            for name in ("without", "with", "paused"):
                x = v.get(name)
                if x is None:
                    continue
                srows.append({
                    "span start+stop, ns (spans.py)": "%s %s" % (v["version"], name),
                    "recording": "yes" if x["recording"] else "no",
                    "with pyprof.span": "%.0f" % x["with_span_ns"],
                    "start()+stop()": "%.0f" % x["start_stop_ns"],
                    "decorator (added to a call)": "%.0f" % x["decorated_extra_ns"],
                    "C functions alone": "%.0f" % x["c_functions_ns"]
                    if x["c_functions_ns"] else "-"})
        print_table(srows)

    tc = results.get("thread_create") or {}
    crows = []
    for loop, v in tc.items():
        if "error" in v:
            crows.append({"thread create+join": loop, "setting": "error: %s" % v["error"]})
            continue
        for sname, x in v["settings"].items():
            crows.append({
                "thread create+join": "%s x%d" % (loop, v["threads"]),
                "setting": sname,
                "us/thread: median [95% CI] min-max": fmt_summary(x.get("us_per_thread"),
                                                                 "%.1f"),
                "x bare": fmt_ratio(x["ratio"]).rsplit(" ", 1)[0] if x.get("ratio")
                else "-",
                "added us/thread": fmt_summary(x.get("added_us_per_thread"), "%+.1f",
                                               ci=False) if x.get("added_us_per_thread")
                else "-",
                "loop CPU us/thread": fmt_summary(x.get("cpu_us_per_thread"), "%.1f",
                                                  ci=False),
                "CPU x bare": "%.3f" % x["cpu_ratio"]["median"] if x.get("cpu_ratio")
                else "-",
                "process CPU s": "%.2f" % x["process_cpu_s"]["median"]
                if x.get("process_cpu_s") else "-"})
    print_table(crows)

    ssrows = []
    for name, v in ss.items():
        if not isinstance(v, dict):
            print("steady state: %s: %s\n" % (name, v))
            continue
        if "error" in v:
            ssrows.append({"steady state (cpu.py, long run - short runs)": name,
                           "achieved": "error: %s" % v["error"]})
            continue
        a = v.get("achieved")
        b = v.get("log_bytes_per_sample")
        ta = TARGETS["achieved_100hz_cpu_clock" if "100 Hz" in name
                     else "achieved_1khz_cpu_clock"]
        tb = steady_bytes_target(name)
        ssrows.append({"steady state (cpu.py, long run - short runs)": name,
                       "achieved": cell(100 * a if a is not None else None, "%.1f%%",
                                        100 * ta, ">=%.0f%%", check(a, ta, below=False)),
                       "B/sample": cell(b, "%.1f", tb, "<%.0f", check(b, tb)),
                       "long run CPU s": "%.2f" % v["long_run"]["cpu_s"],
                       "long run samples": v["long_run"]["samples"]})
    print_table(ssrows)

    wc = results.get("whole_cost") or {}
    wrows = []
    # One first column for every row: the default's windows in its title, the
    # correction-off runs' own (fewer) in their rows.
    first = [v for k, v in wc.items() if isinstance(v, dict) and "windows_on" in v
             and not k.endswith(CORRECTION_OFF)] or [{}]
    wtitle = "whole cost (work_rate.py: %d windows on, %.1f s each)" % (
        first[0].get("windows_on", 0), first[0].get("window_s", 0))
    for name in ("pyprof 100 Hz cpu", "pyprof 100 Hz cpu" + CORRECTION_OFF,
                 "pyprof 1 kHz cpu", "pyprof 1 kHz cpu" + CORRECTION_OFF):
        v = wc.get(name)
        if not v or "error" in v:
            continue
        m, ci = v.get("cpu_ratio_measured"), v.get("cpu_ratio_measured_ci95")
        rep_ = v.get("cpu_ratio_reported_whole")
        # The correction-off runs are shown beside the default, not checked.
        test_only = name.endswith(CORRECTION_OFF)
        tgt = TARGETS["whole_cpu_ratio_100hz" if "100 Hz" in name else "whole_cpu_ratio_1khz"]
        st = check(m, tgt, ci=ci) if m and not test_only else None
        if st:
            checks.append({"what": "extra CPU (work rate, sampling on/off), %s" % name,
                           "value": m, "ci95": ci, "target": "< %.3f" % tgt, "status": st})
        rom = v.get("reported_over_measured")
        st2 = None
        if rom is not None and not test_only:
            st2 = ("met" if abs(rom - 1) <= TARGETS["whole_reported_vs_measured"]
                   else "not met")
            checks.append({"what": "reported whole cost / measured extra CPU, %s" % name,
                           "value": rom, "target": "within %.0f%% of 1" %
                           (100 * TARGETS["whole_reported_vs_measured"]), "status": st2})
        ups_m, ups_r = v.get("us_per_sample_measured"), v.get("us_per_sample_reported")
        sc, hr = v.get("signal_cost_us"), v.get("cpu_ratio_reported_handler_only")
        wrows.append({
            wtitle: name + (", %d windows on" % v.get("windows_on", 0) if test_only
                            else ""),
            "measured cpu x [95% CI]": "%.4f [%.4f,%.4f]" % (m, ci[0], ci[1]) + (
                " (<%.3f %s)" % (tgt, mark(st)) if st else "") if m else "-",
            "reported whole x": "%.4f" % rep_["median"] if rep_ else "-",
            "reported/measured": (cell(rom, "%.2f") + (" (%s)" % mark(st2) if st2 else "")),
            "handler-only x": "%.4f" % hr["median"] if hr else "-",
            "us/sample measured": cell(ups_m["median"] if ups_m else None, "%.1f"),
            "us/sample reported": cell(ups_r["median"] if ups_r else None, "%.1f"),
            "signal cost us (n)": "%s (%d)" % (cell(sc["median"] if sc else None, "%.1f"),
                                               v.get("calib_signals") or 0),
            "timer excess": "%+.2f%%" % (100 * v["timer_excess"])
            if v.get("timer_excess") is not None else "-"})
    print_table(wrows)

    if tp.get("text"):
        trows = []
        for mode in ("text", "json"):
            v = tp.get(mode, {})
            if "error" in v:
                trows.append({"pyprof report": mode, "samples/s (wall)": "error: %s" %
                              v["error"]})
                continue
            trows.append({"pyprof report": mode, "logs": tp["logs"],
                          "samples": tp["samples"],
                          "median wall s": "%.3f" % statistics.median(v["wall_s"]),
                          "samples/s (wall)": cell(v["samples_per_s"] / 1e6, "%.1fM",
                                                   TARGETS["report_samples_per_s"] / 1e6,
                                                   ">=%.0fM", check(v["samples_per_s"],
                                                                    TARGETS[
                                                                        "report_samples_per_s"],
                                                                    below=False)),
                          "samples/CPU s": "%.1fM" % (v["samples_per_cpu_s"] / 1e6)
                          if v.get("samples_per_cpu_s") else "-"})
        print_table(trows)
    elif tp.get("error"):
        print("pyprof report throughput: %s\n" % tp["error"])

    arows = []
    for name, v in results.get("accuracy", {}).items():
        if not isinstance(v, dict):
            print("accuracy: %s: %s\n" % (name, v))
            continue
        if "error" in v:
            arows.append({"accuracy (shares.py)": name, "error": v["error"]})
            continue
        row = {"accuracy (shares.py)": name, "samples": v["samples_in_functions"]}
        for f, fv in v["functions"].items():
            row[f] = "%.1f%% vs %.1f%%" % (100 * fv["share_measured"], 100 * fv["share_known"])
        row["max |error|"] = "%.2f pp (%.1f sigma)" % (
            v["max_abs_error_pp"], v["max_abs_error_in_sigmas"] or 0)
        arows.append(row)
    print_table(arows)

    # Side by side on the CPU-bound workload: wall ratios only.
    srows = []
    for wname in ("cpu", "cpu-debian"):
        w = results["workloads"].get(wname)
        if not w:
            continue
        for sname, s in w["settings"].items():
            if s["kind"] == "bare" or (s["kind"] == "pyprof" and s.get("clock") != "cpu") \
                    or s.get("test_only"):
                continue
            srows.append({"side by side (CPU-bound)": sname,
                          "interpreter": "%s (%s)" % (
                              w["python"], results["python"]["version"] if wname == "cpu"
                              else (debian or {}).get("version")),
                          "wall x": fmt_ratio(s.get("wall_ratio")),
                          "cpu x": fmt_ratio(s.get("cpu_ratio")),
                          "bare wall s": "%.2f" % w["settings"]["bare"]["wall_s"]["median"]
                          if w["settings"]["bare"].get("wall_s") else "-"})
    print_table(srows)
    if debian is None and not args.no_debian:
        results["notes"].append("%s not present: no yappi comparison" % DEBIAN_PY)
    elif debian and not debian.get("yappi"):
        results["notes"].append("python3-yappi not installed: no yappi comparison")

    al = results.get("alloc")
    if al and "error" in al:
        print("allocation sampling: %s\n" % al["error"])
    elif al:
        print("allocation sampling (alloc_mix.py: json, dict/list/str churn, regex, "
              "templates, rows to objects; %.1f s of CPU per bare run; %d interleaved "
              "repetitions of their own, %.0f s): CPU is user+sys (wait4); B/alloc sample = "
              "(log bytes - the alloc-off run's) / ALLOC records; ns/allocation vs off = "
              "(CPU - the alloc-off run's) / allocations estimated; pyprof extra CPU / a "
              "tool's = (pyprof's cpu x bare - 1) / (the tool's cpu x bare - 1)" % (
                  al["cpu_s_per_run"], al["repetitions"], al["elapsed_s"]))
        mr = al["memray"]
        print("memray: %s" % ("%s on Python %s" % (mr["version"], mr.get("python"))
                              if mr["version"] else "not available (%s)" % mr["why"]))
        rows_, qrows, crows, arows = alloc_rows(al, checks)
        print_table(rows_)
        mus = ["Python %s %s us" % (v, fmt_summary(it["marginal_us_per_alloc_sample"], "%.2f"))
               for v, it in al["interpreters"].items()
               if it.get("marginal_us_per_alloc_sample")]
        if mus:
            print("CPU of one more ALLOC sample (runs at %s over %s, per ALLOC record more; "
                  "median [95%% CI] min-max): %s\n" % (ALLOC_INTERVALS[1], ALLOC_INTERVALS[0],
                                                      "; ".join(mus)))
        print_table(qrows)
        if crows:
            cg = al["c_loop"].get("callgrind") or {}
            print("C malloc loop (alloc_loop.c, %s iterations of free + malloc of 16..4096 "
                  "bytes, no Python): a process without Python is not profiled at all (no "
                  "hooks, no log), so about 1.00 is expected with sampling off and at 512KB "
                  "alike; instructions: the whole program's under callgrind (%s), which "
                  "no load on the machine moves" % (
                      al["c_loop"]["iterations"], "%d iterations" % cg["iterations"]
                      if "iterations" in cg else cg.get("error")))
            print_table(crows)
        if arows:
            print("accuracy: pyprof's estimate of the bytes alloc_mix.py's blobs_* functions "
                  "allocate (self), pooled over the runs, against the exact count (calls x "
                  "sys.getsizeof of one block): error, in sigmas of the sampling error, and "
                  "(samples)")
            print_table(arows)
        for v, t in al.get("tracemalloc_check", {}).items():
            if "error" in t:
                print("tracemalloc check, Python %s: %s" % (v, t["error"]))
                continue
            ks = t["known"]
            print("tracemalloc check, Python %s: one block of each blobs_* function traced "
                  "at %s bytes, sys.getsizeof %s: %s" % (
                      v, "/".join(str(k.get("traced_block_bytes")) for k in ks.values()),
                      "/".join(str(k["block_bytes"]) for k in ks.values()),
                      "equal" if all(k.get("traced_block_bytes") == k["block_bytes"]
                                     for k in ks.values()) else "DIFFERENT"))
        print()
        results["notes"].extend(al.get("notes") or [])

    met = sum(1 for c in checks if c["status"] == "met")
    print("targets: %d checked, %d met, %d not met, %d unclear" % (
        len(checks), met, sum(1 for c in checks if c["status"] == "not met"),
        sum(1 for c in checks if c["status"] and c["status"].startswith("unclear"))))
    for c in checks:
        if c["status"] != "met":
            print("  %-9s %s: %s (target %s)" % (c["status"].upper(), c["what"],
                                                 "%.4g" % c["value"], c["target"]))
    if results["failures"]:
        print("%d runs failed (see failures in the JSON)" % len(results["failures"]))
    for n in results["notes"]:
        print("note: %s" % n)

    results["elapsed_s"] = time.monotonic() - t_start
    results["machine"]["load_at_end"] = os.getloadavg()
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(results, fh, indent=1, sort_keys=False)
        fh.write("\n")
    os.replace(tmp, args.out)
    print("all figures: %s (%.0f s)" % (args.out, results["elapsed_s"]))
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
