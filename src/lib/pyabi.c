/*
 * pyabi: per-version layouts of CPython's internal structures and interpreter discovery.
 *
 * Where the numbers come from.  Every offset below was measured with offsetof() against
 * each version's own headers (Py_BUILD_CORE and the internal/ headers for 3.7+) on the
 * pyenv builds 2.7.18, 3.6.15, 3.7.16, 3.8.18, 3.9.18, 3.10.13, 3.11.7, 3.12.1 and 3.13.0;
 * docs/CPYTHON.md explains the tables and how they were measured ("Where the offsets
 * come from") and lists every field by version.  The 3.11 table also holds for
 * Debian's 3.11.2.  Offsets are per minor version, so at start pyabi_find checks what it
 * can cheaply before trusting a table:
 *   - PyCode_Type's tp_name is "code" and its tp_basicsize is the measured size of the
 *     fixed part of PyCodeObject (sizeof on <= 3.10; on 3.11+ the offset of the
 *     variable-size co_code_adaptive, measured on the live PyCode_Type): this rejects
 *     debug (Py_TRACE_REFS) builds, whose object header is larger, and vendor builds
 *     whose code object differs;
 *   - on 3.13+, the tables are compared with the interpreter's own _Py_DebugOffsets and
 *     a free-threaded build is refused.
 * A version without a table (3.14 and later, 3.5 and earlier) is refused, never guessed.
 */
#include "pyabi.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pyprof/format.h>

/* One row per minor version: every offset and layout kind that differs between minors,
 * for the sample path and for pynames alike (pyabi.h names each field). */
