"""The whole_cost part: the whole CPU cost of sampling, measured in work_rate.py's
windows with sampling paused and running, against what the log reports (with the
correction of cpu-clock samples on and off), and its table with its checks."""

import statistics

from common import RESULT, log
from report import cell, mark, print_table
from runner import guarded
from settings import CORRECTION_OFF, pyprof_setting
from stats import boot_ratio_ci, check, ratio_q, summary
from targets import TARGETS


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


def run(ctx):
    """work_rate.py at 100 Hz and 1 kHz, with the correction on and off."""
    log("whole cost of a sample (work rate with and without the library)")
    ctx.results["whole_cost"] = guarded(whole_cost, ctx.runner, ctx.py, ctx.quick)


def show(ctx):
    """The whole-cost table, with its checks."""
    results = ctx.results
    checks = results["checks"]
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
