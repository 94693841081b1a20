"""`pyprof systemd enable|disable`: the drop-in it writes for a service, under --root.

The file is the one the operator's systemd reads: `systemd-analyze verify` accepts a unit
with it, and its environment, as systemd would give it to the service (%n replaced by
the unit's name), profiles a real Python program into the directory it names, paused
until SIGUSR2 and complete after the second.  disable removes exactly that file, and
every refusal is one line with its exit code.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import pyprof_testlib as t

DROPIN = "etc/systemd/system/%s.d/pyprof.conf"


def dropin_env(path, unit):
    """The Environment= assignments of a drop-in, %n replaced as systemd does."""
    env = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"Environment=([A-Z_]+)=(.*)$", line.rstrip("\n"))
            if m:
                env[m.group(1)] = m.group(2).replace("%n", unit)
    return env


def proc_cpu_s(pid):
    """The CPU seconds a process has used (its own count in /proc)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def analyze_verify(units, unit):
    """`systemd-analyze verify` of `unit` in the directory `units` (with its drop-ins)."""
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing (the systemd package)"
    return subprocess.run([analyze, "verify", str(units / unit)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=60,
                          env=dict(os.environ, SYSTEMD_UNIT_PATH="%s:" % units))


def settings(text):
    """A drop-in's settings: its lines that are not comments or blank, in order."""
    return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def test_example_dropin_is_what_enable_writes(tmp_path):
    """The packaged example (examples/systemd/pyprof.conf, for operators who install the
    file by hand) sets exactly what `pyprof systemd enable` writes, for the same library:
    the two are written in two places, and this holds them together."""
    example = os.path.join(t.REPO, "examples", "systemd", "pyprof.conf")
    with open(example) as f:
        want = settings(f.read())
    lib = next(ln.split("=", 2)[2] for ln in want if ln.startswith("Environment=LD_PRELOAD="))
    root = tmp_path / "root"
    res = t.tool("systemd", "enable", "--root", root, "--lib", lib, "demo")
    assert res.returncode == 0, res
    got = settings((root / (DROPIN % "demo.service")).read_text())
    assert got == want, "\n".join(["enable wrote:"] + got + ["the example has:"] + want)


def test_enable_writes_the_dropin(tmp_path):
    root = tmp_path / "root"
    res = t.tool("systemd", "enable", "--root", root, "demo")
    path = root / (DROPIN % "demo.service")
    assert res.returncode == 0 and not res.stderr, res
    lines = res.stdout.splitlines()
    assert lines[0] == "wrote %s" % path, res.stdout
    assert lines[1] == "now run: systemctl daemon-reload && systemctl restart demo.service"
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    text = path.read_text()
    lib = os.path.realpath(t.LIB)
    env = dropin_env(path, "demo.service")
    assert env == {"LD_PRELOAD": lib, "PYPROF_OUTPUT": "/var/log/pyprof/demo.service/",
                   "PYPROF_SIGNAL": "USR2", "PYPROF_ROTATE": "1h", "PYPROF_KEEP": "24"}, text
    assert "\nLogsDirectory=pyprof/%n\nLogsDirectoryMode=0700\n" in text, text
    assert sorted(os.listdir(path.parent)) == ["pyprof.conf"]  # no temporary file left

    # Once there, it is kept unless --force; --start drops the signal; --lib is taken.
    again = t.tool("systemd", "enable", "--root", root, "demo.service")
    assert again.returncode == 1 and again.stderr == (
        "pyprof: demo.service is already profiled: %s exists (--force replaces it)\n" % path)
    assert path.read_text() == text
    res = t.tool("systemd", "enable", "--root", root, "--force", "--start", "--lib",
                 "/opt/x/libpyprof.so", "demo")
    assert res.returncode == 0, res
    env = dropin_env(path, "demo.service")
    assert env["LD_PRELOAD"] == "/opt/x/libpyprof.so" and "PYPROF_SIGNAL" not in env, env

    # disable: the file and its directory go, nothing else under the root.
    (root / "etc/systemd/system/other.service.d").mkdir(parents=True)
    res = t.tool("systemd", "disable", "--root", root, "demo")
    assert res.returncode == 0 and res.stdout.splitlines()[0] == "removed %s" % path, res
    assert not path.parent.exists()
    assert os.listdir(root / "etc/systemd/system") == ["other.service.d"]
    res = t.tool("systemd", "disable", "--root", root, "demo")
    assert res.returncode == 1 and res.stderr == (
        "pyprof: demo.service is not profiled: there is no %s\n" % path), res


@pytest.mark.parametrize("args, code, text", [
    (["enable"], 2, "name one service"),
    (["enable", "a", "b"], 2, "name one service"),
    (["start", "demo"], 2, "unknown action 'start'"),
    (["enable", "../etc"], 2, "'../etc' is not a service name"),
    (["enable", "x y"], 2, "'x y' is not a service name"),
    (["enable", "demo.socket"], 2, "'demo.socket' is not a service"),
    (["disable", "--start", "demo"], 2, "'--start' is an option of enable"),
    (["enable", "--lib", "rel/libpyprof.so", "demo"], 1, "is not an absolute path"),
    (["enable", "--bogus", "demo"], 2, "--bogus"),
])
def test_refusals(tmp_path, args, code, text):
    res = t.tool("systemd", *(args[:1] + ["--root", tmp_path] + args[1:]))
    assert res.returncode == code and text in res.stderr, res
    assert res.stderr.startswith("pyprof") and not res.stdout, res
    assert not os.listdir(tmp_path)


def test_unwritable_root(tmp_path):
    if os.geteuid() == 0:
        target = "/proc/version"  # not a directory: mkdir fails even for root
    else:
        os.chmod(tmp_path, 0o500)
        target = str(tmp_path)
    res = t.tool("systemd", "enable", "--root", target, "demo")
    assert res.returncode == 1 and len(res.stderr.splitlines()) == 1, res
    assert res.stderr.startswith("pyprof: cannot write "), res


def test_systemd_analyze_verify(tmp_path):
    """systemd reads the unit with the drop-in and finds nothing wrong."""
    units = tmp_path / "units"
    units.mkdir()
    (units / "demo.service").write_text(
        "[Unit]\nDescription=demo\n[Service]\nExecStart=%s -c pass\nUser=nobody\n"
        % sys.executable)
    root = tmp_path / "root"
    assert t.tool("systemd", "enable", "--root", root, "demo").returncode == 0
    shutil.copytree(root / "etc/systemd/system/demo.service.d", units / "demo.service.d")
    res = analyze_verify(units, "demo.service")
    assert res.returncode == 0 and "pyprof" not in res.stdout, res.stdout
    # The drop-in was read: a broken one is reported.
    bad = units / "demo.service.d" / "pyprof.conf"
    bad.write_text(bad.read_text() + "LogsDirectoryMode=banana\n")
    res = analyze_verify(units, "demo.service")
    assert "banana" in res.stdout, res.stdout


FILTER_LINE = "\nSystemCallFilter=perf_event_open\n"


@pytest.mark.parametrize("files, adds, said", [
    # an allow-list in the unit file: the drop-in adds perf_event_open to it
    ({"lib/systemd/system/demo.service": "[Service]\nSystemCallFilter=@system-service\n"},
     True, "the drop-in adds perf_event_open"),
    # no filter at all: a lone perf_event_open line would allow nothing else
    ({"lib/systemd/system/demo.service": "[Service]\nExecStart=/bin/true\n"}, False, None),
    # a filter in an administrator's drop-in counts too
    ({"lib/systemd/system/demo.service": "[Service]\nExecStart=/bin/true\n",
      "etc/systemd/system/demo.service.d/hard.conf": "[Service]\nSystemCallFilter=@basic-io\n"},
     True, "the drop-in adds"),
    # reset by a later drop-in's empty value: no filter left
    ({"lib/systemd/system/demo.service": "[Service]\nSystemCallFilter=@system-service\n",
      "etc/systemd/system/demo.service.d/z.conf": "[Service]\nSystemCallFilter=\n"},
     False, None),
    # the unit denies it by name: left alone, and said
    ({"etc/systemd/system/demo.service":
      "[Service]\nSystemCallFilter=~@privileged perf_event_open\n"},
     False, "denies perf_event_open"),
    # /etc hides /lib's unit file of the same name
    ({"lib/systemd/system/demo.service": "[Service]\nSystemCallFilter=@system-service\n",
      "etc/systemd/system/demo.service": "[Service]\nExecStart=/bin/true\n"}, False, None),
])
def test_enable_reads_the_units_filter(tmp_path, files, adds, said):
    """A unit that filters system calls gets perf_event_open added by the drop-in, so
    that the profiler keeps its per-thread CPU timers; one that does not, or denies it
    by name, gets no such line."""
    root = tmp_path / "root"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    res = t.tool("systemd", "enable", "--root", root, "demo")
    assert res.returncode == 0 and not res.stderr, res
    text = (root / (DROPIN % "demo.service")).read_text()
    assert (FILTER_LINE in text) == adds, text
    if said:
        assert said in res.stdout.splitlines()[-1], res.stdout
    else:
        assert "SystemCallFilter" not in res.stdout, res.stdout


def test_enable_reads_a_templates_filter(tmp_path):
    """An instance of a template unit without a file of its own reads the template's."""
    root = tmp_path / "root"
    (root / "lib/systemd/system").mkdir(parents=True)
    (root / "lib/systemd/system/worker@.service").write_text(
        "[Service]\nSystemCallFilter=@system-service\n")
    res = t.tool("systemd", "enable", "--root", root, "worker@7")
    assert res.returncode == 0, res
    assert FILTER_LINE in (root / (DROPIN % "worker@7.service")).read_text()
    # An instance with a file of its own is read from that file alone.
    (root / "etc/systemd/system/worker@8.service").write_text(
        "[Service]\nExecStart=/bin/true\n")
    res = t.tool("systemd", "enable", "--root", root, "worker@8")
    assert res.returncode == 0, res
    assert FILTER_LINE not in (root / (DROPIN % "worker@8.service")).read_text()


def test_systemd_analyze_verify_with_a_filter(tmp_path):
    """systemd takes the drop-in's filter line on a unit with an allow-list."""
    units = tmp_path / "units"
    units.mkdir()
    (units / "demo.service").write_text(
        "[Unit]\nDescription=demo\n[Service]\nExecStart=%s -c pass\nUser=nobody\n"
        "SystemCallFilter=@system-service\n" % sys.executable)
    root = tmp_path / "root"
    shutil.copytree(units, root / "etc/systemd/system")
    assert t.tool("systemd", "enable", "--root", root, "demo").returncode == 0
    dropins = root / "etc/systemd/system/demo.service.d"
    assert FILTER_LINE in (dropins / "pyprof.conf").read_text()
    shutil.copytree(dropins, units / "demo.service.d")
    res = analyze_verify(units, "demo.service")
    assert res.returncode == 0 and "pyprof" not in res.stdout, res.stdout


def test_dropin_profiles_a_service(tmp_path):
    """The drop-in's environment on a real program: paused until SIGUSR2, sampling until
    the next, one complete log of that window in the directory it names."""
    root = tmp_path / "root"
    assert t.tool("systemd", "enable", "--root", root, "demo").returncode == 0
    env = dropin_env(root / (DROPIN % "demo.service"), "demo.service")
    logs = tmp_path / "var/log/pyprof/demo.service"
    logs.mkdir(parents=True, mode=0o700)  # LogsDirectory='s work
    env["PYPROF_OUTPUT"] = env["PYPROF_OUTPUT"].replace("/var/log", str(tmp_path / "var/log"))
    py = t.by_id("py3.11-debian")[0].path  # the distribution's interpreter
    prog = ("import signal, sys, time\n"
            "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
            "def burn():\n"
            "    s = 0\n"
            "    for i in range(200000): s += i * i\n"
            "while True:\n"
            "    burn()\n")
    full = dict(t.base_env(), **env)
    if t.SAN:
        # A sanitizer build (make asan, ubsan) needs its runtime loaded first, before
        # the drop-in's library, and its options.
        san = t.preload_env({})
        full.update((k, v) for k, v in san.items() if k != "LD_PRELOAD")
        full["LD_PRELOAD"] = san["LD_PRELOAD"].split()[0] + " " + env["LD_PRELOAD"]
    p = subprocess.Popen([py, "-c", prog], stdout=subprocess.PIPE, env=full,
                         universal_newlines=True)
    try:
        assert p.stdout.readline() == "ready\n"
        assert os.listdir(logs) == []  # paused: no log yet
        os.kill(p.pid, signal.SIGUSR2)
        cpu0 = proc_cpu_s(p.pid)
        while proc_cpu_s(p.pid) - cpu0 < 0.3:
            time.sleep(0.05)
        os.kill(p.pid, signal.SIGUSR2)
        deadline = time.time() + 30
        while time.time() < deadline:
            names = os.listdir(logs)
            if names and t.tool("info", logs).returncode == 0:
                break
            time.sleep(0.1)
    finally:
        p.kill()
        p.wait()
    (name,) = os.listdir(logs)
    assert re.match(r"pyprof\.python[\d.]*\.%d\." % p.pid, name), name
    rep = t.tool_json("report", "--json", logs / name)
    (proc,) = rep["processes"]
    assert proc["ended"] == "toggled off", proc
    assert any(f["name"] == "burn" for f in rep["functions"]), rep["functions"][:5]
