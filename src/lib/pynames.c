/*
 * pynames: thread names from threading._active, read without the GIL.  See pynames.h.
 *
 * The path.  The main interpreter's modules dict (interp->modules, interp->imports.modules
 * on 3.12+) -> the `threading` module -> its __dict__ -> `_active`, a dict from each
 * thread's ident (an int: the pthread_t, i.e. glibc's `struct pthread *`) to its Thread
 * object.  Of each Thread object we read its `_name` (2.7: `_Thread__name`,
 * name-mangled).  The OS thread id is read from the thread's glibc descriptor (the
 * ident), at the offset of its `tid` field found once at start (pthread_tid.h), which
 * stays right after any kind of fork; only where that offset is unknown is it taken
 * from `_native_id` (3.8+).
 *
 * Nobody holds the GIL for us: the program's threads add, remove and rename threads and
 * resize these dicts while we read.  So every read goes through safe_read.h inside a
 * guarded region (a fault or a wild pointer jumps back to the guard), every object is
 * type-checked against the interpreter's own type objects (PyUnicode_Type/PyString_Type,
 * PyDict_Type, PyLong_Type/PyInt_Type, PyModule_Type) before its layout is trusted, every
 * size read from memory is checked against the shape it must have (a power-of-two table,
 * entries within it, at most 3 digits in an ident) and every loop is bounded.  A string is
 * checked again after it was copied (same type, same length), and names are emitted as
 * valid UTF-8 only.  What fails these checks is skipped: a thread may miss its name for
 * one round (the writer reads again every second), it never gets bytes that were not
 * a str's.
 *
 * One guarded region covers a whole call.  When a read fails while one Thread is read,
 * the guard lands back in pynames_collect, which skips that entry of `_active`, walks the
 * path again (cheap: see the hints below) and goes on with the next entry; a few such
 * failures in one call end the call with what it has.  A dict resized meanwhile may make
 * us skip or repeat a thread once: both are harmless to the writer.
 *
 * Dicts.  Keys are matched by comparing the key's characters with the name we look for
 * (every entry is scanned, no hashing), after one try at the index where the name was
 * found last time (the hints): module dicts and the shared keys of Thread instances keep
 * their order, so a lookup usually costs one comparison.  The layouts:
 *   2.7        ma_table of (hash, key, value), ma_mask + 1 slots (dummies have no value)
 *   3.6-3.10   ma_keys -> PyDictKeysObject { refcnt, dk_size, lookup, usable, nentries,
 *              indices[dk_size * index width] } then (hash, key, value) entries; a split
 *              table keeps its values in ma_values[i]
 *   3.11+      dk_log2_size, dk_log2_index_bytes, dk_kind: GENERAL entries are (hash,
 *              key, value), UNICODE and SPLIT ones (key, value); split values in a
 *              PyDictValues (the array at +0, at +8 on 3.13 behind capacity/size/
 *              embedded/valid bytes)
 * Instance attributes:
 *   2.7-3.10   the dict at obj + tp_dictoffset
 *   3.11       Py_TPFLAGS_MANAGED_DICT: values pointer at obj - 4 words (with the keys in
 *              the type's ht_cached_keys), else the dict pointer at obj - 3 words
 *   3.12       PyDictOrValues at obj - 3 words: values (tagged: pointer - 1, low bit set)
 *              or the dict
 *   3.13       Py_TPFLAGS_INLINE_VALUES: values right after the 16-byte object header
 *              while their `valid` byte is set, else the managed dict at obj - 3 words
 * (CPython 3.11-3.13 read them the same way: _PyObject_GenericGetAttrWithDict.)
 *
 * Where the numbers come from.  The per-minor fields (pyabi.c's table: is_modules,
 * ht_cached_keys, dictvalues_values and the dict, attribute and int layouts), the
 * constants shared by every version (pyabi.h's PYABI_* and the dict constants below)
 * were measured with offsetof() against each pyenv build's own headers
 * (2.7.18, 3.6.15, 3.7.16, 3.8.18, 3.9.18, 3.10.13, 3.11.7, 3.12.1, 3.13.0), compiled with
 * -DPy_BUILD_CORE and include/internal/ on the path (pycore_dict.h, pycore_interp.h,
 * pycore_moduleobject.h, pycore_object.h).  Two structs no installed header shows were
 * measured on the live interpreters with ctypes: PyModuleObject.md_dict (16 everywhere;
 * private to moduleobject.c before 3.10) and the 3.6-3.10 PyDictKeysObject (private to
 * Objects/dict-common.h: dk_size at 8, dk_nentries at 32, dk_indices at 40, entries
 * checked against id() of known keys and values for tables of 8 and 2048 slots); the same
 * script found interp->modules by looking for id(sys.modules) in the interpreter state,
 * which agreed with offsetof for every version and with Debian's 3.11.2.  On 3.13 the
 * modules offset is also checked at start against the interpreter's own _Py_DebugOffsets.
 */
