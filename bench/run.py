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
* asyncio (asyncio_server.py, Debian sid's 3.14): an asyncio server's CPU while it
  serves, with 100 and 10,000 tasks waiting, without the library, in cpu mode and in
  wall mode at 100 Hz and 1 kHz (the pass over the waiting tasks);
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
import collections
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

# The bench's modules come from bench/ (this script's directory, first on sys.path);
# none of their byte-code caches goes into the source tree.
sys.dont_write_bytecode = True

import calibrate  # noqa: E402
from common import (DEBIAN_PY, DEFAULT_VERSIONS, PART_NAMES, VERSION_PYTHONS,  # noqa: E402
                    WORKLOAD_NAMES, log)
from machine import default_python, interp_version, launcher_cpu, version_pythons  # noqa: E402
from parts import (accuracy, alloc, asyncio_tasks, correction, overhead, spans,  # noqa: E402
                   steady_state, threads, throughput, versions, whole_cost)
from report import print_head, print_summary  # noqa: E402
from results import new_results, write_results  # noqa: E402
from runner import Runner, guarded  # noqa: E402

# A part's budget: the option that sets its seconds, and the defaults of its seconds and
# of its repetitions at most and at least, each as (full run, --quick); --reps and
# --min-reps set the repetitions of every part that has a budget.
Budget = collections.namedtuple("Budget", "option seconds max_reps min_reps")
MAIN_BUDGET = Budget("budget", (480.0, 100.0), (15, 3), (5, 2))
VERSIONS_BUDGET = Budget("versions_budget", (90.0, 25.0), (11, 3), (5, 2))
ALLOC_BUDGET = Budget("alloc_budget", (300.0, 120.0), (9, 3), (5, 3))

# A part of the bench: its name; whether this run has it (from --only, or from what
# setup found); the function that runs it; one that finishes it after every part has
# run (in the table's order); its budget (None: none of its own; the main budget counts
# from the start, so the one-off parts before the main repetitions take from it).
Part = collections.namedtuple("Part", "name selected run then budget")


def wanted(*names):
    """Selected when --only names any of these (every name, without --only)."""
    return lambda ctx: bool(ctx.want & set(names))


def always(ctx):
    return True


def has_versions(ctx):
    """--versions named interpreters that are present and run (and --only has versions)."""
    return bool(ctx.vpys)


# In the order they run: the one-off parts first, then the main repetitions, then the
# parts with repetitions and budgets of their own.
PARTS = [
    Part("calibration", always, calibrate.run, None, None),
    Part("thread_create.c", wanted("thread_create_c"), threads.compile_part, None, None),
    Part("accuracy", wanted("accuracy"), accuracy.run, None, None),
    Part("throughput", wanted("throughput"), throughput.run, None, None),
    Part("whole_cost", wanted("whole_cost"), whole_cost.run, None, None),
    Part("spans", wanted("spans"), spans.run, None, None),
    Part("asyncio", wanted("asyncio"), asyncio_tasks.run, None, None),
    Part("steady_state", wanted("steady_state"), steady_state.run, steady_state.analyse,
         None),
    Part("clock read", wanted("cpu", "deep30"), correction.run, None, None),
    Part("workloads", always, overhead.run, overhead.collect, MAIN_BUDGET),
    Part("versions", has_versions, versions.run, None, VERSIONS_BUDGET),
    Part("alloc", wanted("alloc"), alloc.run, None, ALLOC_BUDGET),
]

# The report, in the order it prints (not the order the parts run): each table's
# function that adds its checks before anything prints (None: it adds them as it
# prints, or has none), and the one that prints it.
Table = collections.namedtuple("Table", "name add_checks show")
TABLES = [
    Table("workloads", overhead.add_checks, overhead.show),
    Table("correction", None, correction.show),
    Table("versions", None, versions.show),
    Table("thread_per_request", None, threads.show_per_request),
    Table("spans", None, spans.show),
    Table("asyncio", None, asyncio_tasks.show),
    Table("thread_create", None, threads.show_create),
    Table("steady_state", steady_state.add_checks, steady_state.show),
    Table("whole_cost", None, whole_cost.show),
    Table("throughput", throughput.add_checks, throughput.show),
    Table("accuracy", None, accuracy.show),
    Table("side by side", None, overhead.show_side_by_side),
    Table("alloc", None, alloc.show),
]


def budget_of(args, budget):
    """(seconds, min_reps, max_reps) of a part's budget under args; () for none."""
    if budget is None:
        return ()
    pick = lambda pair: pair[1] if args.quick else pair[0]  # noqa: E731
    seconds = getattr(args, budget.option) or pick(budget.seconds)
    max_reps = args.reps or pick(budget.max_reps)
    return seconds, min(args.min_reps or pick(budget.min_reps), max_reps), max_reps


class Context:
    """What the parts share.  setup() sets: args, want (names of workloads and parts),
    quick, secs (sizes), t_start, py (the main interpreter), work (scratch), runner,
    debian (Debian's python3.11, or None), vpys (the interpreters of --versions),
    results (the JSON).  The parts set, as they run: rounds (calibrate), clib
    (thread_create.c), longs (steady_state), runs (the main repetitions), rows (the
    overhead table)."""

    def __init__(self, **kw):
        self.clib = None
        self.longs = None
        self.__dict__.update(kw)


def parse_args():
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
    return args, want


def setup(args, want):
    """Everything before the first run: the sizes, the main interpreter, the scratch
    directory, Debian's interpreter, those of --versions, the JSON's head."""
    quick = args.quick
    budget = budget_of(args, MAIN_BUDGET)[0]
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

    results = new_results(args, want, py, debian, started, notes)
    log("main interpreter %s (%s); scratch %s; budget %.0f s" %
        (py, results["python"]["version"], work, budget))
    return Context(args=args, want=want, quick=quick, secs=secs, t_start=t_start, py=py,
                   work=work, runner=runner, debian=debian, vpys=vpys, results=results)


def main():
    ctx = setup(*parse_args())
    try:
        for part in PARTS:
            if part.selected(ctx):
                part.run(ctx, *budget_of(ctx.args, part.budget))
        for part in PARTS:
            if part.then and part.selected(ctx):
                part.then(ctx)
    finally:
        if not ctx.args.keep_logs and not ctx.args.workdir:
            shutil.rmtree(ctx.work, ignore_errors=True)

    # Figures across the parts' runs.
    correction.summarise(ctx.results)
    overhead.histogram(ctx.results)

    for table in TABLES:
        if table.add_checks:
            table.add_checks(ctx)
    print_head(ctx)
    for table in TABLES:
        table.show(ctx)
    print_summary(ctx.results)
    return write_results(ctx.results, ctx.args, ctx.t_start)


if __name__ == "__main__":
    sys.exit(main())
