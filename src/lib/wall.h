/*
 * wall: the wall-clock pass.  The sampler's own thread reads every thread of the main
 * interpreter from its thread state, while the threads keep running, and records what
 * it can be sure of (see wall.c); a thread found running samples itself from its own
 * CPU timer (sampler.c).
 *
 * Interface:
 *   wall_sample_threads(timed) one pass over the threads; returns the samples recorded
 *   wall_snapshot(id)       every thread's stack, for `pyprof dump`
 *   wall_forget_in_child()
 */
#ifndef PYPROF_WALL_H
#define PYPROF_WALL_H

#include <stdint.h>

/* [not a signal handler; sigsafe all the same] Wall-clock mode, from the sampler's own
 * thread (only one may call it): one sample of every thread of the main interpreter that
 * has Python frames, read from its thread state (guarded reads; no signal), kept only
 * when the thread changed nothing meanwhile.  With `timed` (every thread has its CPU
 * timer, threadtimer.h), a thread found running is asked of its timer instead
 * (threadtimer_ask), whose next signal samples it.  Without, a running thread is read
 * as it runs, and a stack found changing is recorded as its innermost frame under the
 * unreadable marker.  Returns the threads sampled or asked of their timer. */
unsigned wall_sample_threads(int timed);

/* [not sigsafe in spirit: the control thread's] `pyprof dump`: one read of every thread
 * of the main interpreter, idle or not, into the sample ring: an RREC_SNAP record per
 * thread (its stack, or none; PYPROF_SNAP_F_* and the kernel's state letter), then an
 * RREC_SNAP_END with `snapshot_id`.  Waits for a wall pass that is running (at most
 * 2 s).  Returns 0, or -1 (the interpreter is not running, the ring is full, or a pass
 * never ended). */
int wall_snapshot(uint32_t snapshot_id);

/* In a fork child: a pass or snapshot the parent was running is not ours. */
void wall_forget_in_child(void);

#endif
