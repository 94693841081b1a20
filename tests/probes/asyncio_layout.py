# asyncio_layout.py -- checks the asyncio layouts docs/ASYNCIO.md documents against the
# live objects of the interpreter running it.
#
#     $(pyenv root)/versions/3.9.18/bin/python tests/probes/asyncio_layout.py
#     build/sid/bin/python3.14 tests/probes/asyncio_layout.py      (and 3.15)
#     /usr/bin/python3 tests/probes/asyncio_layout.py -v           (every check, not only failures)
#
# Nothing here is a layout source: the numbers in LAYOUT are docs/ASYNCIO.md's table, and
# each is compared with what the objects hold (a pointer read at id(obj) + offset must be
# the object Python itself reports).  From 3.14 on the task and thread-state offsets are
# read from the interpreter's own `.AsyncioDebug` ELF section, found by parsing the ELF
# section headers of the executable, libpython or the _asyncio extension (no pyelftools),
# and that table is validated the same way.  It also runs the walks the sampler would do
# (coroutine chain through the awaited object, all tasks through the WeakSet / set / task
# lists, the running task's frame on the thread's frame chain) and compares their result
# with asyncio's own answer.
#
# Prints one line per failed check (every check with -v) and a last line
#     asyncio_layout <version>: <n> checks, <f> failed
# Exit status 0 when all pass, 1 otherwise, 2 where there is nothing to check (2.7, 3.6).
# Runs on 2.7 too (to say so), so this file stays 2.7 syntax; the coroutines live in a
# string compiled only on 3.7+.
from __future__ import print_function

import ctypes
import gc
import os
import struct
import sys

V = sys.version_info[:2]
VERSION = "%d.%d.%d" % sys.version_info[:3]
VERBOSE = "-v" in sys.argv[1:]

# ---------------------------------------------------------------------------------------
# docs/ASYNCIO.md, "Layouts": offsets in bytes, x86_64, default (GIL) builds.
#   task: TaskObj (Modules/_asynciomodule.c); None = the version has no such field.
#   gen: PyGenObject/PyCoroObject (Include/genobject.h <= 3.10, Include/cpython/genobject.h
#        3.11-3.12, Include/internal/pycore_genobject.h 3.13+).
#   frame: the coroutine frame's fields for the awaited object ("yf").
# 3.14+ task offsets other than loop/fut_state/fut_waiter come from .AsyncioDebug and are
# only cross-checked against the numbers here.
# ---------------------------------------------------------------------------------------
LAYOUT = {
    (3, 7): dict(task_size=136, loop=16, fut_state=72, fut_waiter=104, coro=112,
                 name=None, context=120,
                 gi_frame=16, gen_size=64, state_kind="f_stacktop",
                 f_valuestack=64, f_stacktop=72, f_lasti=104, f_code=32),
    (3, 8): dict(task_size=144, loop=16, fut_state=72, fut_waiter=104, coro=112,
                 name=120, context=128,
                 gi_frame=16, gen_size=64, state_kind="f_stacktop",
                 f_valuestack=64, f_stacktop=72, f_lasti=104, f_code=32),
    (3, 9): dict(task_size=184, loop=16, fut_state=80, fut_waiter=144, coro=152,
                 name=160, context=168,
                 gi_frame=16, gen_size=64, state_kind="f_stacktop",
                 f_valuestack=64, f_stacktop=72, f_lasti=104, f_code=32),
    (3, 10): dict(task_size=192, loop=16, fut_state=88, fut_waiter=152, coro=160,
                  name=168, context=176,
                  gi_frame=16, gen_size=64, state_kind="f_stackdepth",
                  f_valuestack=64, f_stackdepth=80, f_lasti=96, f_code=32),
    (3, 11): dict(task_size=176, loop=16, fut_state=88, fut_waiter=128, coro=136,
                  name=144, context=152,
                  gi_iframe=80, gi_frame_state=75, state_kind="resume",
                  fr_prev_instr=56, fr_stacktop=64, fr_localsplus=72, fr_code=32,
                  states=dict(created=-2, suspended=-1, executing=0, completed=1,
                              cleared=4)),
    (3, 12): dict(task_size=176, loop=16, fut_state=88, fut_waiter=128, coro=136,
                  name=144, context=152,
                  gi_iframe=72, gi_frame_state=67, state_kind="resume",
                  fr_prev_instr=56, fr_stacktop=64, fr_localsplus=72, fr_code=0,
                  states=dict(created=-2, suspended=-1, executing=0, completed=1,
                              cleared=4)),
    (3, 13): dict(task_size=144, loop=16, fut_state=96, fut_waiter=112, coro=120,
                  name=128, context=136,
                  gi_iframe=72, gi_frame_state=67, state_kind="yield_from_state",
                  fr_stacktop=64, fr_localsplus=72, fr_code=0, yf_index=-1,
                  states=dict(created=-3, suspended=-2, suspended_yield_from=-1,
                              executing=0, completed=1, cleared=4)),
    (3, 14): dict(task_size=168, loop=16, fut_state=104, fut_waiter=120, coro=128,
                  name=136, context=144, awaited_by=96, is_task=108,
                  awaited_by_is_set=109, node=152,
                  gi_iframe=72, gi_frame_state=67, state_kind="yield_from_state",
                  fr_stackpointer=64, fr_code=0, yf_index=-1, tag_bits=3,
                  states=dict(created=-3, suspended=-2, suspended_yield_from=-1,
                              executing=0, completed=1, cleared=4)),
    (3, 15): dict(task_size=168, loop=16, fut_state=104, fut_waiter=120, coro=128,
                  name=136, context=144, awaited_by=96, is_task=108,
                  awaited_by_is_set=109, node=152,
                  gi_iframe=72, gi_frame_state=67, state_kind="yield_from_state",
                  fr_stackpointer=64, fr_code=0, yf_index=-2, tag_bits=3,
                  states=dict(created=0, suspended=1, suspended_yield_from=2,
                              executing=4, cleared=5)),
}

