/*
 * codeid: code ids and CODE records for the sample path (codeid.h).
 *
 * SIGNAL-HANDLER CODE: everything here runs inside the sampling signal handler (and on
 * the wall-clock sampler thread), inside the caller's guarded region.  It is
 * async-signal-safe: no malloc, no locks, no stdio, no Python C-API, errno untouched.
 * What it calls, and why that is safe:
 *   safe_* and safe_copy (safe_read.h)   guarded reads; a fault or a wild pointer jumps
 *                                        back to the caller's guard (safe_fail), whose
 *                                        failure path calls codeid_abandon
 *   pyread.h                             inline guarded readers of frames and objects
 *   codetable_lookup/publish/retire      ours: atomics on the tables mapped at start
 *   ring_reserve/commit/cancel           ours: one CAS on a preallocated buffer
 *   utf8_put, utf8_clean (utf8.h)        pure code on our own buffers
 *   sampleout_drop                       ours: one atomic add
 * Every code object is checked to be one (ob_type == &PyCode_Type) by the caller before
 * its fields are read; every str and bytes object is checked live and of its type here
 * before its length and characters are: a name is never read from memory that no
 * longer holds one.
 */
#include "codeid.h"

#include <stdatomic.h>

#include "common/utf8.h"
#include "codetable.h"
#include "safe_read.h"
#include "sampleout.h"
#include "sigstate.h"
#include "rrec.h"

/* Longest name and file name copied, in characters; line tables in bytes. */
#define NAME_MAX_CHARS 200u
#define FILE_MAX_CHARS 1000u
#define LINETABLE_MAX 16384u

/* A CODE record reserved and not yet committed, cancelled if a read fails meanwhile. */
static __thread rrec_code *tls_pending_code __attribute__((tls_model("initial-exec")));
/* The slot being filled by codeid_of on this thread, retired if a read fails. */
static __thread code_slot *tls_pending_slot __attribute__((tls_model("initial-exec")));

/* Copies valid UTF-8 from the bytes at `src` into out (room for 4*len bytes); a byte
 * that does not start a well-formed sequence becomes U+FFFD.  Returns bytes written.
 * 2.7 names and file names are byte strings, often but not always UTF-8. */
static size_t copy_utf8(char *out, uintptr_t src, uint64_t len)
{
    /* The raw bytes go to the end of out, then are cleaned forwards from there: each
     * input byte writes at most 3 output bytes, so the output never overtakes the input. */
    uint8_t *raw = (uint8_t *)out + 3 * len;
    safe_copy(raw, src, len);
    return utf8_clean(out, 4 * (size_t)len, raw, (size_t)len, 0);
}

/* Copies a str object as UTF-8 into out (room for 4*max_chars bytes); returns bytes.  A
 * pointer that is not a live str abandons the sample (safe_fail): a name is never read
 * from memory that no longer holds one. */
static size_t copy_str(const pyabi *a, uintptr_t s, char *out, uint32_t max_chars)
{
    if (!s)
        return 0;
    if (!pyread_is_live(s, a->str_type))
        safe_fail();
    uint64_t len = safe_u64(s + (uintptr_t)a->str_length);
    if (len > max_chars)
        len = max_chars;
    if (a->str_kind == PYABI_STR_BYTES27)
        return copy_utf8(out, s + (uintptr_t)a->str27_data, len);
    uint32_t state = safe_u32(s + (uintptr_t)a->str_state);
    unsigned kind = PYABI_STATE_KIND(state), compact = PYABI_STATE_COMPACT(state),
             ascii = PYABI_STATE_ASCII(state);
    uintptr_t data;
    if (compact)
        data = s + (uintptr_t)(ascii ? a->uni_ascii_size : a->uni_compact_size);
    else
        data = safe_ptr(s + (uintptr_t)a->uni_data);
    if (kind != 1 && kind != 2 && kind != 4)
        safe_fail();
    size_t n = 0;
    for (uint64_t i = 0; i < len; i++) {
        uint32_t c = kind == 1   ? safe_u8(data + i)
                     : kind == 2 ? (uint32_t)safe_u8(data + 2 * i) |
                                       (uint32_t)safe_u8(data + 2 * i + 1) << 8
                                 : safe_u32(data + 4 * i);
        if (ascii && c >= 0x80)
            safe_fail(); /* not the ASCII string its header says it is */
        n += utf8_put(out + n, c);
    }
    return n;
}

