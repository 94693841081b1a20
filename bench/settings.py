"""The settings a workload runs under: bare, the library at a rate and clock
(pyprof_setting; with the correction of cpu-clock samples off: with_correction_off),
cProfile and yappi.  The allocation part's own settings are in parts/alloc.py."""


CORRECTION_OFF = " (correction off)"


def pyprof_setting(rate, clock="cpu", native=False, uncorrected=False):
    """The library at `rate` Hz.  uncorrected: with PYPROF_TEST_UNCORRECTED=1, a test
    setting that turns off the correction of each cpu-clock sample by the thread's own
    CPU clock (every timer signal one sample, as before the correction), to show the
    correction's cost beside the default; its rows are not checked against the targets,
    which are for what users run."""
    period = {100: "10ms", 1000: "1ms", 10000: "100us"}[rate]
    name = "pyprof %s %s%s" % ("100 Hz" if rate == 100 else "1 kHz", clock,
                               " native" if native else "")
    env = {"PYPROF_PERIOD": period}
    if clock != "cpu":
        env["PYPROF_CLOCK"] = clock
    if native:
        env["PYPROF_NATIVE"] = "1"
    out = {"name": name, "kind": "pyprof", "rate": rate, "env": env}
    if uncorrected:
        env["PYPROF_TEST_UNCORRECTED"] = "1"
        out.update(name=name + CORRECTION_OFF, test_only=True, corrected_name=name)
    return out


def with_correction_off(settings):
    """settings with, after each cpu-clock pyprof setting, the same with the correction
    off: side by side in the table, and run back to back in every repetition."""
    out = []
    for s in settings:
        out.append(s)
        if s["kind"] == "pyprof" and "PYPROF_CLOCK" not in s["env"] and \
                "PYPROF_NATIVE" not in s["env"]:
            out.append(pyprof_setting(s["rate"], uncorrected=True))
    return out


BARE = {"name": "bare", "kind": "bare", "rate": None, "env": {}}
CPROFILE = {"name": "cProfile", "kind": "cprofile", "rate": None, "env": {}}
YAPPI = {"name": "yappi (cpu clock)", "kind": "yappi", "rate": None, "env": {}}
