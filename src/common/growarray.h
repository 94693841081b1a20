/*
 * growarray: room in a heap array that doubles (the writer's maps, the tool's call tree
 * and call graph).  [not sigsafe]
 *
 *   grow_array   makes room for `need` elements, keeping the array on failure
 *   GROW_ARRAY   the same for a typed array and its capacity, doubling from 16
 */
#ifndef PYPROF_GROWARRAY_H
#define PYPROF_GROWARRAY_H

#include <stddef.h>
#include <stdlib.h>

/* Makes room for `need` elements of `elem` bytes in *arr (capacity *cap, doubling from
 * `first`).  Returns 0, or -1 when memory is short (the array is unchanged). */
static inline int grow_array(void **arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : first;
    while (ncap < need)
        ncap *= 2;
    void *n = realloc(*arr, ncap * elem);
    if (!n)
        return -1;
    *arr = n;
    *cap = ncap;
    return 0;
}

/* grow_array on the array `arr` (any pointer type) and its size_t capacity `cap`:
 * 0, or -1 when memory is short. */
#define GROW_ARRAY(arr, cap, need)                                                             \
    grow_array((void **)&(arr), &(cap), (need), sizeof *(arr), 16)

#endif
