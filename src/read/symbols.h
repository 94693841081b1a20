/*
 * symbols: the native addresses of one process to function names, source lines and
 * inlined frames, over the modules its log recorded (MODULE records).
 *
 * It owns the process's modules (their recorded identity, the ELF file found for each,
 * one libdwfl session per module) and a cache of every address looked up, so each
 * (module, address) is symbolized once.  A module's ELF is the recorded path under the
 * root the symbolizer was given (the file system the process ran in: a chroot, a
 * container's), then the recorded path itself, each taken when that file's GNU build-id
 * is the recorded one (or, for a module recorded without a build-id, when its device,
 * inode, size and modification time are the recorded ones); else the separate debug file
 * <debug root>/.build-id/xx/rest.debug with that build-id, under the root's debug root
 * first, then the host's; else none, and its addresses show as "basename+0xOFFSET"
 * where OFFSET is the address relative to the module (address - base, the ELF virtual
 * address).  Separate debug information for a found file is taken only from a file whose
 * build-id matches, again under the root's debug root first.  Every path comes from
 * an untrusted log: only absolute paths of regular files are opened, never blocking.
 *
 * Interface: SYM_EVAL, SYM_INTERP, SYM_LIBC, SYM_RESOLVED, SYM_NO_MODULE,
 * SYM_PROFILER, sym_frame,
 * sym_info, sym_module, symbols, symbols_new, symbols_free, symbols_add_module,
 * symbols_module_gone, symbols_lookup, symbols_nmodules, symbols_module,
 * symbols_unresolved, symbols_is_eval_name.  Not thread-safe; tool-side only.
 */
#ifndef PYPROF_SYMBOLS_H
#define PYPROF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include <pyprof/reader.h>

/* sym_info.flags and sym_module.flags */
/* clang-format off */
#define SYM_EVAL 1u      /* the interpreter's eval loop (PyEval_EvalFrameEx up to 2.7,
                          * _PyEval_EvalFrameDefault from 3.6; .cold/.part pieces too) */
#define SYM_INTERP 2u    /* in the interpreter's module: the one holding the eval loop */
#define SYM_LIBC 4u      /* in the C library, its threads library or the dynamic loader */
#define SYM_RESOLVED 8u  /* a symbol covers the address (else the name is module+0xOFF) */
#define SYM_NO_MODULE 16u /* no recorded module covers the address (name "0xADDRESS") */
#define SYM_PROFILER 32u  /* in pyprof's own library (libpyprof*.so), whose interposed
                           * entry points (Py_BytesMain, pthread_create's thread start...)
                           * sit on the program's stacks */
/* clang-format on */

typedef struct sym_frame {
    const char *name;   /* function (inlined or not), "module+0xOFF" or "0xADDRESS" */
    const char *module; /* the module's recorded path; "" when no module covers it */
    int32_t line;       /* source line from DWARF, 0 when unknown */
} sym_frame;

/* One address.  nframes >= 1: the function that holds the address first, then the
 * functions inlined into it, outer to inner; each frame's line is where it is in its
 * own source (for all but the innermost: the line of the inlined call). */
typedef struct sym_info {
    unsigned flags; /* SYM_* */
    uint32_t nframes;
    const sym_frame *frames;
} sym_info;

typedef struct sym_module {
    uint64_t module_id, base;
    /* The executable segment's runtime range and file offset (the first PT_LOAD with
     * PF_X; all segments' range and the first offset when none is executable): what
     * pprof's mapping table wants. */
    uint64_t start, limit, file_offset;
    char *path;
    char *build_id_hex;          /* "" when none recorded */
    char *elf_path;              /* the file symbols come from; NULL: none found */
    unsigned flags;              /* SYM_INTERP, SYM_LIBC, SYM_PROFILER */
    uint64_t loaded_at, gone_at; /* stream positions; gone_at UINT64_MAX: never gone */
} sym_module;

typedef struct symbols symbols;

/* A symbolizer with no modules.  `debug_root` is where separate debug files are looked
 * for (an absolute path; NULL: /usr/lib/debug).  `root` (an absolute directory; NULL or
 * "/": none) is where the process's recorded paths are looked for first: root + path,
 * and root + debug_root before debug_root.  NULL when out of memory. */
symbols *symbols_new(const char *debug_root, const char *root);

void symbols_free(symbols *s);

/* Adds the module of a MODULE record seen at stream position `pos` (any increasing
 * count of the log's records).  Its ELF file is looked for at the first lookup that
 * needs it.  Returns 0, or -1 when out of memory. */
int symbols_add_module(symbols *s, const pyprof_module_rec *m, uint64_t pos);

/* Records that module `module_id` was unloaded at position `pos` (unknown ids are
 * ignored). */
void symbols_module_gone(symbols *s, uint64_t module_id, uint64_t pos);

/* Symbolizes `addr` as seen by a sample at position `pos`: the module that covers it
 * and was loaded then (else any module that covers it).  `is_return`: the address is a
 * return address, and address - 1 (inside the call) is looked up.  The result is owned
 * by `s` and lives as long as it does.  NULL only when out of memory. */
const sym_info *symbols_lookup(symbols *s, uint64_t addr, uint64_t pos, int is_return);

size_t symbols_nmodules(const symbols *s);

/* Module `i` (0 <= i < symbols_nmodules), in the order added. */
const sym_module *symbols_module(const symbols *s, size_t i);

/* Distinct addresses looked up so far that no symbol covers. */
uint64_t symbols_unresolved(const symbols *s);

/* 1 when `name` is the eval loop's symbol or a compiler-split piece of it
 * ("_PyEval_EvalFrameDefault.cold", "PyEval_EvalFrameEx.part.0"), else 0. */
int symbols_is_eval_name(const char *name);

#endif