/* Fills the CODE record for a code object seen for the first time, and leaves it
 * reserved for the caller to commit or cancel.  Returns it, or NULL when the ring has no
 * room (the caller then gives the frame up). */
static rrec_code *emit_code(const pyabi *a, uintptr_t code, uint32_t id, int32_t first_line,
                            uintptr_t name, uintptr_t filename, uintptr_t linetable)
{
    uintptr_t qualname = a->co_qualname >= 0 ? safe_ptr(code + (uintptr_t)a->co_qualname) : 0;
    if (linetable && !pyread_is_live(linetable, a->bytes_type))
        safe_fail();
    uint64_t lt_len = linetable ? safe_u64(linetable + (uintptr_t)a->bytes_size) : 0;
    uint16_t flags = 0;
    if (lt_len > LINETABLE_MAX) {
        lt_len = LINETABLE_MAX;
        flags |= PYPROF_CODE_F_TABLE_CUT;
    }
    size_t room = sizeof(rrec_code) + 4 * (2 * NAME_MAX_CHARS + FILE_MAX_CHARS) + lt_len;
    rrec_code *r = ring_reserve(&sighandler_g.codes, room);
    if (!r)
        return NULL;
    /* A failed read below jumps out of the walk; the guard's failure path cancels this
     * reservation so the ring never holds a record that is never committed. */
    tls_pending_code = r;
    char *p = r->data;
    r->name_len = (uint16_t)copy_str(a, name, p, NAME_MAX_CHARS);
    p += r->name_len;
    r->qualname_len = (uint16_t)copy_str(a, qualname, p, NAME_MAX_CHARS);
    p += r->qualname_len;
    r->filename_len = (uint16_t)copy_str(a, filename, p, FILE_MAX_CHARS);
    p += r->filename_len;
    safe_copy(p, linetable + (uintptr_t)a->bytes_data, lt_len);
    r->head.kind = RREC_CODE;
    r->lt_kind = (uint8_t)a->linetable_kind;
    r->flags = flags;
    r->code_id = id;
    r->first_line = first_line;
    r->lt_len = (uint32_t)lt_len;
    return r;
}

/* A code object's identity, as the table keys it beside the address: its name, file
 * name and line-table objects and its first line.  This runs for every frame of every
 * sample, so it is one multiply-add per field, the products independent of each other
 * (no chain of mixers).  Two different identities share a digest only when
 * K1 dn + K2 df + K3 dl + dline = 0 modulo 2^64 for their differences: odd 64-bit
 * multipliers make that as unlikely as any 64-bit digest's collision.  Never 0 (the
 * table's empty digest). */
static inline uint64_t identity_digest(uintptr_t name, uintptr_t filename, uintptr_t linetable,
                                       int32_t first_line)
{
    uint64_t d = (uint64_t)name * 0x9e3779b97f4a7c15ull +
                 (uint64_t)filename * 0xc2b2ae3d27d4eb4full +
                 (uint64_t)linetable * 0xff51afd7ed558ccdull + (uint32_t)first_line;
    return d ? d : 1;
}

uint64_t codeid_digest(const pyabi *a, uintptr_t code)
{
    /* The caller checked `code` live (pyread_is_code, which checks its span too): the
     * check here costs one compare and keeps this function safe alone. */
    safe_span(code, PYREAD_SPAN);
    return identity_digest(safe_at_ptr(code + (uintptr_t)a->co_name),
                           safe_at_ptr(code + (uintptr_t)a->co_filename),
                           safe_at_ptr(code + (uintptr_t)a->co_linetable),
                           safe_at_i32(code + (uintptr_t)a->co_firstlineno));
}

