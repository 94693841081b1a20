/*
 * linetable: instruction offset -> source line, for every line-table format CPython has
 * used (enum pyprof_linetable in include/pyprof/format.h).  Pure functions over bytes
 * copied from a code object; they never touch a live interpreter.
 */
#ifndef PYPROF_LINETABLE_H
#define PYPROF_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* Returns the line of the instruction at byte offset `offset` into the code object's
 * bytecode (for 3.11+ this counts the inline CACHE units too), or -1 when the table says
 * the instruction has no line, or `first_line` when the table is empty or too short
 * (cut) to cover the offset.  A negative offset (an instruction not yet started) gives
 * `first_line`.  Never reads outside tab[0..len). */
int linetable_line(int kind, const uint8_t *tab, size_t len, int first_line, int64_t offset);

#endif
