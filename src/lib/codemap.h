/*
 * codemap: the writer's map from a code id to what it keeps of that code object -- its
 * line table (a sample's instruction offset to a line), its CODE record's payload (each
 * new file of a rotated series announces it again) and the file it was last written to.
 * Open addressing on the id.  The writer thread's alone: nothing here is sigsafe.
 *
 * Interface:
 *   codemap_find(m, id)      the entry of `id`, or NULL
 *   codemap_slot(m, id)      the entry of `id`, or a new one for it (id still 0, every
 *                            field 0: the caller fills it); NULL when out of memory
 *   codemap_keep(m, keep)    a code table flip: keeps the ids keep(id) says, frees the rest
 *   codemap_free(m)          frees every entry and the map (then empty, usable again)
 */
#ifndef PYPROF_CODEMAP_H
#define PYPROF_CODEMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct code_info {
    uint32_t id;
    int32_t first_line;
    uint8_t kind; /* enum pyprof_linetable */
    uint32_t lt_len;
    uint8_t *lt;
    uint8_t *rec; /* the CODE record's payload, for the next file of a series */
    uint32_t rec_len;
    unsigned file_gen; /* the file it was last written to (the writer's count) */
} code_info;

typedef struct codemap {
    code_info *slots;
    size_t cap, n;
} codemap;

code_info *codemap_find(const codemap *m, uint32_t id);
code_info *codemap_slot(codemap *m, uint32_t id);
void codemap_keep(codemap *m, int (*keep)(uint32_t id));
void codemap_free(codemap *m);

#endif
