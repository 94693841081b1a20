/*
 * wall: the wall-clock pass.  In wall-clock mode no signal is sent: the sampler's own
 * thread reads every thread of the main interpreter from its thread state, while the
 * threads keep running, and records what it can be sure of (see wall.c).
 *
 * Interface:
 *   wall_sample_threads()   one pass over the threads; returns the samples recorded
 */
#ifndef PYPROF_WALL_H
#define PYPROF_WALL_H

/* [not a signal handler; sigsafe all the same] Wall-clock mode, from the sampler's own
 * thread (only one may call it): one sample of every thread of the main interpreter that
 * is running Python code, read from its thread state (guarded reads; no signal reaches
 * the program's threads).  A stack that changed during the read is recorded as its
 * innermost frame under the unreadable marker.  Returns the samples recorded. */
unsigned wall_sample_threads(void);

#endif
