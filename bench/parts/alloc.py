"""The allocation part (alloc, --alloc-budget): alloc_mix.py bare, under the
library's allocation sampling (off, 512KB, 64KB), tracemalloc and memray, on the
main interpreter and the sid root's 3.14, and alloc_loop.c's malloc loop (no
Python), in interleaved repetitions of their own (alloc_part); their figures
(analyse_alloc, alloc_accuracy, analyse_c_loop), checks and tables (alloc_rows,
show)."""

import json
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from calibrate import per_round
from common import ALLOC_INTERVALS, ALLOC_KNOWN, RESULT, SID_BIN, WORKLOADS, log
from machine import interp_version, launcher_cpu, version_pythons
from report import fmt_ratio, fmt_summary, mark, print_table
from runner import guarded, run_reps
from settings import BARE
from stats import boot_ratio_ci, check, extra_quotient, ratio_q, summary
from targets import TARGETS


def alloc_setting(interval=None, no_python=False, windows=None):
    """pyprof at 100 Hz (cpu clock), with allocation sampling every `interval` bytes on
    average (PYPROF_ALLOC), or without it (None: PYPROF_ALLOC unset); `windows` sets
    PYPROF_ALLOC_WINDOWS (None: the default, auto)."""
    env = {"PYPROF_PERIOD": "10ms"}
    if interval:
        env["PYPROF_ALLOC"] = interval
    if windows:
        env["PYPROF_ALLOC_WINDOWS"] = windows
    name = "pyprof alloc %s" % (interval or "off")
    if windows:
        name += " windows %s" % windows
    return {"name": name, "kind": "pyprof", "rate": 100, "env": env,
            "alloc": None if no_python else interval, "no_python": no_python,
            "windows": windows or "auto"}


# Allocation sampling at 512KB with the Python domains always wrapped: every small
# allocation seen, at its cost (as before the allocation windows).
NO_WINDOWS = alloc_setting("512KB", windows="off")


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
    for spec, p, why in version_pythons(["3.13", "3.14"]):
        if p is None:
            if spec == "3.14":
                memray["why"] = "the sid root's python3.14 is missing: %s" % why
            notes.append("alloc: no python%s: %s" % (spec, why))
            continue
        v = interp_version(p)
        if not v:
            if spec == "3.14":
                memray["why"] = "%s does not run" % p
            notes.append("alloc: %s does not run" % p)
            continue
        if os.path.realpath(p) == os.path.realpath(py):
            del interps[v]  # the main interpreter is this one: once
        elif v in interps:
            v += " (sid)"
        interps[v] = {"python": p, "launcher_cpu_s": launcher_cpu(runner, p)}
        if spec == "3.14":
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
            [NO_WINDOWS, TRACEMALLOC]
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
                       accuracy=alloc_accuracy(runs[g["name"]], g["settings"]))
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
        if s.get("alloc"):
            res["windows"] = s["windows"]
            # The share of the time the Python domains were wrapped (1 without windows),
            # and the duty the windows had, from the runs' logs.
            wins = [w for r in mine.values() for w in (r.get("memory") or {}).get("windows", [])]
            res["window_share"] = summary([w["window_share"] for w in wins])
            res["window_shift_max"] = max([w["shift_max"] for w in wins] or [0])
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


def alloc_accuracy(runs, settings):
    """Per allocation-sampling setting, pooled over its runs: pyprof's estimate of the
    bytes each of alloc_mix.py's known functions allocated (self: the innermost frame)
    against the workload's exact count, with the estimate's sampling sigma (an allocation
    of X bytes is sampled with p = 1 - exp(-X/I) and counts X/p: variance X^2 (1-p)/p
    each; the windows add their own, which the spread shows); the spread of the runs'
    own errors (their standard deviation, relative: what a repeat run varies by, with
    and without windows); and the first functions' shares of all bytes allocated (no
    truth to set them against)."""
    out = {}
    for s in settings:
        if not s.get("alloc"):
            continue
        name = s["name"]
        mine = [r for r in by_rep(runs, name).values() if r.get("memory")
                and r.get("result")]
        if not mine:
            continue
        interval = mine[0]["memory"]["interval"]
        res = {"runs": len(mine), "interval": interval, "known": {}}
        for fn in ALLOC_KNOWN:
            est = true = var = 0
            samples = 0
            errs = []  # each run's own error
            for r in mine:
                k = r["result"]["known"][fn]
                x = k["block_bytes"]
                p = -math.expm1(-x / interval)
                true += k["bytes"]
                var += k["calls"] * x * x * (1 - p) / p
                fns = [f for f in r["memory"]["functions"]
                           if f["name"] == fn and f["file"].endswith("alloc_mix.py")]
                run_est = sum(f["alloc_bytes"] for f in fns)
                est += run_est
                samples += sum(f["samples"] for f in fns)
                errs.append(run_est / k["bytes"] - 1 if k["bytes"] else 0.0)
            sigma = var ** 0.5
            spread = statistics.stdev(errs) if len(errs) > 1 else None
            res["known"][fn] = {"block_bytes": x, "true_bytes": true, "estimated_bytes": est,
                                "samples": samples, "error": est / true - 1,
                                "sigma": sigma / true, "error_in_sigmas": (est - true) / sigma,
                                "run_spread": spread}
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
                ws = s.get("window_share")
                row["wrapped (windows)"] = "%.3f (1/%d)" % (
                    ws["median"], 1 << s["window_shift_max"]) if ws else "1"
                if s.get("windows") == "auto" and s.get("interval") == 512 << 10 and cr:
                    tgt = TARGETS["alloc_windows_cpu_ratio_vs_off"]
                    st = check(cr["median"], tgt, ci=cr.get("ci95_median"))
                    checks.append({"what": "CPU, allocation sampling at 512KB with its "
                                   "windows / sampling off, Python %s" % v,
                                   "value": cr["median"], "ci95": cr.get("ci95_median"),
                                   "target": "< %.2f" % tgt, "status": st})
                    row["x alloc off"] += " (<%.2f %s)" % (tgt, mark(st))
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
                sp = k.get("run_spread")
                row["%s (%d B)" % (fn, k["block_bytes"])] = "%+.1f%% (%+.1f sigma, %d)%s" % (
                    100 * k["error"], k["error_in_sigmas"], k["samples"],
                    "; runs +-%.1f%%" % (100 * sp) if sp is not None else "")
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


def run(ctx, seconds, min_reps, max_reps):
    """The allocation part, in its own repetitions within its budget."""
    log("allocation sampling: repetitions %d to %d, %.0f s" % (min_reps, max_reps, seconds))
    ctx.results["alloc"] = guarded(alloc_part, ctx.runner, ctx.py, ctx.secs, ctx.quick,
                                   seconds, min_reps, max_reps)
    ctx.results["failures"].extend(ctx.results["alloc"].get("failures") or [])


def show(ctx):
    """The allocation part's lines and tables, with their checks."""
    results = ctx.results
    checks = results["checks"]
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
