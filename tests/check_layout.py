#!/usr/bin/env python3
"""check_layout.py [ROOT] -- fails when an #include or a link goes against the layers.

The tree is layered, and each layer may use only itself and the layers it lists here
(docs/ARCHITECTURE.md draws the same picture):

    include/pyprof   the log format and the reader's API
    src/common       record codec, line tables, configuration   (both programs)
    src/lib          runs inside the profiled process           (libpyprof.so)
    preload          the library's entry points and interposed symbols
    src/read         logs into a profile, and its aggregates    (the tool)
    utils            the pyprof command

Quoted includes are written either bare ("x.h", a header of the including file's own
folder) or with their layer ("lib/x.h", "preload/x.h"); <pyprof/x.h> is include/pyprof.
Every one must resolve to an existing file of an allowed layer.  The programs' source
lists, which `make print-layout` prints, must take their objects only from the layers
of that program.  With --self-test, the checker is also run on a small tree that breaks
each rule once and must report every break.

Exit status 0 with "check-layout: OK (...)", 1 with one line per violation.
"""
import os
import re
import subprocess
import sys
import tempfile

ALLOWED = {
    "include/pyprof": {"include/pyprof"},
    "src/common": {"include/pyprof", "src/common"},
    "src/lib": {"include/pyprof", "src/common", "src/lib"},
    "preload": {"include/pyprof", "src/common", "src/lib", "preload"},
    "src/read": {"include/pyprof", "src/common", "src/read"},
    "utils": {"include/pyprof", "src/common", "src/read", "utils"},
}
# How a qualified quoted include names its layer.
PREFIX = {"common": "src/common", "lib": "src/lib", "read": "src/read",
          "preload": "preload", "utils": "utils"}
PROGRAMS = {
    "LIB_SRCS": {"src/common", "src/lib", "preload"},
    "TOOL_SRCS": {"src/common", "src/read", "utils"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)


def layer_of(rel):
    d = os.path.dirname(rel)
    return d if d in ALLOWED else None


def resolve(root, rel, kind, name):
    """The layer and path a quoted or angle include names, or (None, None) for a
    system header; ("?", path) when it names a project file that does not exist."""
    if kind == "<":
        if not name.startswith("pyprof/"):
            return None, None
        path = os.path.join("include", name)
        return ("include/pyprof" if os.path.isfile(os.path.join(root, path)) else "?"), path
    if "/" not in name:
        path = os.path.join(os.path.dirname(rel), name)
        return (layer_of(rel) if os.path.isfile(os.path.join(root, path)) else "?"), path
    head, _, tail = name.partition("/")
    if head not in PREFIX or "/" in tail:
        return "?", name
    path = os.path.join(PREFIX[head], tail)
    return (PREFIX[head] if os.path.isfile(os.path.join(root, path)) else "?"), path


def check_includes(root):
    bad, n = [], 0
    for layer in ALLOWED:
        d = os.path.join(root, layer)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            rel = os.path.join(layer, f)
            with open(os.path.join(root, rel), encoding="utf-8") as fh:
                text = fh.read()
            for m in INCLUDE.finditer(text):
                target, path = resolve(root, rel, m.group(1), m.group(2))
                if target is None:
                    continue
                n += 1
                line = text.count("\n", 0, m.start()) + 1
                if target == "?":
                    bad.append(f"{rel}:{line}: #include {m.group(0).split('include', 1)[1].strip()}"
                               f" names no file of a layer")
                elif target not in ALLOWED[layer]:
                    bad.append(f"{rel}:{line}: {layer} may not include {path} ({target})")
    return bad, n


def check_links(root, lists):
    bad, n = [], 0
    for var, layers in PROGRAMS.items():
        for src in lists.get(var, []):
            n += 1
            if os.path.dirname(src) not in layers:
                bad.append(f"Makefile: {var} links {src}, outside {', '.join(sorted(layers))}")
    return bad, n


def make_lists(root):
    out = subprocess.run(["make", "-s", "-C", root, "--no-print-directory", "print-layout"],
                         capture_output=True, text=True, check=True).stdout
    lists = {}
    for line in out.splitlines():
        var, _, srcs = line.partition("=")
        lists[var.strip()] = srcs.split()
    return lists


def self_test():
    """A tree that breaks every rule once: each break must be reported."""
    with tempfile.TemporaryDirectory() as t:
        files = {
            "include/pyprof/format.h": '#include "lib/ring.h"\n',
            "src/common/record.h": "",
            "src/lib/ring.h": '#include "common/record.h"\n',
            "src/lib/writer.c": '#include "read/profile.h"\n#include "preload/entry.h"\n',
            "src/read/profile.h": '#include "lib/ring.h"\n',
            "preload/entry.h": '#include "lib/ring.h"\n#include "missing.h"\n',
            "utils/cli.c": '#include "preload/entry.h"\n#include <pyprof/format.h>\n',
        }
        for rel, text in files.items():
            os.makedirs(os.path.join(t, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(t, rel), "w") as fh:
                fh.write(text)
        bad, _ = check_includes(t)
        lbad, _ = check_links(t, {"LIB_SRCS": ["src/read/reader.c"],
                                  "TOOL_SRCS": ["src/lib/ring.c"]})
    expect = ["include/pyprof/format.h:1", "src/lib/writer.c:1", "src/lib/writer.c:2",
              "src/read/profile.h:1", "preload/entry.h:2", "utils/cli.c:1"]
    found = [b for e in expect for b in bad if b.startswith(e + ":")]
    if len(found) != len(expect) or len(bad) != len(expect) or len(lbad) != 2:
        print("check-layout: the self-test tree's violations were not all found:",
              *bad, *lbad, sep="\n  ")
        return 1
    return 0


def main():
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        if self_test():
            return 1
        args = args[1:]
    root = args[0] if args else "."
    bad, n_inc = check_includes(root)
    lbad, n_src = check_links(root, make_lists(root))
    for b in bad + lbad:
        print(b)
    if bad or lbad:
        print(f"check-layout: {len(bad) + len(lbad)} violation(s) of the layer direction "
              "(docs/ARCHITECTURE.md)")
        return 1
    print(f"check-layout: OK ({n_inc} project includes, {n_src} linked sources)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
