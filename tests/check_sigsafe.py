"""check_sigsafe.py [--self-test] [--san] LIST OBJECT... -- the signal path, checked.

LIST (src/lib/sigsafe.list) names the signal path's entry points (the signal handlers,
the allocation wrappers, the span calls) and everything outside the library they may
reach, each with the reason it is safe there.  This reads the built objects' code
(objdump -dr): every function reachable from an entry point -- by a call, a jump, a
function address taken, or a function pointer in a table the code reads -- is followed
through the objects, and every symbol it reaches that no object defines must be one the
list allows.  A `stop` line in the list cuts the walk at a function that runs outside
signal context for a reason the line gives.  A `builtin` line allows a function the
compiler may call or expand in place (memset, memcpy), which no build has to reach.

Prints each symbol the list does not allow with the chain that reaches it (entry first),
each list line no longer used, and exits 1 when there is either.  --san allows the
sanitizers' runtime calls (__asan_*, __ubsan_*, __sanitizer_*), which `make asan` and
`make ubsan` add to every function.  --self-test first checks a small object that plants
a printf on a rare (cold) path and a function-pointer path: both must be found.
"""
import os
import re
import subprocess
import sys
import tempfile

SAN_PREFIXES = ("__asan_", "__ubsan_", "__sanitizer_", "__tsan_", "__msan_")

FUNC_HEAD = re.compile(r"^([0-9a-f]+) <(.+)>:$")
SECTION_HEAD = re.compile(r"^Disassembly of section (\S+):$")
INSN = re.compile(r"^\s+([0-9a-f]+):\t(\S+)\s*(.*)$")
RELOC = re.compile(r"\t([0-9a-f]+): (R_X86_64_\w+)\t(\S+)")
LOCAL_TARGET = re.compile(r"^[0-9a-f]+ <([^+>]+)(\+0x[0-9a-f]+)?>")
SYM_LINE = re.compile(r"^([0-9a-f]+) (.{7}) (\S+)\t([0-9a-f]+) (.*)$")
RELOC_SECTION = re.compile(r"^RELOCATION RECORDS FOR \[(.+)\]:$")
RELOC_RECORD = re.compile(r"^([0-9a-f]+) (R_X86_64_\w+)\s+(\S+)$")
JUMPS = ("call", "jmp")


def objdump(args):
    return subprocess.run(["objdump"] + args, capture_output=True, text=True,
                          check=True).stdout


def split_target(text):
    """'name+0x10' / 'name-0x4' / '.text+0x30' -> (name, addend)."""
    m = re.match(r"^(.+?)([+-]0x[0-9a-f]+)?$", text)
    return m.group(1), int(m.group(2), 16) if m.group(2) else 0


class Obj:
    """One object's symbols: by section, the (start, size, node) of each, and the
    symbols it leaves undefined."""

    def __init__(self, path):
        self.path = path
        self.short = os.path.basename(path)
        self.by_section = {}   # section -> [(start, end, node, is_func)]
        self.defined = {}      # name -> node
        self.undefined = set()
        for line in objdump(["-t", path]).splitlines():
            m = SYM_LINE.match(line)
            if not m:
                continue
            value, flags, section, size, name = m.groups()
            name = name.split()[-1]  # past ".hidden"
            if section == "*UND*":
                self.undefined.add(name)
                continue
            kind = flags[6]
            # Functions, objects and thread-locals (which objdump gives no kind); not
            # the section, file and debug symbols.
            if kind not in "FO " or flags[5] == "d" or section == "*ABS*" or not name:
                continue
            node = name if flags[0] in "gu" or flags[1] == "w" else "%s:%s" % (self.short, name)
            start = int(value, 16)
            self.by_section.setdefault(section, []).append(
                (start, start + max(int(size, 16), 1), node, kind == "F"))
            self.defined[name] = node

    def at(self, section, offset):
        """The node covering section+offset, or None."""
        for start, end, node, _ in self.by_section.get(section, ()):
            if start <= offset < end:
                return node
        return None

    def resolve(self, target, addend):
        """A relocation's target as a node name (ours or external), or None for what
        no symbol covers (string literals, jump tables)."""
        if target.startswith("."):
            # Section-relative (a static symbol or a cold part): the field is 4 bytes
            # before the end of the instruction for every code reference.
            return self.at(target, addend + 4) or self.at(target, addend)
        if target in self.defined:
            return self.defined[target]
        return target


