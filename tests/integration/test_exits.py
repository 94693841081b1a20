"""Exit paths: however the process ends, it leaves exactly one complete log (with its
footer), saying how it ended, holding the samples of the CPU burn done just before the
end; the target's output and exit status are unchanged.

workloads/exits.py burns 0.3 s of CPU in burn_before_exit(), then exits as $EXIT_MODE
says.  In "normal" mode an atexit handler burns 0.3 s more while the interpreter
finalizes: those samples must be kept too.
"""

import pytest

import pyprof_testlib as t

EXITS = t.workload("exits.py")

# mode -> (exit status, accepted values of processes[].ended).  exit_status may be null
# where the library cannot see the status (main returning to libc), but exit() and
# _exit() called by the program pass through the library, so for those it is required.
MODES = {
    "normal": (0, ("exit",)),
    "sys_exit": (3, ("exit",)),
    "exception": (1, ("exit",)),
    "os_exit": (0, ("_exit",)),
    "c_exit": (5, ("exit",)),
}
# Each burn is 0.3 s of the workload's own CPU (BURN_SECONDS in workloads/exits.py): at
# PYPROF_PERIOD=5ms, 60 periods on any machine, of which 35-60 became samples (the
# tick-based fallback timer runs at up to 250 Hz).  A quarter of the periods is a floor
# below the lowest that still catches a lost tail.
BURN_CPU = 0.3
BURN_SHARE = 0.25
STATUS_REQUIRED = ("os_exit", "c_exit")


def check_exit(interp, argv, mode, tmp_path, ended=None):
    status, accepted = MODES[mode]
    prof, base = t.run_pair(argv, tmp_path,
                            env={"EXIT_MODE": mode, "PYPROF_PERIOD": "5ms"})
    t.assert_transparent(prof, base)
    assert prof.rc == status, prof.describe()
    if mode == "exception":
        assert b"RuntimeError: deliberate uncaught exception" in prof.stderr, \
            prof.describe()
    p = t.one_log(prof, ended=ended or accepted)
    t.check_python_version(p, interp)
    es = p.proc["exit_status"]
    allowed = (status,) if mode in STATUS_REQUIRED else (None, status)
    assert es in allowed, ("exit_status %r, the process exited with %d\n%s"
                           % (es, status, p.dump()))

    before = p.function("burn_before_exit", EXITS)
    t.check_cpu_samples(p, BURN_CPU, got=before["total"], share=BURN_SHARE,
                        what="samples of the burn just before the exit")
    if mode == "normal":
        at = p.function("burn_in_atexit", EXITS)
        t.check_cpu_samples(p, BURN_CPU, got=at["total"], share=BURN_SHARE,
                            what="samples of the atexit handler's burn (during "
                            "finalization)")
    else:
        assert not p.functions("burn_in_atexit"), p.dump()
    return p


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_exit_path(interp, mode, tmp_path):
    interp.require()
    check_exit(interp, [interp.path, EXITS], mode, tmp_path)


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("interp", t.params(t.EMBEDDABLE))
def test_exit_path_embedded(interp, mode, tmp_path):
    """An embedding host calls Py_FinalizeEx itself (for sys.exit, Python calls it
    before exit()), then returns from main.  Whether the log calls such an end
    "Py_FinalizeEx" or "exit" is the library's choice (both are true); what matters is
    one complete log with every sample.  os._exit and exit() from C end as in python."""
    accepted = MODES[mode][1]
    if mode in ("normal", "sys_exit", "exception"):
        accepted = ("Py_FinalizeEx", "exit")
    check_exit(interp, [t.embed_host(interp), EXITS], mode, tmp_path, ended=accepted)
