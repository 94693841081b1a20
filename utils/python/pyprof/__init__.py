"""pyprof: spans in pyprof's log, beside the CPU samples.

A span is a named stretch of one thread's time: a request, a query, a job.  Under the
library (LD_PRELOAD=libpyprof.so) each span's start and end are written into the
process's pyprof log on the samples' clock, so the tool can show the CPU profile of each
span.  Without the library every call here is a cheap no-op that writes nothing anywhere.

    import pyprof

    with pyprof.span("db", table="users"):       # a context manager
        ...

    @pyprof.span("render")                        # a decorator (functions and methods)
    def render(page): ...

    pyprof.start("job", id=42)                    # or by hand, on the same thread
    ...
    pyprof.stop(result="ok")

Spans nest per thread.  Each carries OSProfiler's three ids as text: `trace_id` (its own,
a new UUID), `parent_id` (the enclosing span's trace_id; for a trace's first span its
base_id) and `base_id` (the trace's, inherited from the first span of the thread's
nesting), so spans and OSProfiler's trace points (the `pyprof://` driver in
pyprof.osprofiler_driver) join into one tree.  Keyword arguments are the span's info,
written as a JSON object (values JSON cannot hold are written as their str()).  An
exception that leaves a span ends it (its stop carries {"etype": type name, "message":
str}) and goes on unchanged.

After os.fork the child records nothing for the spans it inherited from its parent (they
are the parent's, in the parent's log); spans it starts inside them keep their ids as
parent_id and base_id.

Pure Python, for CPython 2.7 and 3.6+.  The library's functions are found with ctypes in
the process's global symbols the first time a span is started.
"""

import binascii
import functools
import json
import os
import sys
import threading

__all__ = ["span", "start", "stop", "active"]

_PY2 = sys.version_info[0] == 2
try:
    from threading import get_ident as _get_ident
except ImportError:  # 2.7
    from thread import get_ident as _get_ident
_text_type = type(u"")

# The library's functions: None until looked up, then a tuple (span_start, span_stop,
# active), or False when the process does not have them (no library: every call no-op).
_lib = None

# Fork generations: on 3.7+ a counter bumped in each fork child; before, the pid.
if hasattr(os, "register_at_fork"):
    _forks = [0]

    def _after_fork():
        _forks[0] += 1

    os.register_at_fork(after_in_child=_after_fork)

    def _gen():
        return _forks[0]
else:
    _gen = os.getpid


def _find():
    """Looks the library's functions up once.  Never raises."""
    global _lib
    try:
        import ctypes
        # The global namespace: the executable and what it loaded, the preloaded library
        # among them (a statically linked python as well).  PyDLL: the calls keep the GIL;
        # they never block.
        glob = ctypes.PyDLL(None)
        start_fn = glob.pyprof_span_start
        stop_fn = glob.pyprof_span_stop
        active_fn = glob.pyprof_active
        start_fn.restype = ctypes.c_ulonglong
        start_fn.argtypes = [ctypes.c_char_p] * 5 + [ctypes.c_ulonglong]
        stop_fn.restype = ctypes.c_int
        stop_fn.argtypes = [ctypes.c_ulonglong, ctypes.c_char_p]
        active_fn.restype = ctypes.c_int
        active_fn.argtypes = []
        _lib = (start_fn, stop_fn, active_fn)
    except Exception:
        _lib = False
    return _lib


def active():
    """True while this process's spans are being recorded (the library is loaded and
    profiling this process)."""
    lib = _lib if _lib is not None else _find()
    if not lib:
        return False
    try:
        return bool(lib[2]())
    except Exception:
        return False


# ---- ids -------------------------------------------------------------------------------

# Random ids, made 64 at a time; never shared with a fork child (which would make the
# same ones).
_ids = {"gen": None, "pool": []}
_POOL = 64
# The version (4) and variant (10xx) bits of a random UUID, set in every byte at once.
_VERSION = bytes(bytearray((x & 0x0F) | 0x40 for x in range(256)))
_VARIANT = bytes(bytearray((x & 0x3F) | 0x80 for x in range(256)))
# Where each of a UUID's 32 hex digits goes in its text "8-4-4-4-12" and a separator.
_DIGIT_AT = [j + (j >= 8) + (j >= 12) + (j >= 16) + (j >= 20) for j in range(32)]