#include "pynames.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/utf8.h"
#include "pthread_tid.h"
#include "safe_read.h"

/* ---- layouts ------------------------------------------------------------------------ */

/* The same in every supported version (offsetof on each, as above); the per-minor
 * fields and the object and type header are pyabi's. */
#define MD_DICT 16             /* PyModuleObject.md_dict */
#define INT27_IVAL 16          /* 2.7 PyIntObject.ob_ival */
#define LONG_DIGITS 24         /* PyLongObject.ob_digit (long_value.ob_digit on 3.12+) */
#define LONG_SHIFT 30          /* PyLong_SHIFT: 30-bit digits in uint32 on x86_64 */
#define DICT27_MASK 32         /* 2.7 PyDictObject.ma_mask */
#define DICT27_TABLE 40        /* 2.7 PyDictObject.ma_table */
#define DICT_KEYS 32           /* PyDictObject.ma_keys (3.6+) */
#define DICT_VALUES 40         /* PyDictObject.ma_values (3.6+) */
#define KEYS36_SIZE 8          /* 3.6-3.10 PyDictKeysObject.dk_size */
#define KEYS36_NENTRIES 32     /*          .dk_nentries */
#define KEYS36_INDICES 40      /*          .dk_indices */
#define KEYS311_LOG2_SIZE 8    /* 3.11+ PyDictKeysObject.dk_log2_size */
#define KEYS311_LOG2_INDEX 9   /*       .dk_log2_index_bytes */
#define KEYS311_KIND 10        /*       .dk_kind: 0 general, 1 unicode, 2 split */
#define KEYS311_NENTRIES 24    /*       .dk_nentries */
#define KEYS311_INDICES 32     /*       .dk_indices */
#define VALUES313_CAPACITY 0   /* 3.13 PyDictValues.capacity */
#define VALUES313_VALID 3      /* 3.13 PyDictValues.valid */
#define MANAGED_DICT_BACK 24   /* 3.11+ MANAGED_DICT_OFFSET: the dict at obj - 24 */
#define MANAGED_VALUES_BACK 32 /* 3.11 _PyObject_ValuesPointer: obj - 32 */
#define OBJECT_HEAD_SIZE 16    /* sizeof(PyObject): 3.13 inline values follow it */
#define ENTRY_HKV_SIZE 24      /* PyDictEntry/PyDictKeyEntry: hash, key, value */
#define ENTRY_HKV_KEY 8        /*   its key; the value follows the key */
#define ENTRY_KV_SIZE 16       /* 3.11+ PyDictUnicodeEntry: key, value */
#define ENTRY_KV_KEY 0
#define PTR_SIZE 8 /* a split table's values: one PyObject * each */

#define TPFLAGS_INLINE_VALUES (1ull << 2) /* 3.13 */
#define TPFLAGS_MANAGED_DICT (1ull << 4)  /* 3.11+ */
#define TPFLAGS_HEAPTYPE (1ull << 9)
#define TPFLAGS_TYPE_SUBCLASS (1ull << 31) /* set on `type` and every metaclass */

