"""TEST HELPER: OSProfiler's own CLI (Debian's python3-osprofiler, run by /usr/bin/python3)
on a trace written by `pyprof trace show --json`, and the shape of such a trace."""

import json
import os
import re
import subprocess

import pytest

import pyprof_testlib as t

OSPROFILER = "/usr/bin/osprofiler"
DEBIAN_PYTHON = "/usr/bin/python3"


def tree_of(node):
    """(name, [children]) of an OSProfiler JSON node, for comparing structures."""
    return (node["info"]["name"], [tree_of(c) for c in node["children"]])


def count(node):
    """The nodes of a tree (the root included)."""
    return 1 + sum(count(c) for c in node["children"])


def nodes(node):
    """Every node under `node` (not itself), depth first."""
    out = []
    for c in node["children"]:
        out.append(c)
        out.extend(nodes(c))
    return out


def check_osprofiler(ours, tmp_path):
    """OSProfiler's CLI on our JSON: --json gives the same tree back, --dot draws one
    node per span plus the root, edges as our tree's.  Returns our JSON, parsed."""
    if not os.path.exists(OSPROFILER):
        pytest.fail("Debian's python3-osprofiler is not installed (%s)" % OSPROFILER)
    mine = json.load(open(ours))
    base = [DEBIAN_PYTHON, OSPROFILER, "trace", "show", ours, "--connection-string",
            "x://"]
    res = subprocess.run(base + ["--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=t.TIMEOUT)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    theirs = json.loads(res.stdout)
    assert theirs == mine
    assert tree_of(theirs) == tree_of(mine)
    dot = str(tmp_path / "os.dot")
    res = subprocess.run(base + ["--dot", "--out", dot], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=t.TIMEOUT)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    text = open(dot).read()
    found = re.findall(r"^\t(\d+) \[label=", text, re.M)
    edges = re.findall(r"^\t(\d+) -> (\d+)$", text, re.M)
    assert len(found) == count(mine)
    assert len(edges) == len(found) - 1
    return mine
