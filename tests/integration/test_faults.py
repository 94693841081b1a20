"""Faults around the target: where the log cannot be written, the library says so in one
line on stderr and the target runs exactly as without it; a target with its own
SIGPROF profiler keeps it working; a set-uid/set-gid (secure-execution) process is left
alone entirely.

Missing directories given as a plain directory (PYPROF_OUTPUT=/nonexistent/dir/) are
covered by test_config.py; here: a missing directory in a template, a file where the
directory should be, a read-only file system, a directory the target may not write, a
full disk and a disk that fills up while the target runs.  The mounts need root (the
tests run as root on the test machines); without it the unwritable case falls back to a
0500 directory and the mount cases are skipped.
"""

import contextlib
import grp
import os
import shutil
import subprocess
import tempfile

import pytest

import pyprof_testlib as t

SIMPLE = t.workload("simple.py")
SIGPROF_APP = t.workload("sigprof_app.py")
SECURE_PROBE = t.workload("secure_probe.py")
NO_PERF_SRC = t.workload("no_perf.c")
RECURSIVE = t.workload("recursive.py")
PYMAIN_SRC = t.workload("pymain_host.c")
ROOT = os.geteuid() == 0
INTERPS = t.params(t.by_id("py2.7", "py3.11-debian", "py3.13", *t.SID_IDS))


def added_lines(prof, base):
    """The lines the library added to the target's stderr; the target's own lines must
    all be there, in order."""
    got = t.stderr_lines(prof.stderr)
    added = list(got)
    for line in t.stderr_lines(base.stderr):
        assert line in added, ("the target's stderr line %r is missing\n%s"
                               % (line, prof.describe()))
        added.remove(line)
    return added


def check_one_line(prof, base, *words):
    """Same exit status and stdout as without the library, and exactly one line more on
    stderr: the library's, naming `words` (the path, the reason)."""
    t.assert_transparent(prof, base, stderr_too=False)
    added = added_lines(prof, base)
    assert len(added) == 1, ("expected exactly one line from the library on stderr, got "
                             "%r\n%s" % (added, prof.describe()))
    line = added[0]
    assert line.startswith("pyprof:"), line
    for w in words:
        assert w in line, "the line must name %r: %r\n%s" % (w, line, prof.describe())
    return line


def run_cmd(*argv):
    res = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True)
    return res.returncode, res.stdout


@contextlib.contextmanager
def mounted(target, *args):
    """`mount ARGS TARGET` for the duration; fails the test when root cannot mount."""
    rc, out = run_cmd("mount", *(list(args) + [target]))
    assert rc == 0, "mount %s %s failed: %s" % (" ".join(args), target, out)
    try:
        yield target
    finally:
        run_cmd("umount", "-l", target)


def needs_root():
    if not ROOT:
        pytest.skip("mounting a file system needs root")


# ---- where the log cannot go ------------------------------------------------------------


@pytest.mark.parametrize("interp", INTERPS)
def test_missing_dir_in_template(interp, tmp_path):
    interp.require()
    missing = tmp_path / "no" / "such"
    prof, base = t.run_pair([interp.path, SIMPLE], tmp_path,
                            env={"PYPROF_OUTPUT": str(missing / "log.%p.lz4")})
    check_one_line(prof, base, str(missing))
    assert not (tmp_path / "no").exists(), "the library created the missing directory"
    assert prof.logs == [], prof.describe()


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.11", *t.SID_IDS)))
def test_no_thread_or_socket_left(interp, tmp_path):
    """Where the log cannot go, profiling does not start: no thread of the library and no
    control socket stay behind in the process (and with a good directory, both are
    there, so the check can fail)."""
    own = t.workload("own_threads.py")
    missing = tmp_path / "no" / "such"
    prof = t.run([interp.path, own], None, env={"PYPROF_OUTPUT": str(missing) + "/"})
    assert prof.rc == 0 and prof.stdout.strip() == b"threads=0 socket=0", prof.describe()
    good = t.run([interp.path, own], str(tmp_path / "logs"))
    out = good.stdout.decode().strip()
    assert good.rc == 0 and out.endswith("socket=1") and out != "threads=0 socket=1", (
        good.describe())


