"""Thread per request (server.py) and thread create+join (thread_create.py, and
thread_create.c through ctypes): workloads of the main repetitions with figures and
tables of their own.  compile_part compiles thread_create.c for the thread_create_c
workload; the analyses run on the main repetitions' runs (parts/overhead.py)."""

import os
import shutil
import subprocess

from common import HANDLER_CPU_S, WORKLOADS, log
from report import fmt_ratio, fmt_summary, print_table
from stats import summary


def compile_clib(work):
    """thread_create.c as a shared object in the scratch directory; (path, None), or
    (None, why not)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None, "no C compiler (cc, gcc or $CC): no C-level thread create+join"
    out = os.path.join(work, "thread_create.so")
    r = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-pthread", "-o", out,
                        os.path.join(WORKLOADS, "thread_create.c")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        return None, "compiling thread_create.c failed: %s" % r.stdout.decode()[:300]
    return out, None


def compile_part(ctx):
    """thread_create.c for the thread_create_c workload (none: that workload is left out,
    and a note says why)."""
    clib, why = compile_clib(ctx.work)
    if why:
        log(why)
        ctx.results["notes"].append(why)
    ctx.clib = clib


def analyse_thread_per_request(g, runs):
    """The thread-per-request workload: per setting, the overhead ratios, the CPU per
    request, and samples achieved against expected = process CPU x rate (every thread's
    CPU, however short its life, should be sampled in proportion)."""
    n = int(g["argv"][1])
    ok = [r for r in runs if r["ok"] and r.get("result")]
    bare = {r["rep"]: r for r in ok if r["setting"] == "bare"}
    handler = [r["result"]["handler_cpu_s"] / r["result"]["handler_calls"]
               for r in bare.values() if r["result"].get("handler_calls")]
    out = {"what": g["what"], "requests": n, "handler_loop": int(g["argv"][2]),
           "handler_cpu_ms_aimed": HANDLER_CPU_S * 1e3,
           "handler_cpu_ms": summary([1e3 * x for x in handler]),
           "settings": {}}
    for s in g["settings"]:
        mine = [r for r in ok if r["setting"] == s["name"]]
        res = {"runs_ok": len(mine), "wall_s": summary([r["wall_s"] for r in mine]),
               "cpu_ms_per_request": summary([1e3 * r["cpu_s"] / n for r in mine]),
               "answered": sum(r["result"]["answered"] for r in mine),
               "sent": n * len(mine)}
        if s["kind"] == "pyprof":
            pairs = [(r, bare[r["rep"]]) for r in mine if r["rep"] in bare]
            res["wall_ratio"] = summary([r["wall_s"] / b["wall_s"] for r, b in pairs])
            res["cpu_ratio"] = summary([r["cpu_s"] / b["cpu_s"] for r, b in pairs])
            logged = [r for r in mine if r.get("samples") is not None and r.get("cpu_s")]
            res["rate_hz"] = s["rate"]
            res["samples"] = summary([r["samples"] for r in logged])
            res["expected"] = summary([r["cpu_s"] * s["rate"] for r in logged])
            res["achieved"] = summary([r["samples"] / (r["cpu_s"] * s["rate"])
                                       for r in logged])
            exp = sum(r["cpu_s"] * s["rate"] for r in logged)
            res["achieved_pooled"] = sum(r["samples"] for r in logged) / exp if exp else None
            res["achieved_python_running"] = summary([r.get("achieved") for r in logged])
            res["threads_in_profile"] = summary([r.get("threads") for r in logged])
            res["library_cpu_share"] = summary([r.get("library_cpu_share") for r in logged])
            drops = {}
            for r in logged:
                for k, v in r.get("dropped", {}).items():
                    drops[k] = drops.get(k, 0) + v
            res["dropped_total"] = drops
        out["settings"][s["name"]] = res
    return out


def analyse_thread_create(g, runs):
    """Thread create+join: the workload's own timing of its loop (wall, perf_counter; and
    the process CPU across the loop), per thread, with and without the library, and the
    with/without ratio and difference of the same repetition."""
    n = int(g["argv"][1])
    ok = [r for r in runs if r["ok"] and r.get("result")]
    bare = {r["rep"]: r for r in ok if r["setting"] == "bare"}

    def us(r):
        return 1e6 * r["result"]["loop_s"] / n

    def cus(r):
        return 1e6 * r["result"]["loop_cpu_s"] / n
    out = {"what": g["what"], "loop": g["loop"], "threads": n, "settings": {}}
    for s in g["settings"]:
        mine = [r for r in ok if r["setting"] == s["name"]]
        res = {"runs_ok": len(mine),
               "us_per_thread": summary([us(r) for r in mine]),
               "cpu_us_per_thread": summary([cus(r) for r in mine]),
               "process_cpu_s": summary([r["cpu_s"] for r in mine])}
        if s["kind"] != "bare":
            pairs = [(r, bare[r["rep"]]) for r in mine if r["rep"] in bare]
            res["ratio"] = summary([us(r) / us(b) for r, b in pairs])
            res["added_us_per_thread"] = summary([us(r) - us(b) for r, b in pairs])
            res["cpu_ratio"] = summary([cus(r) / cus(b) for r, b in pairs if cus(b) > 0])
            res["added_cpu_us_per_thread"] = summary([cus(r) - cus(b) for r, b in pairs])
        out["settings"][s["name"]] = res
    return out


def show_per_request(ctx):
    """The thread-per-request table."""
    results = ctx.results
    tpr = results.get("thread_per_request")
    if tpr and "error" in tpr:
        print("thread per request: %s\n" % tpr["error"])
    elif tpr:
        hc = tpr.get("handler_cpu_ms")
        print("thread per request (server.py): %d requests, each in a new thread whose loop "
              "(%d iterations) took %s ms of CPU (bare runs: median min-max); "
              "expected = process CPU x rate" % (
                  tpr["requests"], tpr["handler_loop"],
                  fmt_summary(hc, "%.2f", ci=False) if hc else "?"))
        prows = []
        for sname, v in tpr["settings"].items():
            row = {"thread per request": sname,
                   "CPU ms/request": fmt_summary(v.get("cpu_ms_per_request"), "%.2f",
                                                 ci=False)}
            if sname != "bare":
                row["wall x: median [95% CI] min-max"] = fmt_ratio(v.get("wall_ratio"))
                row["cpu x: median [95% CI]"] = (fmt_ratio(v["cpu_ratio"]).rsplit(" ", 1)[0]
                                                 if v.get("cpu_ratio") else "-")
                smp, exp = v.get("samples"), v.get("expected")
                row["samples / expected (median)"] = "%.0f / %.1f" % (
                    smp["median"], exp["median"]) if smp and exp else "-"
                ap = v.get("achieved_pooled")
                row["achieved: pooled; median [CI] min-max"] = (
                    "%.1f%%; %s" % (100 * ap, fmt_summary(v.get("achieved"), "%.1f%%", 100))
                    if ap is not None else "-")
                apr = v.get("achieved_python_running")
                row["achieved (Python-running)"] = (
                    "%.1f%%" % (100 * apr["median"]) if apr else "-")
                th = v.get("threads_in_profile")
                row["threads in profile"] = "%.0f" % th["median"] if th else "-"
                lc = v.get("library_cpu_share")
                row["lib CPU"] = "%.2f%%" % (100 * lc["median"]) if lc else "-"
            if v.get("answered") != v.get("sent"):
                row["answered"] = "%d of %d" % (v.get("answered"), v.get("sent"))
            prows.append(row)
        print_table(prows)


def show_create(ctx):
    """The thread create+join table."""
    results = ctx.results
    tc = results.get("thread_create") or {}
    crows = []
    for loop, v in tc.items():
        if "error" in v:
            crows.append({"thread create+join": loop, "setting": "error: %s" % v["error"]})
            continue
        for sname, x in v["settings"].items():
            crows.append({
                "thread create+join": "%s x%d" % (loop, v["threads"]),
                "setting": sname,
                "us/thread: median [95% CI] min-max": fmt_summary(x.get("us_per_thread"),
                                                                 "%.1f"),
                "x bare": fmt_ratio(x["ratio"]).rsplit(" ", 1)[0] if x.get("ratio")
                else "-",
                "added us/thread": fmt_summary(x.get("added_us_per_thread"), "%+.1f",
                                               ci=False) if x.get("added_us_per_thread")
                else "-",
                "loop CPU us/thread": fmt_summary(x.get("cpu_us_per_thread"), "%.1f",
                                                  ci=False),
                "CPU x bare": "%.3f" % x["cpu_ratio"]["median"] if x.get("cpu_ratio")
                else "-",
                "process CPU s": "%.2f" % x["process_cpu_s"]["median"]
                if x.get("process_cpu_s") else "-"})
    print_table(crows)
