"""Helpers for the integration tests: the interpreters under test, running a program with
and without the library, and reading logs through the `pyprof` tool.

Everything here follows the Makefile's contract:

    PYPROF_LIB   absolute path of libpyprof.so
    PYPROF_TOOL  absolute path of the pyprof tool
    PYPROF_SAN   "", "address" or "undefined": the library was built with that sanitizer,
                 so the sanitizer runtime must be preloaded in front of it

Logs are only ever read through the tool (`pyprof report --json`), never parsed here, so
the tests check what a user sees.
"""

import json
import os
import re
import signal
import subprocess
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKLOADS = os.path.join(HERE, "workloads")
FIXTURES = os.path.join(REPO, "tests", "fixtures")
EMBED_SRC = os.path.join(REPO, "tests", "helpers", "embed_host.c")
PLUGIN_HOST_SRC = os.path.join(REPO, "tests", "helpers", "plugin_host.c")

LIB = os.environ.get("PYPROF_LIB") or os.path.join(REPO, "build", "libpyprof.so")
TOOL = os.environ.get("PYPROF_TOOL") or os.path.join(REPO, "build", "pyprof")
SAN = os.environ.get("PYPROF_SAN", "")

# Generous limits: a run that needs them has hung (a deadlock in the library), and the
# test says so instead of blocking the suite.
TIMEOUT = 120


def workload(name):
    """Absolute path of a workload script."""
    return os.path.join(WORKLOADS, name)


def def_line(path, pattern):
    """1-based number of the first line of `path` that contains `pattern`."""
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if pattern in text:
                return n
    raise AssertionError("%r not found in %s" % (pattern, path))


# ---- interpreters ------------------------------------------------------------------------


def pyenv_root():
    root = os.environ.get("PYENV_ROOT")
    if root:
        return root
    try:
        out = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except OSError:
        pass
    return os.path.expanduser("~/.pyenv")


class Interp(object):
    """One CPython build under test."""

    def __init__(self, ident, version, path, prefix=None, sysroot=None, exe=None):
        self.id = ident                  # pytest id: py3.11, py3.11-debian, py3.14
        self.version = version           # full version for pyenv builds, X.Y for others
        self.minor = tuple(int(x) for x in version.split(".")[:2])
        self.path = path                 # the python executable (or the root's wrapper)
        self.prefix = prefix             # install prefix (for embedding), None if static
        self.sysroot = sysroot           # the Debian sid root it lives in (tests/sid), or None
        self.exe = exe or path           # the executable as the process sees it (the log's)

    @property
    def embeddable(self):
        """It comes with a shared libpython that a host program can be built against."""
        return bool(self.prefix or self.sysroot)

    def host_argv(self, argv):
        """`argv`, a program built for this interpreter, run where the interpreter runs
        (inside its root for the sid interpreters)."""
        if self.sysroot:
            return [os.path.join(os.path.dirname(self.path), "sid-run")] + list(argv)
        return list(argv)

    @property
    def has_qualname(self):
        """Python 3.11+ reports qualified names (co_qualname)."""
        return self.minor >= (3, 11)

    def require(self):
        """Fails (never skips) the test when the interpreter is not installed: every CI
        machine has all of them."""
        if not os.access(self.path, os.X_OK):
            how = (" (`make sid-root` makes it)" if self.sysroot else "")
            pytest.fail("interpreter %s not installed: %s is missing%s (every test machine "
                        "must have it)" % (self.id, self.path, how))
        return self

    def qualified(self, qualname):
        """The name the report must show for a function whose qualified name is
        `qualname`: the qualified name on 3.11+, the plain name before."""
        return qualname if self.has_qualname else qualname.rsplit(".", 1)[-1]

    def __repr__(self):
        return self.id


PYENV_VERSIONS = ["2.7.18", "3.6.15", "3.7.16", "3.8.18", "3.9.18", "3.10.13", "3.11.7",
                  "3.12.1", "3.13.0"]


