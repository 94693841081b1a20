/*
 * pynames: the Python names of the process's threads, read from the interpreter's memory
 * without the GIL and without running any Python code.  Owns the per-version knowledge
 * of dicts, instance attributes, ints and the glibc thread descriptor that this needs:
 * threading._active maps each thread's ident to its Thread object, whose `_name` is the
 * name and whose `_native_id` (3.8+) or ident (through the pthread descriptor) gives the
 * OS thread id.  Every read is guarded (safe_read.h): memory that changes under us gives
 * a missing or skipped name, never a fault.  Called by the writer thread.  [not sigsafe]
 */
#ifndef PYPROF_PYNAMES_H
#define PYPROF_PYNAMES_H

#include <stdint.h>

#include "pyabi.h"

#define PYNAMES_NAME_MAX 128 /* bytes kept of a name, NUL included (UTF-8, truncated) */

typedef struct pynames_entry {
    uint32_t tid;                /* OS thread id (gettid) */
    char name[PYNAMES_NAME_MAX]; /* Thread.name, UTF-8 */
} pynames_entry;

/* [not sigsafe] Fills `out` with up to `cap` (tid, name) pairs of the threads the
 * threading module knows now (none before `threading` is imported).  Returns the number
 * filled, 0 when there is nothing readable.  Any thread, GIL not needed; the fault guard
 * must be installed (safe_read_install).  The first call finds the interpreter's type
 * objects and calibrates the thread-descriptor offset (a few dlsym calls); later calls
 * read a few words per thread (microseconds for tens of threads), and look at no more
 * than `cap` threads and 2^20 dict entries.  A thread may be missing from one call's
 * result (it was changing while we read it) or, rarely, appear twice; a name is copied
 * only from what is a str object before and after the copy (type and length checked),
 * and is always valid UTF-8. */
int pynames_collect(const pyabi *a, pynames_entry *out, int cap);

/* [not sigsafe] The object `module.attr` of the main interpreter now (the module as
 * sys.modules has it, the attribute from its __dict__), read the same way as the
 * names: 0 when the module is not imported, has no such attribute, or a read failed.
 * The caller checks what the object is before it trusts it. */
uintptr_t pynames_module_attr(const pyabi *a, const char *module, const char *attr);

/* [not sigsafe] The value stored under the str key `key` in the dict object `dict`, read
 * the same way: 0 when `dict` is not a dict, has no such key, or a read failed. */
uintptr_t pynames_dict_item(const pyabi *a, uintptr_t dict, const char *key);

/* [not sigsafe] The instance attribute `attr` of object `obj` (of a class: its __dict__,
 * or its inline or managed values, as each version keeps them), read the same way: 0
 * when it has none, or a read failed.  The caller checks what the object is. */
uintptr_t pynames_attr(const pyabi *a, uintptr_t obj, const char *attr);

#endif