# Thread state -> frame chain (docs/CPYTHON.md; the same numbers as src/lib/pyabi.c).
TSTATE_FRAME = {
    # minor: (ts_frame, cframe_current or None, fr_back)
    7: (24, None, 24), 8: (24, None, 24), 9: (24, None, 24), 10: (24, None, 24),
    11: (56, 8, 48), 12: (56, 0, 8), 13: (72, None, 8), 14: (72, None, 8),
    15: (72, None, 8),
}

# PyThreadState.dict (Include/cpython/pystate.h), measured: 3.7-3.12 keep the running loop
# there.
TSTATE_DICT = {7: 152, 8: 152, 9: 152, 10: 152, 11: 128, 12: 112}

# PySetObject (Include/setobject.h, Include/cpython/setobject.h): the same 3.7-3.15.
SET_MASK, SET_TABLE, SETENTRY = 32, 40, 16
WR_OBJECT = 16  # PyWeakReference.wr_object (Include/weakrefobject.h, Include/cpython/...)

# .AsyncioDebug: 13 uint64 (Include/internal/pycore_debug_offsets.h, 3.14+).
ASYNCIO_DEBUG_FIELDS = [
    "task.size", "task.task_name", "task.task_awaited_by", "task.task_is_task",
    "task.task_awaited_by_is_set", "task.task_coro", "task.task_node",
    "interp.size", "interp.asyncio_tasks_head",
    "thread.size", "thread.asyncio_running_loop", "thread.asyncio_running_task",
    "thread.asyncio_tasks_head",
]

# ---------------------------------------------------------------------------------------
results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))
    if VERBOSE or not ok:
        print("%s %s%s" % ("ok  " if ok else "FAIL", name, (": " + detail) if detail else ""))
    return ok


def note(text):
    print("note " + text)


def word(addr):
    return ctypes.c_uint64.from_address(addr).value


def i32(addr):
    return ctypes.c_int32.from_address(addr).value


def i8(addr):
    return ctypes.c_int8.from_address(addr).value


def u8(addr):
    return ctypes.c_uint8.from_address(addr).value


def set_keys(set_addr):
    """The non-NULL keys of a set's table, read raw (dummies included)."""
    mask = word(set_addr + SET_MASK)
    if mask > 1 << 20:
        return None
    table = word(set_addr + SET_TABLE)
    return [word(table + i * SETENTRY) for i in range(mask + 1) if word(table + i * SETENTRY)]


def dict_items_raw(d):
    """[(key, value)] of a combined-table dict, read the way pynames reads dicts
    (docs/CPYTHON.md, "Thread names"): PyDictObject.ma_keys at 32; 3.6-3.10 keys object
    dk_size at 8, dk_nentries at 32, indices at 40 (1/2/4/8 bytes each by dk_size);
    3.11+ dk_log2_size at 8, dk_log2_index_bytes at 9, dk_kind at 10, dk_nentries at 24,
    indices at 32; entries {hash, key, value} (general kind) follow the indices."""
    keys = word(d + 32)
    if V >= (3, 11):
        nentries = word(keys + 24)
        ent = keys + 32 + (1 << u8(keys + 9))
        esize = 24 if u8(keys + 10) == 0 else 16
    else:
        size = word(keys + 8)
        nentries = word(keys + 32)
        ib = 1 if size <= 0xff else 2 if size <= 0xffff else 4 if size <= 0xffffffff else 8
        ent = keys + 40 + size * ib
        esize = 24
    out = []
    for i in range(min(nentries, 1 << 16)):
        e = ent + i * esize
        k, v = (word(e + 8), word(e + 16)) if esize == 24 else (word(e), word(e + 8))
        if k and v:
            out.append((k, v))
    return out


def weakset_referents(ws):
    """What a WeakSet holds, read raw: ws.data (a set of weakrefs) -> wr_object."""
    import weakref
    ref_type = id(weakref.ref)
    out = set()
    for k in set_keys(id(ws.data)) or []:
        if word(k + 8) == ref_type or isinstance(ctypes.cast(k, ctypes.py_object).value,
                                                 weakref.ref):
            out.add(word(k + WR_OBJECT))
    return out


# ---------------------------------------------------------------------------------------
# ELF: find a named section in a loaded object, return its run-time address.
def first_load_vaddr(path):
    """p_vaddr (page-aligned) of the first PT_LOAD: the load bias (what dl_iterate_phdr
    gives as dlpi_addr) is the start of the mapping at file offset 0 minus this; 0x400000
    for a non-PIE executable such as Debian's python3.15, 0 for PIE and shared objects."""
    with open(path, "rb") as f:
        data = f.read(64)
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        f.seek(phoff)
        ph = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, _, _, p_vaddr = struct.unpack_from("<IIQQ", ph, i * phentsize)
        if p_type == 1:
            return p_vaddr & ~0xfff
    return 0