# Debian unstable's interpreters, in the root tests/sid/sid-root.sh makes (make sid-root).
SID = os.environ.get("PYPROF_SID") or os.path.join(REPO, "build", "sid")
SID_VERSIONS = ["3.14", "3.15"]


def _root_version(root, xy):
    """The full version of the root's python`xy`, from its headers ("3.14.10"), or `xy`
    while the root is missing."""
    try:
        with open(os.path.join(root, "usr", "include", "python" + xy, "patchlevel.h")) as f:
            for line in f:
                if line.startswith("#define PY_VERSION "):
                    return line.split('"')[1].split("+")[0]
    except (IOError, OSError, IndexError):
        pass
    return xy


def _interpreters():
    root = pyenv_root()
    out = []
    for v in PYENV_VERSIONS:
        prefix = os.path.join(root, "versions", v)
        out.append(Interp("py" + ".".join(v.split(".")[:2]), v,
                          os.path.join(prefix, "bin", "python"), prefix))
    out.append(Interp("py3.11-debian", "3.11", "/usr/bin/python3.11"))
    if SAN:
        return out  # see SID_LEFT_OUT
    for v in SID_VERSIONS:
        root = os.path.join(SID, "root")
        out.append(Interp("py" + v, _root_version(root, v),
                          os.path.join(SID, "bin", "python" + v), sysroot=root,
                          exe="/usr/bin/python" + v))
    return out


# A sanitizer build of the library is made with Debian 12's compiler: its runtime cannot be
# loaded under the root's newer C library, and the root's own (a newer compiler's) is
# not the one the library was instrumented for (it aborts in its pthread_detach
# interceptor as the library starts its threads).  Sanitizer runs test the host's
# interpreters; `make test` runs every test on the root's.
SID_LEFT_OUT = (["py" + v for v in SID_VERSIONS] if SAN else [])

INTERPRETERS = _interpreters()
PYENV = [i for i in INTERPRETERS if i.prefix]
SIDS = [i for i in INTERPRETERS if i.sysroot]
SID_IDS = tuple(i.id for i in SIDS)
# The ones with a shared libpython: pyenv's and the sid root's.
EMBEDDABLE = [i for i in INTERPRETERS if i.embeddable]


def by_id(*ids):
    ids = [i for i in ids if i not in SID_LEFT_OUT]
    found = [i for i in INTERPRETERS if i.id in ids]
    assert len(found) == len(ids), ids
    return found


def params(interps):
    return [pytest.param(i, id=i.id) for i in interps]


# ---- the embedding host --------------------------------------------------------------------


_embed_lock = threading.Lock()


def _config_out(config, *args):
    out = subprocess.run([config] + list(args), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True)
    if out.returncode != 0:
        raise AssertionError("%s %s failed: %s" % (config, " ".join(args), out.stderr))
    return out.stdout.split()


def _build_flags(interp):
    """(cflags, ldflags) that build a program or a plugin against `interp`'s libpython."""
    xy = "%d.%d" % interp.minor
    if interp.sysroot:
        # Debian's own layout inside the root; the host's gcc builds against its libc.
        root = interp.sysroot
        include = os.path.join(root, "usr", "include", "python" + xy)
        return (["--sysroot=" + root, "-I" + include],
                ["-L" + os.path.join(root, "usr", "lib", "x86_64-linux-gnu"), "-lpython" + xy])
    config = os.path.join(interp.prefix, "bin", "python%s-config" % xy)
    cflags = _config_out(config, "--cflags")
    if interp.minor >= (3, 8):
        ldflags = _config_out(config, "--ldflags", "--embed")
    else:
        ldflags = _config_out(config, "--ldflags")
        if not any(f.startswith("-lpython") for f in ldflags):
            abiflags = "m" if interp.minor in ((3, 6), (3, 7)) else ""
            ldflags.append("-lpython%s%s" % (xy, abiflags))
    libdir = os.path.join(interp.prefix, "lib")
    return cflags, ["-L" + libdir] + ldflags + ["-Wl,-rpath," + libdir]


def _fresh(out, srcs):
    return (os.path.exists(out)
            and all(os.path.getmtime(out) >= os.path.getmtime(s) for s in srcs))


