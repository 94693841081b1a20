/*
 * ownfd: the library's long-lived descriptors above the program's (ownfd.h).
 */
#include "ownfd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

int ownfd_move(int fd)
{
    if (fd < 0)
        return fd;
    int saved = errno;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 2 * OWNFD_ROOM) {
        errno = saved;
        return fd;
    }
    rlim_t top = rl.rlim_cur < 1024 ? rl.rlim_cur : 1024;
    int floor = (int)(top - OWNFD_ROOM);
    if (fd >= floor) {
        errno = saved;
        return fd;
    }
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (moved >= 0 && moved < (int)top)
        close(fd);
    else if (moved >= 0) { /* past the top: the program's range after all */
        close(moved);
        moved = fd;
    } else
        moved = fd;
    errno = saved;
    return moved;
}