@pytest.mark.parametrize("interp", INTERPS)
def test_file_in_place_of_dir(interp, tmp_path):
    interp.require()
    f = tmp_path / "not-a-dir"
    f.write_text(u"a file\n")
    prof, base = t.run_pair([interp.path, SIMPLE], tmp_path,
                            env={"PYPROF_OUTPUT": str(f) + "/"})
    check_one_line(prof, base, str(f))
    assert f.read_text() == u"a file\n"


@pytest.mark.parametrize("interp", INTERPS)
def test_read_only_fs(interp, tmp_path):
    """A read-only bind mount: even root gets EROFS."""
    needs_root()
    interp.require()
    ro = tmp_path / "ro"
    ro.mkdir()
    with mounted(str(ro), "--bind", str(ro)):
        rc, out = run_cmd("mount", "-o", "remount,bind,ro", str(ro))
        assert rc == 0, out
        prof, base = t.run_pair([interp.path, SIMPLE], tmp_path,
                                env={"PYPROF_OUTPUT": str(ro)})
        check_one_line(prof, base, str(ro))
        assert os.listdir(str(ro)) == []


def test_unwritable_dir(tmp_path):
    """A directory the target may not write in.  Root may write anywhere, so as root the
    target runs as nobody (setpriv) with the system python (pyenv's live under /root)
    and a directory owned by root, mode 0755; otherwise the directory is mode 0500."""
    interp = t.by_id("py3.11-debian")[0].require()
    top = tempfile.mkdtemp(prefix="pyprof-unwritable-")
    try:
        os.chmod(top, 0o755)
        script = os.path.join(top, "simple.py")
        shutil.copy(SIMPLE, script)
        os.chmod(script, 0o644)
        out = os.path.join(top, "out")
        os.mkdir(out)
        env = {"PYPROF_OUTPUT": out}
        base_env = dict(env)
        if ROOT:
            if not shutil.which("setpriv"):
                pytest.fail("setpriv (util-linux) is needed to run the target as nobody")
            os.chmod(out, 0o755)
            argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                    interp.path, script]
            # nobody may not be able to read the build tree (a private checkout): preload
            # a copy it can read.
            lib = os.path.join(top, "libpyprof.so")
            shutil.copy(t.LIB, lib)
            os.chmod(lib, 0o644)
            env["LD_PRELOAD"] = t.preload_env({})["LD_PRELOAD"].replace(t.LIB, lib)
        else:
            os.chmod(out, 0o500)
            argv = [interp.path, script]
        prof, base = t.run_pair(argv, tmp_path, env=env, base_env=base_env, cwd=top)
        assert base.rc == 0, base.describe()   # the set-up works without the library
        check_one_line(prof, base, out)
        assert os.listdir(out) == []
    finally:
        shutil.rmtree(top, ignore_errors=True)


@contextlib.contextmanager
def small_tmpfs(tmp_path, free_pages):
    """A 64 KB tmpfs with `free_pages` 4 KB pages left free."""
    needs_root()
    d = tmp_path / "small"
    d.mkdir()
    with mounted(str(d), "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs"):
        with open(str(d / "filler"), "wb") as f:
            try:
                f.write(b"\0" * ((16 - free_pages) * 4096))
                f.flush()
            except (IOError, OSError):
                pass
        yield d


@pytest.mark.parametrize("interp", INTERPS)
def test_disk_full(interp, tmp_path):
    interp.require()
    with small_tmpfs(tmp_path, 0) as d:
        prof, base = t.run_pair([interp.path, SIMPLE], tmp_path,
                                env={"PYPROF_OUTPUT": str(d)})
        check_one_line(prof, base, str(d), os.strerror(28))   # ENOSPC


@pytest.mark.parametrize("interp", INTERPS)
def test_disk_fills_during_run(interp, tmp_path):
    """Room for the start of the log only (4 KB): the library finds out while the target
    runs, says so once, and the target is unaffected.  The burn is long enough for a log
    of twice that: at 1 kHz this workload's log grows by about 1.3 KB per CPU second on
    2.7 (the smallest), 2 KB at start, so 1.5 s came too close to 4 KB."""
    interp.require()
    with small_tmpfs(tmp_path, 1) as d:
        prof, base = t.run_pair([interp.path, SIMPLE], tmp_path,
                                env={"PYPROF_OUTPUT": str(d), "PYPROF_PERIOD": "1ms",
                                     "PYPROF_FLUSH": "0.2", "BURN_SECONDS": "5"})
        check_one_line(prof, base, str(d), os.strerror(28))
        logs = [f for f in os.listdir(str(d)) if f != "filler"]
        assert len(logs) == 1, logs
        assert os.path.getsize(str(d / logs[0])) > 0, "the start of the log was not written"
        # What made it to the disk is a log cut short, which the tool still reads.
        res = t.tool("report", "--json", str(d / logs[0]))
        assert res.returncode == 0, res.stderr
        assert "warning" in res.stderr, res.stderr