def _build_embedding(interp, name, extra_flags, srcs):
    """Builds `srcs` against `interp`'s headers and libpython as build/embed/NAME-VERSION
    (cached; rebuilt when a source is newer).  Returns its path."""
    interp.require()
    outdir = os.path.join(os.path.dirname(LIB), "embed")
    out = os.path.join(outdir, "%s-%s" % (name, interp.version))
    with _embed_lock:
        if _fresh(out, srcs):
            return out
        if not os.path.isdir(outdir):
            os.makedirs(outdir)
        cflags, ldflags = _build_flags(interp)
        tmp = out + ".tmp.%d" % os.getpid()
        cmd = ["gcc", "-O1", "-g", "-w", "-o", tmp] + extra_flags + srcs + cflags + ldflags
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
        if res.returncode != 0:
            raise AssertionError("building %s for %s failed:\n$ %s\n%s"
                                 % (name, interp.id, " ".join(cmd), res.stdout))
        os.rename(tmp, out)
        return out


def _in_root(interp, program):
    """`program` itself, or for an interpreter of the sid root a script beside it that
    runs it there (exec all the way: the pid a test starts is the program's)."""
    if not interp.sysroot:
        return program
    script = program + ".sid"
    with _embed_lock:
        if not _fresh(script, [program]):
            tmp = script + ".tmp.%d" % os.getpid()
            with open(tmp, "w") as f:
                f.write("#!/bin/sh\nexec %s \"$@\"\n"
                        % " ".join("'%s'" % a for a in interp.host_argv([program])))
            os.chmod(tmp, 0o755)
            os.rename(tmp, script)
    return script


def embed_host(interp):
    """Path of tests/helpers/embed_host.c built against `interp`'s headers and libpython."""
    return _in_root(interp, _build_embedding(interp, "embed_host", [], [EMBED_SRC]))


