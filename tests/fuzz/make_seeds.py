#!/usr/bin/env python3
"""make_seeds.py -- (re)creates the seed corpora of the small fuzz targets.

    python3 tests/fuzz/make_seeds.py [tests/fuzz]

Writes tests/fuzz/corpus-linetable/, corpus-config/, corpus-ctlcmd/ and corpus-jsonscan/
(the reader's seeds are make_corpus.py's, in tests/fuzz/corpus/).  Each seed is laid out
as its target's header comment says:

  linetable  kind | first_line (4, LE) | offset (8, LE) | cut | table: the real tables of
             every CPython version in tests/fixtures/linetables/, at offsets they map;
  config     outlen (2) | pid (8) | ppid (8) | min (4) | max (4) | value \\0 prog \\0
             start \\0 host \\0 run_id \\0 seq: every syntax config.c documents, and
             templates with every conversion;
  ctlcmd     errlen | chunking seed | what a client sends: every request, with and
             without its argument, '\\r\\n', a line too long, bytes that are not text;
  jsonscan   text \\0 key: span infos as pyprof and OSProfiler write them, and every
             edge of the grammar: escapes, surrogate pairs (and lone halves), invalid
             UTF-8, text cut short, huge numbers, nesting at and past the limit,
             repeated names.

Seeds that reproduced a finding are kept beside these under their own names; this script
only replaces the files it writes (gen-*).
"""
import glob
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
from make_fixtures import write_seeds  # noqa: E402  (shared with make_corpus.py)


