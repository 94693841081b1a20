/*
 * ownfd: the library's long-lived descriptors (the log file, /proc/self/statm, the control
 * socket) kept out of the program's way.  A new descriptor takes the lowest number free,
 * so one the library holds would sit among the program's own and change what it sees
 * (a program that expects two consecutive descriptors from open and dup, or the first
 * free ones to be unused after its own: CPython's test_os does both).  ownfd_move gives
 * the descriptor a number from the top of the range the program uses, below 1024 and
 * below the soft RLIMIT_NOFILE: 64 numbers under the smaller of the two.  The
 * descriptor stays close-on-exec and keeps its file status flags.  [sigsafe: fcntl,
 * close and getrlimit only; errno kept]
 *
 *   ownfd_move(fd)  the descriptor to use from now on: fd moved up (fd itself closed), or
 *                   fd unchanged where it cannot be (a limit under 128, no free number up
 *                   there, fd already there, fd < 0)
 */
#ifndef PYPROF_OWNFD_H
#define PYPROF_OWNFD_H

#define OWNFD_ROOM 64 /* the numbers under the top that the library's descriptors take */

int ownfd_move(int fd);

#endif