uint32_t codeid_of(const pyabi *a, int t, uintptr_t code, uintptr_t holder,
                   const frame_raw *held, int *changed)
{
    return codeid_of_digest(a, t, code, codeid_digest(a, code), holder, held, changed);
}

/* The id of `key` with identity `digest` in generation t.  Returns 1 when *id is final
 * (known, or PYPROF_CODE_UNREADABLE: the table is full); 0 when a CODE record is to be
 * made under *id, for table slot *s (NULL: a spare id, the slot being another
 * thread's), which tls_pending_slot then holds until claim_end. */
static int claim(int t, uintptr_t key, uint64_t digest, uint32_t *id, code_slot **s)
{
    *s = NULL;
    switch (codetable_lookup(t, key, digest, id, s)) {
    case CODETABLE_FOUND:
        return 1;
    case CODETABLE_BUSY:
        /* Another thread is filling its slot right now (and may be preempted there for
         * long): this one's record is made here, under an id of its own, so the frame
         * is named all the same. */
        *id = codetable_spare_id();
        break;
    case CODETABLE_FULL:
        sampleout_drop(PYPROF_DROP_CODE_TABLE_FULL);
        *id = PYPROF_CODE_UNREADABLE;
        return 1;
    default: /* CODETABLE_NEW */
        break;
    }
    tls_pending_slot = *s;
    return 0;
}

/* Commits rec (NULL: none could be made) for the slot claim gave; returns the id to use. */
static uint32_t claim_end(rrec_code *rec, code_slot *s, uint32_t id)
{
    tls_pending_code = NULL;
    tls_pending_slot = NULL;
    if (!rec) {
        if (s)
            codetable_retire(s);
        return PYPROF_CODE_UNREADABLE;
    }
    ring_commit(&sighandler_g.codes, rec);
    if (s)
        codetable_publish(s, id);
    return id;
}

uint32_t codeid_of_digest(const pyabi *a, int t, uintptr_t code, uint64_t digest,
                          uintptr_t holder, const frame_raw *held, int *changed)
{
    uint32_t id = 0;
    code_slot *s;
    if (claim(t, code, digest, &id, &s))
        return id; /* by the identity read with the frame: nothing read again */
    safe_span(code, PYREAD_SPAN);
    uintptr_t name = safe_at_ptr(code + (uintptr_t)a->co_name);
    uintptr_t filename = safe_at_ptr(code + (uintptr_t)a->co_filename);
    uintptr_t linetable = safe_at_ptr(code + (uintptr_t)a->co_linetable);
    int32_t first_line = safe_at_i32(code + (uintptr_t)a->co_firstlineno);
    rrec_code *rec = NULL;
    if (identity_digest(name, filename, linetable, first_line) != digest) {
        /* Another code object at that address since the frame was read. */
        *changed = 1;
    } else {
        rec = emit_code(a, code, id, first_line, name, filename, linetable);
        if (rec && holder &&
            (!pyread_frame_unchanged(a, holder, held) || codeid_digest(a, code) != digest)) {
            ring_cancel(&sighandler_g.codes, rec);
            rec = NULL;
            *changed = 1;
        } else if (!rec) {
            sampleout_drop(PYPROF_DROP_RING_FULL);
        }
    }
    return claim_end(rec, s, id);
}

/* ---- task frames ---------------------------------------------------------------------- */

/* A task's identity beside its address: its name object, and a constant no code
 * object's digest has in that place (a task and a code object can meet at one address
 * over time). */
#define TASK_DIGEST_TAG 0x7461736b2d746167ull /* "task-tag" */

/* Py_TPFLAGS_LONG_SUBCLASS: the type is int or a subclass of it. */
#define TP_FLAGS_LONG (1ul << 24)
/* A PyLongObject's digits: 30 bits each, after the size or tag word. */
#define LONG_SIZE_WORD 16
#define LONG_DIGITS 24
#define LONG_DIGIT_BITS 30

/* The value of a small non-negative int object (a default task name's counter, 3.12+),
 * or -1 when `o` is no such int. */