/* Bounds.  A dict of more entries than this is not believed; `_active` with a million
 * threads would be, and the caller's `cap` stops the work long before. */
#define ENTRIES_MAX (1u << 20)
#define LOG2_SIZE_MAX 24
#define TID_MAX 4194304u /* PID_MAX_LIMIT on 64-bit Linux */
/* Failed reads tolerated in one call before it gives up with what it has. */
#define RETRIES_MAX 8
/* Subinterpreters walked to find the main one (2.7/3.6). */
#define INTERP_WALK_MAX 256

/* What is found once per process: the layout, the interpreter's type objects and the
 * tid field of glibc's thread descriptor. */
static struct {
    _Atomic int state; /* 0 not yet, 2 being filled, 1 ready, -1 unusable */
    const pyabi *L;    /* &abi once ready */
    pyabi abi;         /* the layout of the first call's interpreter */
    uintptr_t str_type, dict_type, int_type, long_type, module_type;
    int str27;   /* 2.7 PyStringObject (else PEP 393 str) */
    int tid_off; /* struct pthread.tid, 0 when unknown */
} S;

/* Where a name was found last time, per lookup (see "Dicts" above).  Relaxed atomics:
 * a stale hint only costs a full scan. */
static _Atomic uint32_t hint_threading, hint_active, hint_name, hint_native_id;

/* 1 when the interpreter's symbols and our table agree; fills S. */
static int init_layout(const pyabi *a)
{
    int py2 = a->major == 2;
    S.str_type = (uintptr_t)pyabi_dlsym_python(py2 ? "PyString_Type" : "PyUnicode_Type");
    S.dict_type = (uintptr_t)pyabi_dlsym_python("PyDict_Type");
    S.int_type = py2 ? (uintptr_t)pyabi_dlsym_python("PyInt_Type") : 0;
    S.long_type = (uintptr_t)pyabi_dlsym_python("PyLong_Type");
    S.module_type = (uintptr_t)pyabi_dlsym_python("PyModule_Type");
    if (!S.str_type || !S.dict_type || (py2 && !S.int_type) || !S.long_type || !S.module_type)
        return 0;
    if (py2 != (a->str_kind == PYABI_STR_BYTES27))
        return 0;
    S.str27 = py2;
    /* On 3.13+ is_modules is the interpreter's own published offset (pyabi). */
    S.tid_off = pthread_tid_offset();
    S.abi = *a;
    S.L = &S.abi;
    return 1;
}

/* ---- reading ------------------------------------------------------------------------ */

/* A dict's entries, wherever its layout keeps them. */
typedef struct dview {
    uintptr_t entries; /* the first entry */
    uintptr_t values;  /* split table: entry i's value at values + 8 i; else 0 */
    uint64_t n;        /* entries to look at */
    uint32_t stride;   /* bytes per entry */
    uint32_t key_off;  /* the key in an entry; its value follows it */
} dview;

SAFE_NO_SANITIZE static uintptr_t dv_key(const dview *v, uint64_t i)
{
    return safe_ptr(v->entries + i * v->stride + v->key_off);
}

SAFE_NO_SANITIZE static uintptr_t dv_value(const dview *v, uint64_t i)
{
    if (v->values)
        return safe_ptr(v->values + PTR_SIZE * i);
    return safe_ptr(v->entries + i * v->stride + v->key_off + PTR_SIZE);
}

/* Index width of a 3.6-3.10 table of `size` slots (DK_IXSIZE). */
static unsigned index_bytes(uint64_t size)
{
    return size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffull ? 4 : 8;
}

/* The entries of a PyDictKeysObject (3.6+), with `values` the split values array or 0.
 * Memory that does not look like one leaves the guarded region. */