def plugin_host(interp):
    """[host, plugin]: tests/helpers/plugin_host.c (no libpython) and embed_host.c built
    as a plugin against `interp`'s libpython, which the host dlopens RTLD_LOCAL."""
    plugin = _build_embedding(interp, "embed_plugin.so",
                              ["-DEMBED_PLUGIN", "-shared", "-fPIC"], [EMBED_SRC])
    host = os.path.join(os.path.dirname(LIB), "embed", "plugin_host")
    with _embed_lock:
        if not (os.path.exists(host)
                and os.path.getmtime(host) >= os.path.getmtime(PLUGIN_HOST_SRC)):
            tmp = host + ".tmp.%d" % os.getpid()
            res = subprocess.run(["gcc", "-O1", "-g", "-o", tmp, PLUGIN_HOST_SRC, "-ldl"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 universal_newlines=True)
            assert res.returncode == 0, res.stdout
            os.rename(tmp, host)
    return [_in_root(interp, host), plugin]


NATIVE_CHAIN_SRC = os.path.join(REPO, "tests", "helpers", "native_chain.c")


def native_chain(interp):
    """The directory holding tests/helpers/native_chain.c built as an extension module for
    `interp` (its own headers and module suffix), with -g for source lines."""
    interp.require()
    info = subprocess.run(
        [interp.path, "-c", "import sysconfig as s; print(s.get_paths()['include']); "
         "print(s.get_config_var('EXT_SUFFIX') or '.so')"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert info.returncode == 0, info.stderr
    include, suffix = info.stdout.split()
    sysroot = []
    if interp.sysroot:   # the interpreter reports its include directory inside the root
        include = interp.sysroot + include
        sysroot = ["--sysroot=" + interp.sysroot]
    outdir = os.path.join(os.path.dirname(LIB), "embed", "native_chain-%s" % interp.id)
    out = os.path.join(outdir, "native_chain" + suffix)
    with _embed_lock:
        if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(NATIVE_CHAIN_SRC):
            return outdir
        if not os.path.isdir(outdir):
            os.makedirs(outdir)
        tmp = out + ".tmp.%d" % os.getpid()
        cmd = ["gcc", "-shared", "-fPIC", "-O1", "-g", "-fno-optimize-sibling-calls", "-w",
               "-I" + include, NATIVE_CHAIN_SRC, "-o", tmp] + sysroot
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
        if res.returncode != 0:
            raise AssertionError("building native_chain for %s failed:\n$ %s\n%s"
                                 % (interp.id, " ".join(cmd), res.stdout))
        os.rename(tmp, out)
    return outdir


ALLOC_EXT_SRC = os.path.join(REPO, "tests", "helpers", "alloc_ext.c")


def alloc_ext(interp):
    """tests/helpers/alloc_ext.c built as a plain shared library for `interp`'s C library
    (inside its root for the sid interpreters); returns its path."""
    interp.require()
    sysroot = ["--sysroot=" + interp.sysroot] if interp.sysroot else []
    outdir = os.path.join(os.path.dirname(LIB), "embed", "alloc_ext-%s" % interp.id)
    out = os.path.join(outdir, "liballoc_ext.so")
    with _embed_lock:
        if not (os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(ALLOC_EXT_SRC)):
            if not os.path.isdir(outdir):
                os.makedirs(outdir)
            tmp = out + ".tmp.%d" % os.getpid()
            cmd = ["gcc", "-shared", "-fPIC", "-O1", "-g", ALLOC_EXT_SRC, "-o", tmp] + sysroot
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 universal_newlines=True)
            if res.returncode != 0:
                raise AssertionError("building alloc_ext for %s failed:\n$ %s\n%s"
                                     % (interp.id, " ".join(cmd), res.stdout))
            os.rename(tmp, out)
    return out


# ---- running programs ----------------------------------------------------------------------


def base_env():
    """The environment every test program gets: the caller's, without anything that
    would change what runs (a preload, PYPROF_*, PYTHON*, sanitizer options)."""
    env = {}
    for k, v in os.environ.items():
        if (k == "LD_PRELOAD" or k.startswith("PYPROF_") or k.startswith("PYTHON")
                or k.endswith("SAN_OPTIONS")):
            continue
        env[k] = v
    env["PYTHONDONTWRITEBYTECODE"] = "1"   # keep the checkout clean
    env["PYTHONHASHSEED"] = "0"            # deterministic output in both runs
    env["LC_ALL"] = "C.UTF-8"
    return env


def sanitizer_runtime(san):
    """The runtime library to preload for a library built with sanitizer `san` ("",
    "address" or "undefined"), or None for "".  ValueError says what is wrong.  (Also
    used by tests/transparency/run.py.)"""
    if not san:
        return None
    name = {"address": "libasan.so", "undefined": "libubsan.so"}.get(san)
    if name is None:
        raise ValueError("PYPROF_SAN=%r: expected '', 'address' or 'undefined'" % san)
    path = subprocess.run(["gcc", "-print-file-name=" + name], stdout=subprocess.PIPE,
                          universal_newlines=True).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        raise ValueError("PYPROF_SAN=%s but gcc does not know %s (got %r)" % (san, name, path))
    return path


def _san_runtime():
    try:
        return sanitizer_runtime(SAN)
    except ValueError as e:
        pytest.fail(str(e))


def preload_env(env):
    """`env` plus what loads the library: LD_PRELOAD (the sanitizer runtime first when
    the library was built with one)."""
    env = dict(env)
    san = _san_runtime()
    env["LD_PRELOAD"] = (san + " " + LIB) if san else LIB
    if SAN == "address":
        env["ASAN_OPTIONS"] = "detect_leaks=0"   # Python itself leaks at exit
    elif SAN == "undefined":
        env["UBSAN_OPTIONS"] = "print_stacktrace=1"
    return env


def ran_in_root(argv):
    """The sid root a program started as `argv` runs in (an interpreter's wrapper or a
    program built for it, _in_root), or None."""
    prog = str(argv[0])
    if prog.startswith(os.path.join(SID, "bin") + os.sep) or prog.endswith(".sid"):
        return os.path.join(SID, "root")
    return None


def root_opts(prof):
    """The tool's options for reading `prof`'s logs: --root for a program that ran in the
    sid root, whose native frames name the root's files."""
    root = ran_in_root(prof.argv)
    return ["--root", root] if root else []


class Run(object):
    """The outcome of one program run."""

    def __init__(self, argv, profiled, outdir, pid, rc, stdout, stderr):
        self.argv = argv
        self.profiled = profiled
        self.outdir = outdir
        self.pid = pid
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr

    @property
    def logs(self):
        """Every file the run left in its output directory (the library must leave
        nothing but logs there)."""
        if not self.outdir or not os.path.isdir(self.outdir):
            return []
        return sorted(os.path.join(self.outdir, f) for f in os.listdir(self.outdir))

    def describe(self):
        return ("$ %s\n(profiled=%s, pid %s) exit status %s\n--- stdout ---\n%s\n"
                "--- stderr ---\n%s\n--- files in %s ---\n%s" % (
                    " ".join(self.argv), self.profiled, self.pid, self.rc,
                    _text(self.stdout)[-3000:], _text(self.stderr)[-3000:], self.outdir,
                    "\n".join(self.logs)))


def _text(b):
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)


def _default_signals():
    """In the child, before exec: the terminating signals at their default action, as a
    program started from a terminal gets them, whoever started the suite (a shell's
    background job has SIGINT and SIGQUIT ignored, nohup SIGHUP)."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


class _Pending(object):
    """A started program; wait() collects it."""

    def __init__(self, argv, env, outdir, profiled, timeout, cwd):
        self.argv, self.outdir, self.profiled, self.timeout = argv, outdir, profiled, timeout
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     preexec_fn=_default_signals)

    def wait(self):
        try:
            out, err = self.proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            run = Run(self.argv, self.profiled, self.outdir, self.proc.pid, None, out, err)
            pytest.fail("timed out after %ss (hang?)\n%s" % (self.timeout, run.describe()))
        return Run(self.argv, self.profiled, self.outdir, self.proc.pid,
                   self.proc.returncode, out, err)


def start(argv, outdir, profile=True, env=None, timeout=TIMEOUT, cwd=None):
    """Starts `argv`; with `profile`, under the library writing into `outdir`.  `env`
    adds variables (PYPROF_* among them) to base_env()."""
    full = base_env()
    if profile:
        if outdir and not os.path.isdir(outdir):
            os.makedirs(outdir)
        if outdir:
            full["PYPROF_OUTPUT"] = outdir
        full = preload_env(full)
    full.update(env or {})
    return _Pending([str(a) for a in argv], full, outdir, profile, timeout, cwd)


def run(argv, outdir, profile=True, env=None, timeout=TIMEOUT, cwd=None):
    return start(argv, outdir, profile, env, timeout, cwd).wait()


def run_pair(argv, tmp_path, env=None, base_argv=None, base_env=None, timeout=TIMEOUT,
             cwd=None):
    """Runs `argv` under the library and (concurrently, to save time) without it.
    `base_argv`/`base_env` change the unprofiled run (a shorter stress run, say); the
    baseline never gets LD_PRELOAD.  Returns (profiled, baseline)."""
    outdir = str(tmp_path / ("logs-%d" % _next_id()))
    prof = start(argv, outdir, True, env, timeout, cwd)
    base = start(base_argv or argv, None, False, base_env if base_env is not None else env,
                 timeout, cwd)
    b = base.wait()
    p = prof.wait()
    return p, b


_counter = [0]


def _next_id():
    _counter[0] += 1
    return _counter[0]


def assert_transparent(prof, base, stderr_too=True):
    """The target's own stdout, stderr and exit status are byte-for-byte the same with
    and without the library."""
    msg = "the library changed the target's %s\n=== with the library:\n%s\n=== without:\n%s"
    assert prof.rc == base.rc, msg % ("exit status", prof.describe(), base.describe())
    assert prof.stdout == base.stdout, msg % ("stdout", prof.describe(), base.describe())
    if stderr_too:
        assert prof.stderr == base.stderr, msg % ("stderr", prof.describe(), base.describe())


# ---- the tool ------------------------------------------------------------------------------


def tool(*args, **kw):
    """Runs the pyprof tool; returns the CompletedProcess (text; `text=False`: bytes)."""
    env = base_env()
    if SAN == "address":
        env["ASAN_OPTIONS"] = "detect_leaks=1"
    env.update(kw.pop("env", {}))
    return subprocess.run([TOOL] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=kw.pop("text", True),
                          env=env, timeout=kw.pop("timeout", TIMEOUT), **kw)


def tool_bytes(*args, **kw):
    """tool() with its output as bytes (names in the output may be any bytes)."""
    return tool(*args, text=False, **kw)


def tool_json(*args):
    """What `pyprof ARGS` (a command that prints JSON) printed, parsed; fails the test on
    any error."""
    res = tool_bytes(*args)
    out = res.stdout.decode("utf-8", "replace")
    assert res.returncode == 0, ("pyprof %s failed (exit %s)\nstderr:\n%s\nstdout:\n%s"
                                 % (" ".join(map(str, args)), res.returncode,
                                    res.stderr.decode("utf-8", "replace"), out[-3000:]))
    try:
        return json.loads(res.stdout.decode("utf-8"))
    except ValueError as e:
        raise AssertionError("pyprof %s printed invalid JSON (%s):\n%s"
                             % (" ".join(map(str, args)), e, out[:3000]))


def folded(*args, **kw):
    """The stacks of `pyprof export -f folded ARGS` (a log and options) as
    [([(name, file), ...] outermost first, count)]; `kw` goes to tool()."""
    res = tool("export", "-f", "folded", *args, **kw)
    assert res.returncode == 0, res.stderr
    out = []
    for line in res.stdout.splitlines():
        stack, count = line.rsplit(" ", 1)
        frames = []
        for fr in stack.split(";"):
            m = re.match(r"^(.*) \((.*):[-0-9?]+\)$", fr)
            frames.append((m.group(1), m.group(2)) if m else (fr, ""))
        out.append((frames, int(count)))
    return out


def report(*paths):
    """`pyprof report --json PATHS` parsed; fails the test on any error."""
    return tool_json("report", "--json", *paths)


def dump(rep, functions=25):
    """A readable excerpt of a report for assertion messages."""
    r = dict(rep)
    r["functions"] = rep.get("functions", [])[:functions]
    return json.dumps(r, indent=1, sort_keys=True)[:12000]


class Profile(object):
    """A profiled run that produced exactly one complete log, with its report."""

    def __init__(self, run, rep):
        self.run = run
        self.rep = rep
        self.proc = rep["processes"][0]

    def functions(self, name=None, file=None):
        return [f for f in self.rep["functions"]
                if (name is None or f["name"] == name)
                and (file is None or same_file(f.get("file"), file))]

    def function(self, name, file=None):
        """The one report entry for `name` (in `file`); fails if absent or repeated."""
        found = self.functions(name, file)
        assert len(found) == 1, ("expected one function %r (file %s) in the report, found "
                                 "%d\n%s" % (name, file, len(found), self.dump()))
        return found[0]

    def share(self, f, key="self"):
        return float(f[key]) / self.proc["samples"]

    def dump(self):
        return "%s\n%s" % (self.run.describe(), dump(self.rep))


def same_file(a, b):
    if a is None or b is None:
        return False
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def one_log(prof, ended=None, check_pid=True):
    """Checks that the run left exactly one complete log (footer present) and returns a
    Profile.  `ended` is the expected end (a string or a tuple of accepted strings)."""
    logs = prof.logs
    assert len(logs) == 1, "expected exactly one log\n%s" % prof.describe()
    rep = report(*(root_opts(prof) + [logs[0]]))
    where = "%s\n%s" % (prof.describe(), dump(rep))
    assert len(rep.get("processes", [])) == 1, "expected one process\n" + where
    p = rep["processes"][0]
    assert p["truncated"] is False, "log has no footer (truncated)\n" + where
    assert p["ended"] != "truncated", where
    if check_pid:
        assert p["pid"] == prof.pid, "log is for pid %s, ran pid %s\n%s" % (
            p["pid"], prof.pid, where)
    if ended is not None:
        accepted = (ended,) if isinstance(ended, str) else tuple(ended)
        assert p["ended"] in accepted, "ended=%r, expected %s\n%s" % (
            p["ended"], " or ".join(accepted), where)
    check_report_shape(rep)
    return Profile(prof, rep)


_ENDS = {"exit", "_exit", "Py_FinalizeEx", "signal", "exec", "toggled off", "error",
         "unknown", "truncated"}


def check_report_shape(rep):
    """The report --json fields the spec promises, with their types."""
    where = dump(rep)
    for k in ("samples", "dropped"):
        assert isinstance(rep.get(k), int) and rep[k] >= 0, "bad %r\n%s" % (k, where)
    assert isinstance(rep.get("duration_s"), (int, float)), where
    for p in rep["processes"]:
        for k in ("pid", "ppid", "samples"):
            assert isinstance(p.get(k), int), "process field %r\n%s" % (k, where)
        assert isinstance(p.get("run_id"), str) and p["run_id"], where
        assert isinstance(p.get("argv"), list), where
        assert isinstance(p.get("python"), str), where
        assert p.get("ended") in _ENDS, "unknown ended %r\n%s" % (p.get("ended"), where)
        assert p.get("exit_status") is None or isinstance(p["exit_status"], int), where
        assert isinstance(p.get("truncated"), bool), where
        # The log counts the samples it rejected, by reason.
        assert isinstance(p.get("dropped"), dict), "processes[].dropped\n" + where
        for reason, n in p["dropped"].items():
            assert isinstance(n, int) and n >= 0, "dropped[%r]=%r\n%s" % (reason, n, where)
        assert "rss" in p, where
    for t in rep.get("threads", []):
        for k in ("pid", "tid", "samples"):
            assert isinstance(t.get(k), int), "thread field %r\n%s" % (k, where)
    assert isinstance(rep.get("functions"), list), where
    selfs = [f["self"] for f in rep["functions"]]
    assert selfs == sorted(selfs, reverse=True), "functions not sorted by self\n" + where
    for f in rep["functions"]:
        assert f["total"] >= f["self"] >= 0, "total < self: %r\n%s" % (f, where)


def dropped_total(proc):
    """The samples a process's log counts as dropped, all reasons together: periods the
    sampler saw run out but recorded nothing for."""
    return sum(proc["dropped"].values())


def check_cpu_samples(profile, cpu_s, got=None, share=0.5, what="samples"):
    """Asserts that `got` samples (the process's, by default), with those its log counts
    as dropped, are at least `share` of the periods in `cpu_s` seconds of CPU, the time
    the workload measured it used.  A CPU-clock sampler fires once per period of each
    thread's own CPU time, so this is what a run gets however busy the machine is: a
    workload that got little of a loaded machine burns its CPU later, not less of it.
    The default half leaves room for the periods a thread loses at its start and end
    and what the library's own threads add to the process's CPU; the count itself is
    checked closely by test_four_thread_cpu_shares.  Returns the periods expected."""
    proc = profile.proc
    period_s = proc["period_ns"] / 1e9
    expected = cpu_s / period_s
    n = proc["samples"] if got is None else got
    lost = dropped_total(proc)
    assert n + lost >= share * expected, (
        "%d %s and %d dropped for %.3f s of CPU, %.0f periods of %g ms: expected at least "
        "%d%% of them\n%s" % (n, what, lost, cpu_s, expected, period_s * 1e3, 100 * share,
                              profile.dump()))
    return expected


def check_python_version(profile, interp):
    v = profile.proc["python"]
    want = "%d.%d" % interp.minor
    assert v == want or v.startswith(want + "."), ("processes[].python=%r, expected %s.x\n%s"
                                                   % (v, want, profile.dump()))


def stderr_lines(b):
    return _text(b).splitlines()

