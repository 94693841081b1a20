#!/usr/bin/env python3
"""check_layout.py [--self-test] [--cycles=allow|report|fail] [--objects OBJDIR] [ROOT] --
fails when an #include, a link or a symbol goes against the layers, or objects of one
layer need each other.

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
compiles a few objects that call against the layers, or in a circle) and must report
every break.

With --objects, the references among the objects of one layer must also form no cycle
that KNOWN_CYCLES (below) does not list; --cycles=report|fail changes what fails.

Exit status 0 with "check-layout: OK (...)", 1 with the violations (a cycle takes a few
lines), 2 for a bad --cycles.
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


def references(objdir, lists):
    """(error, refs): every reference between the built objects of a link, resolved
    among the objects linked with it, as (source, symbol, defining source) over all
    links; error names the objects not built (refs is then empty)."""
    units = {var: [s for s in lists.get(var, []) if s.endswith(".c") and layer_of(s)]
             for var in PROGRAMS}
    obj = {s: os.path.join(objdir, s[:-2] + ".o") for srcs in units.values() for s in srcs}
    missing = [o for o in obj.values() if not os.path.isfile(o)]
    if missing:
        return (f"{missing[0]}: not built ({len(missing)} object(s) missing; "
                "`make check-layout` builds them first)"), set()
    syms = nm_symbols(sorted(set(obj.values())))
    refs = set()
    for srcs in units.values():
        defined = {}
        for src in srcs:
            for name in syms[obj[src]][0]:
                defined.setdefault(name, []).append(src)
        for src in srcs:
            for name in syms[obj[src]][1]:
                for d in defined.get(name, []):
                    refs.add((src, name, d))
    return None, refs


def check_symbols(refs):
    """Each undefined symbol of an object, resolved among the objects linked with it,
    must be defined in a layer the object's layer may use."""
    return sorted({f"{src[:-2]}.o: uses {name} defined in {d[:-2]}.o"
                   for src, name, d in refs if layer_of(d) not in ALLOWED[layer_of(src)]})


# ---- cycles within a layer -----------------------------------------------------------
#
# Inside one layer nothing orders the objects, so two of them can come to need each
# other: a references a symbol b defines, and b (directly or through others of the
# layer) one of a's.  Such objects can be neither understood, tested nor replaced one at
# a time.  The objects of each layer and the references among them (resolved per link,
# as above) form a graph; each strongly connected component of more than one object is
# a cycle, reported with an order of its objects (users first) and the references that
# close it: those that go back up that order, as few as could be found (an exact search
# up to EXACT_MAX objects, the back edges of a depth-first search beyond).
#
# The tree has none, so any cycle fails.  Were one ever to be kept, each reference that
# closes it would be listed below, with why it is there, in the format the check prints
# ("layer: a.o -> b.o (symbols)").  By default (--cycles=allow) a cycle that these
# references do not close fails, and so does a reference along a listed one that the
# entry does not name; an entry whose reference is gone, or no longer closes a cycle, or
# names a symbol no longer referenced fails as stale, so the list is always exactly what
# the tree has.  --cycles=report never fails on a cycle; --cycles=fail fails on every
# cycle, listed or not.
KNOWN_CYCLES = {}
CYCLE_MODES = ("allow", "report", "fail")
EXACT_MAX = 16
CLOSER = re.compile(r"^(\S+): (\S+)\.o -> (\S+)\.o \(([^()]+)\)$")


def short(src):
    return os.path.basename(src)[:-2] + ".o"


def names(syms, most=None):
    s = sorted(syms)
    if most and len(s) > most:
        return ", ".join(s[:most]) + f", +{len(s) - most}"
    return ", ".join(s)


def layer_graphs(refs):
    """{layer: {(a, b): symbols}}: the sources of a layer, a referencing symbols that b,
    another source of the same layer, defines."""
    graphs = {}
    for src, name, d in refs:
        if src != d and layer_of(src) == layer_of(d):
            graphs.setdefault(layer_of(src), {}).setdefault((src, d), set()).add(name)
    return graphs


