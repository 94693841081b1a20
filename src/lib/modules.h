/*
 * modules: the ELF modules loaded in the process, for native mode.  Owns the set of
 * modules the log has announced (MODULE records; ids from 1, never reused within a log)
 * and finds what the loader added or removed since: modules_changed compares the
 * loader's load and unload counters with the last scan's (one dl_iterate_phdr callback),
 * and only then modules_sync scans every object.  Runs on the writer thread, never in a
 * handler.  [not sigsafe]
 *
 * What a MODULE says of an object: its path (the main program's from /proc/self/exe,
 * which the loader reports as ""), its load bias, its PT_LOAD segments, the GNU build-id
 * read from its PT_NOTE segments in memory, and stat() of the path.  An object the
 * loader names without a '/' has no file: that is the kernel's vDSO ("linux-vdso.so.1"),
 * whose code exists only in memory; it is announced under that name with dev, ino, size
 * and mtime 0, so an address in it (time and clock calls) is still attributed.  An
 * object is the same module while its path, load bias and first segment are the same.
 *
 *   modules_changed  1 when objects were loaded or unloaded since the last sync (or none
 *                    was made yet), else 0
 *   modules_sync     announces what changed: on_gone for each announced module no longer
 *                    loaded, then on_new for each loaded object not yet announced
 *   modules_free     forgets every module; a zeroed `modules` is an empty set
 */
#ifndef PYPROF_MODULES_H
#define PYPROF_MODULES_H

#include <stddef.h>
#include <stdint.h>

#include "common/logenc.h"

typedef struct modules_entry {
    uint32_t id;
    char *path;
    uint64_t base, seg0_vaddr, seg0_memsz; /* with the path, the module's identity */
    int seen;                              /* in the scan being compared */
} modules_entry;

/* Zero-initialised, it is empty. */
typedef struct modules {
    modules_entry *e;
    size_t n, cap;
    uint32_t last_id;
    unsigned long long adds, subs; /* the loader's counters at the last sync */
    int synced;
} modules;

/* A new module's record fields, valid during the call; a module that is gone. */
typedef void (*modules_new_fn)(const logenc_module_fields *m, void *ctx);
typedef void (*modules_gone_fn)(uint32_t module_id, void *ctx);

int modules_changed(const modules *m);

/* Returns 0, or -1 when memory is short (nothing is announced then; a later sync tries
 * again). */
int modules_sync(modules *m, modules_new_fn on_new, modules_gone_fn on_gone, void *ctx);

void modules_free(modules *m);

#endif