def read_objects(paths):
    """(edges: node -> set of nodes, functions: set of our function nodes,
    external: set of nodes no object defines)."""
    objs = [Obj(p) for p in paths]
    globals_ = {}
    for o in objs:
        for name, node in o.defined.items():
            if node == name:
                globals_[name] = node
    edges, functions = {}, set()
    for o in objs:
        for entries in o.by_section.values():
            for _, _, node, is_func in entries:
                if is_func:
                    functions.add(node)
        section, current = None, None
        for line in objdump(["-dr", "-w", "--no-show-raw-insn", o.path]).splitlines():
            m = SECTION_HEAD.match(line)
            if m:
                section = m.group(1)
                continue
            m = FUNC_HEAD.match(line)
            if m:
                current = o.at(section, int(m.group(1), 16)) or m.group(2)
                edges.setdefault(current, set())
                continue
            m = INSN.match(line)
            if not m or current is None:
                continue
            mnemonic, operands = m.group(2), m.group(3)
            r = RELOC.search(line)
            if r:
                node = o.resolve(*split_target(r.group(3)))
                if node and node != current:
                    edges[current].add(node)
            elif mnemonic.startswith(JUMPS) or mnemonic.startswith("j"):
                t = LOCAL_TARGET.match(operands)
                if t:
                    node = o.defined.get(t.group(1), "%s:%s" % (o.short, t.group(1)))
                    if node != current:
                        edges[current].add(node)
        # Tables of function pointers: a data object's relocations are its edges.
        section = None
        for line in objdump(["-r", o.path]).splitlines():
            m = RELOC_SECTION.match(line)
            if m:
                section = m.group(1)
                continue
            m = RELOC_RECORD.match(line)
            if not m or section is None or not section.startswith((".data", ".rodata")):
                continue
            holder = o.at(section, int(m.group(1), 16))
            if holder is None:
                continue
            node = o.resolve(*split_target(m.group(3)))
            if node:
                edges.setdefault(holder, set()).add(node)
    # An undefined symbol another object defines is that object's node.
    for src in edges:
        edges[src] = {globals_.get(n, n) for n in edges[src]}
    ours = set(edges) | functions | set(globals_.values())
    for o in objs:
        for entries in o.by_section.values():
            ours.update(node for _, _, node, _ in entries)
    external = {n for targets in edges.values() for n in targets if n not in ours}
    return edges, functions, external


def read_list(path):
    """{'entry': {name: line}, 'call': {...}, 'builtin': {...}, 'stop': {...},
    'data': {...}}"""
    kinds = {"entry": {}, "call": {}, "builtin": {}, "stop": {}, "data": {}}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            words = text.split(None, 2)
            if len(words) < 3 or words[0] not in kinds:
                raise SystemExit("%s:%d: expected KIND NAME REASON (KIND: %s)" % (
                    path, n, ", ".join(kinds)))
            kinds[words[0]][words[1]] = n
    return kinds


def find(name, edges):
    """The nodes a list line names: the global, or each static function of that name
    with the parts the compiler made of it (name.cold, name.constprop.0, name.part.0)."""
    if name in edges:
        return {name}
    return {n for n in edges if n.split(":")[-1].split(".")[0] == name}


def allowed_names(listing):
    return set(listing["call"]) | set(listing["builtin"]) | set(listing["data"])


