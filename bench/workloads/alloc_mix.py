"""Allocation-heavy Python: json, dict/list/str churn, regex, templates, rows to objects,
and three functions whose allocated bytes are known exactly.

usage: alloc_mix.py ROUNDS [OUT.json]
Each round does the same fixed work, so a run's length depends only on ROUNDS and on
how fast the interpreter (and whatever profiles it) goes; the bench's alloc part
(bench/parts/alloc.py) calibrates ROUNDS to about 1.5 s of CPU.  Python 3 only.

  do_json      json.dumps and json.loads of nested dicts (orders with lines)
  churn        dicts, lists and str built and thrown away (split, join, format, sort)
  do_regex     findall, finditer with groups and sub over a text of key=value pairs
  render       rows rendered with str.format and string.Template
  orm          objects built from row dicts (an ORM's hydrate), grouped and summed
  blobs_small  b"x" * n for fixed n: one block of a known size each (pymalloc, small);
  blobs_mid    (pymalloc, near its 512-byte limit);
  blobs_large  (over pymalloc's limit: the C library's malloc)

The blobs_* functions allocate nothing else in their loops (itertools.repeat, no int
objects, the bytes object dropped at the next one), so the bytes they allocate are
exactly calls x sys.getsizeof(one): the truth an allocation profiler's per-function
estimate (self, innermost frame) is checked against.  OUT.json gets, per function, the
calls, the size of one block and the bytes allocated over the run.

With ALLOC_MIX_TRACE=1 (tracemalloc on: -X tracemalloc, or it is started here) the
workload also measures that size with tracemalloc (exact: the bytes traced for one such
block, kept alive, which must equal sys.getsizeof), and writes it and tracemalloc's peak
of traced memory to OUT.json.  (tracemalloc counts the blocks alive, not the bytes
allocated over a run, so it gives no per-function total to compare with.)
"""
import itertools
import json
import os
import re
import string
import sys

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
         "kappa", "lambda", "mu")
TEXT = " ".join("%s=%d;%s:%d user%d@host%d.example" % (
    WORDS[i % 12], i * 7, WORDS[(i * 5) % 12], i, i % 97, i % 13) for i in range(300))
PAIR = re.compile(r"(\w+)=(\d+)")
MAIL = re.compile(r"(?P<user>\w+)@(?P<host>[\w.]+)")
ROWS = [{"id": i, "name": "%s %s" % (WORDS[i % 12].title(), WORDS[(i * 7) % 12]),
         "email": "user%d@example.org" % i, "qty": i % 17, "price": (i * 37 % 1000) / 10.0,
         "status": ("new", "paid", "shipped", "void")[i % 4]} for i in range(200)]
ROW_FMT = "{id:>6} | {name:<20} | {email:<24} | {qty:>3} x {price:>8.2f} | {status}"
ROW_TPL = string.Template("<tr><td>$id</td><td>$name</td><td>$email</td>"
                          "<td>$qty</td><td>$price</td><td>$status</td></tr>")

# The known blocks: payload bytes of one b"x" * n (the block is sys.getsizeof of it).
SMALL, MID, LARGE = 40, 440, 16000
# Blocks per round of each: 0.73, 0.47 and 0.53 MB a round, together about a quarter of
# the bytes a round allocates.
N_SMALL, N_MID, N_LARGE = 10000, 1000, 33


def do_json(n):
    doc = {"orders": [{"id": i, "customer": {"name": WORDS[i % 12], "tier": i % 3,
                                            "tags": list(WORDS[: (i % 5) + 1])},
                       "lines": [{"sku": "SKU-%05d" % (i * 10 + j), "qty": j + 1,
                                  "price": (i + j) / 4.0} for j in range(6)]}
                      for i in range(n)]}
    text = json.dumps(doc)
    back = json.loads(text)
    total = sum(line["qty"] * line["price"] for o in back["orders"] for line in o["lines"])
    return len(text) + int(total)


