"""Workload of test_spans.py: spans across a rotation and around a pause (2.7, 3.6+).

Run under the library with PYPROF_ROTATE=1s, utils/python on PYTHONPATH, SPANS_TOOL the
pyprof tool and SPANS_DIR the output directory.  Starts span "across", waits until the
writer has begun the series' second file (a second file in SPANS_DIR: the first one is
finished then), starts and stops "second" inside it and stops "across", both in the new
file.  Then starts span "outer", pauses profiling over the control socket, starts span
"while-paused", resumes, makes span "resumed" inside "while-paused" and stops
"while-paused" and "outer".  Prints one JSON object of what the calls returned.
"""

import json
import os
import subprocess
import sys
import time

import pyprof


def ctl(request):
    out = subprocess.check_output([os.environ["SPANS_TOOL"], "ctl", str(os.getpid()),
                                   request])
    return out.decode("utf-8", "replace").strip()


def files():
    return [f for f in os.listdir(os.environ["SPANS_DIR"]) if str(os.getpid()) in f]


facts = {"across": pyprof.start("across", n=1)}
deadline = time.time() + 60  # a hang guard only: the rotation comes after 1 s
while len(files()) < 2:
    if time.time() > deadline:
        sys.exit("no second file in %s: %r" % (os.environ["SPANS_DIR"], files()))
    time.sleep(0.01)
facts["second"] = pyprof.start("second")
facts["stops"] = [pyprof.stop(), pyprof.stop(done=True)]
facts["outer"] = pyprof.start("outer")
facts["pause"] = ctl("pause")
facts["paused"] = [pyprof.active(), pyprof.start("while-paused")]
facts["resume"] = ctl("resume")
facts["resumed"] = [pyprof.active(), pyprof.start("resumed"), pyprof.stop()]
facts["paused"].append(pyprof.stop())
facts["outer_stop"] = pyprof.stop()
print(json.dumps(facts))
