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

/* [sigsafe] The failure path of a guarded region that may have been inside codeid_of:
 * gives up the CODE record being filled and its table slot. */
void codeid_abandon(void);

#endif
