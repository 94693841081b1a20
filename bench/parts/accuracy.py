"""The accuracy part: shares.py measures the CPU time of its own functions; the
error of each share the profile gives, at 1 kHz and 100 Hz, and its table."""

import json
import os
import shutil

from common import log
from report import print_table
from runner import guarded
from settings import pyprof_setting


def accuracy(runner, py, rounds):
    """Known CPU shares (shares.py measures its own functions) against the profile's."""
    out = {}
    for setting in (pyprof_setting(1000), pyprof_setting(100)):
        truth_path = os.path.join(runner.work, "shares.json")
        runner.count += 1
        logdir = os.path.join(runner.work, "logs", "shares%05d" % runner.count)
        os.makedirs(logdir)
        env = dict(runner.base_env, LD_PRELOAD=runner.lib, PYPROF_OUTPUT=logdir,
                   **setting["env"])
        n = rounds if setting["rate"] == 1000 else rounds * 2
        r = runner.spawn([py, "shares.py", str(n), truth_path], env)
        if not r["ok"]:
            out[setting["name"]] = {"error": r["stderr"] or "exit %s" % r["exit"]}
            continue
        with open(truth_path) as fh:
            truth = json.load(fh)
        j = runner.report_json(logdir, top=0)
        got = {f["name"]: f["total"] for f in j["functions"] if f["name"] in truth}
        n_s = sum(got.values())
        t_s = sum(truth.values())
        funcs = {}
        for name in sorted(truth):
            p_true = truth[name] / t_s
            p_got = got.get(name, 0) / n_s if n_s else 0.0
            sigma = (p_true * (1 - p_true) / n_s) ** 0.5 if n_s else None
            funcs[name] = {"cpu_s": truth[name], "share_known": p_true, "samples":
                           got.get(name, 0), "share_measured": p_got,
                           "error_pp": 100 * (p_got - p_true),
                           "sampling_sigma_pp": 100 * sigma if sigma else None}
        errs = [abs(f["error_pp"]) for f in funcs.values()]
        sig = [f["error_pp"] / f["sampling_sigma_pp"] for f in funcs.values()
               if f["sampling_sigma_pp"]]
        out[setting["name"]] = {"samples_in_functions": n_s, "cpu_s": r["cpu_s"],
                                "functions": funcs, "max_abs_error_pp": max(errs),
                                "max_abs_error_in_sigmas": max(abs(x) for x in sig)
                                if sig else None}
        if not runner.keep:
            shutil.rmtree(logdir, ignore_errors=True)
    return out


def run(ctx):
    """Known CPU shares against the profile's, at 1 kHz and 100 Hz."""
    log("accuracy (known CPU shares)")
    ctx.results["accuracy"] = guarded(accuracy, ctx.runner, ctx.py, ctx.rounds["shares"])


def show(ctx):
    """The accuracy table: each function's share measured against the known one."""
    results = ctx.results
    arows = []
    for name, v in results.get("accuracy", {}).items():
        if not isinstance(v, dict):
            print("accuracy: %s: %s\n" % (name, v))
            continue
        if "error" in v:
            arows.append({"accuracy (shares.py)": name, "error": v["error"]})
            continue
        row = {"accuracy (shares.py)": name, "samples": v["samples_in_functions"]}
        for f, fv in v["functions"].items():
            row[f] = "%.1f%% vs %.1f%%" % (100 * fv["share_measured"], 100 * fv["share_known"])
        row["max |error|"] = "%.2f pp (%.1f sigma)" % (
            v["max_abs_error_pp"], v["max_abs_error_in_sigmas"] or 0)
        arows.append(row)
    print_table(arows)
