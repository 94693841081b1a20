/*
 * allocwin: the allocation windows' schedule (allocwin.h).  Pure: no state, no calls
 * beyond libm's log, so the hooks may call it too.
 */
#include "allocwin.h"

#include <math.h>

int allocwin_shift_for_rate(double bytes_per_s, int floor_shift)
{
    int shift = 0;
    double quiet = ALLOCWIN_QUIET_BPS;
    while (shift < floor_shift && bytes_per_s > quiet) {
        shift++;
        quiet *= 2;
    }
    return shift;
}

uint64_t allocwin_gap_ns(uint64_t len_ns, int shift, double u)
{
    if (shift <= 0)
        return 0;
    if (!(u > 0) || u > 1)
        u = 1;
    double mean = (double)len_ns * (double)((1ull << shift) - 1);
    double gap = -log(u) * mean;
    /* A draw far out in the tail (u near 0) is cut at 40 means: 1 in e^40 never happens,
     * and the cut keeps the sum of the gaps finite in any arithmetic. */
    if (gap > 40 * mean)
        gap = 40 * mean;
    return (uint64_t)gap;
}
