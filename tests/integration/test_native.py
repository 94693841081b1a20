"""Native frames (PYPROF_NATIVE=1): each sample's C call chain merged with its Python
stack, on every interpreter, with real C libraries, and without changing what the program
does (C++ exceptions, dlopen/dlclose, fork, subprocess at 10 kHz)."""

import os
import re
import shutil
import subprocess
import sys

import pytest

import pyprof_testlib as t

sys.path.insert(0, t.FIXTURES)
import make_fixtures as mf  # noqa: E402  (the log format's varint reader)

CHAIN = t.workload("native_calls.py")
LIBS = t.workload("native_libs.py")
STRESS = t.workload("native_stress.py")
CXX_SRC = os.path.join(t.REPO, "tests", "helpers", "cxx_throw.cpp")

# The chain the extension makes, innermost last: Python, C, Python, C, C.
CHAIN_TAIL = ["outer", "chain_call", "callback", "chain_spin", "chain_spin_loop"]
NATIVE_ENV = {"PYPROF_NATIVE": "1", "PYPROF_PERIOD": "1ms"}


def show(stacks, n=12):
    top = sorted(stacks, key=lambda s: -s[1])[:n]
    return "\n".join("%6d  %s" % (c, ";".join(f[0] for f in fr)) for fr, c in top)


def native_process(p):
    """The report's native counts for the process."""
    nat = p.proc.get("native")
    assert isinstance(nat, dict), "report has no processes[].native\n" + p.dump()
    return nat


def cpu_used(prof):
    """The CPU time (s) a native_calls.py or native_libs.py run says it used."""
    m = re.search(br" cpu ([0-9.]+)$", prof.stdout.strip())
    assert m, prof.describe()
    return float(m.group(1))


def check_chain(prof, ended="exit"):
    p = t.one_log(prof, ended=ended)
    log = prof.logs[0]
    stacks = t.folded(log, *t.root_opts(prof))
    total = sum(c for _, c in stacks)
    in_loop = [(fr, c) for fr, c in stacks if fr[-1][0] == "chain_spin_loop"]
    n_loop = sum(c for _, c in in_loop)
    # The workload burns 2 s of its own CPU, one sample per 1 ms of it (at least half of
    # them, whatever the machine's load), nearly all of it in chain_spin_loop.
    t.check_cpu_samples(p, cpu_used(prof), got=total)
    assert n_loop >= 0.6 * total, (
        "%d of %d samples end in chain_spin_loop\n%s" % (n_loop, total, show(stacks)))
    good = sum(c for fr, c in in_loop if [f[0] for f in fr[-5:]] == CHAIN_TAIL)
    assert good >= 0.97 * n_loop, (
        "only %d of %d samples in chain_spin_loop end in %s\n%s"
        % (good, n_loop, ";".join(CHAIN_TAIL), show(in_loop)))
    # Native frames name the shared object they are in; Python ones their source.
    for fr, _ in in_loop[:20]:
        names = dict(fr[-5:])
        assert names["chain_spin_loop"].endswith(".so"), fr
        assert names["callback"].endswith("native_calls.py"), fr
    # Merge invariant: eval-loop activations and Python runs pair up root-first (an
    # extra activation only at the innermost end).
    nat = native_process(p)
    assert nat["ok"] + nat["truncated"] >= p.proc["samples"] * 0.95, p.dump()
    assert nat["unmerged"] <= 0.01 * p.proc["samples"], p.dump()
    rows = [f for f in p.rep["functions"] if f["name"] == "chain_spin_loop"]
    assert len(rows) == 1 and rows[0]["kind"] == "native", p.dump()
    assert [f for f in p.rep["functions"] if f["name"] == "callback"][0]["kind"] == "python"
    return p, stacks


@pytest.mark.parametrize("interp", t.params(t.INTERPRETERS))
def test_chain_merged_order(interp, tmp_path):
    """Python -> C -> Python -> C comes out in that order, on every interpreter."""
    ext = t.native_chain(interp)
    prof = t.run([interp.path, CHAIN, ext, "2"], str(tmp_path / "logs"), env=NATIVE_ENV)
    assert prof.rc == 0, prof.describe()
    check_chain(prof)


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.13", *t.SID_IDS)))
def test_chain_embedded(interp, tmp_path):
    """The same chain in a program that embeds the interpreter."""
    ext = t.native_chain(interp)
    host = t.embed_host(interp)
    prof = t.run([host, CHAIN, ext, "2"], str(tmp_path / "logs"), env=NATIVE_ENV)
    assert prof.rc == 0, prof.describe()
    check_chain(prof, ended="Py_FinalizeEx")