def components(nodes, edges):
    """The strongly connected components of more than one node (Tarjan's, without
    recursion), each sorted, in a stable order."""
    succ = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    index, low, stack, on, out = {}, {}, [], set(), []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ[w])))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def least_back_order(nodes, weight):
    """An order of nodes in which the edges that go back (from a node to an earlier one)
    weigh least in total: exact (over subsets) up to EXACT_MAX nodes, else the reverse
    post-order of a depth-first search, whose back edges are those of the search."""
    nodes = sorted(nodes)
    n = len(nodes)
    if n > EXACT_MAX:
        succ = {x: sorted(b for (a, b) in weight if a == x) for x in nodes}
        seen, post = set(), []
        for root in nodes:
            if root in seen:
                continue
            seen.add(root)
            work = [(root, iter(succ[root]))]
            while work:
                v, it = work[-1]
                for w in it:
                    if w not in seen:
                        seen.add(w)
                        work.append((w, iter(succ[w])))
                        break
                else:
                    work.pop()
                    post.append(v)
        return post[::-1]
    idx = {x: i for i, x in enumerate(nodes)}
    outs = [[] for _ in nodes]
    for (a, b), w in weight.items():
        outs[idx[a]].append((1 << idx[b], w))
    best, last = [None] * (1 << n), [0] * (1 << n)
    best[0] = 0
    for placed in range(1 << n):
        cost = best[placed]
        if cost is None:
            continue
        for v in range(n):
            if placed >> v & 1:
                continue
            c = cost + sum(w for bit, w in outs[v] if placed & bit)
            t = placed | 1 << v
            if best[t] is None or c < best[t]:
                best[t], last[t] = c, v
    order, placed = [], (1 << n) - 1
    while placed:
        order.append(nodes[last[placed]])
        placed &= ~(1 << last[placed])
    return order[::-1]


def closers_of(comp, edges):
    """The edges that go back in a least-back order of comp."""
    weight = {e: 1000 + len(s) for e, s in edges.items() if e[0] in comp and e[1] in comp}
    pos = {x: i for i, x in enumerate(least_back_order(comp, weight))}
    return {e for e in weight if pos[e[0]] > pos[e[1]]}


def topo_order(nodes, edges):
    """nodes in an order where each edge goes forward (edges among them are acyclic)."""
    indeg = {n: 0 for n in nodes}
    for a, b in edges:
        indeg[b] += 1
    ready, order = sorted(n for n in nodes if not indeg[n]), []
    while ready:
        v = ready.pop(0)
        order.append(v)
        for a, b in sorted(edges):
            if a == v:
                indeg[b] -= 1
                if not indeg[b]:
                    ready.append(b)
                    ready.sort()
    return order


def path(start, goal, edges):
    """A shortest path start ->* goal along edges, as a list of nodes, or None."""
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        if v == goal:
            out = []
            while v is not None:
                out.append(v)
                v = prev[v]
            return out[::-1]
        for a, b in sorted(edges):
            if a == v and b not in prev:
                prev[b] = v
                todo.append(b)
    return None


def check_cycles(refs, known, mode):
    """(violations, report, cycles): the cycles among the objects of each layer and
    the references that close them, against the list of known closing references."""
    graphs = layer_graphs(refs)
    listed = {}
    for entry in known:
        m = CLOSER.match(entry)
        if not m:
            raise ValueError(f"check_layout.py: KNOWN_CYCLES entry {entry!r} is not "
                             "'layer: a.o -> b.o (symbols)'")
        layer, a, b, syms = m.groups()
        listed[(os.path.join(layer, a + ".c"), os.path.join(layer, b + ".c"))] = (
            entry, {s.strip() for s in syms.split(",")})
    bad, report, on_cycle, n = [], [], set(), 0
    for layer in sorted(graphs):
        edges = graphs[layer]
        nodes = {x for e in edges for x in e}
        for comp in components(nodes, edges):
            n += 1
            inner = {e: s for e, s in edges.items() if e[0] in comp and e[1] in comp}
            on_cycle |= set(inner)
            known_here = {e for e in inner if e in listed}
            rest = {e: s for e, s in inner.items() if e not in known_here}
            new = set()
            for sub in components(comp, rest):
                new |= closers_of(sub, rest)
            closers = known_here | new
            forward = {e: s for e, s in inner.items() if e not in closers}
            order = topo_order(comp, forward)
            pos = {x: i for i, x in enumerate(order)}
            kind = "new cycle" if new else "cycle"
            lines = [f"{layer}: {kind} of {len(comp)} objects, users first: "
                     + " ".join(short(x) for x in order)]
            for a, b in sorted(closers, key=lambda e: (pos[e[0]], pos[e[1]])):
                back = path(b, a, forward) or path(b, a, {e: s for e, s in inner.items()
                                                            if e != (a, b)})
                tag = "listed" if (a, b) in known_here else "NEW"
                lines.append(f"  closed by {layer}: {short(a)} -> {short(b)} "
                             f"({names(inner[(a, b)])})  [{tag}]")
                lines.append("    back along " + short(back[0]) + "".join(
                    f" -> {short(y)} ({names(inner[(x, y)], 3)})"
                    for x, y in zip(back, back[1:])))
            if mode == "allow" and new:
                lines.append("  (break it, or add each NEW reference to KNOWN_CYCLES in "
                             "tests/check_layout.py with why it is there)")
            if mode == "fail" or (mode == "allow" and new):
                bad.append("\n".join(lines))
            elif mode == "report":
                report.append("\n".join(lines))
            else:
                report.append(f"{layer}: cycle of {len(comp)} objects, closed by "
                              f"{len(closers)} reference(s) in KNOWN_CYCLES "
                              "(`make check-layout CYCLES=report` lists them)")
    for e, (entry, syms) in sorted(listed.items()):
        have = graphs.get(layer_of(e[0]), {}).get(e)
        if have is None:
            problem = f"stale KNOWN_CYCLES entry {entry}: the reference is gone"
        elif e not in on_cycle:
            problem = f"stale KNOWN_CYCLES entry {entry}: it no longer closes a cycle"
        elif syms - have:
            problem = (f"stale KNOWN_CYCLES entry {entry}: {names(syms - have)} no "
                       "longer referenced")
        else:
            problem = None
        if problem:
            (report if mode == "report" else bad).append(problem)
        if have and e in on_cycle and have - syms:
            problem = (f"{entry}: also references {names(have - syms)}, which closes a "
                       "cycle and is not in KNOWN_CYCLES")
            (report if mode == "report" else bad).append(problem)
    return bad, report, n