# ---- a target with its own SIGPROF profiler ---------------------------------------------


def ticks_of(path):
    with open(path) as f:
        return int(f.read())


# The one line the library writes where perf events are refused (test_perf_filtered).
NO_PERF_LINE = (b"pyprof: perf events refused (Permission denied): sampling with a process "
                b"CPU timer (posix-cpu-timer)\n")


def run_sigprof_app(interp, tmp_path, wrapper=(), env=None, said=b""):
    """`said`: what the library writes to stderr on top of the program's."""
    e = dict(env or {})
    lib_ticks, base_ticks = str(tmp_path / "ticks-lib"), str(tmp_path / "ticks-base")
    argv = list(wrapper) + [interp.path, SIGPROF_APP]
    prof, base = t.run_pair(argv, tmp_path, env=dict(e, TICKS_OUT=lib_ticks),
                            base_env=dict(e, TICKS_OUT=base_ticks))
    t.assert_transparent(prof, base, stderr_too=False)
    assert prof.stderr == said + base.stderr, prof.describe()
    assert prof.stdout == b"sigprof_app: handler ran enough: True\n", prof.describe()
    lt, bt = ticks_of(lib_ticks), ticks_of(base_ticks)
    # The program's handler runs about as often as without the library: not starved
    # (that would be none or a few), and not fed the library's own timer signals either
    # (the SIGPROF-timer case below runs at 2 ms: 500 more a second, over twice the
    # program's own).  Under heavy load both runs' counts move, signals that arrive
    # before the handler ran merging into one: 250 against 344 was seen with a load of 5
    # on 2 CPUs, hence half.
    assert 0.5 * bt <= lt <= 1.5 * bt, ("the program's SIGPROF handler ran %d times, %d "
                                         "without the library\n%s" % (lt, bt,
                                                                      prof.describe()))
    return t.one_log(prof, ended="exit")


@pytest.mark.parametrize("interp", INTERPS)
def test_own_sigprof_handler(interp, tmp_path):
    """The default timer (a perf event raising SIGTRAP) leaves SIGPROF to the program:
    its handler runs, and profiling goes on.  Where the machine refused perf events the
    library's SIGPROF timer gives way instead and the log says so."""
    interp.require()
    p = run_sigprof_app(interp, tmp_path)
    stolen = p.proc["dropped"]["signal_stolen"]
    if p.proc["timer"].startswith("perf"):
        assert stolen == 0, p.dump()
        # app_burn() burns 1 s of its own CPU: half of its periods at least.
        t.check_cpu_samples(p, 1.0, got=p.function("app_burn", SIGPROF_APP)["total"],
                            what="samples in app_burn()")
    else:
        assert stolen >= 1, p.dump()


@pytest.fixture(scope="session")
def no_perf(tmp_path_factory):
    """workloads/no_perf.c, compiled once per session."""
    out = str(tmp_path_factory.mktemp("no_perf") / "no_perf")
    rc, msg = run_cmd("gcc", "-O1", "-o", out, NO_PERF_SRC)
    assert rc == 0, "building no_perf failed:\n" + msg
    return out


@pytest.mark.parametrize("interp", INTERPS)
def test_own_sigprof_handler_posix_timer(interp, no_perf, tmp_path):
    """perf_event_open refused (a seccomp filter): the library samples with its SIGPROF
    POSIX timer.  The program then takes SIGPROF for itself: its handler must run (and
    only as often as its own timer says), sampling stops, the log says why."""
    interp.require()
    p = run_sigprof_app(interp, tmp_path, wrapper=[no_perf],
                        env={"PYPROF_PERIOD": "2ms"}, said=NO_PERF_LINE)
    assert p.proc["timer"] == "posix-cpu-timer", p.dump()
    assert p.proc["dropped"]["signal_stolen"] >= 1, (
        "the program took SIGPROF but the log does not say profiling was lost\n"
        + p.dump())
    assert not p.functions("app_burn"), ("samples after the program took SIGPROF\n"
                                         + p.dump())