def elf_section(path, name):
    """(sh_addr, sh_offset, sh_size) of section `name` in the ELF file, or None."""
    with open(path, "rb") as f:
        data = f.read(64)
        if data[:4] != b"\x7fELF" or data[4:5] != b"\x02":
            return None
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        f.seek(shoff)
        sh = f.read(shentsize * shnum)
        secs = [struct.unpack_from("<IIQQQQIIQQ", sh, i * shentsize) for i in range(shnum)]
        strtab = secs[shstrndx]
        f.seek(strtab[4])
        names = f.read(strtab[5])
        for s in secs:
            end = names.index(b"\0", s[0])
            if names[s[0]:end] == name.encode():
                SHT_PROGBITS, SHF_ALLOC = 1, 2
                check("%s is SHT_PROGBITS and SHF_ALLOC" % name,
                      s[1] == SHT_PROGBITS and s[2] & SHF_ALLOC, "type %d flags %#x" % (s[1], s[2]))
                return s[3], s[4], s[5]
    return None


def mapped_objects():
    """{path: load base} from /proc/self/maps (the base = the mapping at file offset 0)."""
    out = {}
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            start = int(parts[0].split("-")[0], 16)
            if int(parts[2], 16) == 0 and parts[5] not in out:
                out[parts[5]] = start
    return out


def find_asyncio_debug():
    """(path, address, words) of the first loaded object with a .AsyncioDebug section."""
    for path, base in sorted(mapped_objects().items()):
        try:
            sec = elf_section(path, ".AsyncioDebug")
        except (IOError, OSError, ValueError, struct.error):
            continue
        if sec is None:
            continue
        addr = base - first_load_vaddr(path) + sec[0]
        n = sec[2] // 8
        words = [word(addr + 8 * i) for i in range(n)]
        with open(path, "rb") as f:
            f.seek(sec[1])
            disk = struct.unpack("<%dQ" % n, f.read(8 * n))
        check("AsyncioDebug in memory == on disk (%s)" % os.path.basename(path),
              list(disk) == words)
        return path, addr, words, sec[2]
    return None


def debug_offsets_words(n):
    """The first n words of _PyRuntime (_Py_DebugOffsets, 3.13+)."""
    rt = ctypes.c_uint64.in_dll(ctypes.pythonapi, "_PyRuntime")
    return [word(ctypes.addressof(rt) + 8 * i) for i in range(n)]


# ---------------------------------------------------------------------------------------
ASYNC_SRC = r'''
import asyncio

class World:
    pass

W = World()

async def leaf(fut):
    await fut

async def middle(fut):
    await leaf(fut)

async def child_main(fut):
    await middle(fut)

async def parent_main(child):
    await child

async def gather_main(futs):
    await asyncio.gather(*[asyncio.ensure_future(leaf(f)) for f in futs])

async def quick():
    return 1

async def cancelled_body(fut):
    await fut

async def observe(loop):
    # runs while the others are suspended: the running task is this one
    W.running = asyncio.current_task()
    W.running_coro = W.running.get_coro() if hasattr(W.running, "get_coro") else W.running._coro
    W.inside(loop)

if hasattr(asyncio, "TaskGroup"):
    async def taskgroup_main(fut, out):
        async with asyncio.TaskGroup() as tg:
            out.append(tg.create_task(leaf(fut)))

async def shield_main(fut, out):
    inner = asyncio.ensure_future(leaf(fut))
    out.append(inner)
    await asyncio.shield(inner)

async def eager_body():
    W.eager_inside(asyncio.current_task())
    await asyncio.sleep(0)

async def selfstate(holder):
    holder.append(1)
    W.executing_state = W.read_state(holder[0])
    await asyncio.sleep(0)
'''


def cast(addr):
    return ctypes.cast(addr, ctypes.py_object).value


