"""Running programs: Runner launches one process (bare, under the library, or under
another profiler), times it (wall around it, user+sys CPU from wait4) and reads the
library's logs (`pyprof report --json`); finish_run works out the figures that need
both the CPU and the log (samples expected, the library's share); run_reps runs
groups of settings in interleaved repetitions within a budget; guarded runs a part so
that its failure is reported and the rest goes on."""

import json
import os
import shutil
import signal
import subprocess
import threading
import time

from common import ALLOC_KNOWN, RESULT, RUN_TIMEOUT, WORKLOADS, log


class Runner:
    def __init__(self, args, work):
        self.lib = args.lib
        self.tool = args.tool
        self.work = work
        self.keep = args.keep_logs
        self.count = 0
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("PYPROF_") and k != "LD_PRELOAD"}
        base["PYTHONHASHSEED"] = "0"
        # Byte-code caches go to the scratch directory, never into the source tree.
        base["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        self.base_env = base

    def spawn(self, argv, env, stdout=subprocess.DEVNULL):
        """Runs argv to its end; returns wall seconds, user+sys CPU seconds (of the process
        and every descendant it waited for), the exit code and the start of stderr."""
        errpath = os.path.join(self.work, "stderr.txt")
        with open(errpath, "wb") as err:
            t0 = time.perf_counter()
            p = subprocess.Popen(argv, env=env, stdout=stdout, stderr=err,
                                 stdin=subprocess.DEVNULL, cwd=WORKLOADS)
            killed = []

            def kill():
                killed.append(1)
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except OSError:
                    pass
            timer = threading.Timer(RUN_TIMEOUT, kill)
            timer.start()
            try:
                _, status, ru = os.wait4(p.pid, 0)
            finally:
                timer.cancel()
            wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        with open(errpath, "rb") as fh:
            stderr = fh.read(2000).decode("utf-8", "replace")
        return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "user_s": ru.ru_utime,
                "sys_s": ru.ru_stime, "exit": p.returncode, "timed_out": bool(killed),
                "stderr": stderr.strip()[:500] or None,
                "ok": p.returncode == 0 and not killed}

    def run(self, python, argv, setting):
        """One run of a workload under a setting (see SETTINGS).  An argument "{result}"
        is replaced by the path of a JSON file the workload writes; what it holds goes to
        the run's "result" (or "result_error" when it is missing or unreadable)."""
        env = dict(self.base_env)
        result_path = None
        if RESULT in argv:
            result_path = os.path.join(self.work, "result.json")
            argv = [result_path if a == RESULT else a for a in argv]
            if os.path.exists(result_path):
                os.unlink(result_path)
        kind = setting["kind"]
        logdir = None
        extra = []
        if kind == "pyprof":
            self.count += 1
            logdir = os.path.join(self.work, "logs", "run%05d" % self.count)
            os.makedirs(logdir)
            env["LD_PRELOAD"] = self.lib
            env["PYPROF_OUTPUT"] = logdir
            env.update(setting["env"])
        elif kind == "cprofile":
            extra = ["-m", "cProfile", "-o", os.path.join(self.work, "cprofile.out")]
        elif kind == "yappi":
            extra = ["-m", "yappi", "-c", "cpu", "-o", os.path.join(self.work, "yappi.out")]
        elif kind == "tracemalloc":
            extra = ["-X", "tracemalloc"]
        elif kind == "memray":
            memray_out = os.path.join(self.work, "memray.bin")
            extra = (["-m", "memray", "run", "-q", "-f"] + setting.get("args", [])
                     + ["-o", memray_out])
        r = self.spawn([python] + extra + argv, env)
        r["setting"] = setting["name"]
        if kind == "memray":
            try:
                r["memray_file_bytes"] = os.path.getsize(memray_out)
                os.unlink(memray_out)
            except OSError:
                pass
        if result_path and r["ok"]:
            try:
                with open(result_path) as fh:
                    r["result"] = json.load(fh)
            except (OSError, ValueError) as e:
                r["result_error"] = "the workload's result: %s" % e
        if logdir:
            if setting.get("no_python"):
                # A program without Python: the library should leave it alone, no log.
                r["log_files"] = len(os.listdir(logdir))
            else:
                r.update(self.read_logs(logdir, setting))
                if setting.get("alloc") and not r.get("log_error"):
                    try:
                        r["memory"] = self.memory_json(logdir)
                    except (RuntimeError, ValueError) as e:
                        r["log_error"] = str(e)
            if not self.keep:
                shutil.rmtree(logdir, ignore_errors=True)
        return r

    def report_json(self, path, top=1):
        argv = [self.tool, "report", "--json"] + (["--top", str(top)] if top else []) + [path]
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), out.returncode,
                                                     out.stderr.decode()[:300]))
        return json.loads(out.stdout)

    def memory_json(self, path, keep=ALLOC_KNOWN, top=12):
        """`pyprof report --memory --json` of a run's logs, cut down: the totals, the
        domains, the footer's counts, and the functions of `keep` (alloc_mix.py's, by
        name) and the first `top` by self bytes allocated (name, file, self's samples
        and bytes)."""
        argv = [self.tool, "report", "--memory", "--json", path]
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), out.returncode,
                                                     out.stderr.decode()[:300]))
        j = json.loads(out.stdout)
        procs = j["processes"]
        foot = lambda key: sum(p.get(key) or 0 for p in procs)  # noqa: E731
        fns = [{"name": f["name"], "file": f["file"], "line": f["line"],
                "samples": f["self"]["samples"], "alloc_bytes": f["self"]["alloc_bytes"]}
               for i, f in enumerate(j["functions"])
               if i < top or f["name"] in keep]
        return {"samples": j["total"]["samples"], "alloc_bytes": j["total"]["alloc_bytes"],
                "alloc_objects": j["total"]["alloc_objects"],
                "interval": max(p["alloc_interval"] for p in procs) if procs else None,
                "alloc_lost": foot("alloc_lost"), "frees_lost": foot("frees_lost"),
                "untracked": j.get("untracked"),
                "domains": {k: v["alloc_bytes"] for k, v in j["domains"].items()},
                "windows": [p["alloc_windows"] for p in procs if p.get("alloc_windows")],
                "functions": fns}

    def read_logs(self, logdir, setting):
        """The figures a run's logs give (summed over its processes)."""
        files = [os.path.join(logdir, f) for f in os.listdir(logdir)]
        r = {"log_files": len(files), "log_bytes": sum(os.path.getsize(f) for f in files),
             "rate_hz": setting["rate"], "clock": setting["env"].get("PYPROF_CLOCK", "cpu")}
        if not files:
            r["log_error"] = "no log written"
            return r
        try:
            j = self.report_json(logdir)
        except (RuntimeError, ValueError) as e:
            r["log_error"] = str(e)
            return r
        procs = j["processes"]
        if setting.get("keep_reports"):
            r["reports"] = procs
        tot = lambda key: sum(p.get(key) or 0 for p in procs)  # noqa: E731
        r["processes"] = len(procs)
        r["threads"] = len(j.get("threads", []))
        r["samples"] = tot("samples")
        r["library_cpu_ns"] = tot("library_cpu_ns")
        r["duration_s"] = max(p["duration_s"] for p in procs)
        r["timers"] = sorted({p.get("timer") for p in procs if p.get("timer")})
        r["ended"] = sorted({p.get("ended") for p in procs})
        drops = {}
        for p in procs:
            for k, v in (p.get("dropped") or {}).items():
                drops[k] = drops.get(k, 0) + v
        r["dropped"] = {k: v for k, v in drops.items() if v}
        r["achieved_hz_footer"] = [p.get("achieved_hz") for p in procs]
        nat = [p["native"] for p in procs if p.get("native") and p["native"].get("ok")
               is not None]
        if nat:
            walks = sum(n["ok"] + n["truncated"] for n in nat)
            r["native"] = {"walks": walks, "truncated": sum(n["truncated"] for n in nat),
                           "skipped": sum(n["skipped"] for n in nat),
                           "unmerged": sum(n["unmerged"] for n in nat),
                           "walk_ns_per_sample": (sum(n["walk_ns"] for n in nat) / walks
                                                  if walks else None)}
        costs = [p["cost"] for p in procs if p.get("cost")]
        if costs:
            r["handler_ns"] = sum(c["handler_ns"] for c in costs)
            r["writer_ns"] = sum(c["writer_ns"] for c in costs)
            # The whole cost (None where a log has no measured signal cost).
            wholes = [c.get("whole_ns") for c in costs]
            r["whole_ns"] = sum(wholes) if all(w is not None for w in wholes) else None
            r["process_cpu_ns"] = sum(c.get("process_cpu_ns") or 0 for c in costs)
            r["calib_ns"] = sum(c.get("calib_ns") or 0 for c in costs)
            sig = [c["signal_cost_ns"] for c in costs if c.get("signal_cost_ns")]
            r["signal_cost_ns"] = max(sig) if sig else None
            # What the per-thread timers counted over the intervals their signals closed,
            # and the kernel's CPU of the same threads over the same intervals: a timer
            # that runs ahead of the kernel's clock counts time the host took (steal).
            r["clock_timer_ns"] = sum(c.get("clock_timer_ns") or 0 for c in costs)
            r["clock_kernel_ns"] = sum(c.get("clock_kernel_ns") or 0 for c in costs)
            r["clock_corrected"] = all(c.get("clock_corrected") for c in costs)
            r["timer_excess"] = (r["clock_timer_ns"] / r["clock_kernel_ns"] - 1
                                 if r["clock_kernel_ns"] else None)
            # Histogram by depth: counts summed over processes; median and p90 of the
            # process with the most samples in that bucket.
            by = {}
            for c in costs:
                for b in c["by_depth"]:
                    k = b["max_depth"]
                    cur = by.get(k)
                    if cur is None or b["samples"] > cur["best"]:
                        by[k] = {"max_depth": k, "samples": (cur or {}).get("samples", 0)
                                 + b["samples"], "median_ns": b["median_ns"],
                                 "p90_ns": b["p90_ns"], "best": b["samples"]}
                    else:
                        cur["samples"] += b["samples"]
            order = [b["max_depth"] for b in costs[0]["by_depth"]]
            r["handler_by_depth"] = [{k: v for k, v in by[d].items() if k != "best"}
                                     for d in order if d in by]
        else:
            r["handler_ns"] = r["writer_ns"] = None
            r["handler_by_depth"] = None
        rate = setting["rate"]
        samples = r["samples"]
        if samples:
            r["log_bytes_per_sample"] = r["log_bytes"] / samples
            r["handler_ns_per_sample"] = (r["handler_ns"] / samples
                                          if r["handler_ns"] is not None else None)
            r["writer_ns_per_sample"] = (r["writer_ns"] / samples
                                         if r["writer_ns"] is not None else None)
            r["library_ns_per_sample"] = r["library_cpu_ns"] / samples
        if r["clock"] == "cpu":
            # Strict: every CPU second of the process (wait4) should give `rate` samples.
            # Python-running: the writer thread's CPU is not sampled, and ticks that found
            # no interpreter running (start-up, finalization; counted by the library) had
            # nothing to sample.
            r["nothing_to_sample"] = drops.get("not_ready", 0) + drops.get("no_python", 0)
        else:
            hz = [p.get("achieved_hz") for p in procs if p.get("achieved_hz") is not None]
            r["achieved"] = (sum(hz) / len(hz) / rate) if hz else None
        return r


