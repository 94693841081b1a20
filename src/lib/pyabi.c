/*
 * pyabi: per-version layouts of CPython's internal structures and interpreter discovery.
 *
 * Where the numbers come from.  Every offset below was measured with offsetof() against
 * each version's own headers (Py_BUILD_CORE and the internal/ headers for 3.7+) on the
 * pyenv builds 2.7.18, 3.6.15, 3.7.16, 3.8.18, 3.9.18, 3.10.13, 3.11.7, 3.12.1 and 3.13.0,
 * and on Debian's 3.14.10 and 3.15.2; docs/CPYTHON.md explains the tables and how they
 * were measured ("Where the offsets come from") and lists every field by version.  The
 * 3.11 table also holds for Debian's 3.11.2.  Offsets are per minor version, so at start
 * pyabi_find checks what it can cheaply before trusting a table:
 *   - on 3.13+, every offset the interpreter publishes in its _Py_DebugOffsets is taken
 *     from the running process (offsets have moved inside a minor: 3.14.5), what pyprof
 *     keeps of its own is checked against the published ones around it, and a
 *     free-threaded build is refused;
 *   - PyCode_Type's tp_name is "code" and its tp_basicsize is the measured size of the
 *     fixed part of PyCodeObject (sizeof on <= 3.10; on 3.11+ the offset of the
 *     variable-size co_code_adaptive): this rejects debug builds with Py_TRACE_REFS,
 *     whose object header is larger, and vendor builds whose code object differs.
 *     (Debug builds without it, Debian's python3.X-dbg, have the release layout and are
 *     profiled like it.)
 * A version without a table (3.16 and later, 3.5 and earlier) is refused, never guessed.
 */
#include "pyabi.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pyprof/format.h>

#include "libc_next.h"
#include "pyread.h"

/* One row per minor version: every offset and layout kind that differs between minors,
 * for the sample path and for pynames alike (pyabi.h names each field). */
/* clang-format off */
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
    { .major = 3, .minor = 14,
      .rt_initialized = 776, .rt_finalizing = 784, .rt_tss = -1, .rt_interp_head = 808,
      .rt_interp_main = 816, .gil_holder = 7792, .gil_in_interp = 1,
      .is_tstate_head = 7344, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 152,
      .ts_native_tid = 160, .is_modules = 7688, .ts_frame = 72, .cframe_current = -1,
      .frame_kind = PYABI_FRAME_INTERP, .lasti_kind = PYABI_LASTI_INSTR_PTR,
      .fr_back = 8, .fr_code = 0, .fr_lasti = 56, .fr_owner = 74, .fr_is_entry = -1,
      .ts_prev = 0, .fr_code_tag = 3,
      .co_firstlineno = 68, .co_filename = 112, .co_name = 120, .co_qualname = 128,
      .co_linetable = 136, .co_code_adaptive = 208, .co_basicsize = 208,
      .co_firsttraceable = 192,
      .linetable_kind = PYPROF_LT_LOCATIONS_311,
      .str_kind = PYABI_STR_PEP393, .uni_ascii_size = 40, .uni_compact_size = 56,
      .uni_data = 56, .str_length = 16, .str_state = 32, .str27_data = -1,
      .bytes_size = 16, .bytes_data = 32,
      .dict_layout = PYABI_DICT_311, .attrs_layout = PYABI_ATTRS_INLINE_313,
      .int_layout = PYABI_LONG_TAG, .ht_cached_keys = 880, .dictvalues_values = 8,
      .thread_name_attr = "_name", .thread_native_id = 1 },
    { .major = 3, .minor = 15,
      .rt_initialized = 904, .rt_finalizing = 912, .rt_tss = -1, .rt_interp_head = 936,
      .rt_interp_main = 944, .gil_holder = 7744, .gil_in_interp = 1,
      .is_tstate_head = 7336, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 176,
      .ts_native_tid = 184, .is_modules = 7592, .ts_frame = 72, .cframe_current = -1,
      .frame_kind = PYABI_FRAME_INTERP, .lasti_kind = PYABI_LASTI_INSTR_PTR,
      .fr_back = 8, .fr_code = 0, .fr_lasti = 56, .fr_owner = 74, .fr_is_entry = -1,
      .ts_prev = 0, .fr_code_tag = 3,
      .co_firstlineno = 68, .co_filename = 112, .co_name = 120, .co_qualname = 128,
      .co_linetable = 136, .co_code_adaptive = 208, .co_basicsize = 208,
      .co_firsttraceable = 192,
      .linetable_kind = PYPROF_LT_LOCATIONS_311,
      .str_kind = PYABI_STR_PEP393, .uni_ascii_size = 40, .uni_compact_size = 56,
      .uni_data = 56, .str_length = 16, .str_state = 32, .str27_data = -1,
      .bytes_size = 16, .bytes_data = 32,
      .dict_layout = PYABI_DICT_311, .attrs_layout = PYABI_ATTRS_INLINE_313,
      .int_layout = PYABI_LONG_TAG, .ht_cached_keys = 888, .dictvalues_values = 8,
      .thread_name_attr = "_name", .thread_native_id = 1 },
};
/* clang-format on */

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
    struct phdr_search s = {.path = ""};
    libc_next_dl_iterate_phdr(find_libpython_cb, &s);
    if (!s.path[0])
        return NULL;
    /* RTLD_NOLOAD only returns the object already there; the reference it adds keeps it
     * mapped for as long as we may read it, which is what we want. */
    python_handle = libc_next_dlopen(s.path, RTLD_NOW | RTLD_NOLOAD);
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