def run():
    import asyncio
    ns = {}
    exec(compile(ASYNC_SRC, "<asyncio_layout>", "exec"), ns)
    W = ns["W"]
    L = LAYOUT.get(V)
    if L is None:
        note("no layout row for %d.%d" % V)
        return
    import _asyncio
    import asyncio.tasks as at
    TaskC = _asyncio.Task
    check("asyncio.Task is the C Task", asyncio.Task is TaskC)

    dbg = None
    if V >= (3, 14):
        found = find_asyncio_debug()
        if not check(".AsyncioDebug section found", found is not None):
            return
        path, addr, words, secsize = found
        note(".AsyncioDebug in %s, %d bytes: %s" % (path, secsize, words))
        check(".AsyncioDebug is 104 bytes (13 words)", secsize == 104, "%d" % secsize)
        dbg = dict(zip(ASYNCIO_DEBUG_FIELDS, words))
        # structure sizes
        check("AsyncioDebug task.size == Task.__basicsize__",
              dbg["task.size"] == TaskC.__basicsize__,
              "%d vs %d" % (dbg["task.size"], TaskC.__basicsize__))
        for k in ("task.task_name", "task.task_awaited_by", "task.task_is_task",
                  "task.task_awaited_by_is_set", "task.task_coro", "task.task_node"):
            check("AsyncioDebug %s < task.size" % k, dbg[k] < dbg["task.size"])
        check("AsyncioDebug interp.asyncio_tasks_head < interp.size",
              dbg["interp.asyncio_tasks_head"] + 16 <= dbg["interp.size"])
        for k in ("thread.asyncio_running_loop", "thread.asyncio_running_task",
                  "thread.asyncio_tasks_head"):
            check("AsyncioDebug %s < thread.size" % k, dbg[k] + 8 <= dbg["thread.size"])
        rt = debug_offsets_words(32)
        check("_Py_DebugOffsets cookie", struct.pack("<Q", rt[0]) == b"xdebugpy")
        # interpreter_state.size is word 6 in 3.14 and 3.15; thread_state.size word 22
        check("AsyncioDebug interp.size == _Py_DebugOffsets interpreter_state.size",
              dbg["interp.size"] == rt[6], "%d vs %d" % (dbg["interp.size"], rt[6]))
        note("AsyncioDebug thread.size %d, _Py_DebugOffsets thread_state.size %d"
             % (dbg["thread.size"], rt[22]))
        check("AsyncioDebug thread.size >= _Py_DebugOffsets thread_state.size",
              dbg["thread.size"] >= rt[22])
        for a, b in (("task.task_name", "name"), ("task.task_coro", "coro"),
                     ("task.task_awaited_by", "awaited_by"), ("task.task_is_task", "is_task"),
                     ("task.task_awaited_by_is_set", "awaited_by_is_set"),
                     ("task.task_node", "node"), ("task.size", "task_size")):
            check("AsyncioDebug %s == documented %s" % (a, b), dbg[a] == L[b],
                  "%d vs %d" % (dbg[a], L[b]))
    else:
        check("Task.__basicsize__ == documented", TaskC.__basicsize__ == L["task_size"],
              "%d vs %d" % (TaskC.__basicsize__, L["task_size"]))

    OFF = dict(L)
    if dbg:
        OFF.update(name=dbg["task.task_name"], coro=dbg["task.task_coro"],
                   awaited_by=dbg["task.task_awaited_by"], is_task=dbg["task.task_is_task"],
                   awaited_by_is_set=dbg["task.task_awaited_by_is_set"],
                   node=dbg["task.task_node"])

    def task_word(t, f):
        return word(id(t) + OFF[f])

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    def tstate():
        f = ctypes.pythonapi.PyThreadState_Get
        f.restype = ctypes.c_void_p
        return f()

    def read_state(coro):
        return i8(id(coro) + L["gi_frame_state"]) if "gi_frame_state" in L else None
    W.read_state = read_state

    futs = [loop.create_future() for _ in range(3)]
    child = loop.create_task(ns["child_main"](futs[0]), **({"name": "child"} if V >= (3, 8) else {}))
    parent = loop.create_task(ns["parent_main"](child), **({"name": "parent"} if V >= (3, 8) else {}))
    gath = loop.create_task(ns["gather_main"](futs[1:3]))
    done = loop.create_task(ns["quick"]())
    canc = loop.create_task(ns["cancelled_body"](loop.create_future()))
    holder = []
    selfc = ns["selfstate"](holder)
    holder.append(selfc)
    created_coro = ns["quick"]()
    created_state = read_state(created_coro)
    loop.create_task(selfc)
    for _ in range(5):
        loop.run_until_complete(asyncio.sleep(0))
    canc.cancel()
    for _ in range(3):
        loop.run_until_complete(asyncio.sleep(0))

    # --- TaskObj fields ---------------------------------------------------------------
    if "--discover" in sys.argv[1:]:
        # where the pointers sit, found by scanning (to fill LAYOUT for a new version)
        size = type(child).__basicsize__
        targets = {"loop": id(loop), "coro": id(child.get_coro() if hasattr(child, "get_coro") else child._coro),
                   "fut_waiter": id(futs[0]), "name": id(child.get_name()) if V >= (3, 8) else -1,
                   "context": id(child.get_context()) if hasattr(child, "get_context") else -1}
        found = dict((k, [o for o in range(0, size, 8) if word(id(child) + o) == v])
                     for k, v in targets.items())
        st = [o for o in range(0, size, 4) if i32(id(child) + o) == 0 and i32(id(done) + o) == 2
              and i32(id(canc) + o) == 1]
        note("discover %d.%d task size %d: %s fut_state %s" % (V + (size, found, st)))
        cc = child.get_coro() if hasattr(child, "get_coro") else child._coro
        if cc.cr_frame is not None and V >= (3, 11):
            gif = word(id(cc.cr_frame) + 24) - id(cc)
            dc = done.get_coro() if hasattr(done, "get_coro") else done._coro
            cands = [(o, i8(id(created_coro) + o), i8(id(cc) + o), i8(id(dc) + o))
                     for o in range(16, gif)
                     if len(set([i8(id(created_coro) + o), i8(id(cc) + o), i8(id(dc) + o)])) == 3]
            note("discover gen: gi_iframe %d, basicsize %d, state candidates (off, created, "
                 "suspended, finished) %s" % (gif, type(cc).__basicsize__, cands))
    for t, label in ((child, "child"), (parent, "parent"), (gath, "gather"), (done, "done")):
        coro = t.get_coro() if hasattr(t, "get_coro") else t._coro
        check("task_loop (%s)" % label, task_word(t, "loop") == id(loop))
        check("task_coro (%s)" % label, task_word(t, "coro") == id(coro))
    check("task_fut_waiter: parent waits on child task", task_word(parent, "fut_waiter") == id(child))
    check("task_fut_waiter: child waits on its future", task_word(child, "fut_waiter") == id(futs[0]))
    check("task_fut_waiter: gather task waits on the _GatheringFuture",
          type(cast(task_word(gath, "fut_waiter"))).__name__ == "_GatheringFuture")
    check("fut_state pending == 0", i32(id(child) + OFF["fut_state"]) == 0)
    check("fut_state finished == 2", i32(id(done) + OFF["fut_state"]) == 2,
          "%d" % i32(id(done) + OFF["fut_state"]))
    check("fut_state cancelled == 1", i32(id(canc) + OFF["fut_state"]) == 1,
          "%d (done %s cancelled %s)" % (i32(id(canc) + OFF["fut_state"]), canc.done(), canc.cancelled()))
    check("fut_state of a pending Future at the same offset",
          i32(id(futs[0]) + OFF["fut_state"]) == 0)  # still pending: same offset in FutureObj
    if OFF["name"] is not None:
        check("task_name (explicit name)", task_word(child, "name") == id(child.get_name()))
        nm = cast(task_word(gath, "name"))
        note("default task_name before get_name(): %s %r" % (type(nm).__name__, nm))
        check("task_name default is str or int", isinstance(nm, (str, int)))
        gn = gath.get_name()
        nm2 = cast(task_word(gath, "name"))
        check("task_name after get_name() is the str", nm2 == gn and isinstance(nm2, str),
              "%r vs %r" % (nm2, gn))
        if isinstance(nm, int):
            check("default int name formats as get_name()", "Task-%d" % nm == gn)
    if OFF.get("context") is not None and hasattr(child, "get_context"):
        check("task_context", task_word(child, "context") == id(child.get_context()))

    if V >= (3, 14):
        check("task_is_task == 1", u8(id(child) + OFF["is_task"]) == 1)
        check("task_awaited_by (child awaited by parent)", task_word(child, "awaited_by") == id(parent))
        check("task_awaited_by_is_set == 0 for one awaiter", u8(id(child) + OFF["awaited_by_is_set"]) == 0)
        gf = cast(task_word(gath, "fut_waiter"))
        kids = list(gf._children)
        check("gather children awaited_by == the gathering task",
              all(task_word(k, "awaited_by") == id(gath) for k in kids),
              "%s vs %x" % ([hex(task_word(k, "awaited_by")) for k in kids], id(gath)))
        check("task_awaited_by NULL for the top task", task_word(parent, "awaited_by") == 0)
        # a task awaited by two tasks: a set
        class SubTask(TaskC):
            pass
        subf = loop.create_future()
        subt = SubTask(ns["leaf"](subf), loop=loop, name="sub")
        loop.run_until_complete(asyncio.sleep(0))
        shared_fut = loop.create_future()
        shared = loop.create_task(ns["leaf"](shared_fut), name="shared")
        w1 = loop.create_task(ns["parent_main"](shared), name="w1")
        w2 = loop.create_task(ns["parent_main"](shared), name="w2")
        for _ in range(3):
            loop.run_until_complete(asyncio.sleep(0))
        isset = u8(id(shared) + OFF["awaited_by_is_set"])
        check("task_awaited_by_is_set == 1 for two awaiters", isset == 1)
        if isset:
            ab = task_word(shared, "awaited_by")
            check("task_awaited_by set holds both awaiters (raw set read)",
                  set(set_keys(ab)) >= {id(w1), id(w2)} and type(cast(ab)) is set)
        tgf, tgout = loop.create_future(), []
        tgp = loop.create_task(ns["taskgroup_main"](tgf, tgout), name="tg-parent")
        shf, shout = loop.create_future(), []
        shp = loop.create_task(ns["shield_main"](shf, shout), name="shield-parent")
        for _ in range(3):
            loop.run_until_complete(asyncio.sleep(0))
        check("TaskGroup child awaited_by == the task in `async with`",
              tgout and task_word(tgout[0], "awaited_by") == id(tgp))
        check("shield(inner): inner awaited_by == the awaiting task",
              shout and task_word(shout[0], "awaited_by") == id(shp),
              "%x vs %x" % (task_word(shout[0], "awaited_by") if shout else 0, id(shp)))
        tgf.set_result(None)
        shf.set_result(None)
        loop.run_until_complete(asyncio.gather(tgp, shp))
        shared_fut.set_result(None)
        loop.run_until_complete(asyncio.gather(w1, w2))
        # llist_node {next, prev}: walk this thread's task list
        ts = tstate()
        head = ts + dbg["thread.asyncio_tasks_head"]
        seen, n = set(), word(head)
        while n and n != head and len(seen) < 1 << 16:
            seen.add(n - OFF["node"])
            n = word(n)
        check("thread task list closed (back at head)", n == head)
        live = set(id(t) for t in asyncio.all_tasks(loop))
        check("thread task list (raw) == all_tasks(loop)", live <= seen,
              "%d raw, %d live, missing %d" % (len(seen), len(live), len(live - seen)))
        note("thread task list: %d raw nodes, %d from all_tasks()" % (len(seen), len(live)))
        sub = [t for t in asyncio.all_tasks(loop) if type(t) is not TaskC]
        check("a Task subclass instance is on the thread list too", all(id(t) in seen for t in sub),
              "%d subclass tasks" % len(sub))
        check("task_node.prev of the first task is the head",
              not seen or word(word(head) + 8) == head)
        interp = word(ts + rt[25])  # thread_state.interp, word 25 in 3.14/3.15
        ih = interp + dbg["interp.asyncio_tasks_head"]
        nx, pv = word(ih), word(ih + 8)
        check("interpreter task list head is a list (empty: points to itself)",
              nx != 0 and pv != 0, "next %x prev %x head %x" % (nx, pv, ih))

    if V < (3, 14):
        # parents before 3.14 (no awaited_by): what links a child to the task awaiting it
        gf = cast(task_word(gath, "fut_waiter"))
        kids = list(getattr(gf, "_children", []))
        check("gather: the parent's fut_waiter (_GatheringFuture)._children holds the children",
              len(kids) == 2 and all(isinstance(k, TaskC) for k in kids))
        if V >= (3, 11):
            tgf, tgout = loop.create_future(), []
            tgp = loop.create_task(ns["taskgroup_main"](tgf, tgout))
            for _ in range(3):
                loop.run_until_complete(asyncio.sleep(0))
            cbs = [cb for cb in (getattr(tgout[0], "_callbacks", None) or [])]
            owners = [getattr(getattr(c[0] if isinstance(c, tuple) else c, "__self__", None),
                              "_parent_task", None) for c in cbs]
            check("TaskGroup (3.11-3.13): a child's done callback is the group's bound "
                  "_on_task_done, whose _parent_task is the parent (python-level)",
                  tgp in owners or _tg_owner(tgout[0]) is tgp)
            tgf.set_result(None)
            loop.run_until_complete(tgp)

    if V < (3, 14):
        shf, shout = loop.create_future(), []
        shp = loop.create_task(ns["shield_main"](shf, shout))
        for _ in range(3):
            loop.run_until_complete(asyncio.sleep(0))
        outer = cast(task_word(shp, "fut_waiter"))
        cells = []
        for r in gc.get_referents(shout[0]):
            for c in (getattr(r, "__closure__", None) or ()):
                cells.append(c.cell_contents)
            if isinstance(r, list):  # fut_callbacks: (callback, context) pairs (3.7+)
                for cb in r:
                    f = cb[0] if isinstance(cb, tuple) else cb
                    cells.extend(c.cell_contents for c in (getattr(f, "__closure__", None) or ()))
        check("shield (<= 3.13): the awaiting task's fut_waiter is the outer future, which "
              "the inner task's done callback closes over (python-level)",
              any(c is outer for c in cells))
        shf.set_result(None)
        loop.run_until_complete(shp)

    # --- all tasks ----------------------------------------------------------------
    check("sys.modules['_asyncio'] md_dict at +16 is its __dict__ (PyModuleObject)",
          word(id(sys.modules["_asyncio"]) + 16) == id(_asyncio.__dict__))
    live = set(id(t) for t in asyncio.all_tasks(loop))
    if V <= (3, 11):
        ws = _asyncio._all_tasks
        check("_asyncio._all_tasks is asyncio.tasks._all_tasks", ws is at._all_tasks)
        check("_all_tasks is a WeakSet", type(ws).__name__ == "WeakSet")
        raw = weakset_referents(ws)
        check("WeakSet read raw (data -> weakref -> wr_object) covers all_tasks()", live <= raw,
              "%d raw, %d live" % (len(raw), len(live)))
    elif V <= (3, 13):
        ws, eager = _asyncio._scheduled_tasks, _asyncio._eager_tasks
        check("_asyncio._scheduled_tasks is asyncio.tasks._scheduled_tasks", ws is at._scheduled_tasks)
        check("_eager_tasks is a set", type(eager) is set)
        raw = weakset_referents(ws) | set(set_keys(id(eager)) or [])
        check("_scheduled_tasks (raw) + _eager_tasks (raw) covers all_tasks()", live <= raw,
              "%d raw, %d live" % (len(raw), len(live)))
    else:
        check("_asyncio has no _current_tasks on 3.14+", not hasattr(_asyncio, "_current_tasks"))
        check("_asyncio exports no task set on 3.14+ (only the C lists hold native tasks)",
              not hasattr(_asyncio, "_scheduled_tasks") and not hasattr(_asyncio, "_all_tasks"))

    # --- coroutine object and the awaited-object walk -----------------------------------
    ccoro = child.get_coro() if hasattr(child, "get_coro") else child._coro
    chain = []
    c = ccoro
    while c is not None and type(c).__name__ == "coroutine":
        chain.append(c)
        c = c.cr_await
    check("python chain child_main->middle->leaf", [x.cr_code.co_name for x in chain]
          == ["child_main", "middle", "leaf"])
    gen_size = type(ccoro).__basicsize__
    for x in chain:
        fr = x.cr_frame
        if "gi_frame" in L:
            check("gi_frame (%s)" % x.cr_code.co_name, word(id(x) + L["gi_frame"]) == id(fr))
        else:
            f_frame = word(id(fr) + 24)  # PyFrameObject.f_frame, 3.11+
            check("gi_iframe (%s)" % x.cr_code.co_name, f_frame - id(x) == L["gi_iframe"],
                  "%d" % (f_frame - id(x)))
            check("frame code (%s)" % x.cr_code.co_name,
                  (word(id(x) + L["gi_iframe"] + L["fr_code"]) & ~L.get("tag_bits", 0)) == id(x.cr_code))
        # raw awaited object
        yf = raw_yf(x, L)
        want = id(x.cr_await) if x.cr_await is not None else 0
        check("awaited object raw == cr_await (%s -> %s)" % (x.cr_code.co_name,
              type(x.cr_await).__name__), yf == want, "%x vs %x" % (yf or 0, want))
    note("coroutine basicsize %d" % gen_size)
    if "gi_frame" in L:
        dcoro = done.get_coro() if hasattr(done, "get_coro") else done._coro
        check("gi_frame NULL once the coroutine finished", word(id(dcoro) + L["gi_frame"]) == 0)
    if "gi_frame_state" in L:
        st = L["states"]
        suspended = i8(id(chain[0]) + L["gi_frame_state"])
        check("gi_frame_state created", created_state == st["created"], "%s" % created_state)
        check("gi_frame_state suspended at await",
              suspended == st.get("suspended_yield_from", st["suspended"]), "%d" % suspended)
        check("gi_frame_state executing (read from inside)",
              getattr(W, "executing_state", None) == st["executing"],
              "%s" % getattr(W, "executing_state", None))
        dcoro = done.get_coro()
        s = i8(id(dcoro) + L["gi_frame_state"])
        check("gi_frame_state finished coroutine is completed/cleared",
              s in (st.get("completed"), st["cleared"]), "%d" % s)
    created_coro.close()

    # --- running task -----------------------------------------------------------------
    def inside(lp):
        running = W.running
        if V <= (3, 13):
            ct = _asyncio._current_tasks
            check("_asyncio._current_tasks is asyncio.tasks._current_tasks", ct is at._current_tasks)
            check("_current_tasks[loop] is the running task", ct.get(lp) is running)
            raw = dict_items_raw(id(ct))
            check("_current_tasks read raw: (loop, task) among its entries",
                  (id(lp), id(running)) in raw, "%d entries" % len(raw))
            # the thread's running loop: 3.7-3.12 in the thread state's dict (PyThreadState.dict,
            # Include/cpython/pystate.h) under "__asyncio_running_event_loop__": a
            # _RunningLoopHolder {rl_loop at 16, rl_pid} on 3.7-3.11, the loop on 3.12
            if V <= (3, 12):
                tsd = word(tstate() + TSTATE_DICT[V[1]])
                ent = [v for k, v in dict_items_raw(tsd)
                       if cast(k) == "__asyncio_running_event_loop__"]
                got = (word(ent[0] + 16) if V <= (3, 11) else ent[0]) if ent else 0
                check("tstate dict (+%d) __asyncio_running_event_loop__ -> the loop"
                      % TSTATE_DICT[V[1]], got == id(lp))
            # the thread's running loop: 3.13 in _PyThreadStateImpl right after the
            # PyThreadState (_Py_DebugOffsets thread_state.size, word 19)
            if V == (3, 13):
                rt13 = debug_offsets_words(24)
                check("3.13 tstate asyncio_running_loop at thread_state.size (%d)" % rt13[19],
                      word(tstate() + rt13[19]) == id(lp))
        else:
            ts = tstate()
            check("tstate asyncio_running_task", word(ts + dbg["thread.asyncio_running_task"]) == id(running))
            check("tstate asyncio_running_loop", word(ts + dbg["thread.asyncio_running_loop"]) == id(lp))
        # the running task's coroutine frame is on this thread's frame chain
        ts = tstate()
        tsf, cfc, back = TSTATE_FRAME[V[1]]
        f = word(ts + tsf)
        if cfc is not None:
            f = word(f + cfc)
        chain_addrs = []
        while f and len(chain_addrs) < 1000:
            chain_addrs.append(f)
            f = word(f + back)
        rc = W.running_coro
        target = (word(id(rc) + L["gi_frame"]) if "gi_frame" in L else id(rc) + L["gi_iframe"])
        check("running task's coroutine frame is on the thread's frame chain", target in chain_addrs,
              "depth %s of %d" % (chain_addrs.index(target) if target in chain_addrs else "-",
                                  len(chain_addrs)))
    W.inside = inside
    loop.run_until_complete(ns["observe"](loop))

    # --- an eager task's first step (3.12+): where the running task and the task are ---------
    if V >= (3, 12):
        def eager_inside(t):
            W.eager_seen = True
            if V <= (3, 13):
                check("eager task: in _eager_tasks (raw set) during its first step",
                      id(t) in (set_keys(id(_asyncio._eager_tasks)) or []))
                check("eager task: _current_tasks[loop] is it during its first step",
                      _asyncio._current_tasks.get(loop) is t)
            else:
                ts = tstate()
                check("eager task: tstate asyncio_running_task is it during its first step",
                      word(ts + dbg["thread.asyncio_running_task"]) == id(t))
        W.eager_inside = eager_inside

        async_factory = getattr(asyncio, "eager_task_factory", None)

        def start_eager():
            loop.set_task_factory(async_factory)
            try:
                return loop.create_task(ns["eager_body"]())
            finally:
                loop.set_task_factory(None)

        # create_task with an eager factory needs a running loop: start it from a task
        W.eager_seen = False
        et = loop.run_until_complete(loop.create_task(_as_coro(start_eager)))
        loop.run_until_complete(et)
        check("eager task ran its first step eagerly", W.eager_seen)

    for f in futs:
        f.set_result(None)
    loop.run_until_complete(asyncio.gather(child, parent, gath, return_exceptions=True))
    if V >= (3, 14):
        subf.set_result(None)
        loop.run_until_complete(subt)
    loop.close()