static int64_t small_int(const pyabi *a, uintptr_t o)
{
    uintptr_t type = safe_ptr(o + PYABI_OB_TYPE);
    if (!(safe_u64(type + PYABI_TP_FLAGS) & TP_FLAGS_LONG))
        return -1;
    uint64_t word = safe_u64(o + LONG_SIZE_WORD), ndigits;
    if (a->int_layout == PYABI_LONG_TAG) {
        if ((word & 3) == 1)
            return 0; /* the tag's sign 1: zero */
        if ((word & 3) != 0)
            return -1;
        ndigits = word >> 3;
    } else {
        if ((int64_t)word < 0)
            return -1;
        ndigits = word;
    }
    if (ndigits > 2)
        return -1;
    uint64_t v = 0;
    for (uint64_t i = ndigits; i-- > 0;)
        v = v << LONG_DIGIT_BITS | safe_u32(o + LONG_DIGITS + 4 * i);
    return (int64_t)v;
}

/* Writes "Task-N" into out; returns bytes. */
static size_t default_task_name(char *out, uint64_t n)
{
    static const char prefix[] = "Task-";
    char digits[24];
    size_t nd = 0, len = sizeof prefix - 1;
    do {
        digits[nd++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    for (size_t i = 0; i < len; i++)
        out[i] = prefix[i];
    while (nd)
        out[len++] = digits[--nd];
    return len;
}

/* Fills and leaves reserved the CODE record naming a task: its name (a str, or the int
 * a default name is kept as until asked for: "Task-N"), no file, no line table, flagged
 * PYPROF_CODE_F_TASK.  NULL when the ring has no room. */
static rrec_code *emit_task(const pyabi *a, uint32_t id, uintptr_t name)
{
    rrec_code *r = ring_reserve(&sighandler_g.codes, sizeof(rrec_code) + 4 * NAME_MAX_CHARS);
    if (!r)
        return NULL;
    tls_pending_code = r;
    size_t n = 0;
    if (!name) { /* 3.7: tasks have no name */
        static const char anon[] = "Task";
        for (; n < sizeof anon - 1; n++)
            r->data[n] = anon[n];
    } else if (pyread_is_live(name, a->str_type)) {
        n = copy_str(a, name, r->data, NAME_MAX_CHARS);
    } else {
        int64_t v = small_int(a, name);
        if (v >= 0)
            n = default_task_name(r->data, (uint64_t)v);
    }
    r->head.kind = RREC_CODE;
    r->name_len = (uint16_t)n;
    r->qualname_len = 0;
    r->filename_len = 0;
    r->lt_kind = (uint8_t)a->linetable_kind;
    r->flags = PYPROF_CODE_F_TASK;
    r->code_id = id;
    r->first_line = 0;
    r->lt_len = 0;
    return r;
}

uint32_t codeid_of_task(const pyabi *a, int t, uintptr_t task, uintptr_t name_at)
{
    uint32_t id = 0;
    code_slot *s;
    uintptr_t name = name_at ? safe_ptr(name_at) : 0;
    uint64_t digest = identity_digest(name, TASK_DIGEST_TAG, 0, 0);
    if (claim(t, task, digest, &id, &s))
        return id;
    rrec_code *rec = emit_task(a, id, name);
    if (!rec)
        sampleout_drop(PYPROF_DROP_RING_FULL);
    /* Renamed or freed while it was copied (a task clears its name before the name
     * object is freed, and another string of the same length may take its place):
     * then the copy may mix two strings, and is not kept. */
    if (rec && name_at && safe_ptr(name_at) != name) {
        codeid_abandon();
        return PYPROF_CODE_UNREADABLE;
    }
    return claim_end(rec, s, id);
}

void codeid_abandon(void)
{
    if (tls_pending_code) {
        ring_cancel(&sighandler_g.codes, tls_pending_code);
        tls_pending_code = NULL;
    }
    if (tls_pending_slot) {
        codetable_retire(tls_pending_slot);
        tls_pending_slot = NULL;
    }
}