SAFE_NO_SANITIZE static void keys_view(uintptr_t keys, uintptr_t values, dview *v)
{
    int64_t nentries;
    uint64_t size;
    if (S.L->dict_layout == PYABI_DICT_36) {
        size = safe_u64(keys + KEYS36_SIZE);
        nentries = (int64_t)safe_u64(keys + KEYS36_NENTRIES);
        if (size < 8 || size > (1ull << LOG2_SIZE_MAX) || (size & (size - 1)))
            safe_fail();
        v->entries = keys + KEYS36_INDICES + size * index_bytes(size);
        v->stride = ENTRY_HKV_SIZE; /* PyDictKeyEntry */
        v->key_off = ENTRY_HKV_KEY;
    } else {
        unsigned log2 = safe_u8(keys + KEYS311_LOG2_SIZE);
        unsigned log2_index = safe_u8(keys + KEYS311_LOG2_INDEX);
        unsigned kind = safe_u8(keys + KEYS311_KIND);
        if (log2 < 3 || log2 > LOG2_SIZE_MAX || kind > 2 || (kind == 2) != (values != 0))
            safe_fail();
        size = 1ull << log2;
        unsigned width = index_bytes(size);
        if (log2_index != log2 + (width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3))
            safe_fail();
        nentries = (int64_t)safe_u64(keys + KEYS311_NENTRIES);
        v->entries = keys + KEYS311_INDICES + (1ull << log2_index);
        v->stride = kind == 0 ? ENTRY_HKV_SIZE : ENTRY_KV_SIZE; /* general, unicode/split */
        v->key_off = kind == 0 ? ENTRY_HKV_KEY : ENTRY_KV_KEY;
    }
    if (nentries < 0 || (uint64_t)nentries > size || nentries > ENTRIES_MAX)
        safe_fail();
    v->n = (uint64_t)nentries;
    v->values = values;
}

/* The entries of the dict object `d`.  0 when `d` is NULL or not a dict. */
SAFE_NO_SANITIZE static int dict_view(uintptr_t d, dview *v)
{
    if (!d || safe_ptr(d + PYABI_OB_TYPE) != S.dict_type)
        return 0;
    if (S.L->dict_layout == PYABI_DICT_27) {
        uint64_t mask = safe_u64(d + DICT27_MASK);
        if (mask < 7 || mask >= (1ull << LOG2_SIZE_MAX) || (mask & (mask + 1)))
            safe_fail();
        v->entries = safe_ptr(d + DICT27_TABLE);
        v->values = 0;
        v->n = mask + 1;
        v->stride = ENTRY_HKV_SIZE; /* PyDictEntry */
        v->key_off = ENTRY_HKV_KEY;
        return 1;
    }
    uintptr_t values = safe_ptr(d + DICT_VALUES);
    keys_view(safe_ptr(d + DICT_KEYS), values ? values + (uintptr_t)S.L->dictvalues_values : 0,
              v);
    return 1;
}

/* Is `s` a str (PyString on 2.7) holding exactly the `len` ASCII bytes of `lit`? */
SAFE_NO_SANITIZE static int str_is(uintptr_t s, const char *lit, size_t len)
{
    char buf[32];
    if (!s || len > sizeof buf || safe_ptr(s + PYABI_OB_TYPE) != S.str_type ||
        safe_u64(s + (uintptr_t)S.L->str_length) != len)
        return 0;
    uintptr_t data = s + (uintptr_t)S.L->str27_data;
    if (!S.str27) {
        /* Names of modules and attributes are compact ASCII strings; any other str
         * cannot equal an ASCII literal. */
        uint32_t state = safe_u32(s + (uintptr_t)S.L->str_state);
        if (!PYABI_STATE_COMPACT(state) || !PYABI_STATE_ASCII(state))
            return 0;
        data = s + (uintptr_t)S.L->uni_ascii_size;
    }
    safe_copy(buf, data, len);
    return memcmp(buf, lit, len) == 0;
}

