"""The overhead part, the bench's main repetitions: every workload of
bench/workloads (make_groups: each with its settings) run bare, with the library and
with the other profilers, interleaved within --budget (run), then its figures per
workload and setting (analyse_group: ratios to bare, samples achieved, the library's
cost, the handler's time by stack depth), its table (add_checks builds the rows and
their checks, show prints them) and the side-by-side table of the profilers on the
CPU-bound workload."""

import statistics
import time

from common import DEBIAN_PY, HANDLER_CPU_S, RESULT, log
from parts.threads import analyse_thread_create, analyse_thread_per_request
from report import build_rows, fmt_ratio, print_table
from runner import guarded, run_reps
from settings import BARE, CPROFILE, YAPPI, pyprof_setting, with_correction_off
from stats import summary


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


def run(ctx, seconds, min_reps, max_reps):
    """The main repetitions: every workload wanted, every setting, until the budget
    (counted from the start of the bench) would not fit another repetition."""
    results, runner = ctx.results, ctx.runner
    groups = make_groups(ctx.py, ctx.rounds, ctx.debian, ctx.clib, ctx.want)
    budget_end = ctx.t_start + seconds
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
    ctx.runs = runs


def collect(ctx):
    """Every run of the main repetitions, into the JSON (after the other parts')."""
    ctx.results["runs"] = [dict(r, workload=w) for w, rs in ctx.runs.items() for r in rs]


def histogram(results):
    """The handler-time histogram by stack depth, per workload and setting."""
    # The handler-time histogram by stack depth comes from the log footer's cost section.
    results["handler_time_histogram"] = {
        w: {s: v.get("handler_by_depth") for s, v in d["settings"].items()
            if v["kind"] == "pyprof"}
        for w, d in results["workloads"].items()}


def add_checks(ctx):
    """The overhead table's rows, with their checks (before anything prints)."""
    ctx.rows = build_rows(ctx.results["workloads"], ctx.results["checks"])


def show(ctx):
    """The overhead table: one row per workload x setting."""
    print_table(ctx.rows)


def show_side_by_side(ctx):
    """The profilers side by side on the CPU-bound workload (and Debian's, for yappi),
    and the notes on what is missing for it."""
    results, debian, args = ctx.results, ctx.debian, ctx.args
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
