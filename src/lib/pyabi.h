/*
 * pyabi: everything pyprof knows about one CPython build's memory layout, and how to find
 * the interpreter in this process.  Owns the one per-minor-version table of offsets and
 * layout kinds (one row per minor: 2.7, 3.6 to 3.15; from 3.13 on, every offset the
 * interpreter publishes in its _Py_DebugOffsets is taken from it), read by the sample
 * path (thread states, frames, code objects, strings) and by pynames (dicts, instance
 * attributes, ints, the threading module), the offsets that are the same in every
 * supported version (the PYABI_* constants below), and the addresses resolved from the
 * interpreter's symbols.  Nothing here runs in the signal handler except reads of the filled-in
 * `pyabi` struct and of the constants.
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

/* How pynames reads a dict (docs/CPYTHON.md, "Thread names"). */
enum pyabi_dict_layout {
    PYABI_DICT_27 = 0,  /* ma_mask, ma_table of (hash, key, value) */
    PYABI_DICT_36 = 1,  /* 3.6-3.10 PyDictKeysObject: dk_size, dk_nentries, dk_indices */
    PYABI_DICT_311 = 2, /* 3.11+: dk_log2_size, dk_log2_index_bytes, dk_kind */
};

/* Where an instance keeps its attributes. */
enum pyabi_attrs_layout {
    PYABI_ATTRS_DICTOFFSET = 0,  /* the dict at obj + tp_dictoffset (2.7-3.10) */
    PYABI_ATTRS_MANAGED_311 = 1, /* managed dict or values pointer before the object */
    PYABI_ATTRS_MANAGED_312 = 2, /* PyDictOrValues before the object */
    PYABI_ATTRS_INLINE_313 = 3,  /* inline values after the header, else managed dict */
};

/* How an int's value is stored. */
enum pyabi_int_layout {
    PYABI_INT_27 = 0,    /* 2.7 PyIntObject (and PyLongObject with a signed ob_size) */
    PYABI_LONG_SIZE = 1, /* PyLongObject: ob_size is sign * digits */
    PYABI_LONG_TAG = 2,  /* 3.12+: lv_tag is digits << 3 | sign */
};

/* The same in every supported version (offsetof on each; docs/CPYTHON.md). */
#define PYABI_OB_REFCNT 0       /* PyObject.ob_refcnt */
#define PYABI_OB_TYPE 8         /* PyObject.ob_type */
#define PYABI_OB_SIZE 16        /* PyVarObject.ob_size; PyLongObject lv_tag on 3.12+ */
#define PYABI_TP_NAME 24        /* PyTypeObject.tp_name */
#define PYABI_TP_BASICSIZE 32   /* PyTypeObject.tp_basicsize */
#define PYABI_TP_FLAGS 168      /* PyTypeObject.tp_flags */
#define PYABI_TP_DICTOFFSET 288 /* PyTypeObject.tp_dictoffset */
#define PYABI_TSS_INITIALIZED 0 /* Py_tss_t._is_initialized (int), 3.7+ */
#define PYABI_TSS_KEY 4         /* Py_tss_t._key (pthread_key_t), 3.7+ */
#define PYABI_IS27_NEXT 0       /* PyInterpreterState.next, 2.7 and 3.6 */
#define PYABI_CODEUNIT 2        /* sizeof(_Py_CODEUNIT): 3.10's f_lasti counts these */
/* The PEP 393 state word (pyabi.str_state): kind (1, 2 or 4 bytes a character),
 * compact (the characters follow the header), ascii (compact and all below 0x80). */
#define PYABI_STATE_KIND(st) (((st) >> 2) & 7u)
#define PYABI_STATE_COMPACT(st) (((st) >> 5) & 1u)
#define PYABI_STATE_ASCII(st) (((st) >> 6) & 1u)

