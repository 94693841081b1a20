/*
 * pyabi: everything pyprof knows about one CPython build's memory layout, and how to find
 * the interpreter in this process.  Owns the per-minor-version offset tables and the
 * addresses resolved from the interpreter's symbols.  Nothing here runs in the signal
 * handler except reads of the filled-in `pyabi` struct.
 */
#ifndef PYPROF_PYABI_H
#define PYPROF_PYABI_H

#include <stddef.h>
#include <stdint.h>

enum pyabi_frame_kind {
    PYABI_FRAME_OBJECT = 0, /* 2.7, 3.6-3.10: heap PyFrameObject chain (f_back) */
    PYABI_FRAME_INTERP = 1, /* 3.11+: _PyInterpreterFrame chain (previous) */
};

enum pyabi_lasti_kind {
    PYABI_LASTI_BYTES = 0,    /* int f_lasti in bytes (<= 3.9) */
    PYABI_LASTI_UNITS = 1,    /* int f_lasti in 2-byte code units (3.10) */
    PYABI_LASTI_INSTR_PTR = 2 /* pointer into co_code_adaptive (3.11+) */
};

enum pyabi_str_kind {
    PYABI_STR_BYTES27 = 0, /* 2.7 PyStringObject */
    PYABI_STR_PEP393 = 1,  /* 3.x compact/legacy unicode */
};

/* Offsets are in bytes; -1 where the version has no such field. */
typedef struct pyabi {
    int major, minor;
    unsigned long hex;       /* PY_VERSION_HEX, or built from the version string */
    char version[32];        /* "3.11.7" */

    /* Resolved addresses. */
    uintptr_t runtime;        /* &_PyRuntime (3.7+) */
    uintptr_t code_type;      /* &PyCode_Type */
    uintptr_t frame_type;     /* &PyFrame_Type (a heap frame's type on <= 3.10) */
    uintptr_t str_type;       /* &PyString_Type (2.7) or &PyUnicode_Type: names */
    uintptr_t bytes_type;     /* &PyString_Type (2.7) or &PyBytes_Type: line tables */
    uintptr_t gil_tstate;     /* 2.7/3.6: &_PyThreadState_Current */
    uintptr_t finalizing_var; /* 3.6: &_Py_Finalizing */
    int (*is_initialized)(void);          /* Py_IsInitialized (2.7/3.6) */
    void *(*interp_head)(void);           /* PyInterpreterState_Head (2.7/3.6) */

    /* _PyRuntime (3.7+) */
    int rt_initialized, rt_finalizing, rt_tss, rt_interp_head;
    /* PyInterpreterState / PyThreadState */
    int is_tstate_head, ts_next, ts_interp, ts_thread_id, ts_native_tid;
    int ts_frame;           /* tstate->frame (<=3.10), ->cframe (3.11/3.12), ->current_frame */
    int cframe_current;     /* _PyCFrame.current_frame (3.11/3.12), else -1 */
    /* Frames */
    int frame_kind, lasti_kind;
    int fr_back, fr_code, fr_lasti, fr_owner;
    /* Code objects */
    int co_firstlineno, co_filename, co_name, co_qualname, co_linetable, co_code_adaptive;
    int co_firsttraceable; /* _co_firsttraceable (3.11+): code units before the frame is
                            * complete (CPython's _PyFrame_IsIncomplete) */
    long co_basicsize; /* PyCode_Type.tp_basicsize expected */
    int linetable_kind; /* enum pyprof_linetable */
    /* Strings and bytes */
    int str_kind, uni_ascii_size, uni_compact_size, uni_data;
    int bytes_size, bytes_data; /* ob_size and data of the line-table object */
} pyabi;

/* Looks for CPython in the process: first with dlsym(RTLD_DEFAULT), then, when `late` is
 * set (called from an interpreter-init hook), through dl_iterate_phdr for an object named
 * libpython* whose symbols are not global (RTLD_LOCAL plugins).  Returns 1 and fills `a`
 * when a supported interpreter is found, 0 when there is no CPython here, and -1 with a
 * line in `err` when there is one pyprof cannot profile (unknown version, free-threaded
 * or debug build, layout check failed). */
int pyabi_find(pyabi *a, int late, char *err, size_t errlen);

/* Finds a symbol of the interpreter's object, including RTLD_LOCAL copies of libpython
 * (for hooks that must forward to the real function).  NULL when absent. */
void *pyabi_dlsym_python(const char *name);

#endif
