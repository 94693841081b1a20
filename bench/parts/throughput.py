"""The throughput part: `pyprof report` (text and --json) in samples per second on a
directory of at least a million samples (real logs at 100 us, hard-linked), its
checks and its table."""

import os
import shutil
import statistics
import subprocess
import time

from common import WORKLOADS, log
from report import cell, print_table
from runner import guarded
from stats import check
from targets import TARGETS


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


def run(ctx):
    """`pyprof report`'s speed on a directory of a million samples or more."""
    log("report throughput (generating logs at 100 us)")
    ctx.results["report_throughput"] = guarded(
        throughput, ctx.runner, ctx.py, ctx.rounds["cpu"], 1_000_000,
        2.0 if ctx.quick else 8.0, ctx.quick)


def add_checks(ctx):
    """The throughput's checks (before anything prints)."""
    results = ctx.results
    checks = results["checks"]
    tp = results.get("report_throughput", {})
    if tp.get("text", {}).get("samples_per_s"):
        t = TARGETS["report_samples_per_s"]
        for mode in ("text", "json"):
            if tp.get(mode, {}).get("samples_per_s"):
                checks.append({"what": "pyprof report%s throughput, samples/s" %
                               (" --json" if mode == "json" else ""),
                               "value": tp[mode]["samples_per_s"], "target": ">= %.0e" % t,
                               "status": check(tp[mode]["samples_per_s"], t, below=False)})


def show(ctx):
    """The throughput table: text and --json."""
    tp = ctx.results.get("report_throughput", {})
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