def linetable_seeds():
    seeds = {}
    for path in sorted(glob.glob(os.path.join(HERE, "..", "fixtures", "linetables", "*.txt"))):
        version = os.path.basename(path)[:-4]
        kind = None
        code = None
        k = 0
        for line in open(path):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if words[0] == "kind":
                kind = int(words[1])
            elif words[0] == "code" and len(words) >= 4:
                code = (int(words[2]), b"" if words[3] == "-" else bytes.fromhex(words[3]))
            elif words[0] == "at" and code and kind is not None and k < 6:
                first, tab = code
                pairs = [w.split(":") for w in words[1:]]
                off = int(pairs[len(pairs) // 2][0]) if pairs else 0
                head = (bytes([kind]) + struct.pack("<i", first) + struct.pack("<q", off)
                        + bytes([len(tab) // 2 % 256]))
                seeds["gen-%s-%d.bin" % (version, k)] = head + tab
                k += 1
    # Past the end, a negative offset, an unknown kind, an absurd first line.
    seeds["gen-far-offset.bin"] = (bytes([4]) + struct.pack("<i", 1) + struct.pack("<q", 1 << 40)
                                   + b"\x00" + bytes.fromhex("f003"))
    seeds["gen-negative-offset.bin"] = (bytes([1]) + struct.pack("<i", 5)
                                        + struct.pack("<q", -2) + b"\x00" + b"\x02\x01")
    seeds["gen-unknown-kind.bin"] = (bytes([7]) + struct.pack("<i", 3) + struct.pack("<q", 4)
                                     + b"\x00" + b"\x02\x01\x02\x01")
    seeds["gen-line-near-max.bin"] = (bytes([2]) + struct.pack("<i", 2**31 - 3)
                                      + struct.pack("<q", 10) + b"\x01" + b"\x02\x7f" * 4)
    return seeds


def config_seeds():
    values = [
        "10ms", "0.01", "1.5ms", ".5", "2.", "500us", "500\xb5s", "2500ns", "10MS", "1s",
        "18446744073709551615ns", "99999999999999999999", "1e3", "-1", " 1", "",
        "yes", "off", "TRUE", "0", "1", "256", "4096", "4294967296",
        "USR2", "sigusr2", "12", "RTMIN", "RTMIN+1", "RTMAX-2", "SIGRTMAX-100", "KILL",
        "cpu", "wall", "WALL",
        "64MB", "512KB", "1GB", "65536B", "2GiB", "1m", "64M", "10min", "1h", "2d", "30s",
        "1.5KB", "0.5h", "99999999999999999999GB",
        "/tmp/pyprof-%n-%p-%t.lz4", "%h/%r-%s-%P.lz4", "%%p%%", "%x", "log%", "%n%n%n%n",
        "a/b/c", "%p" * 20,
    ]
    seeds = {}
    for i, v in enumerate(values):
        for outlen, pid in ((4096, 1234), (9, -9223372036854775807 - 1)):
            head = (struct.pack("<H", outlen) + struct.pack("<q", pid) + struct.pack("<q", 1)
                    + struct.pack("<I", 4) + struct.pack("<I", 4096))
            fields = [v.encode("utf-8"), b"py/thon", b"20240101T000000", b"host/a",
                      b"0123abcd", b"0001"]
            seeds["gen-%02d-%d.bin" % (i, outlen)] = head + b"\0".join(fields)
    return seeds


def ctlcmd_seeds():
    lines = [
        b"status\n", b"pause\n", b"resume\n", b"flush\n", b"rotate\n", b"dump\n",
        b"period 10ms\n", b"period\n", b"period 1s extra\n", b"clock wall\r\n",
        b"clock\tcpu\n", b"status now\n", b"  status  \n", b"\n", b"", b"status",
        b"frobnicate\n", b"a" * 256 + b"\n", b"a" * 257 + b"\n", b"x" * 600,
        b"stat\x01us\n", b"status\x00\n", b"caf\xc3\xa9\n", b"status\nperiod 1ms\n",
        b"period " + b"9" * 200 + b"ms\n",
    ]
    seeds = {}
    for i, line in enumerate(lines):
        for errlen, seed in ((255, 0), (7, 3)):
            seeds["gen-%02d-%d.bin" % (i, errlen)] = bytes([errlen, seed]) + line
    return seeds


def jsonscan_seeds():
    def dumps(obj):  # as pyprof's _json writes a span's info: compact, ASCII
        return json.dumps(obj, separators=(",", ":")).encode("ascii")

    osprof_start = {"function": {"name": "__main__.compute", "args": "(3,)", "kwargs": "{}"},
                    "host": "node-1", "what": "squares", "service": "api",
                    "project": "pyprof-test"}
    seeds = {
        # What the workloads write (tests/integration/workloads/spans_*.py, osprof_*.py).
        "gen-osprof-trace.json": dumps(osprof_start) + b"\0service",
        "gen-osprof-client.json": dumps({"port": 8080, "host": "node-1",
                                         "project": "p", "service": "client"}),
        "gen-osprof-wsgi.json": dumps({"request": {"path": "/v1/items", "query": "a=1&b=2",
                                                   "method": "GET", "scheme": "http"},
                                       "host": "node-1", "service": "server"}),
        "gen-osprof-stop-error.json": dumps({"etype": "ValueError",
                                             "message": "boom \"x\" \\ \u00e9"}) + b"\0etype",
        "gen-osprof-stop-result.json": dumps({"function": {"result": "[1, 4, 9]"}}),
        "gen-spans-api.json": dumps({"request": "GET /", "n": 1, "a": 1, "b": [1, "x"],
                                     "obj": "<object object at 0x7f3a>", "result": "ok"}),
        "gen-spans-odd-info.json": dumps({"key": "nan", "s": "{1}", "text": u"\u00e9t\u00e9"}),
        "gen-spans-truncated.json": dumps({"truncated": dumps({"k": "v" * 40})[:30].decode()}),
        "gen-spans-markup.json": b'{"k": "</script><b>bold</b>", "end": "<\\/script>"}',
        "gen-spans-broken.json": b'{"broken": ',
        "gen-spans-bytes.json": b'{"bytes": "\xff\xfe"}',
        # The grammar's edges.
        "gen-empty.json": b"",
        "gen-not-object.json": b' [1, "a", {}] ',
        "gen-two-objects.json": b"{}{}",
        "gen-whitespace.json": b' \r\n\t{ "a" : [ 1 , 2 ] , "b" : { } , "c" : "d" }\n\0c',
        "gen-literals-numbers.json": b'{"a":[true,false,null,-0,0.5e+10,1E-2,-12.75e0],"x":"y"}',
        "gen-huge-numbers.json": (b'{"n":1e999999999,"m":-0.000000000e-99999,"big":'
                                  + b"9" * 200 + b',"s":"' + b"1" * 100 + b'"}'),
        "gen-escapes.json": b'{"e":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u001f\\u007F","raw":"\x7f"}\0e',
        "gen-surrogates.json": (b'{"pair":"\\ud83d\\ude00","lone":"\\ud800x","low":"\\udc00",'
                                b'"hh":"\\uD800\\uD800\\uDC00","end":"\\udbff","z":"a\\u0000b",'
                                b'"s\\u0065rvice":"escaped key"}\0service'),
        "gen-utf8-raw.json": (b'{"\xc3\xa9":"\xf0\x9f\x98\x80\xef\xbf\xbf\xf4\x8f\xbf\xbf'
                              b'\xe0\xa0\x80\xed\x9f\xbf"}\0\xc3\xa9'),
        "gen-utf8-overlong.json": b'{"a":"\xc0\xaf","b":"\xe0\x80\xaf"}',
        "gen-utf8-surrogate.json": b'{"a":"\xed\xa0\x80"}',
        "gen-utf8-above-max.json": b'{"a":"\xf4\x90\x80\x80"}',
        "gen-utf8-cut.json": b'{"a":"\xe2\x82',
        "gen-cut-escape.json": b'{"a":"\\u12',
        "gen-control-char.json": b'{"a":"tab\there"}',
        "gen-duplicates.json": b'{"etype":"first","n":{"etype":"nested"},"etype":"second","etype":3}\0etype',
        "gen-deep-64.json": b'{"a":' + b"[" * 62 + b'{"b":"c"}' + b"]" * 62 + b"}",
        "gen-deep-65.json": b'{"a":' + b'{"a":' * 63 + b"{}" + b"}" * 64,
    }
    return seeds


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else HERE
    for name, seeds in (("linetable", linetable_seeds()), ("config", config_seeds()),
                        ("ctlcmd", ctlcmd_seeds()), ("jsonscan", jsonscan_seeds())):
        write_seeds(os.path.join(top, "corpus-" + name), seeds, stale="gen-*")


if __name__ == "__main__":
    main()
