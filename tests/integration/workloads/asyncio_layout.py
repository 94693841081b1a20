"""What the interpreter itself says of its asyncio layout, for test_asyncio_layout.py.

Sleeps ~0.3 s, then (unless the argument is "never") imports asyncio and runs a small
event loop for ~0.5 s.  Prints one JSON line: whether _asyncio is built into the
interpreter (told without importing it), and after the import the file that holds it
(its extension module, or the executable when built in), _asyncio.Task's basic size,
and the offsets in this thread's thread state that hold the running task while one
runs (found by reading the thread state with ctypes); and what the descriptors open at
the end name (the library's look for the layout must leave none on the files it read)."""

import json
import os
import sys
import time


def open_files():
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink("/proc/self/fd/" + fd))
        except OSError:   # the listing's own descriptor, closed by now
            pass
    return sorted(names)


report = {"builtin": "_asyncio" in sys.builtin_module_names,
          "executable": os.path.realpath(sys.executable)}
time.sleep(0.3)
if sys.argv[1:] != ["never"]:
    import asyncio
    import ctypes

    import _asyncio

    report["object"] = getattr(_asyncio, "__file__", None) or os.path.realpath(
        sys.executable)
    report["task_size"] = _asyncio.Task.__basicsize__

    def running_task_at():
        """Offsets (8-aligned, in the first 1200 bytes: past every 3.14/3.15
        _PyThreadStateImpl) of this thread's state that hold the running task."""
        get = ctypes.pythonapi.PyThreadState_Get
        get.restype = ctypes.c_void_p
        base = get()
        want = id(asyncio.current_task())
        words = (ctypes.c_uint64 * 150).from_address(base)
        return [8 * i for i in range(150) if words[i] == want]

    async def work(n):
        await asyncio.sleep(0.01 * n)
        return running_task_at()

    async def main():
        found = []
        end = time.time() + 0.5
        while time.time() < end:
            found += await asyncio.gather(*[work(n) for n in range(5)])
            sum(range(20000))
        return found

    seen = asyncio.run(main())
    # Every task saw the same offsets.
    report["running_task_at"] = sorted(set(tuple(s) for s in seen))
report["open_files"] = open_files()
print(json.dumps(report))
