#!/usr/bin/env python3
"""check_layout.py [--self-test] [--objects OBJDIR] [ROOT] -- fails when an #include, a
link or a symbol goes against the layers.

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
of that program (or of the unit tests' archives).  With --objects (the build's obj/
folder, `make check-layout` passes it), the built objects of each list are read with
nm, and a reference is resolved as the linker would, among the objects linked with
it: an object may reference only global symbols defined in its own layer or the layers
it may use.  So a call (or any other reference) from a lower layer to a function of a
higher one fails, or to one of a sibling that is not below (src/lib and src/read meet
in the unit tests' archives), even where no header says so: a src/lib object calling
dlopen by name gets preload/interpose.c's exported wrapper, not the C library's.  With
--self-test, the checker is also run on a small tree that breaks each rule once (and
compiles a few objects that call against the layers) and must report every break.

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
# What is linked together, and from which layers: the two programs, and the unit tests'
# archives (libcore.a, libread.a, libcommon.a), which a test links side by side.
PROGRAMS = {
    "LIB_SRCS": {"src/common", "src/lib", "preload"},
    "TOOL_SRCS": {"src/common", "src/read", "utils"},
    "UNIT_SRCS": {"src/common", "src/lib", "src/read"},
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


def nm_symbols(objects):
    """{object: (defined global symbols, referenced undefined symbols)} from nm."""
    out = subprocess.run(["nm", "-P", "-A", *objects], capture_output=True, text=True,
                         check=True).stdout
    syms = {o: (set(), set()) for o in objects}
    for line in out.splitlines():
        head, _, rest = line.rpartition(": ")
        fields = rest.split()
        if head not in syms or len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind in "Uwv":
            syms[head][1].add(name)
        elif kind.isupper():
            syms[head][0].add(name)
    return syms


def check_symbols(objdir, lists):
    """Each undefined symbol of an object, resolved among the objects linked with it,
    must be defined in a layer the object's layer may use."""
    units = {var: [s for s in lists.get(var, []) if s.endswith(".c") and layer_of(s)]
             for var in PROGRAMS}
    obj = {s: os.path.join(objdir, s[:-2] + ".o") for srcs in units.values() for s in srcs}
    missing = [o for o in obj.values() if not os.path.isfile(o)]
    if missing:
        return [f"{missing[0]}: not built ({len(missing)} object(s) missing; "
                "`make check-layout` builds them first)"], 0
    syms = nm_symbols(sorted(set(obj.values())))
    bad, seen = set(), set()
    for srcs in units.values():
        defined = {}
        for src in srcs:
            for name in syms[obj[src]][0]:
                defined.setdefault(name, []).append(src)
        for src in srcs:
            for name in syms[obj[src]][1]:
                for d in defined.get(name, []):
                    seen.add((src, name, d))
                    if layer_of(d) not in ALLOWED[layer_of(src)]:
                        bad.add(f"{src[:-2]}.o: uses {name} defined in {d[:-2]}.o")
    return sorted(bad), len(seen)


def make_lists(root):
    out = subprocess.run(["make", "-s", "-C", root, "--no-print-directory", "print-layout"],
                         capture_output=True, text=True, check=True).stdout
    lists = {}
    for line in out.splitlines():
        var, _, srcs = line.partition("=")
        lists[var.strip()] = srcs.split()
    return lists


# Objects for the self-test: three calls against the layers (src/lib into preload,
# src/read into its sibling src/lib, src/common into src/read) among calls along them.
SELF_TEST_OBJECTS = {
    "preload/entry.c": "void sampler_start(void); void entry_toggle(void) {}\n"
                       "void entry_start(void) { sampler_start(); }\n",
    "src/lib/sampler.c": "void entry_toggle(void); void record_put(void);\n"
                         "void sampler_start(void) { entry_toggle(); record_put(); }\n",
    "src/read/profile.c": "void sampler_start(void);\n"
                          "void profile_load(void) { sampler_start(); }\n",
    "src/common/record.c": "void profile_load(void); void record_put(void) {}\n"
                           "void record_get(void) { profile_load(); }\n",
    "utils/cli.c": "void profile_load(void); void cli_start(void) { profile_load(); }\n",
}


def self_test_symbols(t):
    """Compiles the self-test's objects into t/obj and checks them."""
    cc = os.environ.get("CC") or "cc"
    for rel, text in SELF_TEST_OBJECTS.items():
        src = os.path.join(t, "objsrc", rel)
        obj = os.path.join(t, "obj", rel[:-2] + ".o")
        os.makedirs(os.path.dirname(src), exist_ok=True)
        os.makedirs(os.path.dirname(obj), exist_ok=True)
        with open(src, "w") as fh:
            fh.write(text)
        subprocess.run([cc, "-c", "-o", obj, src], check=True)
    lists = {"LIB_SRCS": ["preload/entry.c", "src/lib/sampler.c", "src/common/record.c"],
             "TOOL_SRCS": ["utils/cli.c", "src/read/profile.c", "src/common/record.c"],
             "UNIT_SRCS": ["src/lib/sampler.c", "src/read/profile.c",
                           "src/common/record.c"]}
    bad, _ = check_symbols(os.path.join(t, "obj"), lists)
    return bad


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
        sbad = self_test_symbols(t)
    sexpect = ["src/common/record.o: uses profile_load defined in src/read/profile.o",
               "src/lib/sampler.o: uses entry_toggle defined in preload/entry.o",
               "src/read/profile.o: uses sampler_start defined in src/lib/sampler.o"]
    expect = ["include/pyprof/format.h:1", "src/lib/writer.c:1", "src/lib/writer.c:2",
              "src/read/profile.h:1", "preload/entry.h:2", "utils/cli.c:1"]
    found = [b for e in expect for b in bad if b.startswith(e + ":")]
    if (len(found) != len(expect) or len(bad) != len(expect) or len(lbad) != 2 or
            sorted(sbad) != sexpect):
        print("check-layout: the self-test tree's violations were not all found:",
              *bad, *lbad, *sbad, sep="\n  ")
        return 1
    return 0


def main():
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        if self_test():
            return 1
        args = args[1:]
    objdir = None
    if len(args) >= 2 and args[0] == "--objects":
        objdir, args = args[1], args[2:]
    root = args[0] if args else "."
    lists = make_lists(root)
    bad, n_inc = check_includes(root)
    lbad, n_src = check_links(root, lists)
    bad += lbad
    n_sym = 0
    if objdir:
        sbad, n_sym = check_symbols(objdir, lists)
        bad += sbad
    for b in bad:
        print(b)
    if bad:
        print(f"check-layout: {len(bad)} violation(s) of the layer direction "
              "(docs/ARCHITECTURE.md)")
        return 1
    syms = f", {n_sym} references between objects" if objdir else ""
    print(f"check-layout: OK ({n_inc} project includes, {n_src} linked sources{syms})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