/* The value stored under the str key `lit`, or 0. */
SAFE_NO_SANITIZE static uintptr_t dv_find(const dview *v, const char *lit,
                                          _Atomic uint32_t *hint)
{
    size_t len = strlen(lit);
    uint64_t h = atomic_load_explicit(hint, memory_order_relaxed);
    if (h < v->n && str_is(dv_key(v, h), lit, len)) {
        uintptr_t val = dv_value(v, h);
        if (val)
            return val;
    }
    for (uint64_t i = 0; i < v->n; i++) {
        if (i == h || !str_is(dv_key(v, i), lit, len))
            continue;
        uintptr_t val = dv_value(v, i);
        if (val) {
            atomic_store_explicit(hint, (uint32_t)i, memory_order_relaxed);
            return val;
        }
    }
    return 0;
}

/* The value of an int object (a 2.7 int, or a long), when it is one in [1, 2^64); else 0. */
SAFE_NO_SANITIZE static uint64_t int_value(uintptr_t o)
{
    uintptr_t t = safe_ptr(o + PYABI_OB_TYPE);
    if (S.L->int_layout == PYABI_INT_27 && t == S.int_type) {
        int64_t v = (int64_t)safe_u64(o + INT27_IVAL);
        return v > 0 ? (uint64_t)v : 0;
    }
    if (t != S.long_type)
        return 0;
    uint64_t ndigits;
    if (S.L->int_layout == PYABI_LONG_TAG) {
        uint64_t tag = safe_u64(o + PYABI_OB_SIZE); /* ndigits << 3 | sign (0 +, 1 zero, 2 -) */
        if (tag & 3)
            return 0;
        ndigits = tag >> 3;
    } else {
        int64_t size = (int64_t)safe_u64(o + PYABI_OB_SIZE); /* sign * ndigits */
        if (size <= 0)
            return 0;
        ndigits = (uint64_t)size;
    }
    if (ndigits == 0 || ndigits > 3)
        return 0;
    uint64_t v = 0;
    for (uint64_t i = 0; i < ndigits; i++) {
        uint32_t d = safe_u32(o + LONG_DIGITS + 4 * i);
        if (d >> LONG_SHIFT || (i == ndigits - 1 && d == 0))
            safe_fail(); /* not a digit, or not normalized: not an int after all */
        if (i == 2 && d >> (64 - 2 * LONG_SHIFT))
            return 0; /* 2^64 or more */
        v |= (uint64_t)d << (LONG_SHIFT * i);
    }
    return v;
}

/* The OS thread id of the thread whose ident (pthread_t) is the int `key`, from its
 * glibc descriptor; 0 when unknown.  The descriptor's header points to itself. */
SAFE_NO_SANITIZE static uint32_t tid_of_ident(uintptr_t key)
{
    return key && S.tid_off ? pthread_tid_read((uintptr_t)int_value(key), S.tid_off) : 0;
}

/* Appends code point c to out[*n] as UTF-8 if it fits in a name.  0 when the name is
 * complete (no room, or a NUL, which would end the C string anyway). */
static int put_name_char(char *out, size_t *n, uint32_t c)
{
    if (c == 0 || *n + utf8_len(c) > PYNAMES_NAME_MAX - 1)
        return 0;
    *n += utf8_put(out + *n, c);
    return 1;
}

/* Copies the str object `s` into out as a NUL-terminated UTF-8 name.  0 when `s` is not
 * a str, or changed while we copied it; leaves the guard when it holds impossible
 * characters. */