static const pyabi TABLES[] = {
    { .major = 2, .minor = 7,
      .rt_initialized = -1, .rt_finalizing = -1, .rt_tss = -1, .rt_interp_head = -1,
      .rt_interp_main = -1, .gil_holder = -1, .gil_in_interp = 0,
      .is_tstate_head = 8, .ts_next = 0, .ts_interp = 8, .ts_thread_id = 144,
      .ts_native_tid = -1, .is_modules = 16, .ts_frame = 16, .cframe_current = -1,
      .frame_kind = PYABI_FRAME_OBJECT, .lasti_kind = PYABI_LASTI_BYTES,
      .fr_back = 24, .fr_code = 32, .fr_lasti = 120, .fr_owner = -1, .fr_is_entry = -1,
      .co_firstlineno = 96, .co_filename = 80, .co_name = 88, .co_qualname = -1,
      .co_linetable = 104, .co_code_adaptive = -1, .co_basicsize = 128,
      .co_firsttraceable = -1,
      .linetable_kind = PYPROF_LT_LNOTAB_U8,
      .str_kind = PYABI_STR_BYTES27, .uni_ascii_size = -1, .uni_compact_size = -1,
      .uni_data = -1, .str_length = 16, .str_state = -1, .str27_data = 36,
      .bytes_size = 16, .bytes_data = 36,
      .dict_layout = PYABI_DICT_27, .attrs_layout = PYABI_ATTRS_DICTOFFSET,
      .int_layout = PYABI_INT_27, .ht_cached_keys = -1, .dictvalues_values = -1,
      .thread_name_attr = "_Thread__name", .thread_native_id = 0 },
    { .major = 3, .minor = 6,
      .rt_initialized = -1, .rt_finalizing = -1, .rt_tss = -1, .rt_interp_head = -1,
      .rt_interp_main = -1, .gil_holder = -1, .gil_in_interp = 0,
      .is_tstate_head = 8, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 152,
      .ts_native_tid = -1, .is_modules = 16, .ts_frame = 24, .cframe_current = -1,
      .frame_kind = PYABI_FRAME_OBJECT, .lasti_kind = PYABI_LASTI_BYTES,
      .fr_back = 24, .fr_code = 32, .fr_lasti = 120, .fr_owner = -1, .fr_is_entry = -1,
      .co_firstlineno = 36, .co_filename = 96, .co_name = 104, .co_qualname = -1,
      .co_linetable = 112, .co_code_adaptive = -1, .co_basicsize = 144,
      .co_firsttraceable = -1,
      .linetable_kind = PYPROF_LT_LNOTAB_S8,
      .str_kind = PYABI_STR_PEP393, .uni_ascii_size = 48, .uni_compact_size = 72,
      .uni_data = 72, .str_length = 16, .str_state = 32, .str27_data = -1,
      .bytes_size = 16, .bytes_data = 32,
      .dict_layout = PYABI_DICT_36, .attrs_layout = PYABI_ATTRS_DICTOFFSET,
      .int_layout = PYABI_LONG_SIZE, .ht_cached_keys = 856, .dictvalues_values = 0,
      .thread_name_attr = "_name", .thread_native_id = 0 },
    { .major = 3, .minor = 7,
      .rt_initialized = 0, .rt_finalizing = 8, .rt_tss = 1504, .rt_interp_head = 24,
      .rt_interp_main = 32, .gil_holder = 1272, .gil_in_interp = 0,
      .is_tstate_head = 8, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 176,
      .ts_native_tid = -1, .is_modules = 40, .ts_frame = 24, .cframe_current = -1,
      .frame_kind = PYABI_FRAME_OBJECT, .lasti_kind = PYABI_LASTI_BYTES,
      .fr_back = 24, .fr_code = 32, .fr_lasti = 104, .fr_owner = -1, .fr_is_entry = -1,
      .co_firstlineno = 36, .co_filename = 96, .co_name = 104, .co_qualname = -1,
      .co_linetable = 112, .co_code_adaptive = -1, .co_basicsize = 144,
      .co_firsttraceable = -1,
      .linetable_kind = PYPROF_LT_LNOTAB_S8,
      .str_kind = PYABI_STR_PEP393, .uni_ascii_size = 48, .uni_compact_size = 72,
      .uni_data = 72, .str_length = 16, .str_state = 32, .str27_data = -1,
      .bytes_size = 16, .bytes_data = 32,
      .dict_layout = PYABI_DICT_36, .attrs_layout = PYABI_ATTRS_DICTOFFSET,
      .int_layout = PYABI_LONG_SIZE, .ht_cached_keys = 856, .dictvalues_values = 0,
      .thread_name_attr = "_name", .thread_native_id = 0 },
    { .major = 3, .minor = 8,
      .rt_initialized = 12, .rt_finalizing = 16, .rt_tss = 1392, .rt_interp_head = 32,
      .rt_interp_main = 40, .gil_holder = 1160, .gil_in_interp = 0,
      .is_tstate_head = 8, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 176,
      .ts_native_tid = -1, .is_modules = 56, .ts_frame = 24, .cframe_current = -1,
      .frame_kind = PYABI_FRAME_OBJECT, .lasti_kind = PYABI_LASTI_BYTES,
      .fr_back = 24, .fr_code = 32, .fr_lasti = 104, .fr_owner = -1, .fr_is_entry = -1,
      .co_firstlineno = 40, .co_filename = 104, .co_name = 112, .co_qualname = -1,
      .co_linetable = 120, .co_code_adaptive = -1, .co_basicsize = 176,
      .co_firsttraceable = -1,
      .linetable_kind = PYPROF_LT_LNOTAB_S8,
      .str_kind = PYABI_STR_PEP393, .uni_ascii_size = 48, .uni_compact_size = 72,
      .uni_data = 72, .str_length = 16, .str_state = 32, .str27_data = -1,
      .bytes_size = 16, .bytes_data = 32,
      .dict_layout = PYABI_DICT_36, .attrs_layout = PYABI_ATTRS_DICTOFFSET,
      .int_layout = PYABI_LONG_SIZE, .ht_cached_keys = 872, .dictvalues_values = 0,
      .thread_name_attr = "_name", .thread_native_id = 1 },
    { .major = 3, .minor = 9,
      .rt_initialized = 12, .rt_finalizing = 16, .rt_tss = 584, .rt_interp_head = 32,
      .rt_interp_main = 40, .gil_holder = 360, .gil_in_interp = 0,
      .is_tstate_head = 8, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 176,
      .ts_native_tid = -1, .is_modules = 856, .ts_frame = 24, .cframe_current = -1,
      .frame_kind = PYABI_FRAME_OBJECT, .lasti_kind = PYABI_LASTI_BYTES,
      .fr_back = 24, .fr_code = 32, .fr_lasti = 104, .fr_owner = -1, .fr_is_entry = -1,
      .co_firstlineno = 40, .co_filename = 104, .co_name = 112, .co_qualname = -1,
      .co_linetable = 120, .co_code_adaptive = -1, .co_basicsize = 176,
      .co_firsttraceable = -1,
      .linetable_kind = PYPROF_LT_LNOTAB_S8,
      .str_kind = PYABI_STR_PEP393, .uni_ascii_size = 48, .uni_compact_size = 72,
      .uni_data = 72, .str_length = 16, .str_state = 32, .str27_data = -1,
      .bytes_size = 16, .bytes_data = 32,
      .dict_layout = PYABI_DICT_36, .attrs_layout = PYABI_ATTRS_DICTOFFSET,
      .int_layout = PYABI_LONG_SIZE, .ht_cached_keys = 864, .dictvalues_values = 0,
      .thread_name_attr = "_name", .thread_native_id = 1 },
    { .major = 3, .minor = 10,
      .rt_initialized = 12, .rt_finalizing = 16, .rt_tss = 584, .rt_interp_head = 32,
      .rt_interp_main = 40, .gil_holder = 360, .gil_in_interp = 0,
      .is_tstate_head = 8, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 176,
      .ts_native_tid = -1, .is_modules = 856, .ts_frame = 24, .cframe_current = -1,
      .frame_kind = PYABI_FRAME_OBJECT, .lasti_kind = PYABI_LASTI_UNITS,
      .fr_back = 24, .fr_code = 32, .fr_lasti = 96, .fr_owner = -1, .fr_is_entry = -1,
      .co_firstlineno = 40, .co_filename = 104, .co_name = 112, .co_qualname = -1,
      .co_linetable = 120, .co_code_adaptive = -1, .co_basicsize = 176,
      .co_firsttraceable = -1,
      .linetable_kind = PYPROF_LT_LINETABLE_310,
      .str_kind = PYABI_STR_PEP393, .uni_ascii_size = 48, .uni_compact_size = 72,
      .uni_data = 72, .str_length = 16, .str_state = 32, .str27_data = -1,
      .bytes_size = 16, .bytes_data = 32,
      .dict_layout = PYABI_DICT_36, .attrs_layout = PYABI_ATTRS_DICTOFFSET,
      .int_layout = PYABI_LONG_SIZE, .ht_cached_keys = 872, .dictvalues_values = 0,
      .thread_name_attr = "_name", .thread_native_id = 1 },
    { .major = 3, .minor = 11,
      .rt_initialized = 16, .rt_finalizing = 24, .rt_tss = 592, .rt_interp_head = 40,
      .rt_interp_main = 48, .gil_holder = 368, .gil_in_interp = 0,
      .is_tstate_head = 16, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 152,
      .ts_native_tid = 160, .is_modules = 888, .ts_frame = 56, .cframe_current = 8,
      .frame_kind = PYABI_FRAME_INTERP, .lasti_kind = PYABI_LASTI_INSTR_PTR,
      .fr_back = 48, .fr_code = 32, .fr_lasti = 56, .fr_owner = 69, .fr_is_entry = 68,
      .co_firstlineno = 72, .co_filename = 112, .co_name = 120, .co_qualname = 128,
      .co_linetable = 136, .co_code_adaptive = 184, .co_basicsize = 184,
      .co_firsttraceable = 168,
      .linetable_kind = PYPROF_LT_LOCATIONS_311,
      .str_kind = PYABI_STR_PEP393, .uni_ascii_size = 48, .uni_compact_size = 72,
      .uni_data = 72, .str_length = 16, .str_state = 32, .str27_data = -1,
      .bytes_size = 16, .bytes_data = 32,
      .dict_layout = PYABI_DICT_311, .attrs_layout = PYABI_ATTRS_MANAGED_311,
      .int_layout = PYABI_LONG_SIZE, .ht_cached_keys = 872, .dictvalues_values = 0,
      .thread_name_attr = "_name", .thread_native_id = 1 },
    { .major = 3, .minor = 12,
      .rt_initialized = 16, .rt_finalizing = 24, .rt_tss = 1544, .rt_interp_head = 40,
      .rt_interp_main = 48, .gil_holder = 1048, .gil_in_interp = 1,
      .is_tstate_head = 72, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 136,
      .ts_native_tid = 144, .is_modules = 944, .ts_frame = 56, .cframe_current = 0,
      .frame_kind = PYABI_FRAME_INTERP, .lasti_kind = PYABI_LASTI_INSTR_PTR,
      .fr_back = 8, .fr_code = 0, .fr_lasti = 56, .fr_owner = 70, .fr_is_entry = -1,
      .co_firstlineno = 68, .co_filename = 112, .co_name = 120, .co_qualname = 128,
      .co_linetable = 136, .co_code_adaptive = 192, .co_basicsize = 192,
      .co_firsttraceable = 176,
      .linetable_kind = PYPROF_LT_LOCATIONS_311,
      .str_kind = PYABI_STR_PEP393, .uni_ascii_size = 40, .uni_compact_size = 56,
      .uni_data = 56, .str_length = 16, .str_state = 32, .str27_data = -1,
      .bytes_size = 16, .bytes_data = 32,
      .dict_layout = PYABI_DICT_311, .attrs_layout = PYABI_ATTRS_MANAGED_312,
      .int_layout = PYABI_LONG_TAG, .ht_cached_keys = 880, .dictvalues_values = 0,
      .thread_name_attr = "_name", .thread_native_id = 1 },
    { .major = 3, .minor = 13,
      .rt_initialized = 600, .rt_finalizing = 608, .rt_tss = 2160, .rt_interp_head = 632,
      .rt_interp_main = 640, .gil_holder = 7760, .gil_in_interp = 1,
      .is_tstate_head = 7344, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 152,
      .ts_native_tid = 160, .is_modules = 7656, .ts_frame = 72, .cframe_current = -1,
      .frame_kind = PYABI_FRAME_INTERP, .lasti_kind = PYABI_LASTI_INSTR_PTR,
      .fr_back = 8, .fr_code = 0, .fr_lasti = 56, .fr_owner = 70, .fr_is_entry = -1,
      .co_firstlineno = 68, .co_filename = 112, .co_name = 120, .co_qualname = 128,
      .co_linetable = 136, .co_code_adaptive = 200, .co_basicsize = 200,
      .co_firsttraceable = 184,
      .linetable_kind = PYPROF_LT_LOCATIONS_311,
      .str_kind = PYABI_STR_PEP393, .uni_ascii_size = 40, .uni_compact_size = 56,
      .uni_data = 56, .str_length = 16, .str_state = 32, .str27_data = -1,
      .bytes_size = 16, .bytes_data = 32,
      .dict_layout = PYABI_DICT_311, .attrs_layout = PYABI_ATTRS_INLINE_313,
      .int_layout = PYABI_LONG_TAG, .ht_cached_keys = 880, .dictvalues_values = 8,
      .thread_name_attr = "_name", .thread_native_id = 1 },
};

