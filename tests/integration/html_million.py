#!/usr/bin/env python3
"""Measures `pyprof html` on a profile of at least a million samples: the tool's time and
the page's size, then the time headless Chromium takes to parse, build and draw it.

The logs are real: workloads/html_big.py runs under the library at PYPROF_PERIOD=100us,
two processes at a time, until the directory holds the samples asked for.

  --clock wall  (default) every thread is sampled every period; threads that sleep or
                wait for the GIL keep their stack, so many samples merge into runs;
  --clock cpu   the busy threads are sampled as they run, and their stacks change
                between any two samples: nearly every sample is a run of its own, the
                page's worst case.

    python3 tests/integration/html_million.py --lib build/libpyprof.so --tool build/pyprof
    python3 tests/integration/html_million.py ... --logs DIR   # reuse (or fill) DIR

Prints one JSON object; the figures in docs/HTML.md come from it.  This is a measurement,
not a test: nothing here fails on time.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cdp_browser  # noqa: E402

WORKLOAD = os.path.join(HERE, "workloads", "html_big.py")


def samples_in(tool, logs):
    if not os.listdir(logs):
        return 0
    out = subprocess.run([tool, "report", "--json", "--top", "1", logs],
                         stdout=subprocess.PIPE, check=True, universal_newlines=True)
    return json.loads(out.stdout)["samples"]


def fill(lib, tool, logs, want, clock, python):
    """Runs two html_big.py processes at a time into `logs` until it holds `want`
    samples."""
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(lib), PYPROF_OUTPUT=logs,
               PYPROF_PERIOD="100us", PYPROF_CLOCK=clock)
    if clock == "wall":
        env.update(THREADS="8", IDLE="2", RUN_SECONDS="8")
    else:
        env.update(THREADS="4", IDLE="1", SLEEP="0", RUN_SECONDS="30")
    have = samples_in(tool, logs)
    while have < want:
        procs = [subprocess.Popen([python, WORKLOAD], env=env) for _ in range(2)]
        for p in procs:
            if p.wait() != 0:
                raise SystemExit("html_big.py failed (exit %s)" % p.returncode)
        have = samples_in(tool, logs)
        print("html_million: %d samples so far" % have, file=sys.stderr)
    return have


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default="build/libpyprof.so")
    ap.add_argument("--tool", default="build/pyprof")
    ap.add_argument("--logs", help="the log directory to use (filled if short)")
    ap.add_argument("--samples", type=int, default=1000000)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--repeat", type=int, default=3, help="page loads to time")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="pyprof-html-million-")
    logs = a.logs or os.path.join(tmp, "logs")
    os.makedirs(logs, exist_ok=True)
    samples = fill(a.lib, a.tool, logs, a.samples, a.clock, a.python)

    page = os.path.join(tmp, "million.html")
    t0 = time.time()
    subprocess.run([a.tool, "html", logs, "-o", page], check=True)
    tool_s = time.time() - t0

    loads = []
    with cdp_browser.Browser(1400, 1000) as b:
        for _ in range(a.repeat):
            wall = b.open(page)
            t = b.evaluate("pyprofViewer.timings")
            t["wall_s"] = round(wall, 3)
            loads.append(t)
        errors = list(b.console_errors)
    result = {
        "samples": samples,
        "clock": a.clock,
        "runs": loads[0]["runs"],
        "stacks": loads[0]["stacks"],
        "page_bytes": os.path.getsize(page),
        "tool_s": round(tool_s, 3),
        "page_loads": loads,
        "painted_ms_median": sorted(x["painted_ms"] for x in loads)[len(loads) // 2],
        "console_errors": errors,
        "page": page,
    }
    print(json.dumps(result, indent=1))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