def test_glue_shown_on_request(tmp_path):
    """--native-glue keeps the interpreter's own frames between the chain's links."""
    interp = t.by_id("py3.11")[0]
    ext = t.native_chain(interp)
    prof = t.run([interp.path, CHAIN, ext, "2"], str(tmp_path / "logs"), env=NATIVE_ENV)
    check_chain(prof)
    stacks = t.folded(prof.logs[0], "--native-glue", *t.root_opts(prof))
    in_loop = [(fr, c) for fr, c in stacks if fr[-1][0] == "chain_spin_loop"]
    assert in_loop, show(stacks)
    for fr, _ in in_loop[:50]:
        names = [f[0] for f in fr]
        # The chain, in order, with interpreter frames between its links.
        idx = [names.index(n) for n in CHAIN_TAIL if n in names]
        assert len(idx) == 5 and idx == sorted(idx), names
        between = names[idx[1] + 1:idx[2]]
        assert any("Py" in n or "Eval" in n for n in between), names


def record_types(log):
    """The record types of a log, in order, the header's flags, and its samples as
    make_fixtures.timed_records gives them (the container is plain LZ4 frames)."""
    raw = subprocess.run(["lz4", "-dc", log], stdout=subprocess.PIPE).stdout
    assert raw[:8] == b"\x89PYPROF\n"
    i, types, flags = 8, [], None
    while i < len(raw):
        typ = raw[i]
        n, i = mf.read_uvarint(raw, i + 1)
        types.append(typ)
        if typ == 1:
            flags = mf.header_flags(raw[i:i + n])
        i += n
    return types, flags, [e for e in mf.timed_records(raw) if e[0] == "S"]


@pytest.mark.parametrize("native", [None, "0"])
def test_off_changes_nothing(native, tmp_path):
    """Off (the default): libunwind is not loaded, no native record or field is written."""
    interp = t.by_id("py3.11")[0]
    ext = t.native_chain(interp)
    env = {"PYPROF_PERIOD": "1ms"}
    if native is not None:
        env["PYPROF_NATIVE"] = native
    script = tmp_path / "maps.py"
    script.write_text(u"import sys\nsys.argv[1:] = [%r, '1']\nexec(open(%r).read())\n"
                      u"print('libunwind' in open('/proc/self/maps').read())\n"
                      % (ext, CHAIN))
    prof = t.run([interp.path, str(script)], str(tmp_path / "logs"), env=env)
    assert prof.rc == 0 and prof.stdout.strip().endswith(b"False"), prof.describe()
    t.one_log(prof, ended="exit")
    types, flags, samples = record_types(prof.logs[0])
    assert not set(types) & {8, 9, 10}, types
    assert not flags & 2 and samples, (flags, len(samples))


def test_native_records_written(tmp_path):
    """On: modules and native stacks are in the log, and samples point at them."""
    interp = t.by_id("py3.12")[0]
    ext = t.native_chain(interp)
    prof = t.run([interp.path, CHAIN, ext, "1"], str(tmp_path / "logs"), env=NATIVE_ENV)
    t.one_log(prof, ended="exit")
    types, flags, samples = record_types(prof.logs[0])
    assert types.count(8) >= 5 and types.count(9) >= 1, types[:50]
    assert flags & 2, flags
    with_native = [s for s in samples if s[5]]
    assert len(with_native) >= 0.9 * len(samples), (len(with_native), len(samples))


def in_lib(name):
    return lambda fr: any(name in os.path.basename(f[1]) for f in fr)


# (interpreter, what, the Python caller, a test on the frames leafward of it).  pyenv's
# 2.7 hashes with its own _sha256 module, not OpenSSL: hashlib is checked on the 3.x
# builds, which use libcrypto.
LIB_CASES = [(i, "zlib", "compress_it", in_lib("libz.so"))
             for i in t.by_id("py2.7", "py3.12", "py3.11-debian")] + \
            [(i, "hashlib", "hash_it", in_lib("libcrypto.so"))
             for i in t.by_id("py3.12", "py3.11-debian")]


@pytest.mark.parametrize("interp,what,caller,leaf_test", LIB_CASES,
                         ids=["%s-%s" % (c[1], c[0].id) for c in LIB_CASES])