def _new_id():
    """A random (version 4) UUID as ASCII bytes.  Any thread: the pool is a list, whose
    pop() the GIL makes atomic; a thread that finds it empty makes a new one."""
    ids = _ids
    gen = _gen()
    if ids["gen"] == gen:
        try:
            return ids["pool"].pop()
        except IndexError:
            pass
    raw = bytearray(os.urandom(16 * _POOL))
    raw[6::16] = raw[6::16].translate(_VERSION)
    raw[8::16] = raw[8::16].translate(_VARIANT)
    h = binascii.hexlify(bytes(raw))
    # All the ids' texts at once, a digit position at a time (strided copies: a third of
    # the time of cutting and joining each id).
    text = bytearray(b"-" * (37 * _POOL))
    for j, at in enumerate(_DIGIT_AT):
        text[at::37] = h[j::32]
    text[36::37] = b" " * _POOL
    pool = bytes(text).split()
    ids["pool"] = pool
    ids["gen"] = gen
    return pool.pop()


# ---- text for the C functions -------------------------------------------------------------


def _bytes(s):
    """`s` as UTF-8 bytes for a char * argument (None stays None).  Never raises."""
    if s is None or isinstance(s, bytes):
        return s
    try:
        if not isinstance(s, _text_type):
            s = str(s)
            if _PY2:
                return s
        return s.encode("utf-8", "replace")
    except Exception:
        return b"?"


def _safe_str(v):
    try:
        return _text_type(v)
    except Exception:
        try:
            return repr(v)
        except Exception:
            return "?"


# The longest info the log keeps (format.h's PYPROF_SPAN_INFO_MAX); the library would cut
# a longer one anywhere, so a longer object is replaced here by a valid one.
_INFO_MAX = 4096


def _json(info):
    """The info dict as a JSON object in ASCII bytes, or None when empty.  Never raises:
    what json cannot write goes as its str(), a dict json refuses whole (keys it cannot
    take, a cycle, a NaN or infinity, which strict JSON has not) goes key by key as
    text, and an object longer than the log keeps becomes {"truncated": the start of its
    text}."""
    if not info:
        return None
    try:
        s = json.dumps(info, default=_safe_str, separators=(",", ":"), allow_nan=False)
    except Exception:
        try:
            s = json.dumps(dict((_safe_str(k), _safe_str(v)) for k, v in info.items()),
                           separators=(",", ":"))
        except Exception:
            return None
    if len(s) > _INFO_MAX:
        cut = _INFO_MAX - 64
        while True:
            t = json.dumps({"truncated": s[:cut]}, separators=(",", ":"))
            if len(t) <= _INFO_MAX:
                s = t
                break
            cut //= 2
    return s if _PY2 else s.encode("ascii")


def _error_info(exc_type, exc):
    info = {"etype": getattr(exc_type, "__name__", None) or _safe_str(exc_type)}
    info["message"] = _safe_str(exc)
    return info


# ---- the per-thread stack -----------------------------------------------------------------


class _Frame(object):
    """One open span: its id in the log (0: not recorded), its OSProfiler ids (bytes), the
    fork generation it was started in, whether it was stopped."""

    __slots__ = ("sid", "trace_id", "base_id", "gen", "done")

    def __init__(self, sid, trace_id, base_id, gen):
        self.sid = sid
        self.trace_id = trace_id
        self.base_id = base_id
        self.gen = gen
        self.done = False


class _Local(threading.local):
    def __init__(self):
        self.stack = []


_local = _Local()


def _push(name, info, trace_id=None, parent_id=None, base_id=None):
    """Starts a span on this thread (the library is loaded): records it and pushes its
    frame, which it returns.  `info` is a dict, or its JSON already made.  OSProfiler's
    ids (bytes) are the enclosing span's when not given.  While nothing is recorded
    (sampling paused, or this process not profiled) a span without ids of its own gets
    none and writes nothing: a frame for stop() to pair with, which spans started inside
    it look through to the span around it."""
    lib = _lib
    stack = _local.stack
    gen = _gen()
    while stack and stack[-1].done:  # stopped from another thread
        stack.pop()
    if trace_id is None and not lib[2]():
        frame = _Frame(0, None, None, gen)
        stack.append(frame)
        return frame
    top = None
    for f in reversed(stack):
        if f.trace_id is not None and not f.done:
            top = f
            break
    if base_id is None:
        if top is not None:
            base_id = top.base_id
            if parent_id is None:
                parent_id = top.trace_id
        else:
            base_id = _new_id()
    if parent_id is None:
        parent_id = base_id
    if trace_id is None:
        trace_id = _new_id()
    parent_span = top.sid if top is not None and top.gen == gen else 0
    if info is not None and not isinstance(info, bytes):
        info = _json(info)
    try:
        sid = lib[0](_bytes(name), trace_id, parent_id, base_id, info, parent_span)
    except Exception:
        sid = 0
    frame = _Frame(sid, trace_id, base_id, gen)
    stack.append(frame)
    return frame


