"""The steady_state part: samples achieved and log bytes per sample past start-up
and exit, from a long cpu.py run per rate (run, before the main repetitions) against
the median of the cpu workload's short runs (analyse, after them); its checks and its
table."""

import statistics

from common import log
from report import cell, print_table
from runner import finish_run, guarded
from settings import pyprof_setting
from stats import check
from targets import TARGETS


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


def run(ctx):
    """One long cpu.py run per rate (before the main repetitions)."""
    log("long runs (steady state)")
    ctx.longs = guarded(long_runs, ctx.runner, ctx.py, ctx.rounds["cpu"],
                        3.0 if ctx.quick else 4.0)


def analyse(ctx):
    """The long runs against the main repetitions' short cpu.py runs."""
    longs = ctx.longs
    ctx.results["steady_state"] = (guarded(steady_state, longs, ctx.runs["cpu"])
                                   if "error" not in longs else longs)


def add_checks(ctx):
    """The steady state's checks (before anything prints)."""
    results = ctx.results
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


def show(ctx):
    """The steady-state table."""
    ss = ctx.results.get("steady_state", {})
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
