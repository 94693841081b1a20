"""Calibration: the CPU a round of each workload takes on an interpreter, and from it
the work sizes that give each run the CPU time asked for (calibrate); server.py's
handler loop sized to HANDLER_CPU_S per request (handler_loop).  run() is the main
run's calibration step (see PARTS in run.py)."""

import os

from common import HANDLER_CPU_S, RESULT, log
from settings import BARE


def cpu_of(runner, py, argv, tries=2):
    best = None
    for _ in range(tries):
        r = runner.spawn([py] + argv, runner.base_env)
        if not r["ok"]:
            raise RuntimeError("calibration run %s failed: exit %s %s"
                               % (argv, r["exit"], r["stderr"]))
        best = r["cpu_s"] if best is None else min(best, r["cpu_s"])
    return best


def per_round(runner, py, argv_of, lo, hi):
    """CPU seconds per round of a workload: the slope between two sizes (start-up out)."""
    a = cpu_of(runner, py, argv_of(lo))
    b = cpu_of(runner, py, argv_of(hi))
    return max((b - a) / (hi - lo), 1e-7), a - lo * max((b - a) / (hi - lo), 0)


def calibrate(runner, py, secs, debian, want):
    """Work sizes of the parts in `want` (names of workloads and parts), from the CPU a
    round of each takes here."""
    rounds, per = {}, {}
    start = None
    if want & {"cpu", "threads", "wall1", "wall8", "wall64", "fork", "cpu-debian", "native",
               "throughput", "steady_state"}:
        cpu_round, start = per_round(runner, py, lambda n: ["cpu.py", str(n)], 20, 120)
        per["cpu"] = cpu_round
        rounds["cpu"] = max(8, int(secs["cpu"] / cpu_round))
        rounds["threads"] = max(8, int(secs["threads"] / cpu_round) // 4 * 4)
        rounds["wall"] = max(64, int(secs["threads"] / cpu_round) // 64 * 64)
        rounds["fork"] = max(6, int(secs["fork"] / cpu_round) // 3 * 3)
        if debian:
            rounds["cpu-debian"] = max(4, rounds["cpu"] // 4)
    if "deep30" in want:
        per["deep30"], _ = per_round(runner, py, lambda n: ["deep.py", "30", str(n)],
                                     200, 1200)
        rounds["deep30"] = max(50, int(secs["deep"] / per["deep30"]))
    for d in (10, 50):
        name = "native_deep%d" % d
        if name in want:
            per[name], _ = per_round(runner, py,
                                     lambda n, d=d: ["deep_c.py", str(d), str(n)], 200, 1200)
            rounds[name] = max(50, int(secs["deep"] / per[name]))
    if "deep200" in want:
        per["deep200"], _ = per_round(runner, py, lambda n: ["deep.py", "200", str(n)],
                                      200, 1200)
        rounds["deep200"] = max(50, int(secs["deep"] / per["deep200"]))
    if "accuracy" in want:
        per["shares"], _ = per_round(runner, py,
                                     lambda n: ["shares.py", str(n), os.devnull], 5, 30)
        rounds["shares"] = max(10, int(secs["shares"] / per["shares"]))
    if "thread_per_request" in want:
        lo, hi = secs["requests_calibration"]
        loop = handler_loop(runner, py, lo)
        per["thread_per_request"], _ = per_round(
            runner, py, lambda n: ["server.py", str(n), str(loop)], lo, hi)
        rounds["thread_per_request"] = max(50, int(secs["thread_per_request"]
                                                   / per["thread_per_request"]))
        rounds["thread_per_request_loop"] = loop
    if want & {"thread_create", "thread_create_c"}:
        rounds["thread_create"] = secs["thread_create_n"]
    return rounds, {"cpu_s_per_round": per, "interpreter_startup_cpu_s": start,
                    "cpu_s_per_round_note": "deep30/deep200: 1000 loop iterations; "
                    "thread_per_request: one request (handler thread, its loop, the "
                    "connection, both ends)"}


def handler_loop(runner, py, requests, guess=20000):
    """server.py's loop size for HANDLER_CPU_S of CPU per request: scaled twice by what
    the handler threads of a short run measured (their own CPU clock)."""
    loop = guess
    for _ in range(2):
        r = runner.run(py, ["server.py", str(requests), str(loop), RESULT], BARE)
        if not r["ok"] or not r.get("result", {}).get("handler_calls"):
            raise RuntimeError("calibration run server.py failed: exit %s %s %s"
                               % (r["exit"], r.get("result_error") or "", r["stderr"]))
        per_call = r["result"]["handler_cpu_s"] / r["result"]["handler_calls"]
        loop = max(1000, int(loop * HANDLER_CPU_S / max(per_call, 1e-6)))
    return loop


def run(ctx):
    """The work sizes of the parts and workloads wanted, on the main interpreter."""
    log("calibrating work sizes")
    rounds, calib = calibrate(ctx.runner, ctx.py, ctx.secs, ctx.debian, ctx.want)
    ctx.results["rounds"] = rounds
    ctx.results["calibration"] = calib
    log("rounds: %s" % rounds)
    ctx.rounds = rounds