/* _Py_DebugOffsets (3.13+): CPython publishes the offsets a debugger needs in a table at
 * the start of _PyRuntime, filled statically (valid before initialization): the cookie
 * "xdebugpy", the version, free_threaded, then sections of 8-byte words whose layout
 * depends on the minor.  DEBUG_WORDS lists, per minor, the word of each field pyprof
 * reads; those offsets are taken from the running interpreter (they have moved inside a
 * minor before: 3.14.5 moved interp->imports.modules and the GIL).  What the table does
 * not publish stays in TABLES, used only while the published offsets around it are the
 * ones pyprof measured (pyabi_take_debug_offsets says which).  Each word names the
 * structure its offset lies in, which bounds it. */
enum { SEC_RT, SEC_IS, SEC_TS, SEC_FR, SEC_CO, SEC_OBJ, SECTIONS };

typedef struct debug_word {
    uint8_t minor, word, section;
    uint16_t field; /* offsetof(pyabi, ...), an int */
    const char *what;
} debug_word;

/* clang-format off */
#define DW(minor, word, section, field, what) \
    { minor, word, section, offsetof(pyabi, field), what }
/* clang-format on */
static const debug_word DEBUG_WORDS[] = {
    DW(13, 4, SEC_RT, rt_finalizing, "runtime.finalizing"),
    DW(13, 5, SEC_RT, rt_interp_head, "runtime.interpreters_head"),
    DW(13, 9, SEC_IS, is_tstate_head, "interp.threads_head"),
    DW(13, 11, SEC_IS, is_modules, "interp.imports_modules"),
    DW(13, 18, SEC_IS, gil_holder, "interp.gil_runtime_state_holder"),
    DW(13, 21, SEC_TS, ts_next, "tstate.next"),
    DW(13, 22, SEC_TS, ts_interp, "tstate.interp"),
    DW(13, 23, SEC_TS, ts_frame, "tstate.current_frame"),
    DW(13, 24, SEC_TS, ts_thread_id, "tstate.thread_id"),
    DW(13, 25, SEC_TS, ts_native_tid, "tstate.native_thread_id"),
    DW(13, 29, SEC_FR, fr_back, "frame.previous"),
    DW(13, 30, SEC_FR, fr_code, "frame.executable"),
    DW(13, 31, SEC_FR, fr_lasti, "frame.instr_ptr"),
    DW(13, 33, SEC_FR, fr_owner, "frame.owner"),
    DW(13, 35, SEC_CO, co_filename, "code.filename"),
    DW(13, 36, SEC_CO, co_name, "code.name"),
    DW(13, 37, SEC_CO, co_qualname, "code.qualname"),
    DW(13, 38, SEC_CO, co_linetable, "code.linetable"),
    DW(13, 39, SEC_CO, co_firstlineno, "code.firstlineno"),
    DW(13, 43, SEC_CO, co_code_adaptive, "code.co_code_adaptive"),
    DW(13, 68, SEC_OBJ, str_state, "unicode.state"),
    DW(13, 69, SEC_OBJ, str_length, "unicode.length"),
    DW(13, 70, SEC_OBJ, uni_ascii_size, "unicode.asciiobject_size"),
    /* 3.14 added threads_main (interp), stackpointer and tlbc_index (frame), co_tlbc. */
    DW(14, 4, SEC_RT, rt_finalizing, "runtime.finalizing"),
    DW(14, 5, SEC_RT, rt_interp_head, "runtime.interpreters_head"),
    DW(14, 9, SEC_IS, is_tstate_head, "interp.threads_head"),
    DW(14, 12, SEC_IS, is_modules, "interp.imports_modules"),
    DW(14, 19, SEC_IS, gil_holder, "interp.gil_runtime_state_holder"),
    DW(14, 23, SEC_TS, ts_prev, "tstate.prev"),
    DW(14, 24, SEC_TS, ts_next, "tstate.next"),
    DW(14, 25, SEC_TS, ts_interp, "tstate.interp"),
    DW(14, 26, SEC_TS, ts_frame, "tstate.current_frame"),
    DW(14, 27, SEC_TS, ts_thread_id, "tstate.thread_id"),
    DW(14, 28, SEC_TS, ts_native_tid, "tstate.native_thread_id"),
    DW(14, 32, SEC_FR, fr_back, "frame.previous"),
    DW(14, 33, SEC_FR, fr_code, "frame.executable"),
    DW(14, 34, SEC_FR, fr_lasti, "frame.instr_ptr"),
    DW(14, 36, SEC_FR, fr_owner, "frame.owner"),
    DW(14, 40, SEC_CO, co_filename, "code.filename"),
    DW(14, 41, SEC_CO, co_name, "code.name"),
    DW(14, 42, SEC_CO, co_qualname, "code.qualname"),
    DW(14, 43, SEC_CO, co_linetable, "code.linetable"),
    DW(14, 44, SEC_CO, co_firstlineno, "code.firstlineno"),
    DW(14, 48, SEC_CO, co_code_adaptive, "code.co_code_adaptive"),
    DW(14, 78, SEC_OBJ, str_state, "unicode.state"),
    DW(14, 79, SEC_OBJ, str_length, "unicode.length"),
    DW(14, 80, SEC_OBJ, uni_ascii_size, "unicode.asciiobject_size"),
    /* 3.15 added base_frame, last_profiled_frame and the GIL flags to the thread state,
     * err_stackitem, the type and heap type sections, compactunicodeobject_size. */
    DW(15, 4, SEC_RT, rt_finalizing, "runtime.finalizing"),
    DW(15, 5, SEC_RT, rt_interp_head, "runtime.interpreters_head"),
    DW(15, 9, SEC_IS, is_tstate_head, "interp.threads_head"),
    DW(15, 12, SEC_IS, is_modules, "interp.imports_modules"),
    DW(15, 19, SEC_IS, gil_holder, "interp.gil_runtime_state_holder"),
    DW(15, 23, SEC_TS, ts_prev, "tstate.prev"),
    DW(15, 24, SEC_TS, ts_next, "tstate.next"),
    DW(15, 25, SEC_TS, ts_interp, "tstate.interp"),
    DW(15, 26, SEC_TS, ts_frame, "tstate.current_frame"),
    DW(15, 30, SEC_TS, ts_thread_id, "tstate.thread_id"),
    DW(15, 31, SEC_TS, ts_native_tid, "tstate.native_thread_id"),
    DW(15, 40, SEC_FR, fr_back, "frame.previous"),
    DW(15, 41, SEC_FR, fr_code, "frame.executable"),
    DW(15, 42, SEC_FR, fr_lasti, "frame.instr_ptr"),
    DW(15, 44, SEC_FR, fr_owner, "frame.owner"),
    DW(15, 48, SEC_CO, co_filename, "code.filename"),
    DW(15, 49, SEC_CO, co_name, "code.name"),
    DW(15, 50, SEC_CO, co_qualname, "code.qualname"),
    DW(15, 51, SEC_CO, co_linetable, "code.linetable"),
    DW(15, 52, SEC_CO, co_firstlineno, "code.firstlineno"),
    DW(15, 56, SEC_CO, co_code_adaptive, "code.co_code_adaptive"),
    DW(15, 67, SEC_OBJ, ht_cached_keys, "heap_type.ht_cached_keys"),
    DW(15, 90, SEC_OBJ, str_state, "unicode.state"),
    DW(15, 91, SEC_OBJ, str_length, "unicode.length"),
    DW(15, 92, SEC_OBJ, uni_ascii_size, "unicode.asciiobject_size"),
    DW(15, 93, SEC_OBJ, uni_compact_size, "unicode.compactunicodeobject_size"),
};
#undef DW

