#!/usr/bin/python3
"""Transparency test: CPython's own regression tests pass under LD_PRELOAD exactly as they
pass without it.

Runs Debian's libpython3.11-testsuite (`/usr/bin/python3.11 -m test`) for the modules
that exercise what the library touches (signals, threads, fork/exec, file descriptors,
clocks, blocking system calls), twice:

    plain      the environment of the caller, without LD_PRELOAD / PYPROF_* / PYTHON*
    preloaded  the same plus LD_PRELOAD=libpyprof.so, PYPROF_PERIOD=1ms, PYPROF_OUTPUT=DIR
               and PYPROF_ALLOC=64KB (allocation sampling: every allocator hooked)

and compares the outcome of every test case (passed, failure, error, skipped, expected
failure; "timeout"/"crashed" for the case running when a module hung or died; "not run"
for a case one run never reached) read from regrtest's --junit-xml, with the verbose
output as the fallback when a module died before writing it.  Each module runs in its own
`python -m test -v` process (--jobs of them at a time); every Python process the tests
start inherits the environment, so they are profiled too.

Flakiness.  A case whose outcome differs is re-run (with `-m ID`, plain and preloaded)
--reruns more times, and what is re-run is printed.  Then, over the 1 + reruns outcomes
seen in each mode, a difference FAILS when
  * the preloaded run timed out or crashed in a case where no plain run did, or
  * an outcome was seen in one mode at least twice (once when --reruns is 0) and never
    in the other mode;
otherwise the case is FLAKY: both modes showed the outcome that differed, or it was seen
once and did not come back.  FLAKY cases are listed with their outcomes, never hidden.
A module whose overall result differs (crash, "env changed", a class fixture error) with
no differing case is re-run whole and judged the same way.

A case listed in KNOWN (a difference the library cannot avoid, with its reason) that
differs without hanging or crashing is reported as KNOWN, not as a failure.

The profiled run must also have produced logs with samples (`pyprof report --json`) and
allocation samples (`pyprof report --memory --json`): a library that silently did
nothing fails the test.

Environment (the Makefile's contract, as for tests/integration):
    PYPROF_LIB   libpyprof.so     PYPROF_TOOL   the pyprof tool
    PYPROF_SAN   "", "address" or "undefined": the library was built with that sanitizer;
                 its runtime is then preloaded in BOTH runs, so that only the library
                 differs between them.

Exit status: 0 no difference, 1 a difference (or no samples), 2 cannot run.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import pyprof_testlib  # noqa: E402  (the sanitizer runtime lookup, shared)

PYTHON = "/usr/bin/python3.11"
# Longest first: they run --jobs at a time.
MODULES = ["test_signal", "test_socket", "test_subprocess", "test_threading", "test_os",
           "test_time", "test_select"]
# Test cases that cannot run on the test machines, with or without the library
# (regrtest --ignore patterns, matched against each part of a test id).
IGNORE = {
    "ThreadedVSOCKSocketStreamTest":
        "needs a vsock peer: on a VM that exposes /dev/vsock its setUp blocks in accept() "
        "until the module times out, with or without the library",
}
# Differences the library cannot avoid, each with its reason (docs/LIMITATIONS.md).  They
# are listed in every report as KNOWN; a hang or a crash in them still fails.
KNOWN = {
    "test_pass_fds_redirected":
        "the exec'd child lists every descriptor it has open and expects exactly 0, 1, 2 "
        "and the passed ones; the library in that child holds its own (the log file and "
        "/proc/self/statm, both close-on-exec)",
}
PERIOD = "1ms"
ALLOC = "64KB"

PASSED, FAILURE, ERROR, SKIPPED, XFAIL, XPASS = (
    "passed", "failure", "error", "skipped", "expected-failure", "unexpected-success")
TIMEOUT, CRASHED, NOT_RUN = "timeout", "crashed", "not run"
BAD = (TIMEOUT, CRASHED)


def log(msg=""):
    print(msg, flush=True)


# ---- environment ------------------------------------------------------------------------


def base_env():
    """The caller's environment without anything that changes what runs."""
    return {k: v for k, v in os.environ.items()
            if not (k == "LD_PRELOAD" or k.startswith("PYPROF_") or k.startswith("PYTHON")
                    or k.endswith("SAN_OPTIONS"))}


