/*
 * allocwin: the schedule of the allocation windows, pure arithmetic.  When a process
 * makes many small Python allocations, the Python domains are wrapped only inside short
 * windows at random times (allochook.c switches them); this module says which duty the
 * allocation rate calls for (the cost cap) and how long the gap after a window is.
 *
 * The duty is 2^-shift.  Every moment is inside a window with that probability whatever
 * the windows' real lengths: the gap after a window of real length L is exponential with
 * mean L * (2^shift - 1), so a window that ran late (its thread woke late under load) is
 * followed by a gap as much longer, and a small allocation sampled inside a window stands
 * for 2^shift of its kind (format.h, AWINDOW).
 *
 * Interface:
 *   ALLOCWIN_LEN_NS               a window's planned length
 *   ALLOCWIN_QUIET_BPS            the allocation rate (bytes a second) up to which the
 *                                 domains stay wrapped (shift 0): the wrappers' cost at
 *                                 that rate is well under the sampling's own
 *   ALLOCWIN_FLOOR_SHIFT          the largest shift the cost cap chooses (a duty of 1/16)
 *   allocwin_shift_for_rate(bps, floor)  [sigsafe] the shift for an allocation rate: 0 up
 *                                 to ALLOCWIN_QUIET_BPS, then one more for each doubling,
 *                                 at most `floor`
 *   allocwin_gap_ns(len_ns, shift, u)  [sigsafe] the gap after a window of real length
 *                                 len_ns, for u uniform in (0, 1]
 */
#ifndef PYPROF_ALLOCWIN_H
#define PYPROF_ALLOCWIN_H

#include <stdint.h>

#define ALLOCWIN_LEN_NS 4000000ull
#define ALLOCWIN_QUIET_BPS (32.0 * 1024 * 1024)
#define ALLOCWIN_FLOOR_SHIFT 4

int allocwin_shift_for_rate(double bytes_per_s, int floor_shift);
uint64_t allocwin_gap_ns(uint64_t len_ns, int shift, double u);

#endif