/* Per minor: the word of the GIL's `locked` (published beside its holder), and the
 * "size" word of each structure's section (runtime, interpreter, thread, frame, code). */
static const struct {
    uint8_t gil_locked, size[SEC_OBJ];
} DEBUG_LAYOUT[] = {{17, {3, 6, 19, 28, 34}},  /* 3.13 */
                    {18, {3, 6, 22, 31, 39}},  /* 3.14 */
                    {18, {3, 6, 22, 39, 47}}}; /* 3.15 */

static int *field_at(pyabi *a, uint16_t off) { return (int *)((char *)a + off); }

int pyabi_take_debug_offsets(pyabi *a, const uint64_t *d, char *err, size_t errlen)
{
    if (memcmp(d, "xdebugpy", 8) != 0) {
        snprintf(err, errlen, "pyprof: Python %s: _Py_DebugOffsets not found; not profiling",
                 a->version);
        return -1;
    }
    if (d[2]) {
        snprintf(err, errlen,
                 "pyprof: Python %s is a free-threaded build, which pyprof does not support "
                 "(its objects and frames have another layout and it has no GIL); not "
                 "profiling",
                 a->version);
        return -1;
    }
    if ((d[1] >> 16) != (((uint64_t)a->major << 8) | (uint64_t)a->minor)) {
        snprintf(err, errlen,
                 "pyprof: Python %s: its _Py_DebugOffsets say version %llx; not profiling",
                 a->version, (unsigned long long)d[1]);
        return -1;
    }
    const pyabi measured = *a;
    /* Each offset must lie inside its structure; a frame's or a code object's fields
     * inside what the sample path checks of it (PYREAD_SPAN); an object's in its first
     * page. */
    uint64_t bound[SECTIONS];
    for (int s = 0; s < SEC_OBJ; s++)
        bound[s] = d[DEBUG_LAYOUT[a->minor - 13].size[s]];
    bound[SEC_OBJ] = 4096;
    a->is_size = bound[SEC_IS];
    a->ts_size = bound[SEC_TS];
    for (int s = SEC_FR; s <= SEC_CO; s++)
        if (bound[s] > PYREAD_SPAN)
            bound[s] = PYREAD_SPAN;
    for (size_t i = 0; i < sizeof DEBUG_WORDS / sizeof DEBUG_WORDS[0]; i++) {
        const debug_word *w = &DEBUG_WORDS[i];
        if (w->minor != a->minor)
            continue;
        uint64_t v = d[w->word];
        if (v + 8 > bound[w->section]) {
            snprintf(err, errlen,
                     "pyprof: Python %s: %s is at %llu in this build, past its structure; "
                     "not profiling",
                     a->version, w->what, (unsigned long long)v);
            return -1;
        }
        *field_at(a, w->field) = (int)v;
    }
    if (d[DEBUG_LAYOUT[a->minor - 13].gil_locked] != (uint64_t)a->gil_holder + 8) {
        snprintf(err, errlen,
                 "pyprof: Python %s: the GIL's fields are not laid out as pyprof expects; "
                 "not profiling",
                 a->version);
        return -1;
    }
    /* Derived from published neighbours, as every version from 3.12 lays them out:
     * `initialized` just before `_finalizing`, interpreters.main just after .head,
     * _co_firsttraceable 16 bytes before co_code_adaptive (whose offset is also
     * PyCode_Type's basic size), a compact string's characters right after its header. */
    a->rt_initialized = a->rt_finalizing - 8;
    a->rt_interp_main = a->rt_interp_head + 8;
    a->co_firsttraceable = a->co_code_adaptive - 16;
    a->co_basicsize = a->co_code_adaptive;
    a->uni_data = a->uni_compact_size;
    /* What the table does not publish is used only while the published offsets of the
     * same structure are the ones it was measured with: 3.13's thread-state key (runtime
     * state) and, before 3.15, the compact string header (the ASCII one). */
    if ((a->rt_tss >= 0 && a->rt_finalizing != measured.rt_finalizing) ||
        (a->minor < 15 && a->uni_ascii_size != measured.uni_ascii_size)) {
        snprintf(err, errlen,
                 "pyprof: Python %s lays out its runtime or strings differently from the "
                 "%d.%d pyprof knows; not profiling",
                 a->version, a->major, a->minor);
        return -1;
    }
    return 0;
}

