/*
 * codetable: the code-identity table and its generations, the one owner of both.
 *
 * The signal handler (and the wall-clock sampler) turn a code object's address into a
 * small code id through an open-addressing table of CODE_TABLE_SLOTS slots, keyed by the
 * address plus a digest of the object's identity (so an address reused by another code
 * object gets a new id).  There are two tables, two generations: samples use the active
 * one; when it is half full, the writer flips to the other (empty) one, waits until no
 * sample still counts itself in the old one, drains the rings, clears the old one and
 * keeps only the code ids the new table holds (codetable_flip).
 *
 * Handler side [sigsafe: atomics on memory mapped at start, no call]:
 *   codetable_enter()            take the active generation for one sample
 *   codetable_leave(t)           give it back
 *   codetable_lookup(t, code, digest, &id, &slot)
 *                                find the id, or claim a slot and a new id
 *   codetable_publish(slot, id)  the claimed slot's CODE record is committed: use it
 *   codetable_retire(slot)       the claimed slot will never have a record
 *   codetable_spare_id()         a new id outside the table (a slot another thread fills)
 * Writer side [not sigsafe]:
 *   codetable_flip_wanted()      1 when the active table should be flipped
 *   codetable_flip(drain, rekey, ctx)
 *                                flip, waiting for the old table's samples to end
 *   codetable_holds(id)          is id in the active table (for rekey)
 * Sampler side [not sigsafe; no handler may run]:
 *   CODETABLE_BYTES              memory the two tables take
 *   codetable_start(mem)         a new start on zeroed memory: ids from PYPROF_CODE_FIRST
 *   codetable_reset()            generations back to their start (footer counters reset,
 *                                fork child)
 */
#ifndef PYPROF_CODETABLE_H
#define PYPROF_CODETABLE_H

#include <stddef.h>
#include <stdint.h>

/* One code-identity slot: code object address, a digest of its identity, our id. */
typedef struct code_slot {
    _Atomic uintptr_t ptr;
    _Atomic uint64_t digest;
    _Atomic uint32_t id;
    uint32_t pad;
} code_slot;

#define CODE_TABLE_SLOTS 16384u /* per generation; a power of two */

/* The memory codetable_start takes: two generations. */
#define CODETABLE_BYTES (2 * (size_t)CODE_TABLE_SLOTS * sizeof(code_slot))

/* What codetable_lookup found. */
enum codetable_result {
    CODETABLE_FOUND = 0, /* *id is the code object's id */
    CODETABLE_NEW = 1,   /* *slot is claimed for it under the new *id: the caller writes
                          * its CODE record, then codetable_publish or codetable_retire */
    CODETABLE_BUSY = 2,  /* another thread is filling its slot right now: no id yet
                          * (codetable_spare_id) */
    CODETABLE_FULL = 3,  /* no slot within reach; a flip is wanted */
};

/* [not sigsafe] A new start: the tables at `mem` (CODETABLE_BYTES, zeroed, 8-byte
 * aligned), generation 0 active, code ids from PYPROF_CODE_FIRST.  No handler may run. */
void codetable_start(void *mem);

/* [not sigsafe] Generation state back to its start (active 0, no users, empty counts, no
 * flip wanted); the tables and the next id are left as they are.  No handler may run. */
void codetable_reset(void);

/* [sigsafe] Takes the active generation for one sample: the writer does not clear a
 * table while a sample is counted in it.  Returns the table's index, for the calls
 * below and codetable_leave. */
int codetable_enter(void);

/* [sigsafe] Gives back generation t, taken by codetable_enter. */
void codetable_leave(int t);

/* [sigsafe] Looks up the code object at `code` with identity `digest` (not 0) in
 * generation t.  Returns a codetable_result; *id is set for FOUND and NEW, *slot for
 * NEW.  A NEW slot counts towards the table's fill (a flip is wanted past half). */
int codetable_lookup(int t, uintptr_t code, uint64_t digest, uint32_t *id, code_slot **slot);

/* [sigsafe] The CODE record of a NEW slot is committed: later lookups find `id`. */
void codetable_publish(code_slot *s, uint32_t id);

/* [sigsafe] A NEW slot whose code object turned out not to be one we may name (it died
 * while its names were copied, or a read failed meanwhile).  Probes go past it; nothing
 * reuses it before the table's next generation. */
void codetable_retire(code_slot *s);

/* [sigsafe] A new code id that no slot holds: for a code object whose slot another
 * thread is filling (CODETABLE_BUSY), named by a CODE record of the caller's own. */
uint32_t codetable_spare_id(void);

/* [sigsafe] 1 when the active table is half full (or a lookup found no slot): the
 * writer should flip it. */
int codetable_flip_wanted(void);

/* [not sigsafe] The writer's flip: makes the other table active, waits (sleeping, up to
 * about 2 s) until no sample is counted in the old one, then calls drain(ctx) (the
 * writer empties the rings: every record of the old generation is read), clears the
 * old table, calls rekey(ctx) (the writer keeps the code ids for which codetable_holds
 * is true and forgets the rest) and clears the flip request.  Returns 1; 0 when a sample
 * stayed in the old table (a stuck handler?): nothing is cleared, the request stands,
 * and the next call flips once more, back to the table the samples were moved off. */
int codetable_flip(void (*drain)(void *ctx), void (*rekey)(void *ctx), void *ctx);

/* [not sigsafe] 1 when the active table holds code id `id` (a linear scan). */
int codetable_holds(uint32_t id);

#endif