def san_runtime(san):
    try:
        return pyprof_testlib.sanitizer_runtime(san)
    except ValueError as e:
        sys.exit("run.py: %s" % e)


def make_envs(args, logdir):
    plain = base_env()
    san = san_runtime(args.san)
    if san:
        plain["LD_PRELOAD"] = san
        if args.san == "address":
            plain["ASAN_OPTIONS"] = "detect_leaks=0"   # Python itself leaks at exit
        else:
            plain["UBSAN_OPTIONS"] = "print_stacktrace=1"
    pre = dict(plain)
    pre["LD_PRELOAD"] = (san + " " + args.lib) if san else args.lib
    pre["PYPROF_PERIOD"] = PERIOD
    pre["PYPROF_ALLOC"] = ALLOC
    pre["PYPROF_OUTPUT"] = logdir
    return plain, pre


# ---- one `python -m test` process ---------------------------------------------------------


class ModuleRun(object):
    """The outcome of one `python -m test -v MODULE` process."""

    def __init__(self, module, mode, cmd, out_path):
        self.module, self.mode, self.cmd, self.out_path = module, mode, cmd, out_path
        self.rc = None
        self.wall = 0.0
        self.output = ""
        self.status = None          # regrtest's "Tests result", or how the process died
        self.cases = {}             # test id -> outcome
        self.details = {}           # test id -> failure text
        self.hung = None            # traceback printed by regrtest's --timeout
        self.from_xml = False


_START = re.compile(r"^(\w+) \(((?:test\.)?[\w.]+)\)")
_RESULT = re.compile(r"(?:^|\.\.\. )(ok|FAIL|ERROR|skipped(?: .*)?|expected failure|"
                     r"unexpected success)$")
_WORDS = {"ok": PASSED, "FAIL": FAILURE, "ERROR": ERROR, "expected failure": XFAIL,
          "unexpected success": XPASS}
_TIMEOUT = re.compile(r"Timeout \(\d+:\d\d:\d\d\)!$", re.M)
_TESTS_RESULT = re.compile(r"^Tests result: (.+)$", re.M)


def method_id(test_id):
    """`test.test_os.C.test_x (sub=1)` (a subtest) -> `test.test_os.C.test_x`."""
    return test_id.split(" ", 1)[0]


def parse_xml(path, run):
    root = ET.parse(path).getroot()
    unnamed = 0
    for case in root.iter("testcase"):
        name = case.get("name")
        if not name:
            # unittest reports an unexpected success without a result the XML writer
            # sees; count it so that both runs are compared on it too.
            unnamed += 1
            name = "%s <case without a name #%d>" % (run.module, unnamed)
        tags = [c.tag for c in case]
        if "error" in tags:
            outcome, el = ERROR, case.find("error")
        elif "failure" in tags:
            outcome, el = FAILURE, case.find("failure")
        elif "skipped" in tags:
            outcome, el = SKIPPED, None
        elif "output" in tags:
            outcome, el = XFAIL, None
        else:
            outcome, el = PASSED, None
        key, n = name, 1
        while key in run.cases:
            n += 1
            key = "%s #%d" % (name, n)
        run.cases[key] = outcome
        if el is not None:
            text = (el.text or el.get("message") or "").strip()
            for io in ("system-out", "system-err"):
                sub = case.find(io)
                if sub is not None and (sub.text or "").strip():
                    text += "\n--- %s ---\n%s" % (io, sub.text.strip())
            run.details[key] = text
    run.from_xml = True


