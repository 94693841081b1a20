/*
 * logenc: the payloads of the writer's records.  See logenc.h; the field order of each
 * is the one include/pyprof/format.h gives, and nothing else decides it.
 */
#include "logenc.h"

#include <string.h>

static int done(const rec_out *o) { return o->overflow ? -1 : 0; }

int logenc_put_header(rec_out *o, const logenc_header_fields *h)
{
    rec_put_uvarint(o, PYPROF_FORMAT_VERSION);
    rec_put_uvarint(o, h->pid);
    rec_put_uvarint(o, h->ppid);
    rec_put_cstr(o, h->run_id);
    rec_put_uvarint(o, h->start_unix_ns);
    rec_put_cstr(o, h->host);
    rec_put_cstr(o, h->exe);
    /* argc counts the strings written below: every NUL ends one, and so does the end of
     * a command line cut short (longer than the caller's buffer) or rewritten without its
     * last NUL (setproctitle), so the count and the strings always agree. */
    const char *cmd = h->cmdline;
    size_t cl = h->cmdline_len;
    uint64_t argc = cl && cmd[cl - 1] != 0;
    for (size_t i = 0; i < cl; i++)
        argc += cmd[i] == 0;
    rec_put_uvarint(o, argc);
    for (size_t i = 0; i < cl;) {
        size_t l = strnlen(cmd + i, cl - i);
        rec_put_str(o, cmd + i, l);
        i += l + 1;
    }
    rec_put_cstr(o, h->python_version);
    rec_put_uvarint(o, h->python_hex);
    rec_put_uvarint(o, h->period_ns);
    rec_put_u8(o, h->clock);
    rec_put_cstr(o, h->timer);
    rec_put_uvarint(o, h->max_depth);
    rec_put_uvarint(o, h->flags);
    rec_put_uvarint(o, h->window);
    rec_put_uvarint(o, h->seq);
    rec_put_uvarint(o, h->series_start_unix_ns);
    rec_put_uvarint(o, h->offset_us);
    rec_put_uvarint(o, h->alloc_interval);
    return done(o);
}

int logenc_put_thread(rec_out *o, uint64_t thread_idx, uint64_t tid, const char *name)
{
    rec_put_uvarint(o, thread_idx);
    rec_put_uvarint(o, tid);
    rec_put_cstr(o, name);
    return done(o);
}

int logenc_put_code(rec_out *o, const logenc_code_fields *c)
{
    rec_put_uvarint(o, c->code_id);
    rec_put_svarint(o, c->first_line);
    rec_put_str(o, c->name, c->name_len);
    rec_put_str(o, c->qualname, c->qualname_len);
    rec_put_str(o, c->filename, c->filename_len);
    rec_put_u8(o, c->lt_kind);
    rec_put_str(o, c->lt, c->lt_len);
    rec_put_uvarint(o, c->flags);
    return done(o);
}

int logenc_put_stack(rec_out *o, uint64_t stack_id, const logenc_frame *f, size_t n)
{
    rec_put_uvarint(o, stack_id);
    rec_put_uvarint(o, n);
    for (size_t i = 0; i < n; i++) {
        rec_put_uvarint(o, f[i].code_id);
        rec_put_svarint(o, f[i].line);
    }
    return done(o);
}

int logenc_put_stack_runs(rec_out *o, const uint32_t *runs, size_t nruns)
{
    rec_put_uvarint(o, nruns);
    for (size_t i = 0; i < nruns; i++)
        rec_put_uvarint(o, runs[i]);
    return done(o);
}

int logenc_put_stack_gil(rec_out *o, uint64_t gil)
{
    rec_put_uvarint(o, gil);
    return done(o);
}

int logenc_put_sample(rec_out *o, int64_t dt_us, uint64_t thread_idx, uint64_t stack_id,
                      uint64_t cpu_us)
{
    rec_put_svarint(o, dt_us);
    rec_put_uvarint(o, thread_idx);
    rec_put_uvarint(o, stack_id);
    rec_put_uvarint(o, cpu_us);
    return done(o);
}

int logenc_put_sample_native(rec_out *o, uint64_t nstack_id, uint64_t native_flags)
{
    rec_put_uvarint(o, nstack_id);
    rec_put_uvarint(o, native_flags);
    return done(o);
}

int logenc_put_rss(rec_out *o, int64_t dt_us, uint64_t rss_bytes)
{
    rec_put_svarint(o, dt_us);
    rec_put_uvarint(o, rss_bytes);
    return done(o);
}

