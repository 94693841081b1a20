/*
 * ctlclient: the client side of the control socket.  See ctlclient.h.
 */
#include "ctlclient.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return CTL_FAILED;
}

/* The network namespace of `path` ("/proc/PID/ns/net") into buf: 0, or -1 when it
 * cannot be read (another user's process, no such process). */
static int netns_of(const char *path, char *buf, size_t len)
{
    ssize_t n = readlink(path, buf, len - 1);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    return 0;
}

const char *ctl_no_socket_text(pid_t pid, char *buf, size_t len)
{
    /* The socket is abstract, so it lives in the process's network namespace: one of a
     * unit with PrivateNetwork=, or of a container, is out of reach from here. */
    char path[64], theirs[64], ours[64];
    snprintf(path, sizeof path, "/proc/%ld/ns/net", (long)pid);
    if (netns_of(path, theirs, sizeof theirs) == 0 &&
        netns_of("/proc/self/ns/net", ours, sizeof ours) == 0 && strcmp(theirs, ours)) {
        snprintf(buf, len,
                 "no pyprof control socket for pid %ld here: it runs in another network "
                 "namespace (%s: PrivateNetwork=, a container), which holds its socket; run "
                 "this there: nsenter --net=%s pyprof ...",
                 (long)pid, theirs, path);
        return buf;
    }
    snprintf(buf, len,
             "no pyprof control socket for pid %ld (not profiled, PYPROF_CONTROL=0, or not "
             "running)",
             (long)pid);
    return buf;
}

/* Milliseconds left until `deadline` (CLOCK_MONOTONIC ns), 0 once it has passed. */
static int ms_left(uint64_t deadline)
{
    uint64_t now = clock_mono_ns();
    if (now >= deadline)
        return 0;
    uint64_t ms = (deadline - now + 999999) / 1000000;
    return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* Waits until `fd` is ready for `events`.  Returns 1 ready, 0 at the deadline, -1 on an
 * error (errno). */
static int wait_for(int fd, short events, uint64_t deadline)
{
    for (;;) {
        int left = ms_left(deadline);
        if (!left)
            return 0;
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* Connects to pid's socket and checks who listens there.  Returns the socket, or a
 * negative ctl_result. */
static int ctl_connect(pid_t pid, uint64_t deadline, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    int n = snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "pyprof.%ld", (long)pid);
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail(err, errlen, "cannot create a socket: %s", strerror(errno));
    /* A blocking connect waits while the server's backlog is full; the send timeout
     * bounds that wait on a Unix socket. */
    int left = ms_left(deadline);
    struct timeval tv = {left / 1000, (left % 1000) * 1000};
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    while (connect(fd, (struct sockaddr *)&sa, salen) < 0) {
        int e = errno;
        if (e == EINTR)
            continue;
        close(fd);
        if (e == ECONNREFUSED || e == ENOENT)
            return CTL_NO_SOCKET;
        if (e == EAGAIN || e == EINPROGRESS || e == ETIMEDOUT)
            return fail(err, errlen,
                        "the control socket of pid %ld did not accept the connection "
                        "within %d s",
                        (long)pid, CTL_DEADLINE_MS / 1000);
        return fail(err, errlen, "cannot connect to the control socket of pid %ld: %s",
                    (long)pid, strerror(e));
    }
    struct ucred cred;
    socklen_t clen = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
        int e = errno;
        close(fd);
        return fail(err, errlen, "cannot tell who holds the control socket of pid %ld: %s",
                    (long)pid, strerror(e));
    }
    if (cred.pid != pid) {
        close(fd);
        return fail(err, errlen,
                    "the control socket name of pid %ld is held by process %ld: not talking "
                    "to it",
                    (long)pid, (long)cred.pid);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return fail(err, errlen, "fcntl: %s", strerror(e));
    }
    return fd;
}

/* Sends all of buf.  Returns 0, 1 when the server closed its end first (it may have
 * replied why), or CTL_FAILED. */
static int send_all(int fd, pid_t pid, const char *buf, size_t len, uint64_t deadline,
                    char *err, size_t errlen)
{
    while (len) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
        if (w > 0) {
            buf += w;
            len -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
            return 1;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return fail(err, errlen, "cannot send to the control socket of pid %ld: %s",
                        (long)pid, strerror(errno));
        int r = wait_for(fd, POLLOUT, deadline);
        if (r == 0)
            return fail(err, errlen, "pid %ld did not take the request within %d s", (long)pid,
                        CTL_DEADLINE_MS / 1000);
        if (r < 0)
            return fail(err, errlen, "poll: %s", strerror(errno));
    }
    return 0;
}

/* Reads until the server closes.  Returns 0 with *out set, or CTL_FAILED. */
static int read_reply(int fd, pid_t pid, uint64_t deadline, char **out, char *err,
                      size_t errlen)
{
    char *buf = malloc(CTL_REPLY_MAX + 1);
    if (!buf)
        return fail(err, errlen, "out of memory");
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, CTL_REPLY_MAX + 1 - len);
        if (r > 0) {
            len += (size_t)r;
            if (len > CTL_REPLY_MAX) {
                free(buf);
                return fail(err, errlen, "the reply of pid %ld is longer than %u bytes",
                            (long)pid, CTL_REPLY_MAX);
            }
            continue;
        }
        if (r == 0 || (errno == ECONNRESET && len))
            break;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            int e = errno;
            free(buf);
            if (e == ECONNRESET)
                return fail(err, errlen, "pid %ld closed the connection without a reply",
                            (long)pid);
            return fail(err, errlen, "cannot read the reply of pid %ld: %s", (long)pid,
                        strerror(e));
        }
        int w = wait_for(fd, POLLIN, deadline);
        if (w <= 0) {
            int e = errno;
            free(buf);
            if (w == 0)
                return fail(err, errlen, "no complete reply from pid %ld within %d s",
                            (long)pid, CTL_DEADLINE_MS / 1000);
            return fail(err, errlen, "poll: %s", strerror(e));
        }
    }
    if (!len) {
        free(buf);
        return fail(err, errlen, "pid %ld closed the connection without a reply", (long)pid);
    }
    buf[len] = 0;
    if (strlen(buf) != len) {
        free(buf);
        return fail(err, errlen, "the reply of pid %ld holds a NUL byte", (long)pid);
    }
    *out = buf;
    return 0;
}