/* Remembered by pyabi_find(late=1) for pyabi_dlsym_python. */
static void *python_handle;

struct phdr_search {
    char path[4096];
};

static int find_libpython_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct phdr_search *s = data;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (base && strncmp(base, "libpython", 9) == 0) {
        snprintf(s->path, sizeof s->path, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* A handle on a libpython loaded RTLD_LOCAL, whose symbols dlsym(RTLD_DEFAULT) misses. */
static void *local_libpython(void)
{
    if (python_handle)
        return python_handle;
    struct phdr_search s = { .path = "" };
    dl_iterate_phdr(find_libpython_cb, &s);
    if (!s.path[0])
        return NULL;
    /* RTLD_NOLOAD only returns the object already there; the reference it adds keeps it
     * mapped for as long as we may read it, which is what we want. */
    python_handle = dlopen(s.path, RTLD_NOW | RTLD_NOLOAD);
    return python_handle;
}

/* Is `p` in this library (one of our own interposed wrappers)? */
static int is_ours(void *p)
{
    Dl_info mine, theirs;
    if (!dladdr((void *)is_ours, &mine) || !dladdr(p, &theirs))
        return 0;
    return mine.dli_fbase == theirs.dli_fbase;
}

void *pyabi_dlsym_python(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    /* The global scope finds our own wrapper first for the symbols we interpose
     * (Py_InitializeEx...); the interpreter's is then in the RTLD_LOCAL copy. */
    if (p && is_ours(p))
        p = NULL;
    if (!p) {
        void *h = local_libpython();
        if (h)
            p = dlsym(h, name);
    }
    return p;
}

static int parse_version(const char *v, int *major, int *minor, int *micro)
{
    char *end;
    long a = strtol(v, &end, 10);
    if (*end != '.')
        return -1;
    long b = strtol(end + 1, &end, 10);
    long c = 0;
    if (*end == '.')
        c = strtol(end + 1, &end, 10);
    *major = (int)a;
    *minor = (int)b;
    *micro = (int)c;
    return 0;
}

/* 3.13+: compare our table with the interpreter's own _Py_DebugOffsets (at offset 0 of
 * _PyRuntime, filled statically so valid before initialization).  The layout of the
 * 3.13 struct is: cookie[8], version, free_threaded, then sections of uint64 fields. */
static int check_debug_offsets(const pyabi *a, char *err, size_t errlen)
{
    const uint64_t *d = (const uint64_t *)a->runtime;
    if (memcmp(d, "xdebugpy", 8) != 0) {
        snprintf(err, errlen, "pyprof: Python %s: _Py_DebugOffsets not found; not profiling",
                 a->version);
        return -1;
    }
    if (d[2]) {
        snprintf(err, errlen,
                 "pyprof: Python %s is a free-threaded build, which pyprof does not support; "
                 "not profiling", a->version);
        return -1;
    }
    /* Indexes of the 3.13 sections: runtime_state{size, finalizing, interpreters_head}
     * starts at d[3]; interpreter_state{size, id, next, threads_head, ...13 fields} at
     * d[6]; thread_state{size, prev, next, interp, current_frame, thread_id,
     * native_thread_id, datastack_chunk, status} at d[19]; interpreter_frame{size,
     * previous, executable, instr_ptr, localsplus, owner} at d[28]; code_object{size,
     * filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
     * localspluskinds, co_code_adaptive} at d[34]. */
    if (a->minor != 13)
        return 0; /* only the 3.13 layout of the struct is known */
    struct { uint64_t want; int have; const char *what; } checks[] = {
        { d[4], a->rt_finalizing, "runtime.finalizing" },
        { d[5], a->rt_interp_head, "runtime.interpreters_head" },
        { d[9], a->is_tstate_head, "interp.threads_head" },
        { d[21], a->ts_next, "tstate.next" },
        { d[22], a->ts_interp, "tstate.interp" },
        { d[23], a->ts_frame, "tstate.current_frame" },
        { d[24], a->ts_thread_id, "tstate.thread_id" },
        { d[25], a->ts_native_tid, "tstate.native_thread_id" },
        { d[29], a->fr_back, "frame.previous" },
        { d[30], a->fr_code, "frame.executable" },
        { d[31], a->fr_lasti, "frame.instr_ptr" },
        { d[33], a->fr_owner, "frame.owner" },
        { d[35], a->co_filename, "code.filename" },
        { d[36], a->co_name, "code.name" },
        { d[37], a->co_qualname, "code.qualname" },
        { d[38], a->co_linetable, "code.linetable" },
        { d[39], a->co_firstlineno, "code.firstlineno" },
        { d[43], a->co_code_adaptive, "code.co_code_adaptive" },
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (checks[i].want != (uint64_t)checks[i].have) {
            snprintf(err, errlen,
                     "pyprof: Python %s: %s is at %llu in this build, pyprof expects %d; "
                     "not profiling", a->version, checks[i].what,
                     (unsigned long long)checks[i].want, checks[i].have);
            return -1;
        }
    }
    return 0;
}

int pyabi_find(pyabi *a, int late, char *err, size_t errlen)
{
    err[0] = 0;
    const char *(*get_version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (!get_version && late)
        get_version = (const char *(*)(void))pyabi_dlsym_python("Py_GetVersion");
    if (!get_version)
        return 0;
    const char *v = get_version();
    int major, minor, micro;
    if (!v || parse_version(v, &major, &minor, &micro) < 0) {
        snprintf(err, errlen, "pyprof: cannot read the Python version; not profiling");
        return -1;
    }
    const pyabi *t = NULL;
    for (size_t i = 0; i < sizeof TABLES / sizeof TABLES[0]; i++)
        if (TABLES[i].major == major && TABLES[i].minor == minor)
            t = &TABLES[i];
    if (!t) {
        snprintf(err, errlen,
                 "pyprof: Python %d.%d is not supported (supported: 2.7, 3.6 to 3.13); "
                 "not profiling", major, minor);
        return -1;
    }
    *a = *t;
    snprintf(a->version, sizeof a->version, "%d.%d.%d", major, minor, micro);
    a->hex = ((unsigned long)major << 24) | ((unsigned long)minor << 16) |
             ((unsigned long)micro << 8);
    const unsigned long *pyver = pyabi_dlsym_python("Py_Version");
    if (pyver)
        a->hex = *pyver;

    a->code_type = (uintptr_t)pyabi_dlsym_python("PyCode_Type");
    a->frame_type = (uintptr_t)pyabi_dlsym_python("PyFrame_Type");
    a->str_type = (uintptr_t)pyabi_dlsym_python(major == 2 ? "PyString_Type" : "PyUnicode_Type");
    a->bytes_type = (uintptr_t)pyabi_dlsym_python(major == 2 ? "PyString_Type" : "PyBytes_Type");
    if (major == 3 && minor >= 7) {
        a->runtime = (uintptr_t)pyabi_dlsym_python("_PyRuntime");
    } else {
        a->gil_tstate = (uintptr_t)pyabi_dlsym_python("_PyThreadState_Current");
        a->is_initialized = (int (*)(void))pyabi_dlsym_python("Py_IsInitialized");
        a->interp_head = (void *(*)(void))pyabi_dlsym_python("PyInterpreterState_Head");
        if (minor == 6)
            a->finalizing_var = (uintptr_t)pyabi_dlsym_python("_Py_Finalizing");
    }
    int missing = !a->code_type || !a->frame_type || !a->str_type || !a->bytes_type ||
                  (a->major == 3 && a->minor >= 7 ? !a->runtime
                                                  : (!a->gil_tstate || !a->is_initialized ||
                                                     !a->interp_head ||
                                                     (minor == 6 && !a->finalizing_var)));
    if (missing) {
        snprintf(err, errlen,
                 "pyprof: Python %s does not export the symbols pyprof needs; not profiling",
                 a->version);
        return -1;
    }
    const char *tp_name = *(const char **)(a->code_type + PYABI_TP_NAME);
    long basicsize = *(const long *)(a->code_type + PYABI_TP_BASICSIZE);
    if (!tp_name || strcmp(tp_name, "code") != 0 || basicsize != a->co_basicsize) {
        snprintf(err, errlen,
                 "pyprof: Python %s has an unexpected code object layout (a debug or patched "
                 "build?); not profiling", a->version);
        return -1;
    }
    if (a->major == 3 && a->minor >= 13 && check_debug_offsets(a, err, errlen) < 0)
        return -1;
    return 1;
}
