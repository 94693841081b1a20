/*
 * elfsym: the address of a symbol that only a loaded module's full symbol table (.symtab,
 * on disk) names: a static variable of libpython, such as 3.6's GIL condition variables
 * or 2.7's GIL lock.  The module is the one holding a given address (dladdr1's link map:
 * its file, the executable's through /proc/self/exe, and its load bias); its file is
 * mapped read-only for the lookup and let go.  A stripped file has no .symtab: nothing
 * is found.  [not sigsafe]
 *
 *   elfsym_find(inside, names, addrs, n)  for each of the n names, its runtime address in
 *                                         the module holding `inside` (0: not found);
 *                                         the count found, or -1 when the module or its
 *                                         file cannot be read
 */
#ifndef PYPROF_ELFSYM_H
#define PYPROF_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

int elfsym_find(const void *inside, const char *const *names, uintptr_t *addrs, size_t n);

#endif
