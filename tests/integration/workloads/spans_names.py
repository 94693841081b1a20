"""Workload of test_spans_e2e.py: spans with hostile names and info, through the
library's C functions (ctypes: any bytes) and through the pyprof package (text).

C: five spans nested in one another, all of base_id "E<1>", named by NAMES below (quotes
and a backslash, a script element, invalid UTF-8, a newline, a tab and an escape
sequence), trace ids "t<0>".."t<4>", each the parent of the next; their info: markup in
a JSON string, JSON cut short, invalid UTF-8 inside a JSON string.  Python: a span whose
name and info hold markup and a newline, with a span inside it.  Each span burns a
little CPU.  Prints one JSON object: the ids the C function returned and the Python
span's trace.
"""

import json

import pyprof
from span_capi import start, stop

NAMES = [b'q"uote\\back', b"<script>alert(1)</script>", b"bad\xff\xfeutf8", b"new\nline",
         b"tab\tand\x1b[2Jesc"]
INFOS = [b'{"k": "</script><b>bold</b>"}', b'{"broken": ', b'{"bytes": "\xff\xfe"}', None,
         b'{"n": 1}']


def burn(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


ids = []
parent = 0
for i, (name, info) in enumerate(zip(NAMES, INFOS)):
    parent_id = ("t<%d>" % (i - 1) if i else "E<1>").encode()
    parent = start(name, ("t<%d>" % i).encode(), parent_id, b"E<1>", info, parent)
    ids.append(parent)
    burn(20000)
stops = [stop(sid, b'{"end": "<\\/script>"}') for sid in reversed(ids)]

with pyprof.span(u"py<script>\"x\"\n</script>", note=u"</script><!--", amp=u"&amp;"):
    burn(20000)
    with pyprof.span(u"inner&<i>"):
        burn(20000)
print(json.dumps({"ids": ids, "stops": stops}))
