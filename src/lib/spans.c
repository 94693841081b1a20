/*
 * spans: the program's spans into the sample ring (spans.h).
 *
 * Called from the program's threads in normal context, and safe in a signal handler too:
 * what it calls, and why that is safe:
 *   atomics on our statics                  lock-free
 *   clock_gettime(CLOCK_MONOTONIC)          on signal-safety(7); the vDSO
 *   utf8_clean (utf8.h)                     pure code on the caller's strings and our
 *                                           stack buffer
 *   ring_reserve/commit                     ours: one CAS on the sampler's preallocated
 *                                           ring, never waits
 *   sighandler_tid                          a cached gettid
 *   memcpy                                  pure
 * The strings are cleaned into a buffer on the caller's stack first (at most
 * SPAN_STR_MAX bytes), so the ring record is reserved at its exact size and filled with
 * one copy.
 *
 * The gate.  A call counts itself in `inflight` and only then reads `gate`; spans_close
 * clears `gate` and only then reads `inflight` (both sequentially consistent), so either
 * the call sees the gate closed and does nothing, or the close sees the call and waits
 * for it to commit.  A call interrupted by a signal whose handler ends the log (a
 * program's handler calling exit()) is not waited for by its own thread: `tls_depth`
 * counts the calls of this thread in progress.
 */
#include "spans.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <pyprof/format.h>

#include "common/clock.h"
#include "common/utf8.h"
#include "sighandler.h"
#include "rrec.h"

#define SPAN_STR_MAX (PYPROF_SPAN_NAME_MAX + 3 * PYPROF_SPAN_ID_MAX + PYPROF_SPAN_INFO_MAX)

static _Atomic int gate;         /* spans are recorded while set */
static _Atomic int inflight;     /* recording calls in progress, every thread */
static ring *target;             /* the sample ring, while the gate is open */
static uint64_t zero_ns;         /* the samples' zero (CLOCK_MONOTONIC) */
static _Atomic uint64_t last_id; /* the last span id given: ids only grow */
static _Atomic uint64_t lost;    /* events the full ring refused */
static __thread int tls_depth __attribute__((tls_model("initial-exec")));

_Static_assert(SPAN_STR_MAX <= UINT16_MAX, "string lengths fit the record's fields");

/* Counts this call in; 1 when the gate is open (the call must then leave()), else 0. */
static int enter(void)
{
    tls_depth++;
    atomic_fetch_add(&inflight, 1);
    if (atomic_load(&gate))
        return 1;
    atomic_fetch_sub(&inflight, 1);
    tls_depth--;
    return 0;
}

static void leave(void)
{
    atomic_fetch_sub(&inflight, 1);
    tls_depth--;
}

/* Copies C string `s` (NULL: empty) into out as valid UTF-8 of at most `max` bytes, cut
 * at a character boundary; never reads past its NUL.  Returns the bytes written. */
static size_t clean(char *out, const char *s, size_t max)
{
    if (!s)
        return 0;
    /* At most `max` bytes are taken (each writes at least one), and a character's
     * continuation bytes are read only up to its NUL: the bound is never reached. */
    return utf8_clean(out, max, (const uint8_t *)s, max + 4, UTF8_STOP_AT_NUL | UTF8_CUT);
}

/* Reserves, fills and commits one record: its five strings (`lens` bytes each) are back
 * to back at `strs`, `total` bytes in all.  A start (span_id 0) takes the next id once its
 * record is reserved, so a refused start uses none.  Returns the record's span id, or 0
 * when the ring is full (counted). */
static uint64_t put(int kind, uint64_t span_id, uint64_t parent_span, const char *strs,
                    const uint16_t lens[5], size_t total)
{
    uint64_t t = clock_mono_ns();
    rrec_span *r = ring_reserve(target, sizeof *r + total);
    if (!r) {
        atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
        return 0;
    }
    r->head.kind = (uint8_t)kind;
    r->pad = 0;
    r->name_len = lens[0];
    r->trace_id_len = lens[1];
    r->parent_id_len = lens[2];
    r->base_id_len = lens[3];
    r->info_len = lens[4];
    r->tid = sighandler_tid();
    r->t_ns = t > zero_ns ? t - zero_ns : 0;
    r->span_id = span_id ? span_id : atomic_fetch_add(&last_id, 1) + 1;
    r->parent_span = parent_span;
    memcpy(r->data, strs, total);
    uint64_t id = r->span_id;
    ring_commit(target, r);
    return id;
}

