"""The per-version part (--versions): the cpu and deep30 workloads sized on each
interpreter to the main one's CPU per run, bare and with the library, in interleaved
repetitions of their own after the main ones (--versions-budget), and their table."""

import time

from calibrate import calibrate
from common import VERSION_WORKLOADS, log
from parts.overhead import analyse_group, make_groups
from report import build_rows, print_table
from runner import guarded, run_reps


def versions_part(runner, interps, secs, budget_s, min_reps, max_reps):
    """The overhead and handler figures of VERSION_WORKLOADS on each interpreter of
    interps ({spec: {"python", "version", "launcher_cpu_s"}}), each workload sized on
    each interpreter to the CPU of secs (as the main interpreter's): interleaved
    repetitions of their own, each running every workload on every interpreter (cpu on
    each, then deep30 on each), every setting (bare, 100 Hz and 1 kHz cpu clock) against
    the bare run of the same repetition."""
    t0 = time.monotonic()
    for spec, it in interps.items():
        log("per version: calibrating %s" % spec)
        rounds, calib = calibrate(runner, it["python"], secs, None, set(VERSION_WORKLOADS))
        it["rounds"] = {w: rounds[w] for w in VERSION_WORKLOADS}
        it["cpu_s_per_round"] = calib["cpu_s_per_round"]
    groups = []
    for wname in VERSION_WORKLOADS:
        for spec, it in interps.items():
            for g in make_groups(it["python"], it["rounds"], None, None, {wname}):
                # The correction-off settings are the main interpreter's alone: the
                # correction's cost does not depend on the interpreter.
                sets = [x for x in g["settings"] if x["kind"] in ("bare", "pyprof")
                        and not x.get("test_only")]
                groups.append(dict(g, name="%s@%s" % (wname, spec), workload=wname,
                                   spec=spec, launcher_cpu_s=it["launcher_cpu_s"],
                                   settings=sets))
    runs, rep_times, failures = run_reps(runner, groups, t0 + budget_s, min_reps,
                                         max_reps, 0.0)
    out = {"workloads_run": VERSION_WORKLOADS,
           "cpu_s_per_run": {"cpu": secs["cpu"], "deep30": secs["deep"]},
           "repetitions": len(rep_times),
           "repetition_s": rep_times, "failures": failures,
           "interpreters": {spec: dict(it, workloads={}) for spec, it in interps.items()}}
    for g in groups:
        out["interpreters"][g["spec"]]["workloads"][g["workload"]] = analyse_group(
            g, runs[g["name"]])
    out["runs"] = [dict(r, workload=w) for w, rs in runs.items() for r in rs]
    out["elapsed_s"] = time.monotonic() - t0
    return out


def run(ctx, seconds, min_reps, max_reps):
    """The per-version repetitions within their budget; their failures join the main ones."""
    vpys = ctx.vpys
    log("per version: %s; repetitions %d to %d, %.0f s" % (
        ", ".join("%s %s" % (v["version"], v["python"]) for v in vpys.values()),
        min_reps, max_reps, seconds))
    ctx.results["versions"] = guarded(versions_part, ctx.runner, vpys, ctx.secs, seconds,
                                      min_reps, max_reps)
    ctx.results["failures"].extend(ctx.results["versions"].get("failures") or [])


def show(ctx):
    """The per-version table, with its checks (named with the interpreter)."""
    results = ctx.results
    checks = results["checks"]
    vs = results.get("versions")
    if vs and "error" in vs:
        print("per version: %s\n" % vs["error"])
    elif vs:
        sizes = "; ".join("%s: %s" % (it["version"], ", ".join(
            "%s %d" % (w, it["rounds"][w]) for w in VERSION_WORKLOADS))
            for it in vs["interpreters"].values())
        print("per version: the cpu and deep30 workloads, sized on each interpreter to "
              "%.2f s and %.2f s of CPU per run (%s); %d interleaved repetitions of their "
              "own, every interpreter in each (%.0f s with calibration)" % (
                  vs["cpu_s_per_run"]["cpu"], vs["cpu_s_per_run"]["deep30"], sizes,
                  vs["repetitions"], vs["elapsed_s"]))
        vrows = []
        for it in vs["interpreters"].values():
            vrows += build_rows(it["workloads"], checks, it["version"])
        print_table(vrows)
