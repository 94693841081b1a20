"""pytest set-up for the integration tests (real interpreters, the real library).

The helpers live in pyprof_testlib.py (pytest puts this directory on sys.path, so the
test modules import it directly); this file only checks, once per session, that the
library and the tool under test exist.
"""

import os

import pytest

import pyprof_testlib as t


@pytest.fixture(scope="session", autouse=True)
def built_artifacts():
    for what, path in (("PYPROF_LIB", t.LIB), ("PYPROF_TOOL", t.TOOL)):
        if not os.path.isabs(path) or not os.path.isfile(path):
            pytest.fail("%s=%r: not an existing absolute path (run `make integration`, "
                        "which builds it)" % (what, path))


def pytest_report_header(config):
    if t.SID_LEFT_OUT:
        return ("sanitizer build (PYPROF_SAN=%s): %s left out, their root's C library cannot "
                "load this build's sanitizer runtime" % (t.SAN, ", ".join(t.SID_LEFT_OUT)))
    return None