@pytest.mark.parametrize("interp", INTERPS)
def test_wall_without_perf(interp, no_perf, tmp_path):
    """perf_event_open refused: in wall mode no thread has a CPU timer of its own, so the
    sampler thread reads running threads too.  A busy recursion is still sampled in
    every pass, each stack either rooted at the module or cut to its innermost frame."""
    interp.require()
    prof = t.run([no_perf, interp.path, RECURSIVE], str(tmp_path / "logs"),
                 env={"PYPROF_CLOCK": "wall", "PYPROF_PERIOD": "2ms"})
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")
    assert p.proc["timer"] == "wall-thread", p.dump()
    seen, bad = 0, []
    for frames, n in t.folded(prof.logs[0]):
        names = [name for name, _ in frames]
        # The loop: the recursion, or the workload's own module line between two (it
        # reads the CPU clock, a system call that takes most of 3.14's time on a loaded
        # VM).
        own = t.same_file(frames[-1][1], RECURSIVE)
        if "recurse" not in names and not (names[-1] == "<module>" and own):
            continue
        if names[0] != "<module>" and names not in (["[unreadable]", "recurse"],
                                                    ["[unreadable]", "<module>"]):
            bad.append((n, names))
        seen += n
    assert not bad, "stacks neither whole nor cut to the innermost frame: %r" % bad[:5]
    assert any("recurse" in [name for name, _ in frames]
               for frames, _ in t.folded(prof.logs[0])), p.dump()
    # The loop is nearly all of the run's 1.5 s of CPU: at least half of what the
    # achieved rate gives over 1.5 s, every pass reading the busy thread.
    hz = p.proc["achieved_hz"]
    assert seen >= 0.5 * hz * 1.5 * 0.5, p.dump()


@pytest.mark.parametrize("interp", INTERPS)
@pytest.mark.parametrize("action", ["errno", "kill"])
def test_perf_filtered(interp, action, no_perf, tmp_path):
    """A seccomp filter without perf_event_open, as a hardened systemd unit has
    (SystemCallFilter=@system-service leaves it out).  One that fails the call (EACCES)
    or one that kills the process for it (SIGSYS, a unit without
    SystemCallErrorNumber=): the program runs to its end either way, sampled by the
    process CPU timer, and one stderr line says what fell back and why.  Before the
    library tried the call in a child first, the second killed every program it was
    preloaded into."""
    interp.require()
    env = {"PYPROF_PERIOD": "2ms", "PYPROF_SIGNAL": "USR2"}
    if action == "kill":
        env["NO_PERF_KILL"] = "1"
    # The child that tried the call is the library's alone: the program, whose SIGCHLD
    # handler is in place when it starts profiling (its first USR2, when the library
    # arms its timer), gets no SIGCHLD for it, and its own wait finds no child.
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import os, signal, time\n"
        "got = []\n"
        "signal.signal(signal.SIGCHLD, lambda *a: got.append(1))\n"
        "os.kill(os.getpid(), signal.SIGUSR2)\n"
        "time.sleep(0.2)\n"
        "def burn():\n"
        "    s = 0\n"
        "    for i in range(3000000):\n"
        "        s += i\n"
        "burn()\n"
        "os.kill(os.getpid(), signal.SIGUSR2)\n"
        "time.sleep(0.2)\n"
        "try:\n"
        "    os.waitpid(-1, os.WNOHANG)\n"
        "    print('a child to wait for')\n"
        "except OSError:\n"
        "    print('no child')\n"
        "print('SIGCHLD %d' % len(got))\n")
    prof = t.run([no_perf, interp.path, str(prog)], str(tmp_path / "logs"), env=env)
    assert prof.rc == 0 and prof.stdout == b"no child\nSIGCHLD 0\n", prof.describe()
    p = t.one_log(prof, ended="toggled off")
    assert p.proc["timer"] == "posix-cpu-timer", p.dump()
    assert p.functions("burn"), p.dump()
    why = ("perf events refused (Permission denied)" if action == "errno" else
           "perf events not tried (a seccomp filter would kill the process for "
           "perf_event_open)")
    assert t.stderr_lines(prof.stderr) == [
        "pyprof: %s: sampling with a process CPU timer (posix-cpu-timer)" % why], (
        prof.describe())
    if action == "errno":
        assert prof.stderr == NO_PERF_LINE


# ---- secure execution ---------------------------------------------------------------------