SAFE_NO_SANITIZE static int read_name(uintptr_t s, char *out)
{
    if (!s || safe_ptr(s + PYABI_OB_TYPE) != S.str_type)
        return 0;
    uint64_t len = safe_u64(s + (uintptr_t)S.L->str_length);
    if (len > (1ull << 40))
        safe_fail();
    /* Every character takes at least one byte of the name. */
    uint64_t take = len < PYNAMES_NAME_MAX - 1 ? len : PYNAMES_NAME_MAX - 1;
    size_t n = 0;
    if (S.str27) {
        uint8_t raw[PYNAMES_NAME_MAX];
        safe_copy(raw, s + (uintptr_t)S.L->str27_data, take);
        /* 2.7 names are bytes, normally UTF-8; take < len: a prefix of the name. */
        n = utf8_clean(out, PYNAMES_NAME_MAX - 1, raw, (size_t)take,
                       UTF8_STOP_AT_NUL | (take < len ? UTF8_CUT : 0));
    } else {
        uint32_t state = safe_u32(s + (uintptr_t)S.L->str_state);
        unsigned kind = PYABI_STATE_KIND(state), compact = PYABI_STATE_COMPACT(state),
                 ascii = PYABI_STATE_ASCII(state);
        if ((kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
            safe_fail();
        uintptr_t data = compact ? s + (uintptr_t)(ascii ? S.L->uni_ascii_size
                                                         : S.L->uni_compact_size)
                                 : safe_ptr(s + (uintptr_t)S.L->uni_data);
        uint8_t raw[4 * (PYNAMES_NAME_MAX - 1)];
        safe_copy(raw, data, take * kind);
        for (uint64_t i = 0; i < take; i++) {
            uint32_t c;
            if (kind == 1)
                c = raw[i];
            else if (kind == 2)
                c = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
            else
                memcpy(&c, raw + 4 * i, 4);
            if ((ascii && c >= 0x80) || c > 0x10ffff)
                safe_fail(); /* not what this string's kind allows */
            if (!put_name_char(out, &n, c))
                break;
        }
    }
    out[n] = 0;
    /* Freed and reused meanwhile?  Then its type or length has most likely changed. */
    return safe_ptr(s + PYABI_OB_TYPE) == S.str_type &&
           safe_u64(s + (uintptr_t)S.L->str_length) == len;
}

/* The instance attributes of `obj` (of type `type`, flags `flags`).  0 when it has none
 * we can read. */
SAFE_NO_SANITIZE static int attrs_view(uintptr_t obj, uintptr_t type, uint64_t flags, dview *v)
{
    const pyabi *L = S.L;
    uintptr_t values = 0;
    if (L->attrs_layout == PYABI_ATTRS_INLINE_313 && (flags & TPFLAGS_INLINE_VALUES) &&
        safe_u64(type + PYABI_TP_BASICSIZE) == OBJECT_HEAD_SIZE) {
        uintptr_t inl = obj + OBJECT_HEAD_SIZE;
        if (safe_u8(inl + VALUES313_VALID)) {
            keys_view(safe_ptr(type + (uintptr_t)L->ht_cached_keys),
                      inl + (uintptr_t)L->dictvalues_values, v);
            uint64_t capacity = safe_u8(inl + VALUES313_CAPACITY);
            if (v->n > capacity)
                safe_fail();
            return 1;
        }
    }
    if (L->attrs_layout != PYABI_ATTRS_DICTOFFSET && (flags & TPFLAGS_MANAGED_DICT)) {
        uintptr_t d = safe_u64(obj - MANAGED_DICT_BACK);
        if (L->attrs_layout == PYABI_ATTRS_MANAGED_312 && (d & 1)) {
            values = d + 1; /* PyDictOrValues tags values as pointer - 1 */
            d = 0;
        } else if (L->attrs_layout == PYABI_ATTRS_MANAGED_311 && !d) {
            values = safe_ptr(obj - MANAGED_VALUES_BACK);
        }
        if (values) {
            keys_view(safe_ptr(type + (uintptr_t)L->ht_cached_keys),
                      values + (uintptr_t)L->dictvalues_values, v);
            return 1;
        }
        return dict_view(d, v);
    }
    int64_t off = (int64_t)safe_u64(type + PYABI_TP_DICTOFFSET);
    if (off <= 0 || off >= 4096)
        return 0; /* no dict, or a variable-size object's (never a Thread) */
    return dict_view(safe_ptr(obj + (uintptr_t)off), v);
}

/* Fills e from the entry (ident `key`, Thread `obj`) of threading._active.  0 when the
 * thread has no readable name or thread id. */
SAFE_NO_SANITIZE static int read_thread(uintptr_t key, uintptr_t obj, pynames_entry *e)
{
    const pyabi *L = S.L;
    uintptr_t type = safe_ptr(obj + PYABI_OB_TYPE);
    uint64_t flags = safe_u64(type + PYABI_TP_FLAGS);
    /* A Thread (subclass) instance: its type is a class, made by `type` or a metaclass. */
    if (!(flags & TPFLAGS_HEAPTYPE) ||
        !(safe_u64(safe_ptr(type + PYABI_OB_TYPE) + PYABI_TP_FLAGS) & TPFLAGS_TYPE_SUBCLASS))
        return 0;
    dview v;
    if (!attrs_view(obj, type, flags, &v))
        return 0;
    if (!read_name(dv_find(&v, L->thread_name_attr, &hint_name), e->name))
        return 0;
    /* The descriptor first: glibc keeps its tid right after any fork (0 in the
     * descriptors of threads the child does not have), where `_native_id` keeps the
     * parent's when the fork bypassed Python's after-fork hook (fork() from C). */
    uint64_t tid = tid_of_ident(key);
    if (!S.tid_off && L->thread_native_id) {
        uintptr_t nid = dv_find(&v, "_native_id", &hint_native_id);
        tid = nid ? int_value(nid) : 0; /* None until the thread runs */
    }
    if (!tid || tid > TID_MAX)
        return 0;
    e->tid = (uint32_t)tid;
    return 1;
}

/* The main interpreter, between initialization and finalization; 0 otherwise. */
SAFE_NO_SANITIZE static uintptr_t main_interp(const pyabi *a)
{
    if (a->runtime) {
        if (!safe_i32(a->runtime + (uintptr_t)a->rt_initialized) ||
            safe_ptr(a->runtime + (uintptr_t)a->rt_finalizing))
            return 0;
        return safe_ptr(a->runtime + (uintptr_t)a->rt_interp_main);
    }
    /* 2.7/3.6: Py_IsInitialized and PyInterpreterState_Head only load a global.  New
     * interpreters are pushed on the head of the list: the main one is its tail. */
    if (!a->is_initialized() || (a->finalizing_var && safe_ptr(a->finalizing_var)))
        return 0;
    uintptr_t interp = (uintptr_t)a->interp_head();
    for (unsigned i = 0; interp && i < INTERP_WALK_MAX; i++) {
        uintptr_t next = safe_ptr(interp + PYABI_IS27_NEXT);
        if (!next)
            return interp;
        interp = next;
    }
    return 0;
}

/* The entries of threading._active, walked from the interpreter.  0 when there is none
 * (threading not imported, interpreter not running). */
SAFE_NO_SANITIZE static int active_view(const pyabi *a, dview *v)
{
    uintptr_t interp = main_interp(a);
    if (!interp || !dict_view(safe_ptr(interp + (uintptr_t)S.L->is_modules), v))
        return 0;
    uintptr_t mod = dv_find(v, "threading", &hint_threading);
    if (!mod || safe_ptr(mod + PYABI_OB_TYPE) != S.module_type ||
        !dict_view(safe_ptr(mod + MD_DICT), v))
        return 0;
    return dict_view(dv_find(v, "_active", &hint_active), v);
}

/* 1 once S is filled for interpreter `a` (the first caller fills it), else 0. */
static int ready(const pyabi *a)
{
    int state = atomic_load(&S.state);
    if (state == 0) {
        int expect = 0;
        if (!atomic_compare_exchange_strong(&S.state, &expect, 2))
            return 0; /* another thread is filling S: next time */
        state = init_layout(a) ? 1 : -1;
        atomic_store(&S.state, state);
    }
    return state == 1;
}

/* `module.attr` read inside the caller's guarded region. */
SAFE_NO_SANITIZE static uintptr_t module_attr(const pyabi *a, const char *module,
                                              const char *attr)
{
    static _Atomic uint32_t hint_module, hint_attr;
    dview v;
    uintptr_t interp = main_interp(a);
    if (!interp || !dict_view(safe_ptr(interp + (uintptr_t)S.L->is_modules), &v))
        return 0;
    uintptr_t mod = dv_find(&v, module, &hint_module);
    if (!mod || safe_ptr(mod + PYABI_OB_TYPE) != S.module_type ||
        !dict_view(safe_ptr(mod + MD_DICT), &v))
        return 0;
    return dv_find(&v, attr, &hint_attr);
}

/* gcc 12 takes the guard's jump buffer for one left behind here (it is cleared on both
 * ways out: SAFE_GUARD_END, or the failure path of SAFE_GUARD_BEGIN). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#pragma GCC diagnostic ignored "-Wdangling-pointer"
uintptr_t pynames_module_attr(const pyabi *a, const char *module, const char *attr)
{
    if (!ready(a))
        return 0;
    safe_jmpbuf jb;
    if (SAFE_GUARD_BEGIN(jb)) {
        uintptr_t found = module_attr(a, module, attr);
        SAFE_GUARD_END();
        return found;
    }
    return 0;
}
#pragma GCC diagnostic pop

SAFE_NO_SANITIZE static uintptr_t dict_item(uintptr_t dict, const char *key)
{
    static _Atomic uint32_t hint;
    dview v;
    return dict_view(dict, &v) ? dv_find(&v, key, &hint) : 0;
}

SAFE_NO_SANITIZE static uintptr_t attr_of(uintptr_t obj, const char *attr)
{
    static _Atomic uint32_t hint;
    uintptr_t type = safe_ptr(obj + PYABI_OB_TYPE);
    uint64_t flags = safe_u64(type + PYABI_TP_FLAGS);
    dview v;
    if (!(flags & TPFLAGS_HEAPTYPE) || !attrs_view(obj, type, flags, &v))
        return 0;
    return dv_find(&v, attr, &hint);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#pragma GCC diagnostic ignored "-Wdangling-pointer"
uintptr_t pynames_dict_item(const pyabi *a, uintptr_t dict, const char *key)
{
    if (!dict || !ready(a))
        return 0;
    safe_jmpbuf jb;
    if (SAFE_GUARD_BEGIN(jb)) {
        uintptr_t found = dict_item(dict, key);
        SAFE_GUARD_END();
        return found;
    }
    return 0;
}

uintptr_t pynames_attr(const pyabi *a, uintptr_t obj, const char *attr)
{
    if (!obj || !ready(a))
        return 0;
    safe_jmpbuf jb;
    if (SAFE_GUARD_BEGIN(jb)) {
        uintptr_t found = attr_of(obj, attr);
        SAFE_GUARD_END();
        return found;
    }
    return 0;
}
#pragma GCC diagnostic pop

SAFE_NO_SANITIZE int pynames_collect(const pyabi *a, pynames_entry *out, int cap)
{
    if (!ready(a) || cap <= 0)
        return 0;

    /* Changed inside the guarded region and read after a jump back to it: volatile. */
    volatile int n = 0;         /* entries of out filled */
    volatile uint64_t next = 0; /* the entry of _active being read */
    volatile int walking = 1;   /* a failure now is on the way to _active */
    volatile int retries = 0;
    safe_jmpbuf jb;
    for (;;) {
        if (SAFE_GUARD_BEGIN(jb)) {
            dview v;
            walking = 1;
            if (active_view(a, &v)) {
                walking = 0;
                for (; next < v.n && n < cap; next = next + 1) {
                    uintptr_t key = dv_key(&v, next);
                    uintptr_t obj = key ? dv_value(&v, next) : 0;
                    if (obj && read_thread(key, obj, &out[n]))
                        n = n + 1;
                }
            }
            SAFE_GUARD_END();
            return n;
        }
        /* A read failed.  On the way to _active: give up.  On a thread: skip it, walk
         * again (the dict may have moved) and go on, a few times at most. */
        if (walking || ++retries > RETRIES_MAX)
            return n;
        next = next + 1;
    }
}
