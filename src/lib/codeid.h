/*
 * codeid: a code object's id for a sample, and its CODE record the first time.  The id
 * comes from the code table (codetable.h), keyed by the code object's address and a
 * digest of its name, file name, line table and first line; the first time a code object
 * is seen, its names (as UTF-8) and line table are copied into a CODE record right then,
 * while the frame that runs it keeps it alive.
 *
 * Interface ([sigsafe]; see codeid.c for what it calls):
 *   codeid_of(a, t, code, holder, held, &changed)
 *                          the id of `code` in table generation t, inside a guarded
 *                          region; PYPROF_CODE_UNREADABLE when none can be given
 *   codeid_of_task(a, t, task, name_at)
 *                          the id of an asyncio task's frame (its CODE record is flagged
 *                          PYPROF_CODE_F_TASK and carries the task's name)
 *   codeid_abandon()       a guarded read failed: cancels the CODE record (and retires
 *                          the table slot) this thread was filling, if any
 */
#ifndef PYPROF_CODEID_H
#define PYPROF_CODEID_H

#include <stdint.h>

#include "pyabi.h"
#include "pyread.h"

/* [sigsafe] The id of the code object at `code` (checked live by the caller), assigning
 * one and emitting its CODE record the first time; table generation `t` is held by the
 * caller (codetable_enter), inside a guarded region.  `holder`, when not 0, is a frame
 * of a thread that keeps running (the wall clock), read as `held`: the frame keeps the
 * code object alive, so a new record is committed only if the frame still holds it after
 * the copy.  Returns PYPROF_CODE_UNREADABLE when it cannot give an id; *changed is set
 * when that is because the holder moved on. */
uint32_t codeid_of(const pyabi *a, int t, uintptr_t code, uintptr_t holder,
                   const frame_raw *held, int *changed);

/* [sigsafe] The identity of the code object at `code` beside its address (a digest of
 * its name, file name and line-table objects and its first line), as the table keys it. */
uint64_t codeid_digest(const pyabi *a, uintptr_t code);

/* [sigsafe] codeid_of with the identity `digest` read earlier, while the frame holding
 * the code object was read (the wall clock reads a running thread's frames first and
 * looks their code objects up after: meanwhile the thread may have freed one and put
 * another at its address).  A known identity is not read again; a new one is copied
 * only while the code object still has it, and committed only if it still has it and
 * `holder` still holds it after the copy (else *changed). */
uint32_t codeid_of_digest(const pyabi *a, int t, uintptr_t code, uint64_t digest,
                          uintptr_t holder, const frame_raw *held, int *changed);

/* [sigsafe] The id of the task frame of the asyncio task at `task` whose name field is
 * at name_at (0: 3.7's nameless tasks; the field holds a str, or on 3.12+ the int a
 * default name is kept as until asked for), inside a guarded region: keyed by the
 * task's address and its name object, so a task renamed or a new task at a freed one's
 * address gets a new id, and a CODE record flagged PYPROF_CODE_F_TASK naming it
 * ("Task-N" for an int) the first time, kept only if the field still holds the same
 * object after the copy.  PYPROF_CODE_UNREADABLE when it cannot give an id. */
uint32_t codeid_of_task(const pyabi *a, int t, uintptr_t task, uintptr_t name_at);

/* [sigsafe] The failure path of a guarded region that may have been inside codeid_of:
 * gives up the CODE record being filled and its table slot. */
void codeid_abandon(void);

#endif
