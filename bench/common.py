"""The bench's shared ground: where things are (the bench, its workloads, the
repository, Debian's interpreter, the sid root's wrappers), what a workload's argv may
hold, the names --only knows, the per-version and allocation parts' constants, and
log() (to stderr, with the seconds since the start)."""

import os
import sys
import time


HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads")
REPO = os.path.dirname(HERE)
DEBIAN_PY = "/usr/bin/python3.11"

RESULT = "{result}"  # in a workload's argv: the JSON file it writes its own figures to
# Thread per request: the CPU each request's handler burns (server.py's loop is sized to
# it from deep.py's calibration); below one 10 ms period.
HANDLER_CPU_S = 0.0015

RUN_TIMEOUT = 120.0  # seconds; a run that takes longer is killed and counted as failed

WORKLOAD_NAMES = ["cpu", "threads", "wall1", "wall8", "wall64", "fork", "deep30", "deep200",
                  "native", "native_deep10", "native_deep50", "thread_per_request",
                  "thread_create", "thread_create_c", "cpu-debian"]
PART_NAMES = ["accuracy", "throughput", "steady_state", "whole_cost", "spans", "versions",
              "alloc", "asyncio"]

# The per-version section: interpreters by version (anything else given is a path), and
# the workloads it runs on each.
SID_BIN = os.path.join(REPO, "build", "sid", "bin")  # tests/sid/sid-root.sh's wrappers
VERSION_PYTHONS = {"3.13": ("pyenv", "3.13.0"), "3.14": ("sid", "python3.14"),
                   "3.15": ("sid", "python3.15")}
DEFAULT_VERSIONS = "3.13,3.14"
VERSION_WORKLOADS = ["cpu", "deep30"]

# The allocation part: PYPROF_ALLOC's mean intervals, and alloc_mix.py's functions whose
# allocated bytes it knows exactly (the accuracy check).
ALLOC_INTERVALS = ("512KB", "64KB")
ALLOC_KNOWN = ("blobs_small", "blobs_mid", "blobs_large")

T0 = time.monotonic()


def log(msg):
    sys.stderr.write("bench [%4.0f s]: %s\n" % (time.monotonic() - T0, msg))
    sys.stderr.flush()