def _end(frame, info):
    """Records the end of `frame` (once; never one of the parent's after a fork) with
    `info` (a dict, or its JSON already made).  Returns True when a stop was recorded."""
    if frame.done:
        return False
    frame.done = True
    if not frame.sid or frame.gen != _gen():
        return False
    if info is not None and not isinstance(info, bytes):
        info = _json(info)
    try:
        return bool(_lib[1](frame.sid, info))
    except Exception:
        return False


def _pop(frame, info):
    """Ends `frame` and takes it off this thread's stack, with any span still open inside
    it (ended first, without info).  A frame of another thread is ended where it is."""
    stack = _local.stack
    if frame in stack:
        while stack:
            top = stack.pop()
            if top is frame:
                break
            _end(top, None)
    return _end(frame, info)


def _start_traced(name, info, trace_id, parent_id, base_id):
    """Starts a span with OSProfiler's ids (text) on this thread (the osprofiler driver).
    Returns its id in the log (0: not recorded)."""
    lib = _lib if _lib is not None else _find()
    if not lib:
        return 0
    return _push(name, info, _bytes(trace_id) or None, _bytes(parent_id) or None,
                 _bytes(base_id) or None).sid


def _stop_traced(trace_id, info):
    """Ends this thread's open span of OSProfiler id `trace_id` (and those still open
    inside it).  False when there is none."""
    if not _lib:
        return False
    tid = _bytes(trace_id)
    for frame in reversed(_local.stack):
        if frame.trace_id == tid and not frame.done:
            return _pop(frame, info)
    return False


# ---- the API ------------------------------------------------------------------------------


def start(name, **info):
    """Starts span `name` on this thread, nested in the thread's innermost open span, with
    `info` as its JSON info.  Returns its id in the log, 0 when it was not recorded (no
    library, not profiling).  End it with stop() on the same thread."""
    lib = _lib if _lib is not None else _find()
    if not lib:
        return 0
    return _push(name, info).sid


def stop(**info):
    """Ends this thread's innermost open span (the one start() or a `with span` began
    last), with `info` as its stop's JSON info.  Returns True when the end was recorded;
    False when there was no open span or nothing is recorded."""
    if not _lib:
        return False
    stack = _local.stack
    while stack:
        frame = stack.pop()
        if not frame.done:
            return _end(frame, info)
    return False


class span(object):
    """A span named `name` with `info` (keyword arguments) as its JSON info: a context
    manager (`with pyprof.span("db"):`), or a decorator (`@pyprof.span("db")`, on
    functions, methods, classmethods and staticmethods; each call is one span).  Used
    bare, `@pyprof.span` names the span after the function."""

    __slots__ = ("name", "info", "_frames")

    def __new__(cls, name=None, **info):
        if callable(name) and not info and not isinstance(name, (str, bytes)):
            func = name
            self = object.__new__(cls)
            self.__init__(_func_name(func))
            return self(func)
        return object.__new__(cls)

    def __init__(self, name=None, **info):
        self.name = name
        self.info = info
        self._frames = []

    def __enter__(self):
        lib = _lib if _lib is not None else _find()
        if lib:
            self._frames.append((_get_ident(), _push(self.name, self.info)))
        return self

    def __exit__(self, exc_type, exc, tb):
        frames = self._frames
        if frames:
            # One span object may be entered by several threads at once: this thread's
            # last entry is the one it leaves.
            me = _get_ident()
            for i in range(len(frames) - 1, -1, -1):
                if frames[i][0] == me:
                    frame = frames.pop(i)[1]
                    _pop(frame, _error_info(exc_type, exc) if exc_type is not None else None)
                    break
        return False

    def __call__(self, func):
        if isinstance(func, (classmethod, staticmethod)):
            return type(func)(self(func.__func__))
        name, info_json = self.name, _json(self.info)

        @functools.wraps(func)
        def traced(*args, **kwargs):
            lib = _lib if _lib is not None else _find()
            if not lib:
                return func(*args, **kwargs)
            frame = _push(name, info_json)
            try:
                result = func(*args, **kwargs)
            except BaseException:
                e_type, e = sys.exc_info()[:2]
                _pop(frame, _error_info(e_type, e))
                raise
            _pop(frame, None)
            return result

        return traced


def _func_name(func):
    return (getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
            or _safe_str(func))
