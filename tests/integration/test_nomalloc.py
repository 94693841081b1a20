"""The sampling handler never allocates: a shim preloaded after the library wraps its
signal handler and aborts the process (exit 99) if malloc, calloc, realloc or free runs
inside it.  The stress workload at 100 us must finish as it does without the library."""

import os
import subprocess

import pytest

import pyprof_testlib as t

SHIM_SRC = os.path.join(t.REPO, "tests", "helpers", "nomalloc_shim.c")
STRESS = t.workload("stress.py")


def build_shim(tmp_path):
    out = str(tmp_path / "nomalloc_shim.so")
    subprocess.check_call(["gcc", "-O1", "-shared", "-fPIC", "-o", out, SHIM_SRC, "-ldl"])
    return out


@pytest.mark.skipif(os.environ.get("PYPROF_SAN") == "address",
                    reason="AddressSanitizer replaces malloc itself")
@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.10", "py3.12", "py3.13")))
def test_handler_never_allocates(interp, tmp_path):
    interp.require()
    shim = build_shim(tmp_path)
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("PYTHON") or k.startswith("PYPROF_"):
            del env[k]
    env.update({"LD_PRELOAD": "%s %s" % (t.LIB, shim), "PYPROF_OUTPUT": str(tmp_path),
                "PYPROF_PERIOD": "100us", "STRESS_SECONDS": "3"})
    r = subprocess.run([interp.path, STRESS], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, "exit %d, stderr:\n%s" % (r.returncode, r.stderr.decode())
    assert b"nomalloc_shim" not in r.stderr, r.stderr.decode()
    assert [f for f in os.listdir(str(tmp_path)) if f.endswith(".lz4")], "no log written"
