"""The spans part: one span start+stop of the pyprof package (spans.py) with the
library recording, loaded but paused, and without it, per interpreter, and its table."""

import json
import os
import shutil
import statistics

from common import DEBIAN_PY, REPO, log
from machine import interp_version
from report import print_table
from runner import guarded


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


def run(ctx):
    """The span cost on the main interpreter and, where present, Debian's python3.11."""
    log("span start+stop cost, with and without the library")
    py = ctx.py
    pys = [py] + ([DEBIAN_PY] if os.access(DEBIAN_PY, os.X_OK) and
                  os.path.realpath(py) != os.path.realpath(DEBIAN_PY) else [])
    ctx.results["spans"] = guarded(span_cost, ctx.runner, pys,
                                   20000 if ctx.quick else 100000, 2 if ctx.quick else 4)


def show(ctx):
    """The span cost table: without the library, with it, and paused."""
    results = ctx.results
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
