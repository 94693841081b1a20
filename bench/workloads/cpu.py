"""CPU-bound pure Python: function calls, object churn, json, regex and recursion.

usage: cpu.py ROUNDS
Each round does the same fixed amount of work, so a run's length depends only on ROUNDS
and on how fast the interpreter (and whatever profiles it) goes.  The bench
(bench/calibrate.py) calibrates ROUNDS to about a second on the machine it runs on.
"""
import json
import re
import sys

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
TEXT = " ".join("%s=%d;%s:%d" % (WORDS[i % 8], i * 7, WORDS[(i * 3) % 8], i)
                for i in range(120))
PAIR = re.compile(r"(\w+)=(\d+)")
COLON = re.compile(r"([a-z]+):(\d+)")


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def moved(self, dx, dy):
        return Point(self.x + dx, self.y + dy)

    def norm1(self):
        return abs(self.x) + abs(self.y)


def churn(n):
    pts = [Point(i, -i) for i in range(n)]
    pts = [p.moved(1, 2) for p in pts]
    d = {}
    for p in pts:
        d.setdefault(p.norm1() % 17, []).append((p.x, p.y))
    return sum(len(v) for v in d.values()) + len(sorted(d, reverse=True))


def add(a, b):
    return a + b


def scale(a, k=3):
    return add(a, a) * k


def calls(n):
    s = 0
    for i in range(n):
        s = add(s, scale(i & 15))
    return s


def do_json(n):
    doc = {"id": n, "tags": list(WORDS), "items": [{"k": i, "v": str(i) * 3, "f": i / 7.0}
                                                   for i in range(n)]}
    text = json.dumps(doc, sort_keys=True)
    back = json.loads(text)
    return len(text) + len(back["items"])


def do_regex():
    a = PAIR.findall(TEXT)
    b = COLON.findall(TEXT)
    return len(a) + len(b) + len(PAIR.sub(r"\2=\1", TEXT))


def one_round():
    return fib(15) + churn(150) + calls(1500) + do_json(60) + do_regex()


def main(rounds):
    total = 0
    for _ in range(rounds):
        total += one_round()
    return total


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
