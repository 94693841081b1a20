/*
 * native: the native (C) stack of a sample, through libunwind (PYPROF_NATIVE=1).  Owns
 * libunwind's loading (dlopen'd RTLD_LOCAL at set-up, never linked), each thread's
 * warm-up outside signal context, the walk inside the handler, and the snapshot of the
 * loaded modules that the handler's walk sees instead of the C library's
 * dl_iterate_phdr (whose loader lock and malloc a signal handler must never reach),
 * kept current around the program's dlopen and dlclose.  docs/NATIVE.md describes the
 * design and its hazards.
 *
 * Interface:
 *   native_setup(err, errlen)          [not sigsafe] load, snapshot, check, warm this thread
 *   native_active()                    [sigsafe] native walks are on
 *   native_thread_start()              [not sigsafe] warm a new thread up
 *   native_walk(buf, cap, pc, &flags)  [sigsafe] the interrupted thread's native stack
 *   native_in_walk()                   [sigsafe] this thread is inside a native walk
 *   native_snapshot_iterate(cb, data)  [sigsafe] dl_iterate_phdr over the snapshot
 *   native_change_begin/_end(closed)   [not sigsafe] around a dlclose
 *   native_after_dlopen()              [not sigsafe] after a dlopen returned
 *   native_refresh()                   [not sigsafe] rebuild the snapshot if modules changed
 *   native_iterate_loaded(cb, data)    [not sigsafe] the library's own module listing
 *   native_loader_works()              [not sigsafe] the program's dlopen/dlclose returned
 *   native_forget_in_child()           [not sigsafe] fork child: walkers and locks
 */
#ifndef PYPROF_NATIVE_H
#define PYPROF_NATIVE_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

/* The most native addresses a sample records, and the room beyond that the walk gets
 * for the handler's own frames and the kernel's signal trampoline (cut off after it). */
#define NATIVE_MAX 128u
#define NATIVE_SLACK 16u

typedef int (*native_phdr_cb)(struct dl_phdr_info *, size_t, void *);

/* [not sigsafe] Loads libunwind (once per process), builds the module snapshot, checks
 * that libunwind's dl_iterate_phdr calls reach this library's (else native mode could
 * take the loader lock inside a signal handler), and warms the calling thread up.
 * Returns 0 with native walks on, or -1 with one line in `err` and native walks off.
 * Call before the first sampling signal; the forking thread of a fork child may call it
 * again. */
int native_setup(char *err, size_t errlen);

/* [sigsafe] 1 when native_setup succeeded in this process (and was not forgotten). */
int native_active(void);

/* [not sigsafe] In a new thread, before its start routine: one libunwind walk outside
 * signal context, so that the thread's first walk in the handler allocates nothing
 * (libunwind's per-thread cache, its dynamic TLS).  Nothing without native mode. */
void native_thread_start(void);

/* [sigsafe] Inside the sampling handler, outside any guarded region: writes the
 * interrupted thread's native stack into buf (room for `cap` addresses), innermost
 * first, starting at the interrupted instruction `pc`, and returns how many.  *flags
 * gets PYPROF_NATIVE_F_SKIPPED (no walk: the thread is not warm, is already in
 * libunwind, or modules are changing; returns 0) or PYPROF_NATIVE_F_TRUNCATED (the
 * chain was cut: depth, a fault inside the walk, `pc` not found in it), else 0.  Counts
 * the outcome and its time in sighandler_g's native counters. */
unsigned native_walk(uint64_t *buf, unsigned cap, uintptr_t pc, uint8_t *flags);

/* [sigsafe] 1 while the calling thread is inside a libunwind call of ours (a walk or a
 * warm-up): its dl_iterate_phdr calls must be served by native_snapshot_iterate. */
int native_in_walk(void);

/* [sigsafe] dl_iterate_phdr's contract over the snapshot: calls cb for each module
 * until it returns non-zero, and returns that value (0 after the last module).  Reads
 * a preallocated array only; no lock, no malloc. */
int native_snapshot_iterate(native_phdr_cb cb, void *data);

/* [not sigsafe] Before a dlclose: stops new native walks and waits for the running
 * ones to end (never call it from a signal handler).  native_change_end(1) after it:
 * flushes libunwind's caches, rebuilds the snapshot, lets walks run again.  Nested and
 * concurrent pairs are allowed.  Nothing without native mode. */
void native_change_begin(void);
void native_change_end(int closed);

/* [not sigsafe] After a dlopen returned: rebuilds the snapshot if modules were added
 * or removed meanwhile, and warms the calling thread again. */
void native_after_dlopen(void);

/* [not sigsafe] The library's way to list the loaded modules outside signal context
 * (the writer's MODULE records, the snapshot's rebuilds): the C library's
 * dl_iterate_phdr under a lock that fork waits for, or, in a fork child until the
 * program's own dlopen or dlclose has returned there, the snapshot inherited from the
 * parent (glibc does not reset its loader's write lock in a fork child, and another
 * thread of the parent may have held it). */
int native_iterate_loaded(native_phdr_cb cb, void *data);

/* [not sigsafe] The program's dlopen or dlclose returned: the loader's locks work. */
void native_loader_works(void);

/* [not sigsafe] Rebuilds the snapshot if modules were added or removed since it was
 * made: the writer calls it when it sees the module list change, which catches loads
 * the dlopen wrapper does not see (bare names it passes straight on, the C library's
 * own loads of NSS and iconv modules). */
void native_refresh(void);

/* [not sigsafe] In a fork child (only the forking thread exists): no walker runs, no
 * change is under way, the change lock is free.  The forking thread stays warm. */
void native_forget_in_child(void);

#endif