def build_secure_host(interp, kind, tmp_path):
    """A program linked against libpython and (DT_NEEDED, absolute path) the library
    under test: the dynamic loader ignores LD_PRELOAD in secure-execution mode but loads
    this.  `kind`: "embed" (tests/helpers/embed_host.c: Py_InitializeEx) or "pymain"
    (Py_BytesMain, like the python executable)."""
    xy = "%d.%d" % interp.minor
    config = os.path.join(interp.prefix, "bin", "python%s-config" % xy)
    rc, cflags = run_cmd(config, "--cflags")
    assert rc == 0, cflags
    rc, ldflags = run_cmd(config, "--ldflags", "--embed")
    assert rc == 0, ldflags
    src = t.EMBED_SRC if kind == "embed" else PYMAIN_SRC
    out = str(tmp_path / ("host-" + kind))
    san = ["-fsanitize=" + t.SAN] if t.SAN else []
    cmd = (["gcc", "-O1", "-w", "-o", out, src] + cflags.split() + san
           + ["-Wl,--no-as-needed", t.LIB, "-L" + os.path.join(interp.prefix, "lib")]
           + ldflags.split() + ["-Wl,-rpath," + os.path.join(interp.prefix, "lib")])
    rc, msg = run_cmd(*cmd)
    assert rc == 0, "$ %s\n%s" % (" ".join(cmd), msg)
    return out


def other_group():
    """A group id this process is not in (so a set-gid file of it means egid != gid)."""
    mine = set([os.getgid()] + os.getgroups())
    for name in ("daemon", "nogroup", "bin", "sys"):
        try:
            gid = grp.getgrnam(name).gr_gid
        except KeyError:
            continue
        if gid not in mine:
            return gid
    pytest.fail("no group to make a set-gid program with")


SECURE = [pytest.param(i, k, id="%s-%s" % (i.id, k))
          for i in t.by_id("py3.11", "py3.13") for k in ("embed", "pymain")]


@pytest.mark.parametrize("interp,kind", SECURE)
def test_secure_execution(interp, kind, tmp_path):
    """The same program twice: as is, it is profiled (so the library is there and
    works); set-gid (AT_SECURE=1), it leaves no log and prints nothing of ours."""
    if not ROOT:
        pytest.skip("making a set-gid program of a group we are not in needs root")
    interp.require()
    host = build_secure_host(interp, kind, tmp_path)
    env = {"PYPROF_PERIOD": "5ms"}
    if t.SAN == "address":
        env["ASAN_OPTIONS"] = "detect_leaks=0"  # Python itself leaks at exit

    plain_out = str(tmp_path / "plain")
    os.mkdir(plain_out)
    plain = t.run([host, SECURE_PROBE], None, profile=False,
                  env=dict(env, PYPROF_OUTPUT=plain_out))
    assert plain.rc == 0, plain.describe()
    assert b"AT_SECURE=0 libpyprof mapped=True" in plain.stdout, plain.describe()
    logs = os.listdir(plain_out)
    assert len(logs) == 1, ("the control run (not set-gid) must be profiled\n%s"
                            % plain.describe())
    rep = t.report(os.path.join(plain_out, logs[0]))
    assert rep["processes"][0]["pid"] == plain.pid, t.dump(rep)
    assert any(f["name"] == "probe_burn" for f in rep["functions"]), t.dump(rep)

    sgid = str(tmp_path / ("sgid-" + kind))
    shutil.copy(host, sgid)
    os.chown(sgid, 0, other_group())
    os.chmod(sgid, 0o2755)
    secure_out = str(tmp_path / "secure")
    os.mkdir(secure_out)
    try:
        sec = t.run([sgid, SECURE_PROBE], None, profile=False,
                    env=dict(env, PYPROF_OUTPUT=secure_out))
    finally:
        os.chmod(sgid, 0o755)
    assert sec.rc == 0, sec.describe()
    # The set-up is real: the kernel says secure execution, and the library is loaded.
    assert b"AT_SECURE=1 libpyprof mapped=True" in sec.stdout, sec.describe()
    assert sec.stdout.replace(b"AT_SECURE=1", b"AT_SECURE=0") == plain.stdout, \
        sec.describe()
    assert b"pyprof" not in sec.stderr, sec.describe()
    left = os.listdir(secure_out)
    assert left == [], ("the library profiled a secure-execution (set-gid) process: %r\n%s"
                        % (left, sec.describe()))