def make_lists(root):
    out = subprocess.run(["make", "-s", "-C", root, "--no-print-directory", "print-layout"],
                         capture_output=True, text=True, check=True).stdout
    lists = {}
    for line in out.splitlines():
        var, _, srcs = line.partition("=")
        lists[var.strip()] = srcs.split()
    return lists


# Objects for the self-test: three calls against the layers (src/lib into preload,
# src/read into its sibling src/lib, src/common into src/read) among calls along them;
# and cycles within a layer: one of three objects in src/read that no entry lists, one
# of two in src/lib that SELF_TEST_CYCLES lists exactly, one in preload whose entry names
# a symbol no longer referenced and misses one that is, and in src/common a reference
# on no cycle and a reference that is gone, both listed.
SELF_TEST_OBJECTS = {
    "preload/entry.c": "void sampler_start(void); void interpose_init(void);\n"
                       "void entry_toggle(void) {} void entry_finish(void) {}\n"
                       "void entry_exit_code(void) {}\n"
                       "void entry_start(void) { sampler_start(); interpose_init(); }\n",
    "preload/interpose.c": "void entry_finish(void); void entry_exit_code(void);\n"
                           "void interpose_init(void) {}\n"
                           "void interpose_exit(void) { entry_finish(); entry_exit_code(); }\n",
    "src/lib/sampler.c": "void entry_toggle(void); void record_put(void); void walk(void);\n"
                         "int sighandler_g;\n"
                         "void sampler_start(void) { entry_toggle(); record_put(); walk(); }\n",
    "src/lib/walk.c": "extern int sighandler_g; void walk(void) { sighandler_g++; }\n",
    "src/read/profile.c": "void sampler_start(void); void series_open(void);\n"
                          "void profile_load(void) { sampler_start(); series_open(); }\n",
    "src/read/series.c": "void idmap_get(void); void series_open(void) { idmap_get(); }\n",
    "src/read/idmap.c": "void profile_load(void); void idmap_get(void) { profile_load(); }\n",
    "src/common/record.c": "void profile_load(void); void config_get(void);\n"
                           "void record_put(void) { config_get(); }\n"
                           "void record_get(void) { profile_load(); }\n",
    "src/common/config.c": "void config_get(void) {}\n",
    "utils/cli.c": "void profile_load(void); void cli_start(void) { profile_load(); }\n",
}
SELF_TEST_CYCLES = {
    "src/lib: walk.o -> sampler.o (sighandler_g)": "listed exactly: no violation",
    "preload: interpose.o -> entry.o (entry_finish, entry_gone)": "stale and short",
    "src/common: record.o -> config.o (config_get)": "on no cycle",
    "src/common: config.o -> record.o (record_put)": "gone",
}