def test_real_library(interp, what, caller, leaf_test, tmp_path):
    """Time inside libz / libcrypto shows under the Python function that called it."""
    interp.require()
    prof = t.run([interp.path, LIBS, what, "2"], str(tmp_path / "logs"), env=NATIVE_ENV)
    assert prof.rc == 0, prof.describe()
    t.one_log(prof, ended="exit")
    stacks = t.folded(prof.logs[0], *t.root_opts(prof))
    total = sum(c for _, c in stacks)
    under = 0
    for fr, c in stacks:
        names = [f[0] for f in fr]
        if caller in names:
            i = len(names) - 1 - names[::-1].index(caller)
            if leaf_test(fr[i + 1:]):
                under += c
    assert under >= 0.5 * total, ("%d of %d samples in the library under %s\n%s"
                                  % (under, total, caller, show(stacks)))


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.12", *t.SID_IDS)))
def test_qsort_callback_order(interp, tmp_path):
    """A Python comparator called from libc's qsort through ctypes: Python -> qsort ->
    Python, in that order."""
    prof = t.run([interp.path, LIBS, "qsort", "2"], str(tmp_path / "logs"), env=NATIVE_ENV)
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")
    stacks = t.folded(prof.logs[0], *t.root_opts(prof))
    with_cmp = [(fr, c) for fr, c in stacks if "cmp_keys" in [f[0] for f in fr]]
    n = sum(c for _, c in with_cmp)
    # 2 s of the workload's CPU at 1 ms; a quarter of it inside the comparator (the
    # rest is ctypes' glue around each call), of which a tenth is plenty to check.
    total = sum(c for _, c in stacks)
    t.check_cpu_samples(p, cpu_used(prof), got=total)
    assert n >= 0.1 * total, show(stacks)
    ordered = 0
    for fr, c in with_cmp:
        names = [f[0] for f in fr]
        i_sort, i_cmp = names.index("sort_it"), names.index("cmp_keys")
        libc = [k for k, f in enumerate(fr) if "qsort" in f[0] and "libc.so" in f[1]]
        if libc and i_sort < libc[0] < i_cmp:
            ordered += c
    assert ordered >= 0.95 * n, ("%d of %d comparator samples under qsort under sort_it\n%s"
                                 % (ordered, n, show(with_cmp)))


def build_cxx(tmp_path):
    out = str(tmp_path / "cxx_throw.so")
    res = subprocess.run(["g++", "-shared", "-fPIC", "-O1", "-g", "-o", out, CXX_SRC],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True)
    assert res.returncode == 0, res.stdout
    return out


@pytest.mark.parametrize("interp", t.params(t.by_id("py2.7", "py3.11", "py3.13", *t.SID_IDS)))
def test_stress_transparent(interp, tmp_path):
    """At 10 kHz, with threads doing dlopen/dlclose, C++ exceptions, fork and subprocess:
    the same output and exit status as without the library, and complete logs."""
    cxx = build_cxx(tmp_path)
    env = {"PYPROF_NATIVE": "1", "PYPROF_PERIOD": "100us"}
    if t.SAN == "address":
        # AddressSanitizer's __cxa_throw interceptor needs libstdc++ loaded when it
        # starts (else its CHECK fails at the first throw, with or without pyprof).
        stdcxx = subprocess.run(["g++", "-print-file-name=libstdc++.so.6"],
                                stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
        env["LD_PRELOAD"] = " ".join([t.sanitizer_runtime("address"), stdcxx, t.LIB])
    prof, base = t.run_pair([interp.path, STRESS, cxx, "3"], tmp_path, env=env,
                            base_env={k: v for k, v in env.items() if k != "LD_PRELOAD"})
    t.assert_transparent(prof, base, stderr_too=False)
    assert prof.rc == 0 and b"cxx 80000" in prof.stdout, prof.describe()
    main = [l for l in prof.logs if ".%d." % prof.pid in os.path.basename(l)]
    assert len(main) == 1, prof.describe()
    rep = t.report(*(t.root_opts(prof) + [main[0]]))
    assert rep["processes"][0]["truncated"] is False, t.dump(rep)
    assert rep["processes"][0]["native"]["ok"] > 0, t.dump(rep)


def test_modules_gone(tmp_path):
    """A log read where a module no longer exists names its frames module+offset, never
    with a wrong name."""
    interp = t.by_id("py3.11")[0]
    ext = str(tmp_path / "ext")
    shutil.copytree(t.native_chain(interp), ext)
    prof = t.run([interp.path, CHAIN, ext, "1"], str(tmp_path / "logs"), env=NATIVE_ENV)
    t.one_log(prof, ended="exit")
    shutil.rmtree(ext)
    stacks = t.folded(prof.logs[0], *t.root_opts(prof))
    names = set(f[0] for fr, _ in stacks for f in fr)
    assert not names & {"chain_spin_loop", "chain_spin", "chain_call"}, names
    gone = [n for n in names if re.match(r"^native_chain\..*so\+0x[0-9a-f]+$", n)]
    assert gone, names
    # The Python side is intact.
    assert {"outer", "callback"} <= names, names
