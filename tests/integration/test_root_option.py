"""--root DIR: symbolizing the native frames of a process that ran in another root file
system (here Debian sid's, entered with chroot by the py3.14 interpreter's wrapper).

The log records the modules' paths as the process saw them (/usr/bin/python3.14,
/usr/lib/x86_64-linux-gnu/libz.so.1); on the host those paths name other files (or
none), whose build-ids are not the recorded ones, so without --root the frames stay raw
("libz.so.1+0x...").  With --root the root's files are found and the exported symbols
(libz's `deflate`) are named, in every command that reads logs.  A --root that is not a
directory is a usage error.
"""

import filecmp
import os
import re

import pytest

import pyprof_testlib as t

LIBS = t.workload("native_libs.py")
LIBZ = "/usr/lib/x86_64-linux-gnu/libz.so.1"
RAW_LIBZ = re.compile(r"^libz\.so\.1\+0x[0-9a-f]+$")


# The root's 3.14 (absent from sanitizer runs only: conftest.py's header says why).
@pytest.fixture(scope="module", params=t.params(t.by_id(*t.SID_IDS[:1])))
def chrooted(tmp_path_factory, request):
    """A log of py3.14 (in the sid root) spending its time in zlib.compress, natively
    sampled, and the root it ran in."""
    interp = request.param.require()
    root = interp.sysroot
    # The premise: the host's file at the recorded path (if any) is not the root's.
    host_libz, root_libz = LIBZ, root + LIBZ
    assert os.path.isfile(root_libz), root_libz
    assert not (os.path.isfile(host_libz) and filecmp.cmp(host_libz, root_libz, False)), (
        "the host's %s is the sid root's: nothing for --root to find" % LIBZ)
    out = str(tmp_path_factory.mktemp("root") / "logs")
    prof = t.run([interp.path, LIBS, "zlib", "2"], out,
                 env={"PYPROF_NATIVE": "1", "PYPROF_PERIOD": "1ms"})
    assert prof.rc == 0, prof.describe()
    p = t.one_log(prof, ended="exit")
    return {"log": prof.logs[0], "root": root, "samples": p.proc["samples"]}


def native_libz(functions):
    return [f for f in functions if f["kind"] == "native" and f["file"] == LIBZ]


def test_report_json(chrooted):
    log, root = chrooted["log"], chrooted["root"]
    plain = t.report(log)
    rooted = t.tool_json("report", "--json", "--root", root, log)
    # Without --root: libz's frames are there, all raw offsets (the host's libz has
    # another build-id and is not read).
    raw = native_libz(plain["functions"])
    assert raw and all(RAW_LIBZ.match(f["name"]) for f in raw), t.dump(plain)
    assert not [f for f in plain["functions"] if f["name"] == "deflate"], t.dump(plain)
    # With it: deflate, under which nearly all the time goes.
    deflate = [f for f in native_libz(rooted["functions"]) if f["name"] == "deflate"]
    assert len(deflate) == 1, t.dump(rooted)
    assert deflate[0]["total"] >= 0.5 * rooted["samples"], t.dump(rooted)
    # Fewer addresses without a symbol (python3.14 and libc are found too).
    nat_plain = plain["processes"][0]["native"]
    nat_rooted = rooted["processes"][0]["native"]
    assert nat_rooted["unresolved_addresses"] < nat_plain["unresolved_addresses"], (
        nat_plain, nat_rooted)
    assert rooted["samples"] == plain["samples"] == chrooted["samples"]


def test_folded_export(chrooted):
    log, root = chrooted["log"], chrooted["root"]
    plain = t.folded(log)
    libz = [f for fr, _ in plain for f in fr if f[1] == LIBZ]
    assert libz and all(RAW_LIBZ.match(name) for name, _ in libz), plain[:5]
    # A relative root with a trailing slash is the same root.
    rel = os.path.relpath(root, t.REPO) + "/"
    rooted = t.folded("--root", rel, log, cwd=t.REPO)
    assert rooted == t.folded("--root", root, log)
    under = sum(c for fr, c in rooted if ("deflate", LIBZ) in fr
                and "compress_it" in [f[0] for f in fr[:fr.index(("deflate", LIBZ))]])
    total = sum(c for _, c in rooted)
    assert under >= 0.5 * total, (under, total, rooted[:5])


def test_every_command(chrooted, tmp_path):
    """tree, html and info read the root too (report and export above)."""
    log, root = chrooted["log"], chrooted["root"]
    for with_root in (False, True):
        opt = ["--root", root] if with_root else []
        tree = t.tool("tree", "--min", "0", *(opt + [log]))
        assert tree.returncode == 0, tree.stderr
        assert (("deflate (" + LIBZ) in tree.stdout) == with_root, tree.stdout[:4000]
        page = tmp_path / ("page-%d.html" % with_root)
        html = t.tool("html", *(opt + [log, "-o", str(page)]))
        assert html.returncode == 0, html.stderr
        assert ("deflate" in page.read_text(errors="replace")) == with_root
    plain = t.tool("info", log)
    rooted = t.tool("info", "--root", root, log)
    assert plain.returncode == 0 and rooted.returncode == 0, (plain.stderr, rooted.stderr)
    count = [int(re.search(r"(\d+) addresses without a symbol", r.stdout).group(1))
             for r in (plain, rooted)]
    assert count[1] < count[0], (plain.stdout, rooted.stdout)


@pytest.mark.parametrize("cmd", [["report"], ["report", "--json"], ["tree"],
                                 ["export", "-f", "folded"], ["info"], ["trace", "list"],
                                 ["html", "-o", "OUT"]])
def test_bad_root(cmd, tmp_path):
    """Not a directory (a file, a missing path, empty): one error line naming --root and
    the value (then the usage hint every usage error ends with), exit 2, no output."""
    out = tmp_path / "out.html"
    cmd = [str(out) if a == "OUT" else a for a in cmd]
    name = cmd[0]
    log = os.path.join(t.FIXTURES, "good.lz4")
    for bad in (log, str(tmp_path / "missing"), ""):
        res = t.tool(*(cmd + ["--root", bad, log]))
        lines = res.stderr.splitlines()
        assert res.returncode == 2, (cmd, bad, res.returncode, res.stderr)
        assert res.stdout == "" and not out.exists(), (cmd, bad, res.stdout)
        assert len(lines) == 2 and lines[1] == "Try 'pyprof help %s'." % name, (cmd, lines)
        assert re.match(r"^pyprof %s: --root: '%s'(: | is not a directory)"
                        % (re.escape(name), re.escape(bad)), lines[0]), (cmd, lines)
    # No value at all: getopt's own usage error.
    res = t.tool(*(cmd + [log, "--root"]))
    assert res.returncode == 2 and "'--root' needs a value" in res.stderr, res.stderr