/* Offsets are in bytes; -1 where the version has no such field. */
typedef struct pyabi {
    int major, minor;
    unsigned long hex; /* PY_VERSION_HEX, or built from the version string */
    char version[32];  /* "3.11.7" */

    /* Resolved addresses. */
    uintptr_t runtime;           /* &_PyRuntime (3.7+) */
    uintptr_t code_type;         /* &PyCode_Type */
    uintptr_t frame_type;        /* &PyFrame_Type (a heap frame's type on <= 3.10) */
    uintptr_t str_type;          /* &PyString_Type (2.7) or &PyUnicode_Type: names */
    uintptr_t bytes_type;        /* &PyString_Type (2.7) or &PyBytes_Type: line tables */
    uintptr_t gil_tstate;        /* 2.7/3.6: &_PyThreadState_Current */
    uintptr_t finalizing_var;    /* 3.6: &_Py_Finalizing */
    int (*is_initialized)(void); /* Py_IsInitialized (2.7/3.6) */
    void *(*interp_head)(void);  /* PyInterpreterState_Head (2.7/3.6) */

    /* _PyRuntime (3.7+) */
    int rt_initialized, rt_finalizing, rt_interp_head;
    int rt_tss;         /* _PyRuntime.autoTSSkey (3.7-3.13): this thread's thread state
                         * by pthread_getspecific; -1 on 3.14+, where the handler finds
                         * it in the thread list by thread_id (3.15 removed the key) */
    int rt_interp_main; /* _PyRuntime.interpreters.main (interpreters.head + 8) */
    int gil_holder;     /* the GIL's last_holder (its `locked` int follows 8 bytes on):
                         * in _PyRuntime.ceval.gil (3.7-3.11) or in the main
                         * interpreter's _gil (3.12+, gil_in_interp); -1 on 2.7/3.6,
                         * which have gil_tstate */
    int gil_in_interp;
    /* PyInterpreterState / PyThreadState */
    int is_tstate_head, ts_next, ts_interp, ts_thread_id, ts_native_tid;
    int ts_prev;        /* PyThreadState.prev (3.14+: checks a cached thread state is
                         * still listed) */
    int is_modules;     /* PyInterpreterState.modules (.imports.modules on 3.12+) */
    int ts_frame;       /* tstate->frame (<=3.10), ->cframe (3.11/3.12), ->current_frame */
    int cframe_current; /* _PyCFrame.current_frame (3.11/3.12), else -1 */
    /* sizeof(PyInterpreterState) and sizeof(PyThreadState) as _Py_DebugOffsets publishes
     * them (3.13+; 0 before): what asyncabi checks .AsyncioDebug against */
    uint64_t is_size, ts_size;
    /* Frames */
    int frame_kind, lasti_kind;
    int fr_back, fr_code, fr_lasti, fr_owner;
    int fr_code_tag; /* the tag bits masked off the executable: 3 on 3.14+, where
                      * f_executable is a _PyStackRef (a popped frame's is cleared
                      * to NULL, 1), else 0 */
    int fr_is_entry; /* _PyInterpreterFrame.is_entry (bool, 3.11 only): the first
                      * frame an eval-loop C activation runs; -1 elsewhere */
    /* Code objects */
    int co_firstlineno, co_filename, co_name, co_qualname, co_linetable, co_code_adaptive;
    int co_firsttraceable; /* _co_firsttraceable (3.11+): code units before the frame is
                            * complete (CPython's _PyFrame_IsIncomplete) */
    long co_basicsize;     /* PyCode_Type.tp_basicsize expected */
    int linetable_kind;    /* enum pyprof_linetable */
    /* Strings and bytes */
    int str_kind, uni_ascii_size, uni_compact_size, uni_data;
    int str_length; /* characters (3.x PyASCIIObject.length) or bytes (2.7 ob_size) */
    int str_state;  /* the PEP 393 state word (uint32), -1 on 2.7 */
    int str27_data; /* 2.7 PyStringObject.ob_sval, -1 on 3.x */
    int bytes_size, bytes_data; /* ob_size and data of the line-table object */
    /* Dicts, instance attributes and ints (pynames) */
    int dict_layout;       /* enum pyabi_dict_layout */
    int attrs_layout;      /* enum pyabi_attrs_layout */
    int int_layout;        /* enum pyabi_int_layout */
    int ht_cached_keys;    /* PyHeapTypeObject.ht_cached_keys; -1 on 2.7 (no split tables) */
    int dictvalues_values; /* PyDictValues.values (3.11+), 0 on 3.6-3.10 (a bare array) */
    /* The threading module's Thread objects (pynames) */
    const char *thread_name_attr; /* the attribute holding the name */
    int thread_native_id;         /* Thread._native_id exists (3.8+) */
} pyabi;

/* Looks for CPython in the process: first with dlsym(RTLD_DEFAULT), then, when `late` is
 * set (called from an interpreter-init hook), through dl_iterate_phdr for an object named
 * libpython* whose symbols are not global (RTLD_LOCAL plugins).  Returns 1 and fills `a`
 * when a supported interpreter is found, 0 when there is no CPython here, and -1 with a
 * line in `err` when there is one pyprof cannot profile (unknown version, free-threaded
 * or debug build, layout check failed). */
int pyabi_find(pyabi *a, int late, char *err, size_t errlen);

/* The table row of CPython major.minor in `a` (version set from major.minor.micro, nothing
 * resolved yet).  0, or -1 with a line in `err` for a version pyprof has no table for.
 * [pure] */
int pyabi_layout(pyabi *a, int major, int minor, int micro, char *err, size_t errlen);

/* 3.13+: takes into `a` (a row of pyabi_layout) every offset the interpreter publishes in
 * its _Py_DebugOffsets `table` (the start of _PyRuntime), and its interpreter and thread
 * state sizes (is_size, ts_size), then checks what pyprof keeps
 * of its own against the published offsets around it.  0, or -1 with a line in `err`:
 * no table, a free-threaded build, another version, an offset outside its structure, or
 * a structure laid out unlike the minor pyprof measured where it relies on unpublished
 * offsets.  [pure] */
int pyabi_take_debug_offsets(pyabi *a, const uint64_t *table, char *err, size_t errlen);

/* Finds a symbol of the interpreter's object, including RTLD_LOCAL copies of libpython
 * (for hooks that must forward to the real function).  NULL when absent. */
void *pyabi_dlsym_python(const char *name);

#endif
