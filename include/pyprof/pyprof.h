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

#ifdef __cplusplus
}
#endif

#endif
