/*
 * spans: the program's spans on their way to the log.  Owns what pyprof_span_start and
 * pyprof_span_stop do (pyprof.h): the process-wide span ids, the gate that says whether
 * a span may be recorded now, the span records put in the sample ring (beside the
 * samples, so the writer takes both in one order), and the count of span events lost
 * because the ring was full.  The writer turns each record into a SPAN_START or
 * SPAN_STOP (format.h).
 *
 * Life cycle.  sampler_start opens the gate once its ring and clock are set (spans_open),
 * the writer closes it before the last drain of a log (spans_close, which waits for the
 * calls in progress), and a fork child forgets it (spans_forget_in_child) until its own
 * profiling opens it again.  While it is closed every call returns 0 and does nothing.
 *
 * The recording calls are [sigsafe]: atomics, clock_gettime, the pure UTF-8 cleaner and
 * the ring's one-CAS reserve; no lock, no allocation, no system call that can block.  A
 * sampling signal may interrupt them anywhere (its handler reserves in the same ring;
 * the ring takes producers interrupted by one another), and a program's own signal
 * handler may call them.
 *
 * Interface:
 *   spans_start, spans_stop            record a span's start / end (pyprof.h's functions)
 *   spans_open, spans_close, spans_forget_in_child   the gate
 *   spans_lost                         span events not recorded: the ring was full
 *   rrec_span, spans_rec, spans_parse  the ring record and the writer's checked view
 */
#ifndef PYPROF_SPANS_H
#define PYPROF_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/* [sigsafe] pyprof_span_start: the new span's id (>= 1, never reused in this process),
 * or 0 when nothing was recorded (gate closed, or the ring full: counted).  Strings are
 * NUL-terminated C strings; every one but `name` may be NULL (empty).  They are copied as
 * valid UTF-8 (a byte that starts no well-formed sequence becomes U+FFFD), cut at a
 * character boundary to PYPROF_SPAN_*_MAX bytes. */
uint64_t spans_start(const char *name, const char *trace_id, const char *parent_id,
                     const char *base_id, const char *info_json, uint64_t parent_span);

/* [sigsafe] pyprof_span_stop: 1 when the end of span `span_id` was recorded, 0 when not
 * (span_id 0, gate closed, ring full: counted). */
int spans_stop(uint64_t span_id, const char *info_json);

/* [not sigsafe] Opens the gate: records go to ring `r` stamped with CLOCK_MONOTONIC less
 * `t0_ns` (the samples' zero).  Called once sampling runs. */
void spans_open(ring *r, uint64_t t0_ns);

/* [not sigsafe] Closes the gate and waits until no other thread is inside a recording
 * call (they take microseconds; after one second it goes on, the ring's memory stays
 * mapped).  A record committed before it returns is in the ring for the last drain. */
void spans_close(void);

/* [not sigsafe] In a fork child: the gate closed, no call in progress (the child's one
 * thread is not inside one). */
void spans_forget_in_child(void);

/* [sigsafe] Span events (starts and stops) not recorded because the ring was full, since
 * the process started: only grows. */
uint64_t spans_lost(void);

/* What the writer reads of one record. */
typedef struct spans_rec {
    int kind;
    uint32_t tid;
    uint64_t t_ns, span_id, parent_span;
    const char *name, *trace_id, *parent_id, *base_id, *info;
    size_t name_len, trace_id_len, parent_id_len, base_id_len, info_len;
} spans_rec;

/* [writer] Checks a record of `len` bytes taken from the ring and fills `out`.  Returns
 * 0, or -1 when it is not a well-formed span record. */
int spans_parse(const void *rec, size_t len, spans_rec *out);

#endif