def check(listing, edges, functions, external, san):
    """Problems (lines of text), each one found."""
    problems = []
    entries, stops = {}, {}
    for kind, nodes in (("entry", entries), ("stop", stops)):
        for name, line in listing[kind].items():
            found = find(name, edges)
            if not found:
                problems.append("list line %d: %s %s is in no object (renamed? inlined?)" %
                                (line, kind, name))
            for node in found:
                nodes[node] = name
    allowed = set(listing["call"]) | set(listing["builtin"]) | set(listing["data"])
    used, used_stops = set(), set()
    parent = {}
    todo = list(entries)
    for e in todo:
        parent[e] = None
    while todo:
        node = todo.pop()
        if node in stops:
            used_stops.add(node)
            continue
        for nxt in sorted(edges.get(node, ())):
            if nxt in parent:
                continue
            parent[nxt] = node
            if nxt in external:
                if nxt in allowed:
                    used.add(nxt)
                elif not (san and nxt.startswith(SAN_PREFIXES)):
                    chain, at = [], nxt
                    while at is not None:
                        chain.append(at)
                        at = parent[at]
                    problems.append("%s is not on the list: %s" % (
                        nxt, " -> ".join(reversed(chain))))
            else:
                todo.append(nxt)
    for kind in ("call", "data"):
        for name, line in listing[kind].items():
            if name not in used:
                problems.append("list line %d: %s %s is reached by no entry (stale?)" %
                                (line, kind, name))
    for name, line in listing["stop"].items():
        if not any(stops[n] == name for n in used_stops):
            problems.append("list line %d: stop %s is reached by no entry (stale?)" %
                            (line, name))
    return problems, len([n for n in parent if n in functions])


SELF_TEST = r"""
#include <stdio.h>
#include <string.h>
#include <time.h>
typedef void (*fn)(int);
static int counter;
__attribute__((cold, noinline)) static void complain(int x) { printf("never %d\n", x); }
__attribute__((noinline)) static void rare(int x)
{
    if (__builtin_expect(x == 12345, 0))
        complain(x);
    counter += x;
}
static void by_pointer(int x) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); puts("p"); counter += x; }
static void other(int x) { counter -= x; }
static const fn table[] = {by_pointer, other};
__attribute__((noinline)) static void outside(int x) { fputs("stopped here", stderr); counter += x; }
void planted_entry(int x, char *buf, size_t n)
{
    memset(buf, x, n);
    rare(x + buf[3]);
    table[x & 1](x);
    if (x == 7)
        outside(x);
}
"""
SELF_TEST_LIST = """entry planted_entry  the test's handler
call memset          on signal-safety(7)
call clock_gettime   on signal-safety(7)
call getpid          on signal-safety(7); reached by nothing (stale)
stop outside         runs outside signal context (the test says so)
"""


def self_test():
    with tempfile.TemporaryDirectory() as t:
        src, obj, lst = (os.path.join(t, n) for n in ("planted.c", "planted.o", "list"))
        with open(src, "w") as f:
            f.write(SELF_TEST)
        with open(lst, "w") as f:
            f.write(SELF_TEST_LIST)
        cc = os.environ.get("CC") or "cc"
        subprocess.run([cc, "-O2", "-fPIC", "-fvisibility=hidden", "-c", "-o", obj, src],
                       check=True)
        edges, functions, external = read_objects([obj])
        problems, _ = check(read_list(lst), edges, functions, external, False)
        text = "\n".join(problems)
        # printf on the cold part of rare (in .text.unlikely, reached by a relocation
        # against the section), and puts through a table of function pointers.
        want = [("printf", "planted.o:rare.cold -> planted.o:complain -> printf"),
                ("puts", "planted.o:table -> planted.o:by_pointer -> puts"),
                ("getpid", "stale")]
        missed = [w for w in want if not any(w[0] in p and w[1] in p for p in problems)]
        wrong = [p for p in problems if "fputs" in p or "clock_gettime" in p or
                 "memset" in p]
        if missed or wrong:
            print("check-sigsafe: the self-test's planted calls were not found as they "
                  "should be:\n  missed %s\n  wrongly reported %s\n  all: %s" %
                  (missed, wrong, text))
            return False
    return True


def main():
    args = sys.argv[1:]
    run_self_test = "--self-test" in args
    san = "--san" in args
    args = [a for a in args if a not in ("--self-test", "--san")]
    if len(args) < 2:
        print(__doc__.strip())
        return 2
    if run_self_test and not self_test():
        return 1
    listing = read_list(args[0])
    edges, functions, external = read_objects(args[1:])
    problems, reached = check(listing, edges, functions, external, san)
    for p in problems:
        print("check-sigsafe: " + p)
    if problems:
        print("check-sigsafe: %d problem(s); the signal path's list is %s" % (
            len(problems), args[0]))
        return 1
    print("check-sigsafe: %d functions reachable from %d entry points call only the %d "
          "listed outside the library" % (reached, len(listing["entry"]),
                                          len(allowed_names(listing))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
