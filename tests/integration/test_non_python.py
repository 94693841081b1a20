"""Processes without a Python interpreter are left alone: under LD_PRELOAD they write no
file and their output and exit status are byte-for-byte what they are without it."""

import pytest

import pyprof_testlib as t

COMMANDS = [
    pytest.param(["/bin/true"], id="true"),
    pytest.param(["/bin/false"], id="false"),
    pytest.param(["sh", "-c", "echo hi; ls /"], id="sh-echo-ls"),
    pytest.param(["sh", "-c", "echo to stderr >&2; exit 3"], id="sh-exit3"),
    pytest.param(["ls", "-la", t.REPO], id="ls"),
]


@pytest.mark.parametrize("argv", COMMANDS)
def test_non_python_untouched(argv, tmp_path):
    # PYPROF_PERIOD at its fastest: if a timer were armed, it would fire.
    prof, base = t.run_pair(argv, tmp_path, env={"PYPROF_PERIOD": "100us"})
    t.assert_transparent(prof, base)
    assert prof.logs == [], "a non-Python process wrote a file\n" + prof.describe()