uint64_t spans_start(const char *name, const char *trace_id, const char *parent_id,
                     const char *base_id, const char *info_json, uint64_t parent_span)
{
    if (!enter())
        return 0;
    /* The record's five strings, in its order, with the format's limit of each. */
    const char *str[5] = {name, trace_id, parent_id, base_id, info_json};
    static const size_t max[5] = {PYPROF_SPAN_NAME_MAX, PYPROF_SPAN_ID_MAX, PYPROF_SPAN_ID_MAX,
                                  PYPROF_SPAN_ID_MAX, PYPROF_SPAN_INFO_MAX};
    char buf[SPAN_STR_MAX];
    uint16_t lens[5];
    size_t n = 0;
    for (int i = 0; i < 5; i++) {
        lens[i] = (uint16_t)clean(buf + n, str[i], max[i]);
        n += lens[i];
    }
    uint64_t id = put(RREC_SPAN_START, 0, parent_span, buf, lens, n);
    leave();
    return id;
}

int spans_stop(uint64_t span_id, const char *info_json)
{
    if (!span_id || !enter())
        return 0;
    char buf[PYPROF_SPAN_INFO_MAX];
    uint16_t lens[5] = {0, 0, 0, 0, 0};
    lens[4] = (uint16_t)clean(buf, info_json, PYPROF_SPAN_INFO_MAX);
    int ok = put(RREC_SPAN_STOP, span_id, 0, buf, lens, lens[4]) != 0;
    leave();
    return ok;
}

void spans_open(ring *r, uint64_t t0_ns)
{
    target = r;
    zero_ns = t0_ns;
    atomic_store(&gate, 1);
}

void spans_close(void)
{
    atomic_store(&gate, 0);
    /* At most a second: a call parked in a signal handler of its thread is not waited
     * for. */
    clock_wait_at_most(&inflight, tls_depth, 1000000000ull);
}

void spans_forget_in_child(void)
{
    atomic_store(&gate, 0);
    atomic_store(&inflight, 0);
    tls_depth = 0;
}

uint64_t spans_lost(void) { return atomic_load(&lost); }

int spans_parse(const void *rec, size_t len, spans_rec *out)
{
    const rrec_span *r = rec;
    if (len < sizeof *r || (r->head.kind != RREC_SPAN_START && r->head.kind != RREC_SPAN_STOP))
        return -1;
    if (r->name_len > PYPROF_SPAN_NAME_MAX || r->trace_id_len > PYPROF_SPAN_ID_MAX ||
        r->parent_id_len > PYPROF_SPAN_ID_MAX || r->base_id_len > PYPROF_SPAN_ID_MAX ||
        r->info_len > PYPROF_SPAN_INFO_MAX || !r->span_id)
        return -1;
    size_t total = (size_t)r->name_len + r->trace_id_len + r->parent_id_len + r->base_id_len +
                   r->info_len;
    if (total > len - sizeof *r)
        return -1;
    out->kind = r->head.kind;
    out->tid = r->tid;
    out->t_ns = r->t_ns;
    out->span_id = r->span_id;
    out->parent_span = r->parent_span;
    const char *p = r->data;
    out->name = p;
    out->name_len = r->name_len;
    p += r->name_len;
    out->trace_id = p;
    out->trace_id_len = r->trace_id_len;
    p += r->trace_id_len;
    out->parent_id = p;
    out->parent_id_len = r->parent_id_len;
    p += r->parent_id_len;
    out->base_id = p;
    out->base_id_len = r->base_id_len;
    p += r->base_id_len;
    out->info = p;
    out->info_len = r->info_len;
    return 0;
}
