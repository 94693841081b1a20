"""The asyncio part: an asyncio server's CPU while it serves (asyncio_server.py) with
100 and 10,000 tasks waiting, without the library and with it in cpu mode (every sample
tagged with its task) and in wall mode at 100 Hz and 1 kHz (every pass also samples the
waiting tasks), on Debian sid's 3.14 (the tasks' own lists and awaiter links) and on
pyenv's 3.12 (the set of all tasks, and the links found every 20 ms), and its table."""

import json
import os
import shutil
import statistics

from common import SID_BIN, log
from machine import pyenv_python
from report import print_table
from runner import guarded

MODES = [("without", {}), ("cpu 100 Hz", {"PYPROF_CLOCK": "cpu", "PYPROF_PERIOD": "10ms"}),
         ("wall 100 Hz", {"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": "10ms"}),
         ("wall 1 kHz", {"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": "1ms"})]


def serve_cost(runner, py, pendings, requests, work, reps):
    """The serving CPU per mode and number of waiting tasks: medians over `reps` runs,
    modes interleaved; the ratio of each mode's to the one without."""
    out = {}
    for pending in pendings:
        per = dict((name, []) for name, _ in MODES)
        for rep in range(reps):
            for name, extra in MODES[rep % len(MODES):] + MODES[:rep % len(MODES)]:
                runner.count += 1
                res_path = os.path.join(runner.work, "asyncio.json")
                env = dict(runner.base_env)
                logdir = None
                if extra:
                    logdir = os.path.join(runner.work, "logs", "asyncio%05d" % runner.count)
                    os.makedirs(logdir)
                    env.update(extra, LD_PRELOAD=runner.lib, PYPROF_OUTPUT=logdir)
                r = runner.spawn([py, "asyncio_server.py", str(pending), str(requests),
                                  str(work), res_path], env)
                if logdir and not runner.keep:
                    shutil.rmtree(logdir, ignore_errors=True)
                if not r["ok"]:
                    return {"error": r["stderr"] or "exit %s" % r["exit"]}
                with open(res_path) as fh:
                    per[name].append(json.load(fh)["serve_cpu_s"])
        base = statistics.median(per["without"])
        out[str(pending)] = {name: {"cpu_s": statistics.median(v),
                                    "ratio": statistics.median(v) / base if base else None}
                             for name, v in per.items()}
    return out


def interpreters():
    """(label, path) of the interpreters measured: sid's 3.14 and pyenv's 3.12."""
    return [("sid 3.14", os.path.join(SID_BIN, "python3.14")),
            ("pyenv 3.12", pyenv_python("3.12.1"))]


def run(ctx):
    """The serving cost with 100 and 10,000 waiting tasks, on each interpreter here."""
    res = ctx.results["asyncio"] = {}
    for label, py in interpreters():
        if not py or not os.access(py, os.X_OK):
            res[label] = {"error": "no %s" % py}
            continue
        log("asyncio server cost on %s, with and without the library" % label)
        res[label] = guarded(serve_cost, ctx.runner, py, [100, 10000],
                             5000 if ctx.quick else 20000, 2000, 2 if ctx.quick else 5)


def show(ctx):
    """The asyncio table: serving CPU and its ratio per interpreter, mode and waiting
    tasks."""
    rows = []
    for label, res in (ctx.results.get("asyncio") or {}).items():
        if "error" in res:
            print("asyncio server cost on %s: %s\n" % (label, res["error"]))
            continue
        for pending, modes in res.items():
            for name, v in modes.items():
                rows.append({"asyncio server": "%s, %s tasks waiting, %s" % (label, pending,
                                                                             name),
                             "serving CPU, s": "%.3f" % v["cpu_s"],
                             "ratio": "%.3f" % v["ratio"] if v["ratio"] else "-"})
    if rows:
        print_table(rows, "asyncio: serving CPU with tasks waiting (median of runs)")
