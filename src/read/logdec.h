/*
 * logdec: the payload of every record of a log (include/pyprof/format.h) decoded into a
 * pyprof_record, the reading side of common/logenc.c.  It owns what a decoded record
 * points into besides the log's own bytes (a STACK's frames and runs, a SNAPSHOT's
 * threads, a MODULE's segments, an NSTACK's addresses, the header's argv), the running
 * time that the dt fields add up to, and the events of a BATCH or an ALLOCS, decoded
 * whole and handed out one by one as the SAMPLE and RSS (ALLOC and FREE) records they
 * stand for.  No I/O: the reader
 * (reader.c) finds the records and calls in here.  Tool-side only.
 *
 *   logdec_header   the HEADER payload; tells the decoders whether the log is native
 *   logdec_record   any other record's payload
 *   logdec_pending, logdec_next_event  a BATCH's or an ALLOCS's events, one record each
 *   logdec_free     frees what the decoders kept
 *
 * A decoded record's strings point into the payload and its arrays into the logdec:
 * valid until the next call.  Functions return 0 or -PYPROF_R_CORRUPT /
 * -PYPROF_R_NEWER / -PYPROF_R_NOMEM.
 */
#ifndef PYPROF_LOGDEC_H
#define PYPROF_LOGDEC_H

#include <stddef.h>
#include <stdint.h>

#include <pyprof/reader.h>

/* One event of a BATCH (a SAMPLE or an RSS point) or of an ALLOCS (an ALLOC or a
 * FREE), as the record it stands for. */
typedef struct logdec_event {
    uint8_t type; /* PYPROF_REC_SAMPLE, _RSS, _ALLOC or _FREE */
    union {
        pyprof_sample_rec sample;
        pyprof_rss_rec rss;
        pyprof_alloc_rec alloc;
        pyprof_free_rec free;
    } u;
} logdec_event;

/* Zeroed, ready for logdec_header. */
typedef struct logdec {
    int native;     /* the header has PYPROF_HDR_NATIVE */
    int alloc;      /* the header has a nonzero alloc_interval */
    uint64_t t_acc; /* running sum of dt_us, kept unsigned so bad input cannot overflow */
    pyprof_str *argv;
    pyprof_frame *frames;
    size_t frames_cap;
    uint32_t *runs; /* a native STACK's run lengths */
    size_t runs_cap;
    pyprof_snap_thread *snap; /* a SNAPSHOT's threads */
    size_t snap_cap;
    logdec_event *bev; /* the current BATCH's or ALLOCS's events */
    size_t bev_cap, bev_n, bev_pos;
    /* Native records, bounded by format.h, so a fixed room each. */
    pyprof_segment segs[PYPROF_MODULE_SEG_MAX];
    uint64_t addrs[PYPROF_NSTACK_MAX];
} logdec;

/* Decodes the HEADER payload into *h (its strings point into `payload`, which must
 * outlive them).  A format version newer than this reader's is -PYPROF_R_NEWER, checked
 * before anything after it. */
int logdec_header(logdec *d, const uint8_t *payload, size_t len, pyprof_header *h);

/* Decodes the payload of a record of `type` (not HEADER) into rec->u; rec->type is the
 * caller's.  A type this reader does not know leaves rec->u alone (format.h: readers skip
 * it).  A BATCH or an ALLOCS fills nothing: its events are then logdec_pending. */
int logdec_record(logdec *d, int type, const uint8_t *payload, size_t plen, pyprof_record *rec);

/* Whether a BATCH or an ALLOCS has events left. */
static inline int logdec_pending(const logdec *d) { return d->bev_pos < d->bev_n; }

/* The next event of the current BATCH or ALLOCS (logdec_pending) as the record it
 * stands for. */
void logdec_next_event(logdec *d, pyprof_record *rec);

void logdec_free(logdec *d);

#endif