def self_test_symbols(t):
    """Compiles the self-test's objects into t/obj and checks them: (layer violations,
    {cycle mode: cycle violations})."""
    cc = os.environ.get("CC") or "cc"
    for rel, text in SELF_TEST_OBJECTS.items():
        src = os.path.join(t, "objsrc", rel)
        obj = os.path.join(t, "obj", rel[:-2] + ".o")
        os.makedirs(os.path.dirname(src), exist_ok=True)
        os.makedirs(os.path.dirname(obj), exist_ok=True)
        with open(src, "w") as fh:
            fh.write(text)
        subprocess.run([cc, "-c", "-o", obj, src], check=True)
    lib = ["preload/entry.c", "preload/interpose.c", "src/lib/sampler.c", "src/lib/walk.c"]
    read = ["src/read/profile.c", "src/read/series.c", "src/read/idmap.c"]
    common = ["src/common/record.c", "src/common/config.c"]
    lists = {"LIB_SRCS": lib + common, "TOOL_SRCS": ["utils/cli.c"] + read + common,
             "UNIT_SRCS": lib[2:] + read + common}
    error, refs = references(os.path.join(t, "obj"), lists)
    if error:
        return [error], {}
    return check_symbols(refs), {m: check_cycles(refs, SELF_TEST_CYCLES, m)[0]
                                 for m in CYCLE_MODES}


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
        sbad, cbad = self_test_symbols(t)
    sexpect = ["src/common/record.o: uses profile_load defined in src/read/profile.o",
               "src/lib/sampler.o: uses entry_toggle defined in preload/entry.o",
               "src/read/profile.o: uses sampler_start defined in src/lib/sampler.o"]
    # Each violation, known by its first line's start.
    stale = "stale KNOWN_CYCLES entry "
    cexpect = sorted([
        "preload: interpose.o -> entry.o (entry_finish, entry_gone): also references "
        "entry_exit_code",
        stale + "preload: interpose.o -> entry.o (entry_finish, entry_gone): entry_gone no "
        "longer referenced",
        stale + "src/common: config.o -> record.o (record_put): the reference is gone",
        stale + "src/common: record.o -> config.o (config_get): it no longer closes a cycle",
        "src/read: new cycle of 3 objects, users first: "])
    expect = ["include/pyprof/format.h:1", "src/lib/writer.c:1", "src/lib/writer.c:2",
              "src/read/profile.h:1", "preload/entry.h:2", "utils/cli.c:1"]
    found = [b for e in expect for b in bad if b.startswith(e + ":")]
    cfound = sorted(b for b in cbad.get("allow", []) for e in cexpect if b.startswith(e))
    # Which one of its three references closes the planted cycle is the search's choice:
    # exactly one must.
    closed = [b.count("  [NEW]\n") for b in cfound if b.startswith("src/read:")] == [1]
    # --cycles=fail: the listed cycles too; --cycles=report: none.
    heads = sorted(b.split(",")[0] for b in cbad.get("fail", []) if " cycle of " in b)
    if (len(found) != len(expect) or len(bad) != len(expect) or len(lbad) != 2 or
            sorted(sbad) != sexpect or len(cfound) != len(cexpect) or not closed or
            len(cbad.get("allow", [])) != len(cexpect) or cbad.get("report") != [] or
            heads != ["preload: cycle of 2 objects", "src/lib: cycle of 2 objects",
                      "src/read: new cycle of 3 objects"]):
        print("check-layout: the self-test tree's violations were not all found:",
              *bad, *lbad, *sbad, *[f"(--cycles={m}) {b}" for m, v in cbad.items() for b in v],
              sep="\n  ")
        return 1
    return 0


def main():
    args = sys.argv[1:]
    mode = "allow"
    for a in [a for a in args if a.startswith("--cycles=")]:
        mode = a.split("=", 1)[1]
        args.remove(a)
        if mode not in CYCLE_MODES:
            print(f"check_layout.py: --cycles= takes one of {', '.join(CYCLE_MODES)}")
            return 2
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
    report, refs, cycles = [], set(), 0
    if objdir:
        error, refs = references(objdir, lists)
        if error:
            bad.append(error)
        else:
            bad += check_symbols(refs)
            cbad, report, cycles = check_cycles(refs, KNOWN_CYCLES, mode)
            bad += cbad
    for r in report:
        print(r)
    for b in bad:
        print(b)
    if bad:
        print(f"check-layout: {len(bad)} violation(s) of the layers (docs/ARCHITECTURE.md)"
              " or of the known cycles (KNOWN_CYCLES in tests/check_layout.py)")
        return 1
    syms = ""
    if objdir:
        syms = f", {len(refs)} references between objects, " + (
            "no cycle within a layer" if not cycles else
            f"{cycles} cycle(s) within a layer, reported only" if mode == "report" else
            f"{cycles} cycle(s) within a layer, each closed by KNOWN_CYCLES")
    print(f"check-layout: OK ({n_inc} project includes, {n_src} linked sources{syms})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