void logenc_batch_start(logenc_batch *b, int64_t t0_us, uint64_t base_us, uint64_t cpu_us,
                        uint64_t rss_unit, int native)
{
    memset(b, 0, sizeof *b);
    b->t_us = b->sample_us = t0_us;
    b->base_us = base_us;
    b->cpu_us = cpu_us;
    b->rss_unit = rss_unit ? rss_unit : 1;
    b->native = native != 0;
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* Bytes the uvarint v takes. */
static size_t uvarint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* An event appended, or -1 with `ev` as it was (the caller restores the batch). */
static int batch_done(rec_out *ev, size_t len0)
{
    if (!ev->overflow)
        return 0;
    ev->len = len0;
    ev->overflow = 0;
    return -1;
}

int logenc_batch_sample(rec_out *ev, logenc_batch *b, int64_t t_us, uint64_t thread_idx,
                        uint64_t stack_id, uint64_t cpu_us, uint64_t nstack_id,
                        uint64_t native_flags)
{
    if (b->count >= PYPROF_BATCH_MAX || stack_id > UINT64_MAX >> 3)
        return -1;
    size_t len0 = ev->len;
    /* The gap from the last sample, relative to the period unless it is shorter plain (a
     * wall-clock pass's samples after its first come at nearly the same time).  Unsigned
     * arithmetic, as the reader's: no overflow whatever the values. */
    int64_t gap = (int64_t)((uint64_t)t_us - (uint64_t)b->sample_us);
    int64_t rel = (int64_t)((uint64_t)gap - b->base_us);
    int plain = uvarint_len(zigzag(gap)) < uvarint_len(zigzag(rel));
    unsigned flags = (thread_idx != b->thread ? PYPROF_BATCH_F_THREAD : 0) |
                     (cpu_us != b->cpu_us ? PYPROF_BATCH_F_CPU : 0) |
                     (plain ? PYPROF_BATCH_F_DT : 0);
    if (!flags) {
        rec_put_uvarint(ev, stack_id << 1);
    } else if (flags == PYPROF_BATCH_F_THREAD) {
        rec_put_uvarint(ev, stack_id << 3 | 1);
        rec_put_uvarint(ev, thread_idx);
    } else {
        rec_put_uvarint(ev, stack_id << 3 | 5);
        rec_put_uvarint(ev, flags);
        if (flags & PYPROF_BATCH_F_THREAD)
            rec_put_uvarint(ev, thread_idx);
        if (flags & PYPROF_BATCH_F_CPU)
            rec_put_uvarint(ev, cpu_us);
    }
    rec_put_svarint(ev, plain ? gap : rel);
    if (b->native) {
        rec_put_uvarint(ev, nstack_id);
        rec_put_uvarint(ev, native_flags);
    }
    if (batch_done(ev, len0) < 0)
        return -1;
    b->thread = thread_idx;
    b->t_us = b->sample_us = t_us;
    b->count++;
    return 0;
}

int logenc_batch_rss(rec_out *ev, logenc_batch *b, int64_t t_us, uint64_t rss_bytes)
{
    uint64_t units = rss_bytes / b->rss_unit;
    if (b->count >= PYPROF_BATCH_MAX || rss_bytes % b->rss_unit)
        return -1;
    uint64_t v = zigzag((int64_t)(units - b->rss));
    if (v > UINT64_MAX >> 3)
        return -1;
    size_t len0 = ev->len;
    rec_put_uvarint(ev, v << 3 | 3);
    rec_put_svarint(ev, (int64_t)((uint64_t)t_us - (uint64_t)b->t_us));
    if (batch_done(ev, len0) < 0)
        return -1;
    b->rss = units;
    b->t_us = t_us;
    b->count++;
    return 0;
}

int logenc_put_batch(rec_out *o, const logenc_batch *b, const void *events, size_t len)
{
    rec_put_uvarint(o, b->count);
    rec_put_uvarint(o, b->base_us);
    rec_put_uvarint(o, b->cpu_us);
    rec_put_uvarint(o, b->rss_unit);
    rec_put_bytes(o, events, len);
    return done(o);
}

int logenc_put_module(rec_out *o, const logenc_module_fields *m)
{
    rec_put_uvarint(o, m->module_id);
    rec_put_cstr(o, m->path);
    rec_put_uvarint(o, m->base);
    rec_put_str(o, m->build_id, m->build_id_len);
    rec_put_uvarint(o, m->nseg);
    for (size_t i = 0; i < m->nseg; i++) {
        rec_put_uvarint(o, m->segs[i].vaddr);
        rec_put_uvarint(o, m->segs[i].memsz);
        rec_put_uvarint(o, m->segs[i].file_offset);
        rec_put_uvarint(o, m->segs[i].flags);
    }
    rec_put_uvarint(o, m->dev);
    rec_put_uvarint(o, m->ino);
    rec_put_uvarint(o, m->size);
    rec_put_uvarint(o, m->mtime_ns);
    return done(o);
}

int logenc_put_nstack(rec_out *o, uint64_t nstack_id, const uint64_t *addrs, size_t n)
{
    rec_put_uvarint(o, nstack_id);
    rec_put_uvarint(o, n);
    for (size_t i = 0; i < n; i++)
        rec_put_uvarint(o, addrs[i]);
    return done(o);
}

int logenc_put_module_gone(rec_out *o, uint64_t module_id)
{
    rec_put_uvarint(o, module_id);
    return done(o);
}

int logenc_put_snapshot(rec_out *o, uint64_t snapshot_id, uint64_t t_us,
                        const logenc_snap_thread *t, size_t n)
{
    rec_put_uvarint(o, snapshot_id);
    rec_put_uvarint(o, t_us);
    rec_put_uvarint(o, n);
    for (size_t i = 0; i < n; i++) {
        rec_put_uvarint(o, t[i].thread_idx);
        rec_put_uvarint(o, t[i].stack_id);
        rec_put_uvarint(o, t[i].flags);
        rec_put_u8(o, t[i].os_state);
    }
    return done(o);
}

/* The length of s[0..n) cut to `max` bytes without splitting a UTF-8 character. */
static size_t span_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static void put_span_str(rec_out *o, const char *s, size_t n, size_t max)
{
    rec_put_str(o, s, s ? span_cut(s, n, max) : 0);
}

int logenc_put_span_start(rec_out *o, const logenc_span_start *s)
{
    rec_put_uvarint(o, s->span_id);
    rec_put_uvarint(o, s->t_us);
    rec_put_uvarint(o, s->thread_idx);
    rec_put_uvarint(o, s->parent_span_id);
    put_span_str(o, s->name, s->name_len, PYPROF_SPAN_NAME_MAX);
    put_span_str(o, s->trace_id, s->trace_id_len, PYPROF_SPAN_ID_MAX);
    put_span_str(o, s->parent_id, s->parent_id_len, PYPROF_SPAN_ID_MAX);
    put_span_str(o, s->base_id, s->base_id_len, PYPROF_SPAN_ID_MAX);
    put_span_str(o, s->info, s->info_len, PYPROF_SPAN_INFO_MAX);
    return done(o);
}

int logenc_put_span_stop(rec_out *o, uint64_t span_id, uint64_t t_us, uint64_t thread_idx,
                         const char *info, size_t info_len)
{
    rec_put_uvarint(o, span_id);
    rec_put_uvarint(o, t_us);
    rec_put_uvarint(o, thread_idx);
    put_span_str(o, info, info_len, PYPROF_SPAN_INFO_MAX);
    return done(o);
}

int logenc_put_footer(rec_out *o, const logenc_footer_fields *f)
{
    rec_put_uvarint(o, f->end_unix_ns);
    rec_put_uvarint(o, f->duration_ns);
    rec_put_uvarint(o, f->samples);
    rec_put_uvarint(o, f->signals);
    rec_put_uvarint(o, PYPROF_DROP_COUNT);
    for (int i = 0; i < PYPROF_DROP_COUNT; i++) {
        rec_put_uvarint(o, (uint64_t)i);
        rec_put_uvarint(o, f->drops[i]);
    }
    rec_put_uvarint(o, f->end);
    rec_put_u8(o, (uint8_t)(f->status_known != 0));
    rec_put_svarint(o, f->status);
    rec_put_uvarint(o, f->achieved_hz_milli);
    rec_put_uvarint(o, f->lib_cpu_ns);
    /* The optional sections, in the order readers check for them. */
    rec_put_uvarint(o, f->handler_ns);
    rec_put_uvarint(o, f->writer_ns);
    static const uint32_t time_bounds[] = PYPROF_COST_TIME_BOUNDS_NS;
    static const uint32_t depth_bounds[] = PYPROF_COST_DEPTH_BOUNDS;
    rec_put_uvarint(o, PYPROF_COST_NTIME);
    for (int t = 0; t < PYPROF_COST_NTIME; t++)
        rec_put_uvarint(o, time_bounds[t]);
    rec_put_uvarint(o, PYPROF_COST_NDEPTH);
    for (int d = 0; d < PYPROF_COST_NDEPTH; d++) {
        rec_put_uvarint(o, depth_bounds[d]);
        for (int t = 0; t < PYPROF_COST_NTIME; t++)
            rec_put_uvarint(o, f->cost[d][t]);
    }
    rec_put_uvarint(o, f->timer_ns);
    rec_put_uvarint(o, f->untimed_ns);
    if (f->has_native) {
        rec_put_uvarint(o, f->native_ok);
        rec_put_uvarint(o, f->native_truncated);
        rec_put_uvarint(o, f->native_skipped);
        rec_put_uvarint(o, f->native_ns);
    }
    rec_put_uvarint(o, f->signal_cost_ns);
    rec_put_uvarint(o, f->calib_signals);
    rec_put_uvarint(o, f->calib_ns);
    rec_put_uvarint(o, f->process_cpu_ns);
    rec_put_uvarint(o, f->spans_lost);
    if (f->has_alloc) {
        rec_put_uvarint(o, f->alloc_samples);
        rec_put_uvarint(o, f->alloc_frees);
        rec_put_uvarint(o, f->alloc_lost);
        rec_put_uvarint(o, f->frees_lost);
        rec_put_uvarint(o, f->alloc_live);
    }
    rec_put_uvarint(o, f->clock_timer_ns);
    rec_put_uvarint(o, f->clock_kernel_ns);
    rec_put_uvarint(o, f->clock_corrected);
    rec_put_uvarint(o, f->teardown_us1);
    return done(o);
}

int logenc_put_alloc(rec_out *o, const logenc_alloc_fields *a)
{
    rec_put_uvarint(o, a->t_us);
    rec_put_uvarint(o, a->thread_idx);
    rec_put_uvarint(o, a->stack_id);
    rec_put_uvarint(o, a->size);
    rec_put_uvarint(o, a->address);
    rec_put_u8(o, a->domain);
    rec_put_uvarint(o, a->flags);
    if (a->native)
        rec_put_uvarint(o, a->nstack_id);
    return done(o);
}

int logenc_put_free(rec_out *o, uint64_t t_us, uint64_t address)
{
    rec_put_uvarint(o, t_us);
    rec_put_uvarint(o, address);
    return done(o);
}

int logenc_put_awindow(rec_out *o, const logenc_awindow_fields *w)
{
    rec_put_uvarint(o, w->t_us);
    rec_put_uvarint(o, w->len_us);
    rec_put_uvarint(o, w->planned_us);
    rec_put_uvarint(o, w->shift);
    rec_put_uvarint(o, w->floor_shift);
    rec_put_uvarint(o, w->flags);
    return done(o);
}

void logenc_allocs_start(logenc_allocs *b, int64_t t0_us, uint64_t ordinal0, int native)
{
    memset(b, 0, sizeof *b);
    b->t0_us = b->t_us = t0_us;
    b->ordinal0 = ordinal0;
    b->native = native != 0;
}

int logenc_allocs_alloc(rec_out *ev, logenc_allocs *b, const logenc_alloc_fields *a,
                        int by_address)
{
    if (b->count >= PYPROF_BATCH_MAX || a->stack_id > UINT64_MAX >> 6 || a->domain > 7)
        return -1;
    size_t len0 = ev->len;
    unsigned more = (a->thread_idx != b->thread ? PYPROF_ALLOCS_M_THREAD : 0) |
                    (by_address ? PYPROF_ALLOCS_M_ADDRESS : 0) |
                    (a->flags ? PYPROF_ALLOCS_M_FLAGS : 0);
    rec_put_uvarint(ev, a->stack_id << 6 | (more ? PYPROF_ALLOCS_MORE : 0) |
                            (uint64_t)a->domain << 2);
    if (more)
        rec_put_uvarint(ev, more);
    if (more & PYPROF_ALLOCS_M_THREAD)
        rec_put_uvarint(ev, a->thread_idx);
    if (more & PYPROF_ALLOCS_M_ADDRESS)
        rec_put_uvarint(ev, a->address);
    if (more & PYPROF_ALLOCS_M_FLAGS)
        rec_put_uvarint(ev, a->flags);
    rec_put_uvarint(ev, a->size);
    rec_put_svarint(ev, (int64_t)(a->t_us - (uint64_t)b->t_us));
    if (b->native)
        rec_put_uvarint(ev, a->nstack_id);
    if (batch_done(ev, len0) < 0)
        return -1;
    b->thread = a->thread_idx;
    b->t_us = (int64_t)a->t_us;
    b->count++;
    b->nallocs++;
    return 0;
}

int logenc_allocs_free(rec_out *ev, logenc_allocs *b, int64_t t_us, int by_address,
                       uint64_t ordinal, uint64_t address)
{
    uint64_t next = b->ordinal0 + b->nallocs;
    if (b->count >= PYPROF_BATCH_MAX)
        return -1;
    if (by_address ? address > UINT64_MAX >> 2 : ordinal >= next)
        return -1;
    size_t len0 = ev->len;
    rec_put_uvarint(ev, by_address ? address << 2 | 2 : (next - 1 - ordinal) << 2 | 1);
    rec_put_svarint(ev, (int64_t)((uint64_t)t_us - (uint64_t)b->t_us));
    if (batch_done(ev, len0) < 0)
        return -1;
    b->t_us = t_us;
    b->count++;
    return 0;
}

int logenc_put_allocs(rec_out *o, const logenc_allocs *b, const void *events, size_t len)
{
    rec_put_uvarint(o, b->count);
    rec_put_uvarint(o, (uint64_t)b->t0_us);
    rec_put_uvarint(o, b->ordinal0);
    rec_put_bytes(o, events, len);
    return done(o);
}
