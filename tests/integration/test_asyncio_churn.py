"""Reading asyncio tasks while they churn (docs/ASYNCIO.md, "Reading from a signal
handler"): thousands of short tasks a second made, renamed and finished, and a burst of
200 idle tasks ending, while the library samples at 1 ms in cpu and in wall mode (where
every pass also walks the thread's list of waiting tasks).  The program's output and
exit status are the same as without the library, the log is whole, and every task
frame names a task the workload made (`churn-N`, `churn-N-r`, `idle-N`, the main
task): nothing read from a task met mid-change is taken for a name."""

import re

import pytest

import pyprof_testlib as t

WORKLOAD = t.workload("asyncio_churn.py")
TASK = re.compile(r"^<task (.*)>$")
NAMES = re.compile(r"^(churn-\d+(-r)?|idle-\d+|Task-\d+|Task)$")
ASYNCIO = [i for i in t.INTERPRETERS if i.minor >= (3, 7)]


@pytest.mark.parametrize("clock", ["cpu", "wall"])
@pytest.mark.parametrize("interp", t.params(ASYNCIO))
def test_churn(interp, clock, tmp_path):
    interp.require()
    prof, base = t.run_pair([interp.path, WORKLOAD], tmp_path,
                            env={"PYPROF_PERIOD": "1ms", "PYPROF_CLOCK": clock})
    # The count of tasks made depends on the speed: only its form is compared.
    assert prof.rc == 0 and base.rc == 0, prof.describe()
    assert prof.stderr == base.stderr == b"", prof.describe()
    assert int(prof.stdout) > 100 and int(base.stdout) > 100, prof.describe()
    p = t.one_log(prof, ended="exit")
    stacks = t.folded(*(t.root_opts(prof) + ["--awaiting", prof.logs[0]]))
    seen = set()
    for frames, _ in stacks:
        for name, _ in frames:
            m = TASK.match(name)
            if m:
                assert NAMES.match(m.group(1)), ("a task frame no task had: %r\n%s"
                                                 % (name, p.dump()))
                seen.add(m.group(1).split("-")[0])
    if interp.minor >= (3, 8):
        assert "churn" in seen, (seen, p.dump())
