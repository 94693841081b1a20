#!/usr/bin/env python3
"""check_interpreters.py: are the interpreters the integration tests run on all here?

    python3 tests/check_interpreters.py

`make test` runs it first (after `make sid-root`), so that a machine missing one says so
at the start, once, with how to get it, instead of failing its tests one by one much
later.  The list is pyprof_testlib's INTERPRETERS (the same environment: PYENV_ROOT or
`pyenv root`, PYPROF_SID, PYPROF_SAN), and "missing" is what Interp.require() fails on.

All present: one line on stdout, exit status 0.  Some missing: the list and how to get
each on stderr; then exit status 1 when CI is "true" or "1" (CI sets it), else 0 (the
affected tests fail individually).
"""

import importlib.util
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "integration"))

# pyprof_testlib imports pytest; only its test helpers use it.
if importlib.util.find_spec("pytest") is None:
    import types
    sys.modules["pytest"] = types.ModuleType("pytest")

import pyprof_testlib as t  # noqa: E402


def how_to_get(interp):
    if interp.sysroot:
        return "make sid-root  (makes %s; `make test` runs it first)" % t.SID
    if interp.prefix:
        return "pyenv install %s" % interp.version
    return "apt-get install python%d.%d" % interp.minor


def main():
    missing = [i for i in t.INTERPRETERS if not os.access(i.path, os.X_OK)]
    ci = os.environ.get("CI", "").strip().lower() in ("true", "1")
    if not missing:
        print("interpreters: all %d present (%s)"
              % (len(t.INTERPRETERS), " ".join(i.id for i in t.INTERPRETERS)))
        return 0
    width = max(len(i.path) for i in missing)
    lines = ["interpreters: %d of the %d the integration tests run on %s missing:"
             % (len(missing), len(t.INTERPRETERS), "is" if len(missing) == 1 else "are")]
    for i in missing:
        lines.append("    %-14s %-*s  get it: %s" % (i.id, width, i.path, how_to_get(i)))
    if any(i.prefix for i in missing):
        lines.append("  (pyenv root: %s, from PYENV_ROOT or `pyenv root`%s)"
                     % (t.pyenv_root(), "" if shutil.which("pyenv")
                        else "; pyenv is not on PATH"))
    if ci:
        lines.append("interpreters: CI=%s, stopping: every CI machine must have them all"
                     % os.environ["CI"])
    else:
        lines.append("interpreters: going on; their tests will fail (with CI=true this "
                     "stops `make test`)")
    sys.stdout.flush()
    sys.stderr.write("\n".join(lines) + "\n")
    return 1 if ci else 0


if __name__ == "__main__":
    sys.exit(main())
