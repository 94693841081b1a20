"""Deep recursion and PYPROF_MAX_DEPTH: a stack 5000 frames deep keeps both ends (the
innermost function and <module>) and marks the cut with a [cut] frame."""

import pytest

import pyprof_testlib as t

DEEP = t.workload("deep.py")


@pytest.mark.parametrize("max_depth", [None, "16"], ids=["default", "depth16"])
@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_deep_recursion(interp, max_depth, tmp_path):
    interp.require()
    env = {"DEPTH": "5000"}
    if max_depth:
        env["PYPROF_MAX_DEPTH"] = max_depth
    prof, base = t.run_pair([interp.path, DEEP], tmp_path, env=env)
    t.assert_transparent(prof, base)
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")

    inner = p.function("innermost", DEEP)
    module = p.function("<module>", DEEP)
    descend = p.function("descend", DEEP)
    cut = p.functions("[cut]")
    assert inner["self"] > 0 and inner["total"] > 0, p.dump()
    assert descend["total"] > 0, p.dump()
    assert cut and cut[0]["total"] > 0, "no [cut] marker in the report\n" + p.dump()
    # Both ends live in the same stacks: every sample in innermost() also has <module>
    # at its base.
    assert module["total"] >= inner["total"], (
        "<module> (the base of every deep stack) has fewer samples (%d) than the "
        "innermost function (%d): the outer end of the stacks was lost\n%s"
        % (module["total"], inner["total"], p.dump()))
    assert inner["total"] >= 0.5 * p.proc["samples"], p.dump()