int pyabi_layout(pyabi *a, int major, int minor, int micro, char *err, size_t errlen)
{
    const pyabi *t = NULL;
    for (size_t i = 0; i < sizeof TABLES / sizeof TABLES[0]; i++)
        if (TABLES[i].major == major && TABLES[i].minor == minor)
            t = &TABLES[i];
    if (!t) {
        snprintf(err, errlen,
                 "pyprof: Python %d.%d is not supported (supported: 2.7, 3.6 to 3.15); "
                 "not profiling",
                 major, minor);
        return -1;
    }
    *a = *t;
    snprintf(a->version, sizeof a->version, "%d.%d.%d", major, minor, micro);
    return 0;
}

int pyabi_find(pyabi *a, int late, char *err, size_t errlen)
{
    err[0] = 0;
    const char *(*get_version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT,
                                                                    "Py_GetVersion");
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
    if (pyabi_layout(a, major, minor, micro, err, errlen) < 0)
        return -1;
    a->hex = ((unsigned long)major << 24) | ((unsigned long)minor << 16) |
             ((unsigned long)micro << 8);
    const unsigned long *pyver = pyabi_dlsym_python("Py_Version");
    if (pyver)
        a->hex = *pyver;

    a->code_type = (uintptr_t)pyabi_dlsym_python("PyCode_Type");
    a->frame_type = (uintptr_t)pyabi_dlsym_python("PyFrame_Type");
    a->str_type = (uintptr_t)pyabi_dlsym_python(major == 2 ? "PyString_Type"
                                                           : "PyUnicode_Type");
    a->bytes_type = (uintptr_t)pyabi_dlsym_python(major == 2 ? "PyString_Type"
                                                             : "PyBytes_Type");
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
                  (a->major == 3 && a->minor >= 7
                       ? !a->runtime
                       : (!a->gil_tstate || !a->is_initialized || !a->interp_head ||
                          (minor == 6 && !a->finalizing_var)));
    if (missing) {
        snprintf(err, errlen,
                 "pyprof: Python %s does not export the symbols pyprof needs; not profiling",
                 a->version);
        return -1;
    }
    if (a->major == 3 && a->minor >= 13 &&
        pyabi_take_debug_offsets(a, (const uint64_t *)a->runtime, err, errlen) < 0)
        return -1;
    const char *tp_name = *(const char **)(a->code_type + PYABI_TP_NAME);
    long basicsize = *(const long *)(a->code_type + PYABI_TP_BASICSIZE);
    if (!tp_name || strcmp(tp_name, "code") != 0 || basicsize != a->co_basicsize) {
        snprintf(err, errlen,
                 "pyprof: Python %s has an unexpected code object layout (a debug or patched "
                 "build?); not profiling",
                 a->version);
        return -1;
    }
    return 1;
}
