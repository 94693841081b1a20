"""Workload of test_spans_e2e.py: spans of two names, each burning CPU in a function of
its own (alpha in burn_alpha, beta in burn_beta), and CPU burnt outside any span
(burn_outside), in three rounds, with the pyprof package (utils/python on PYTHONPATH;
2.7 and 3.6+).  Prints whether spans were recorded.
"""

import os

import pyprof

N = int(os.environ.get("SPANS_TWO_N", "300000"))


def burn_alpha(n):
    s = i = 0
    while i < n:
        s += i * i
        i += 1
    return s


def burn_beta(n):
    s = i = 0
    while i < n:
        s ^= i << 2
        i += 1
    return s


def burn_outside(n):
    s = i = 0
    while i < n:
        s += i
        i += 1
    return s


for r in range(3):
    with pyprof.span("alpha", round=r):
        burn_alpha(N)
    with pyprof.span("beta", round=r):
        burn_beta(N)
    burn_outside(N // 2)
print(pyprof.active())
