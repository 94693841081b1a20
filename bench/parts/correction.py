"""The correction of cpu-clock samples, and the timers' excess: the cost of one read
of the thread's CPU clock (run: clock_read_cost), the correction on and off side by
side from the figures of the other parts (correction_summary), the timers' excess
over the kernel's CPU clock over every part's runs (excess_by_run), and their lines
and table (show)."""

import statistics
import subprocess

from common import log
from report import fmt_ratio, print_table
from runner import guarded
from settings import CORRECTION_OFF
from stats import summary


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


def run(ctx):
    """One read of the thread's CPU clock, timed apart."""
    log("one read of the thread CPU clock (the correction's system call)")
    ctx.results["correction_clock_read"] = guarded(clock_read_cost, ctx.runner, ctx.py)


def summarise(results):
    """After every part has run: the correction, on and off, and the timers' excess."""
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


def show(ctx):
    """The correction's lines and table, and the host's timer excess."""
    results = ctx.results
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
