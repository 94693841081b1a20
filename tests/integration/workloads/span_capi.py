"""Shared by the span workloads that call the library's C functions directly (ctypes),
not through the pyprof package: pyprof_span_start and pyprof_span_stop as exported by
the preloaded library (include/pyprof/pyprof.h)."""
import ctypes

_lib = ctypes.PyDLL(None)
start = _lib.pyprof_span_start
start.restype = ctypes.c_ulonglong
start.argtypes = [ctypes.c_char_p] * 5 + [ctypes.c_ulonglong]
stop = _lib.pyprof_span_stop
stop.restype = ctypes.c_int
stop.argtypes = [ctypes.c_ulonglong, ctypes.c_char_p]