def parse_verbose(run):
    """Fallback when the process died before writing its XML: the verbose lines
    `test_x (test.mod.Class.test_x) ... ok`; returns the case that started last without
    a result (the one running when the process died)."""
    current = None
    for line in run.output.splitlines():
        m = _START.match(line)
        if m and m.group(2).startswith("test.") and m.group(2).endswith("." + m.group(1)):
            current = m.group(2)
        r = _RESULT.search(line)
        if r and current:
            word = r.group(1)
            run.cases[current] = SKIPPED if word.startswith("skipped") else _WORDS[word]
            current = None
    return current


def run_module(args, module, mode, env, outdir, matches=(), timeout=None, tag=""):
    timeout = timeout or args.timeout
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, module + tag)
    xml, out = base + ".xml", base + ".out"
    tmp = base + ".tmp"
    os.makedirs(tmp, exist_ok=True)
    cmd = [args.python, "-m", "test", "-v", "--timeout", str(timeout), "--junit-xml", xml,
           "--tempdir", tmp]
    for pat in IGNORE:
        cmd += ["-i", pat]
    for m in matches:
        cmd += ["-m", m]
    cmd.append(module)
    run = ModuleRun(module, mode, cmd, out)
    t0 = time.monotonic()
    with open(out, "wb") as f:
        proc = subprocess.Popen(cmd, env=env, cwd=tmp, stdin=subprocess.DEVNULL, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            # regrtest's own --timeout ends a hung module; this is the backstop.
            run.rc = proc.wait(timeout=timeout * 1.5 + 120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            run.rc = proc.wait()
            run.status = "killed by run.py after %ds" % (timeout * 1.5 + 120)
    # Whatever the test left behind in its own session (a hung grandchild) goes too.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    run.wall = time.monotonic() - t0
    with open(out, "rb") as f:
        run.output = f.read().decode("utf-8", "replace")
    shutil.rmtree(tmp, ignore_errors=True)

    results = _TESTS_RESULT.findall(run.output)
    hung = _TIMEOUT.search(run.output)
    if hung:
        start = run.output.rfind("\n", 0, hung.start()) + 1
        run.hung = "\n".join(run.output[start:].splitlines()[:40])
    if run.status is None:
        if results:
            run.status = results[-1].strip()
        elif hung:
            run.status = "TIMED OUT"
        elif run.rc < 0:
            run.status = "CRASHED (signal %s)" % signal.Signals(-run.rc).name
        else:
            run.status = "CRASHED (exit status %d, no result)" % run.rc

    last = None
    if os.path.exists(xml):
        try:
            parse_xml(xml, run)
        except ET.ParseError:
            last = parse_verbose(run)
    else:
        last = parse_verbose(run)
    if not run.from_xml and last is not None:
        run.cases[last] = TIMEOUT if hung else CRASHED
        run.details[last] = run.hung or run.output[-4000:]
    return run


def counts(run):
    c = {}
    for o in run.cases.values():
        c[o] = c.get(o, 0) + 1
    return c


# ---- judging ---------------------------------------------------------------------------


def is_bad(outcome):
    """A hang or a crash: a case's TIMEOUT/CRASHED, or such a module result."""
    return outcome in BAD or str(outcome).startswith(("TIMED OUT", "CRASHED", "killed"))


def judge(plain, pre):
    """plain, pre: the outcomes seen for one item in each mode, the full run first.
    Returns (verdict, reason), verdict one of FAIL, FLAKY, SAME (no difference once the
    runs that never reached the case are left out), UNREACHED (never reached in a mode)."""
    plain = [o for o in plain if o != NOT_RUN]
    pre = [o for o in pre if o != NOT_RUN]
    if not plain or not pre:
        return "UNREACHED", "never reached in the %s run" % ("plain" if not plain else
                                                              "preloaded")
    if set(plain) == set(pre) and len(set(plain)) == 1:
        return "SAME", "same outcome whenever it ran"
    for o in pre:
        if is_bad(o) and o not in plain:
            return "FAIL", "the preloaded run %s (%d of %d times); no plain run did" % (
                "hung" if o == TIMEOUT or "TIMED" in str(o) else "crashed",
                pre.count(o), len(pre))
    need = 2 if len(pre) > 1 else 1
    for o in sorted(set(pre) - set(plain), key=str):
        if pre.count(o) >= need:
            return "FAIL", "%s %d of %d times preloaded, never plain" % (
                o, pre.count(o), len(pre))
    need = 2 if len(plain) > 1 else 1
    for o in sorted(set(plain) - set(pre), key=str):
        if plain.count(o) >= need:
            return "FAIL", "%s %d of %d times plain, never preloaded" % (
                o, plain.count(o), len(plain))
    return "FLAKY", "the outcome that differed was seen in both modes or did not come back"


def excerpt(text, lines=30):
    ls = (text or "").strip().splitlines()
    if len(ls) > lines:
        ls = ls[:lines] + ["[... %d more lines]" % (len(ls) - lines)]
    return "\n".join("        " + x for x in ls)


# ---- the pyprof logs ---------------------------------------------------------------------


def check_logs(args, logdir):
    """Returns (ok, description)."""
    files = [f for f in os.listdir(logdir)] if os.path.isdir(logdir) else []
    if not files:
        return False, "no log at all in %s: the library did not profile anything" % logdir
    r = subprocess.run([args.tool, "report", "--json", logdir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        return False, "%s report --json %s failed (exit status %d): %s" % (
            args.tool, logdir, r.returncode, r.stderr.strip()[-2000:])
    try:
        rep = json.loads(r.stdout)
    except ValueError as e:
        return False, "pyprof report --json printed no JSON (%s)" % e
    procs = rep.get("processes", [])
    ended = {}
    for p in procs:
        ended[p.get("ended")] = ended.get(p.get("ended"), 0) + 1
    desc = "%d log files, %d processes, %d samples, %d dropped; processes ended: %s" % (
        len(files), len(procs), rep.get("samples", 0), rep.get("dropped", 0),
        ", ".join("%s %d" % (k, v) for k, v in sorted(ended.items(), key=str)))
    if not rep.get("samples", 0) > 0:
        return False, "the logs hold no sample: " + desc
    r = subprocess.run([args.tool, "report", "--memory", "--json", logdir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    try:
        mem = json.loads(r.stdout) if r.returncode == 0 else {}
    except ValueError:
        mem = {}
    allocs = mem.get("total", {}).get("samples", 0)
    desc += "; %d allocation samples, %d frees seen" % (allocs, mem.get("freed", 0))
    if not allocs > 0:
        return False, "the logs hold no allocation sample (%s report --memory: exit %d, %s): %s" % (
            args.tool, r.returncode, r.stderr.strip()[-2000:], desc)
    return True, desc


_NUM = re.compile(r"\d+")


def library_lines(runs):
    """The library's own stderr lines in the preloaded outputs, numbers folded."""
    seen = {}
    for run in runs:
        for line in run.output.splitlines():
            if line.startswith("pyprof:"):
                key = (run.module, _NUM.sub("N", re.sub(r"\.\w{6}\.lz4", ".X.lz4", line)))
                seen[key] = seen.get(key, 0) + 1
    return seen


# ---- main ------------------------------------------------------------------------------


def run_phase(args, mode, env, modules, outdir):
    t0 = time.monotonic()
    runs = {}
    lock = threading.Lock()

    def one(module):
        run = run_module(args, module, mode, env, outdir)
        with lock:
            c = counts(run)
            log("  [%s] %-16s %-14s %4d cases (%s)  %6.1f s" % (
                mode, module, run.status, len(run.cases),
                " ".join("%s %d" % (k, v) for k, v in sorted(c.items())), run.wall))
        return run

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for run in pool.map(one, modules):
            runs[run.module] = run
    return runs, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default=os.environ.get("PYPROF_LIB") or
                    os.path.join(REPO, "build", "libpyprof.so"))
    ap.add_argument("--tool", default=os.environ.get("PYPROF_TOOL") or
                    os.path.join(REPO, "build", "pyprof"))
    ap.add_argument("--san", default=os.environ.get("PYPROF_SAN", ""))
    ap.add_argument("--python", default=PYTHON)
    ap.add_argument("--workdir", default=os.path.join(REPO, "build", "transparency"),
                    help="outputs, XML and logs (emptied first)")
    ap.add_argument("--jobs", type=int, default=2, help="modules run at once (default 2)")
    ap.add_argument("--timeout", type=int, default=180,
                    help="regrtest --timeout for a whole module (default 180 s)")
    ap.add_argument("--rerun-timeout", type=int, default=60,
                    help="regrtest --timeout when re-running a few cases (default 60 s)")
    ap.add_argument("--reruns", type=int, default=2,
                    help="re-runs of each differing case in both modes (default 2)")
    ap.add_argument("modules", nargs="*", default=MODULES)
    args = ap.parse_args()

    for path, what in ((args.lib, "library"), (args.tool, "tool"), (args.python, "python")):
        if not os.access(path, os.X_OK if what != "library" else os.R_OK):
            log("run.py: the %s %s is missing" % (what, path))
            return 2
    testdir = subprocess.run([args.python, "-c", "import test, os; print(os.path.dirname("
                              "test.__file__))"], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.strip()
    missing = [m for m in args.modules
               if not os.path.exists(os.path.join(testdir, m + ".py"))
               and not os.path.isdir(os.path.join(testdir, m))]
    if missing:
        log("run.py: %s has no %s: install libpython3.11-testsuite (make deps)" % (
            args.python, ", ".join(missing)))
        return 2

    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    logdir = os.path.join(work, "logs")
    os.makedirs(logdir)
    # Tests run children under other uids (subprocess's user=/group=): let them log too.
    os.chmod(logdir, 0o1777)
    plain_env, pre_env = make_envs(args, logdir)

    log("== transparency: %s -m test, plain and with LD_PRELOAD=%s PYPROF_PERIOD=%s "
        "PYPROF_ALLOC=%s%s" % (args.python, args.lib, PERIOD, ALLOC,
                               " (+ %s runtime in both)" % args.san if args.san else ""))
    log("   modules: %s; %d at a time; --timeout %d" % (
        " ".join(args.modules), args.jobs, args.timeout))
    for pat, why in IGNORE.items():
        log("   excluded in both runs: %s (%s)" % (pat, why))
    log("   outputs in %s" % work)

    log("== plain run")
    plain, plain_wall = run_phase(args, "plain", plain_env, args.modules,
                                  os.path.join(work, "plain"))
    log("   wall time %.1f s" % plain_wall)
    log("== preloaded run")
    pre, pre_wall = run_phase(args, "preloaded", pre_env, args.modules,
                              os.path.join(work, "preloaded"))
    log("   wall time %.1f s" % pre_wall)
    logs_ok, logs_desc = check_logs(args, logdir)

    # Items that differ: test cases; the module result when it differs with no case that
    # does, or when the preloaded run hung or crashed.
    items = {}     # (module, id or None) -> {"plain": [...], "pre": [...]}
    for m in args.modules:
        p, q = plain[m], pre[m]
        diff = False
        for i in sorted(set(p.cases) | set(q.cases)):
            a, b = p.cases.get(i, NOT_RUN), q.cases.get(i, NOT_RUN)
            if a != b:
                items[(m, i)] = {"plain": [a], "pre": [b]}
                diff = True
        if p.status != q.status and (not diff or is_bad(q.status)):
            items[(m, None)] = {"plain": [p.status], "pre": [q.status], "whole": not diff}

    details = {}   # item -> [(where, failure text of the preloaded run)]
    for (m, i) in items:
        if i is None:
            details[(m, None)] = [("full run", pre[m].hung or pre[m].output[-3000:])]
        elif i in pre[m].details:
            details[(m, i)] = [("full run", pre[m].details[i])]

    def show(keys, label):
        """One line per differing item, the cases a run never reached counted."""
        unreached = {}
        for k in sorted(keys, key=str):
            v = items[k]
            x, y = v["plain"][-1], v["pre"][-1]
            if NOT_RUN in (x, y):
                unreached.setdefault((k[0], "plain" if x == NOT_RUN else "preloaded"),
                                     []).append(k)
                continue
            log("   %s %s: plain %s, preloaded %s" % (k[0], k[1] or "(module result)", x, y))
        for (m, mode), ks in sorted(unreached.items()):
            log("   %s: %d case(s) %s in the %s run (%s)" % (
                m, len(ks), label, mode, ", ".join(k[1].rsplit(".", 1)[-1] for k in ks[:3])
                + (", ..." if len(ks) > 3 else "")))

    rerun_wall = 0.0
    t0 = time.monotonic()
    if items and args.reruns:
        log("== %d item(s) differ; re-running them %d more time(s) in both modes" % (
            len(items), args.reruns))
        show(items, "not reached")
    for rnd in range(1, (args.reruns + 1) if items else 1):
        jobs = []   # (module, matches, item keys, timeout, tag)
        for m in args.modules:
            keys = [k for k in items if k[0] == m]
            if not keys:
                continue
            if (m, None) in keys and items[(m, None)]["whole"]:
                jobs.append((m, [], [(m, None)], args.timeout, "-r%d" % rnd))
                continue
            # A case that hung or crashed anywhere runs alone, so that the others get
            # their outcome even if it does it again.
            cases = [k for k in keys if k[1] is not None]
            alone = [k for k in cases if any(map(is_bad, items[k]["plain"] + items[k]["pre"]))]
            rest = [k for k in cases if k not in alone]
            for n, k in enumerate(alone):
                jobs.append((m, [method_id(k[1])], [k], args.rerun_timeout,
                             "-r%d-alone%d" % (rnd, n)))
            if rest:
                jobs.append((m, sorted({method_id(k[1]) for k in rest}), rest,
                             args.rerun_timeout, "-r%d" % rnd))
        log("-- re-run %d/%d: %s" % (rnd, args.reruns, "; ".join(
            "%s %s" % (m, "(whole module)" if not ms else ms[0] if len(ms) == 1 else
                       "%d cases" % len(ms)) for m, ms, _, _, _ in jobs)))

        def both(job):
            m, ms, keys, tmo, tag = job
            out = os.path.join(work, "rerun%d" % rnd)
            a = run_module(args, m, "plain", plain_env, os.path.join(out, "plain"), ms, tmo, tag)
            b = run_module(args, m, "preloaded", pre_env, os.path.join(out, "preloaded"),
                           ms, tmo, tag)
            return job, a, b

        differ = []
        agree = 0
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for (m, ms, keys, tmo, tag), a, b in pool.map(both, jobs):
                for k in keys:
                    if k[1] is None:
                        x, y = a.status, b.status
                        details[k].append(("re-run %d" % rnd, b.hung or b.output[-3000:]))
                    else:
                        x, y = a.cases.get(k[1], NOT_RUN), b.cases.get(k[1], NOT_RUN)
                        if k[1] in b.details:
                            details.setdefault(k, []).append(("re-run %d" % rnd,
                                                              b.details[k[1]]))
                    items[k]["plain"].append(x)
                    items[k]["pre"].append(y)
                    if x == y:
                        agree += 1
                    else:
                        differ.append(k)
        log("   %d agree this time%s" % (agree, ", these differ:" if differ else ""))
        show(differ, "not reached")
    rerun_wall = time.monotonic() - t0

    # ---- summary -----------------------------------------------------------------------
    log("")
    log("== summary: cases passed/failure/error/skipped (+ other outcomes), wall seconds")
    hdr = "%-16s %5s  %-18s %-18s %7s %7s  %s" % (
        "module", "cases", "plain", "preloaded", "plain s", "preld s",
        "regrtest result (plain / preloaded)")
    log(hdr)
    log("-" * len(hdr))
    main4 = (PASSED, FAILURE, ERROR, SKIPPED)

    def pfes(run):
        c = counts(run)
        s = "/".join(str(c.get(k, 0)) for k in main4)
        other = sorted(k for k in c if k not in main4)
        if other:
            s += " +" + ",".join("%d %s" % (c[k], k) for k in other)
        return s

    tot = [0, 0.0, 0.0]
    for m in args.modules:
        p, q = plain[m], pre[m]
        n = len(set(p.cases) | set(q.cases))
        tot[0] += n
        tot[1] += p.wall
        tot[2] += q.wall
        log("%-16s %5d  %-18s %-18s %7.1f %7.1f  %s" % (
            m, n, pfes(p), pfes(q), p.wall, q.wall,
            p.status if p.status == q.status else "%s / %s" % (p.status, q.status)))
    log("-" * len(hdr))
    log("%-16s %5d  %-18s %-18s %7.1f %7.1f" % ("total", tot[0], "", "", tot[1], tot[2]))
    log("wall time: plain run %.1f s, preloaded run %.1f s, re-runs %.1f s (%d module(s) "
        "at once)" % (plain_wall, pre_wall, rerun_wall, args.jobs))
    log("pyprof logs of the preloaded run: %s" % logs_desc)
    lines = library_lines(pre.values())
    if lines:
        log("the library's stderr lines in the preloaded run (numbers folded):")
        for (m, line), n in sorted(lines.items()):
            log("   %3dx %-16s %s" % (n, m, line))

    verdicts = {}
    for k, v in sorted(items.items(), key=str):
        verdict, why = judge(v["plain"], v["pre"])
        known = [w for pat, w in KNOWN.items() if k[1] and pat in k[1].split(".")]
        if verdict == "FAIL" and known and not any(is_bad(o) for o in v["pre"]):
            verdict, why = "KNOWN", known[0]
        verdicts.setdefault(verdict, []).append((k, v, why))

    def name(k):
        return "%s %s" % (k[0], k[1] or "(module result)")

    if verdicts.get("SAME") or verdicts.get("UNREACHED"):
        log("")
        for k, v, why in verdicts.get("UNREACHED", []):
            log("   never reached in one mode (see the hang/crash above): %s %s | %s" % (
                name(k), v["plain"], v["pre"]))
        if verdicts.get("SAME"):
            log("   %d case(s) not reached in a run agreed whenever they ran" %
                len(verdicts["SAME"]))
    if verdicts.get("FLAKY"):
        log("")
        log("== FLAKY (differed, but not reproducibly as a difference; not a failure):")
        for k, v, why in verdicts["FLAKY"]:
            log("   %s\n      plain %s | preloaded %s: %s" % (name(k), v["plain"], v["pre"],
                                                            why))
    if verdicts.get("KNOWN"):
        log("")
        log("== KNOWN (a difference the library cannot avoid; see docs/LIMITATIONS.md):")
        for k, v, why in verdicts["KNOWN"]:
            log("   %s\n      plain %s | preloaded %s: %s" % (name(k), v["plain"], v["pre"],
                                                            why))
    failed = verdicts.get("FAIL", [])
    if failed:
        log("")
        log("== DIFFERENCES (the library changes the outcome):")
        for k, v, why in failed:
            log("   %s\n      plain %s | preloaded %s: %s" % (name(k), v["plain"], v["pre"],
                                                            why))
            for where, text in details.get(k, [])[:2]:
                log("      preloaded, %s:" % where)
                log(excerpt(text))
    if not logs_ok:
        log("")
        log("== NO PROFILE: %s" % logs_desc)
    log("")
    if failed or not logs_ok:
        log("transparency: FAILED (%d difference(s)%s); outputs in %s" % (
            len(failed), "" if logs_ok else ", no samples", work))
        return 1
    log("transparency: OK (%d cases in %d modules, %d flaky, %d known)" % (
        tot[0], len(args.modules), len(verdicts.get("FLAKY", [])),
        len(verdicts.get("KNOWN", []))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