def finish_run(r, launcher_cpu_s=0.0):
    """Figures that need both the process's own CPU time and the log's.  launcher_cpu_s:
    the CPU of a wrapper that runs before the interpreter (the sid root's chroot), which
    the library never sees, left out of the process's CPU here."""
    if r.get("samples") is None or not r.get("ok"):
        return r
    cpu = r["cpu_s"] - launcher_cpu_s
    if launcher_cpu_s:
        r["launcher_cpu_s"] = launcher_cpu_s
    if cpu > 0:
        r["library_cpu_share"] = r["library_cpu_ns"] / 1e9 / cpu
    if r["clock"] == "cpu" and cpu > 0:
        rate = r["rate_hz"]
        r["expected_strict"] = cpu * rate
        r["achieved_strict"] = r["samples"] / r["expected_strict"]
        writer = (r.get("writer_ns") or 0) / 1e9
        r["expected"] = max((cpu - writer) * rate - r["nothing_to_sample"], 1e-9)
        r["achieved"] = r["samples"] / r["expected"]
    return r


def run_reps(runner, groups, budget_end, min_reps, max_reps, reserve, hard_slack=30.0):
    """Interleaved repetitions until max_reps, or until another would pass the budget
    (min_reps of them while they fit within hard_slack past it, and never fewer than 3)."""
    runs = {g["name"]: [] for g in groups}
    rep_times = []
    failures = []
    for rep in range(max_reps if groups else 0):
        t0 = time.monotonic()
        for g in groups:
            order = g["settings"] if rep % 2 == 0 else list(reversed(g["settings"]))
            for s in order:
                r = finish_run(runner.run(g["python"], g["argv"], s),
                               g.get("launcher_cpu_s", 0.0))
                r["rep"] = rep
                r["load1"] = os.getloadavg()[0]
                runs[g["name"]].append(r)
                if not r["ok"] or r.get("log_error") or r.get("result_error"):
                    failures.append({"workload": g["name"], "setting": s["name"],
                                     "rep": rep, "exit": r["exit"],
                                     "timed_out": r["timed_out"], "stderr": r["stderr"],
                                     "log_error": r.get("log_error"),
                                     "result_error": r.get("result_error")})
                    log("FAILED: %s / %s rep %d: exit %s %s %s" % (
                        g["name"], s["name"], rep, r["exit"],
                        r.get("log_error") or r.get("result_error") or "",
                        (r["stderr"] or "")[:200]))
        rep_times.append(time.monotonic() - t0)
        left = budget_end - time.monotonic() - reserve
        log("repetition %d done in %.1f s (load %.1f); %.0f s of budget left"
            % (rep + 1, rep_times[-1], os.getloadavg()[0], left))
        need = max(rep_times[-3:]) * 1.1
        if left < need and (rep + 1 >= min_reps or
                            (rep + 1 >= 3 and left + hard_slack < need)):
            break
    return runs, rep_times, failures


def guarded(fn, *a):
    """A part that fails (the tool refuses a log, ...) is reported, and the rest goes on."""
    try:
        return fn(*a)
    except Exception as e:  # noqa: BLE001
        log("%s failed: %s: %s" % (fn.__name__, type(e).__name__, e))
        return {"error": "%s: %s" % (type(e).__name__, e)}
