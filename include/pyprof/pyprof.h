/*
 * pyprof: the C API libpyprof.so exports.  Most users never call it: loading the library
 * with LD_PRELOAD is enough.  It exists for programs that want to know whether they are
 * being profiled and where the log goes.
 */
#ifndef PYPROF_H
#define PYPROF_H

#define PYPROF_VERSION_MAJOR 0
#define PYPROF_VERSION_MINOR 1
#define PYPROF_VERSION_PATCH 0
#define PYPROF_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0" */
const char *pyprof_version(void);

/* 1 while this process is being sampled, else 0. */
int pyprof_active(void);

/* The path of this process's log, or "" while none has been created. */
const char *pyprof_log_path(void);

/* Spans: named stretches of a thread's time, written into this process's log beside
 * the samples (SPAN_START / SPAN_STOP in format.h), on the samples' clock.  Any thread may
 * call these at any time; they never block on the log and never fail the caller.
 *
 * pyprof_span_start records that the calling thread began a span and returns its id
 * (>= 1, unique in this process), or 0 when nothing was recorded (this process is not
 * being profiled, or the span could not be queued: counted in the log).  `name` must
 * not be NULL; the others may be NULL (empty): OSProfiler's trace point id, parent id
 * and root (base) id as text, and `info_json` a JSON object.  `parent_span` is the id
 * of the span this one is nested in, 0 for none.  Strings are cut to the format's
 * limits.
 *
 * pyprof_span_stop records the end of span `span_id` (a value pyprof_span_start
 * returned; 0 is ignored) on the calling thread, with an optional JSON object.  Returns
 * 1 when recorded, else 0. */
unsigned long long pyprof_span_start(const char *name, const char *trace_id,
                                     const char *parent_id, const char *base_id,
                                     const char *info_json, unsigned long long parent_span);
int pyprof_span_stop(unsigned long long span_id, const char *info_json);

#ifdef __cplusplus
}
#endif

#endif