int ctl_request(pid_t pid, const char *line, char **reply, char *err, size_t errlen)
{
    *reply = NULL;
    err[0] = 0;
    uint64_t deadline = clock_mono_ns() + (uint64_t)CTL_DEADLINE_MS * 1000000ull;
    int fd = ctl_connect(pid, deadline, err, errlen);
    if (fd < 0)
        return fd;
    size_t n = strlen(line);
    char *msg = malloc(n + 2);
    if (!msg) {
        close(fd);
        return fail(err, errlen, "out of memory");
    }
    memcpy(msg, line, n);
    msg[n] = '\n';
    int rc = send_all(fd, pid, msg, n + 1, deadline, err, errlen);
    free(msg);
    if (rc >= 0) {
        /* Done sending: the server sees the end of the stream if it reads further. */
        (void)shutdown(fd, SHUT_WR);
        rc = read_reply(fd, pid, deadline, reply, err, errlen);
    }
    close(fd);
    return rc < 0 ? rc : CTL_OK;
}

int ctl_reply_kind(const char *reply)
{
    if (!strncmp(reply, "ok", 2) && (reply[2] == 0 || reply[2] == ' ' || reply[2] == '\n'))
        return 1;
    if (!strncmp(reply, "error:", 6))
        return -1;
    return 0;
}

int ctl_reply_value(const char *reply, const char *key, char *buf, size_t len)
{
    size_t klen = strlen(key);
    for (const char *l = reply; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (strncmp(l, key, klen) || l[klen] != ':')
            continue;
        const char *v = l + klen + 1;
        while (*v == ' ')
            v++;
        size_t vlen = strcspn(v, "\n");
        if (vlen >= len)
            vlen = len ? len - 1 : 0;
        if (len) {
            memcpy(buf, v, vlen);
            buf[vlen] = 0;
        }
        return 0;
    }
    return -1;
}
