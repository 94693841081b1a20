"""The printed report: how a figure is written (fmt_ratio, fmt_summary, fmt_excess,
cell, mark), a table of rows (print_table), the rows of the overhead table, one per
workload x setting, checked against the targets (build_rows, for the main
interpreter and each of --versions), the report's head and its closing summary (the
targets checked, failures, notes).  Each part's own table is printed by its module in
parts/."""

import os

from stats import check
from targets import TARGETS


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


def print_head(ctx):
    """The report's first lines: the machine, the interpreter, how to read a ratio."""
    results, py = ctx.results, ctx.py
    m = results["machine"]
    print("pyprof bench: %s, %d CPUs, %s; load %.1f at start, %.1f at end" % (
        m.get("cpu_model", "?"), m["cpus"], m["uname"], m["load_at_start"][0],
        os.getloadavg()[0]))
    print("main interpreter %s (Python %s); %d interleaved repetitions; work sizes %s" % (
        py, results["python"]["version"], results["repetitions"], results["rounds"]))
    print("ratios are with/without the library (or profiler), same repetition: median, "
          "[95% bootstrap CI of the median], min-max.\n"
          "targets in brackets: ok = met, NO = not met, ? = the CI straddles the target.\n")


def print_summary(results):
    """The targets checked (those not met, one line each), the failed runs, the notes."""
    checks = results["checks"]
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