def _tg_owner(task):
    """The TaskGroup parent of a task through its first callback (fut_callback0 is not
    exposed to Python; gc.get_referents finds the bound method)."""
    for r in gc.get_referents(task):
        owner = getattr(r, "__self__", None)
        if type(owner).__name__ == "TaskGroup":
            return owner._parent_task
    return None


def _as_coro(fn):
    """fn() as a coroutine object (no `async def` outside ASYNC_SRC, for 2.7's parser)."""
    ns = {"fn": fn}
    exec("async def _c():\n    return fn()\n", ns)
    return ns["_c"]()


def raw_yf(coro, L):
    """The object a suspended coroutine awaits, read the way the sampler would."""
    import dis
    kind = L["state_kind"]
    if kind in ("f_stacktop", "f_stackdepth"):
        f = word(id(coro) + L["gi_frame"])
        if not f:
            return 0
        lasti = i32(f + L["f_lasti"])
        if lasti < 0:
            return 0
        code = cast(word(f + L["f_code"])).co_code
        nxt = lasti + 2 if kind == "f_stacktop" else (lasti + 1) * 2
        if ord(code[nxt:nxt + 1]) != dis.opmap["YIELD_FROM"]:
            return 0
        if kind == "f_stacktop":
            top = word(f + L["f_stacktop"])
            return word(top - 8) if top else 0
        depth = i32(f + L["f_stackdepth"])
        return word(word(f + L["f_valuestack"]) + 8 * (depth - 1)) if depth > 0 else 0
    fr = id(coro) + L["gi_iframe"]
    state = i8(id(coro) + L["gi_frame_state"])
    if kind == "resume":
        st = L["states"]
        if state >= st["cleared"] or state == st["created"]:
            return 0
        # the instruction after prev_instr must be a RESUME (after an await: oparg >= 2)
        nxt = word(fr + L["fr_prev_instr"]) + 2
        if u8(nxt) not in _resume_opcodes() or u8(nxt + 1) < 2:
            return 0
        top = i32(fr + L["fr_stacktop"])
        return word(fr + L["fr_localsplus"] + 8 * (top - 1)) if top > 0 else 0
    if state != L["states"]["suspended_yield_from"]:
        return 0
    if "fr_stackpointer" in L:
        sp = word(fr + L["fr_stackpointer"])
        return word(sp + 8 * L["yf_index"]) & ~L["tag_bits"]
    top = i32(fr + L["fr_stacktop"])
    return word(fr + L["fr_localsplus"] + 8 * (top - 1)) if top > 0 else 0