def churn(n):
    d = {}
    for i in range(n):
        key = "k%d-%s" % (i % 64, WORDS[i % 12])
        d.setdefault(key, []).append(str(i) * (1 + i % 4))
    lists = [sorted(v, key=len, reverse=True) for v in d.values()]
    joined = ["|".join(v) for v in lists]
    parts = [s.split("|") for s in joined]
    inv = {p[0]: len(p) for p in parts if p}
    return len(inv) + sum(len(s) for s in joined)


def do_regex():
    a = PAIR.findall(TEXT)
    hosts = {}
    for m in MAIL.finditer(TEXT):
        hosts[m.group("host")] = hosts.get(m.group("host"), 0) + len(m.group("user"))
    s = PAIR.sub(r"\2=\1", TEXT)
    return len(a) + len(hosts) + len(s)


def render():
    lines = [ROW_FMT.format(**r) for r in ROWS]
    html = [ROW_TPL.substitute(r) for r in ROWS]
    page = "<table>\n%s\n</table>\n%s" % ("\n".join(html), "\n".join(lines))
    return len(page)


class Order:
    __slots__ = ("id", "name", "email", "qty", "price", "status", "total")

    def __init__(self, row):
        for k, v in row.items():
            setattr(self, k, v)
        self.total = self.qty * self.price

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}


def orm():
    objs = [Order(r) for r in ROWS]
    by_status = {}
    for o in objs:
        by_status.setdefault(o.status, []).append(o)
    out = [o.as_dict() for o in objs if o.status != "void"]
    return len(out) + sum(int(sum(o.total for o in v)) for v in by_status.values())


def blobs_small(n, size):
    x = b"x"
    for _ in itertools.repeat(None, n):
        b = x * size
    return len(b)


def blobs_mid(n, size):
    x = b"x"
    for _ in itertools.repeat(None, n):
        b = x * size
    return len(b)


def blobs_large(n, size):
    x = b"x"
    for _ in itertools.repeat(None, n):
        b = x * size
    return len(b)


KNOWN = (("blobs_small", blobs_small, N_SMALL, SMALL),
         ("blobs_mid", blobs_mid, N_MID, MID),
         ("blobs_large", blobs_large, N_LARGE, LARGE))


def one_round():
    t = do_json(40) + churn(1500) + do_regex() + render() + orm()
    for _, fn, n, size in KNOWN:
        t += fn(n, size)
    return t


def traced_block(size):
    """The bytes tracemalloc traces for one block of b"x" * size: the traces of the one
    line that makes it, taken while the block is alive."""
    import tracemalloc
    x = b"x"
    keep = x * size
    line = sys._getframe().f_lineno - 1
    snap = tracemalloc.take_snapshot()
    here = traced_block.__code__.co_filename
    got = sum(s.size for s in snap.statistics("lineno")
              if s.traceback[0].filename == here and s.traceback[0].lineno == line)
    return got if len(keep) == size else None


def main(rounds, out):
    trace = os.environ.get("ALLOC_MIX_TRACE") == "1"
    if trace:
        import tracemalloc
        if not tracemalloc.is_tracing():
            tracemalloc.start()
    total = 0
    for _ in range(rounds):
        total += one_round()
    if out:
        res = {"rounds": rounds, "python": sys.version.split()[0], "known": {}}
        for name, fn, n, size in KNOWN:
            one = sys.getsizeof(b"x" * size)
            res["known"][name] = {"calls": n * rounds, "block_bytes": one,
                                  "bytes": n * rounds * one}
            if trace:
                res["known"][name]["traced_block_bytes"] = traced_block(size)
        if trace:
            res["tracemalloc_peak_bytes"] = tracemalloc.get_traced_memory()[1]
        with open(out, "w") as fh:
            json.dump(res, fh)
    return total


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20, sys.argv[2] if len(sys.argv) > 2
         else None)
