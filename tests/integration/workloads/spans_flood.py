"""Workload of test_spans_e2e.py: more span starts and stops, with 4000 bytes of info
each, than the library's buffer holds, straight through its C functions (ctypes), until
at least 100 have been refused.  Prints one JSON object: the starts it made, the starts
refused (pyprof_span_start returned 0) and the stops refused (pyprof_span_stop returned
0).  Debian's python3.
"""

import json

from span_capi import start, stop
info = json.dumps({"pad": "x" * 4000}).encode()
n = refused_starts = refused_stops = 0
while refused_starts + refused_stops < 100 and n < 1000000:
    n += 1
    sid = start(b"flood", None, None, None, info, 0)
    if not sid:
        refused_starts += 1
    elif not stop(sid, info):
        refused_stops += 1
print(json.dumps({"starts": n, "refused_starts": refused_starts,
                  "refused_stops": refused_stops}))