def _resume_opcodes():
    """RESUME and the opcodes that stand for it in a running frame: 3.11's quickened
    RESUME_QUICK (numbered among the specialised instructions, which take the free
    opcode numbers in order, as dis does), 3.12's INSTRUMENTED_RESUME."""
    import opcode
    ops = set([opcode.opmap["RESUME"]])
    if "INSTRUMENTED_RESUME" in opcode.opmap:
        ops.add(opcode.opmap["INSTRUMENTED_RESUME"])
    spec = getattr(opcode, "_specialized_instructions", None)
    if spec and "RESUME_QUICK" in spec:
        free = [i for i, n in enumerate(opcode.opname) if n.startswith("<")]
        ops.add(dict(zip(spec, free))["RESUME_QUICK"])
    return ops


def main():
    if V < (3, 7):
        if V >= (3, 6):
            import asyncio
            import _asyncio
            note("3.6: _asyncio.Task exists but has no task_name, and the module's task "
                 "WeakSet and {loop: task} dict are static C variables it does not export "
                 "(only the classmethods Task.all_tasks()/current_task() reach them); "
                 "out of scope (3.7-3.15 only)")
            check("3.6 has a C Task", asyncio.Task is _asyncio.Task)
            check("3.6 Task has no get_name", not hasattr(asyncio.Task, "get_name"))
            check("3.6 _asyncio exports no task set or current-task dict",
                  not [n for n in dir(_asyncio) if n.startswith("_") and "task" in n.lower()])
        else:
            note("%s: no asyncio" % VERSION)
            try:
                import asyncio  # noqa: F401
                check("2.7 has no asyncio", False)
            except ImportError:
                check("2.7 has no asyncio", True)
        print("asyncio_layout %s: %d checks, %d failed, out of scope"
              % (VERSION, len(results), sum(1 for r in results if not r[1])))
        return 2
    gc.disable()  # keep the objects where they are while reading them
    try:
        run()
    except Exception as e:  # a crash of the probe itself is a failure, not a result
        import traceback
        traceback.print_exc()
        check("probe ran to the end", False, repr(e))
    failed = sum(1 for r in results if not r[1])
    print("asyncio_layout %s: %d checks, %d failed" % (VERSION, len(results), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
