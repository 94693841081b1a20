"""TEST HELPER: OSProfiler's own CLI on a trace written by `pyprof trace show --json`,
and the shape of such a trace.  The CLI is Debian's python3-osprofiler run by
/usr/bin/python3, or for an interpreter of the sid root (pyprof_testlib's py3.14) the
root's own python3-osprofiler (OSProfiler 4.x) run by that interpreter."""

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


def osprofiler_argv(interp=None):
    """The command running OSProfiler's CLI: Debian's /usr/bin/osprofiler by
    /usr/bin/python3 (`interp` None), by `interp`, or for an interpreter of the sid root
    the root's /usr/bin/osprofiler by that interpreter (inside the root, where the paths
    under /tmp are the host's)."""
    if interp is None:
        return [DEBIAN_PYTHON, OSPROFILER]
    interp.require()
    if interp.sysroot:
        script = os.path.join(interp.sysroot, OSPROFILER.lstrip("/"))
        what = "the sid root's python3-osprofiler (`make sid-root` installs it)"
    else:
        script = OSPROFILER
        what = "Debian's python3-osprofiler"
    if not os.path.exists(script):
        pytest.fail("%s is not installed (%s)" % (what, script))
    return [interp.path, OSPROFILER]


def _said(argv, res):
    return "$ %s\nexit status %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
        " ".join(argv), res.returncode, res.stdout.decode(errors="replace")[-3000:],
        res.stderr.decode(errors="replace")[-3000:])


def check_osprofiler(ours, tmp_path, interp=None):
    """OSProfiler's CLI (osprofiler_argv(interp)) on our JSON: --json gives the same tree
    back, --dot draws one node per span plus the root, edges as our tree's.  Returns our
    JSON, parsed."""
    if interp is None and not os.path.exists(OSPROFILER):
        pytest.fail("Debian's python3-osprofiler is not installed (%s)" % OSPROFILER)
    mine = json.load(open(ours))
    base = osprofiler_argv(interp) + ["trace", "show", ours, "--connection-string", "x://"]
    res = subprocess.run(base + ["--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=t.TIMEOUT)
    assert res.returncode == 0, _said(base + ["--json"], res)
    theirs = json.loads(res.stdout)
    assert theirs == mine
    assert tree_of(theirs) == tree_of(mine)
    dot = str(tmp_path / "os.dot")
    argv = base + ["--dot", "--out", dot]
    res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=t.TIMEOUT)
    if res.returncode != 0 and b"graphviz library is required" in res.stdout + res.stderr:
        where = ("the sid root (tests/sid/sid-root.sh installs its packages)"
                 if interp is not None and interp.sysroot else "this machine (make deps)")
        pytest.fail("OSProfiler's `trace show --dot` needs python3-graphviz, which %s "
                    "lacks\n%s" % (where, _said(argv, res)))
    assert res.returncode == 0, _said(argv, res)
    text = open(dot).read()
    found = re.findall(r"^\t(\d+) \[label=", text, re.M)
    edges = re.findall(r"^\t(\d+) -> (\d+)$", text, re.M)
    assert len(found) == count(mine)
    assert len(edges) == len(found) - 1
    return mine
