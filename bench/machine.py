"""What the bench runs on: the machine (CPU, OS, load), the source tree's commit,
and the interpreters (pyenv's or Debian's by default; those of --versions; their
version; the CPU of the sid root's chroot wrapper, left out of a run's CPU)."""

import os
import platform
import shutil
import statistics
import subprocess
import sys

from common import DEBIAN_PY, REPO, SID_BIN, VERSION_PYTHONS


def machine_info(py):
    info = {"uname": " ".join(platform.uname()[:3]), "cpus": os.cpu_count(),
            "load_at_start": os.getloadavg()}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/etc/os-release") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    info["os"] = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return info


def git_info():
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL).stdout.decode().strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "src",
                                "preload", "include", "utils", "Makefile"],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL).stdout.decode().strip()
        return {"commit": head or None, "library_sources_modified": bool(dirty)}
    except OSError:
        return None


def interp_version(py):
    try:
        return subprocess.run([py, "-c", "import sys; print(sys.version.split()[0])"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=30).stdout.decode().strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def pyenv_python(version):
    try:
        root = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL).stdout.decode().strip()
    except OSError:
        root = os.path.expanduser("~/.pyenv")
    return os.path.join(root or os.path.expanduser("~/.pyenv"), "versions", version, "bin",
                        "python")


def default_python():
    p = pyenv_python("3.11.7")
    if os.access(p, os.X_OK):
        return p
    return DEBIAN_PY if os.access(DEBIAN_PY, os.X_OK) else sys.executable


def version_pythons(specs):
    """The interpreters of --versions: [(spec, path or None, why it is missing)].  A spec
    is a version of VERSION_PYTHONS (pyenv's build, or the sid root's wrapper) or a path."""
    out = []
    for spec in specs:
        where = VERSION_PYTHONS.get(spec)
        if where is None:
            p = shutil.which(spec)
            out.append((spec, p and os.path.abspath(p), None if p else "not found"))
        elif where[0] == "pyenv":
            p = pyenv_python(where[1])
            ok = os.access(p, os.X_OK)
            out.append((spec, p if ok else None, None if ok else "pyenv's %s not found (%s)"
                        % (where[1], p)))
        else:
            p = os.path.join(SID_BIN, where[1])
            ok = os.access(p, os.X_OK)
            out.append((spec, p if ok else None, None if ok else
                        "the sid root is missing (no %s; `make sid-root` makes it, "
                        "`make bench` does first)" % p))
    return out


def launcher_cpu(runner, py, n=5):
    """The CPU a wrapper takes before the interpreter starts, when py is one of the sid
    root's (the sid-run beside it running the root's /bin/true; median of n runs); 0 for
    any other interpreter."""
    sid_run = os.path.join(os.path.dirname(py), "sid-run")
    if not os.access(sid_run, os.X_OK):
        return 0.0
    xs = []
    for _ in range(n):
        r = runner.spawn([sid_run, "/bin/true"], runner.base_env)
        if not r["ok"]:
            raise RuntimeError("%s /bin/true failed: exit %s %s" % (sid_run, r["exit"],
                                                                   r["stderr"]))
        xs.append(r["cpu_s"])
    return statistics.median(xs)
