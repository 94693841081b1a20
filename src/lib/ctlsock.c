/*
 * ctlsock: the control socket's transport (ctlsock.h).
 *
 * One thread of ours, all signals blocked, sleeps in poll() on the listening socket and
 * the clients being read.  Nothing here can stall the program: its threads never touch
 * the socket, and a client is dropped at its deadline, at its first byte past the line
 * limit, or when its reply cannot be sent at once (replies are a few KB; a socket
 * buffer holds far more).  The listening descriptor is the program's to close too (a
 * daemon closing every descriptor): before each wait the thread checks that the
 * descriptor still is our socket (same inode), and stops for good when it is not, so it
 * never accepts on a socket of the program's that took the number.
 */
#include "ctlsock.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "ownfd.h"
#include "ownthreads.h"

#define REQUEST_WAIT_NS 1000000000ull /* a client has this long to send its line */
#define REPLY_MAX 16384

typedef struct client {
    int fd;    /* -1: free slot */
    ino_t ino; /* its socket's inode: the number is ours only while it holds this */
    uint64_t deadline_ns;
    size_t len;
    char line[CTLSOCK_LINE_MAX + 1];
} client;

static struct {
    int fd;    /* the listening socket, -1 when none */
    ino_t ino; /* its inode, to know it is still ours */
    ctlsock_handler handle;
    client clients[CTLSOCK_CLIENTS];
    pthread_t thread;
    int running;
} S = {.fd = -1};

/* Is descriptor `fd` still the socket of inode `ino`?  The program may have closed it
 * (a daemon closing every descriptor) and opened something else under the number. */
static int fd_is(int fd, ino_t ino)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == ino;
}

/* Forgets client `c`, closing its descriptor while it is still ours. */
static void drop(client *c)
{
    if (fd_is(c->fd, c->ino))
        close(c->fd);
    c->fd = -1;
    c->len = 0;
}

/* Sends the reply and closes the client. */
static void reply_close(client *c, const char *text, size_t len)
{
    if (len && fd_is(c->fd, c->ino))
        (void)send(c->fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    drop(c);
}

static void reply_error(client *c, const char *msg)
{
    char buf[128];
    int n = snprintf(buf, sizeof buf, "error: %s\n", msg);
    reply_close(c, buf, (size_t)n);
}

/* Is the listening descriptor still our socket? */
static int still_ours(void) { return fd_is(S.fd, S.ino); }

int ctlsock_line_ok(const char *line, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)line[i];
        if (ch < 0x20 || ch > 0x7e)
            return 0;
    }
    return 1;
}

int ctlsock_feed(char *line, size_t *len, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            if (*len && line[*len - 1] == '\r')
                (*len)--;
            line[*len] = 0;
            return CTLSOCK_LINE;
        }
        if (*len >= CTLSOCK_LINE_MAX)
            return CTLSOCK_TOO_LONG;
        line[(*len)++] = buf[i];
    }
    return CTLSOCK_MORE;
}

/* A complete request line (NUL-terminated in c->line): answered, and the client closed. */
static void serve(client *c)
{
    if (!ctlsock_line_ok(c->line, c->len)) {
        reply_error(c, "the request is not one line of ASCII text");
        return;
    }
    static char out[REPLY_MAX];
    size_t n = S.handle(c->line, out, sizeof out);
    reply_close(c, out, n < sizeof out ? n : sizeof out - 1);
}

/* Reads what client `c` sent; answers it once its line is complete. */
static void take_input(client *c)
{
    char buf[512];
    if (!fd_is(c->fd, c->ino)) {
        drop(c);
        return;
    }
    ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        /* The client closed its side: a last line without '\n' is taken as it is. */
        if (n == 0 && c->len) {
            c->line[c->len] = 0;
            serve(c);
        } else {
            drop(c);
        }
        return;
    }
    switch (ctlsock_feed(c->line, &c->len, buf, (size_t)n)) {
    case CTLSOCK_LINE:
        serve(c);
        break;
    case CTLSOCK_TOO_LONG:
        reply_error(c, "request too long (at most 256 bytes)");
        break;
    default:
        break;
    }
}

/* A new connection: served if its peer may be, into a free slot. */
static void take_client(void)
{
    if (!still_ours())
        return;
    int fd = accept4(S.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return;
    }
    client tmp = {.fd = fd, .ino = st.st_ino};
    struct ucred cr;
    socklen_t crl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0 ||
        (cr.uid != 0 && cr.uid != geteuid())) {
        reply_error(&tmp, "permission denied");
        return;
    }
    for (int i = 0; i < CTLSOCK_CLIENTS; i++)
        if (S.clients[i].fd < 0) {
            S.clients[i] = tmp;
            S.clients[i].deadline_ns = clock_mono_ns() + REQUEST_WAIT_NS;
            return;
        }
    reply_error(&tmp, "busy"); /* cannot happen: the listener is not polled when full */
}

static void *ctl_main(void *arg)
{
    (void)arg;
    ownthreads_name_self("ctl");
    for (;;) {
        if (!still_ours())
            break; /* the program closed our descriptor: never touch the number again */
        struct pollfd p[CTLSOCK_CLIENTS + 1];
        int map[CTLSOCK_CLIENTS + 1];
        int n = 0, used = 0;
        uint64_t now = clock_mono_ns(), next = UINT64_MAX;
        for (int i = 0; i < CTLSOCK_CLIENTS; i++) {
            client *c = &S.clients[i];
            if (c->fd < 0)
                continue;
            used++;
            if (now >= c->deadline_ns) {
                reply_error(c, "no request within 1 s");
                used--;
                continue;
            }
            if (c->deadline_ns < next)
                next = c->deadline_ns;
            p[n] = (struct pollfd){.fd = c->fd, .events = POLLIN};
            map[n++] = i;
        }
        if (used < CTLSOCK_CLIENTS) {
            p[n] = (struct pollfd){.fd = S.fd, .events = POLLIN};
            map[n++] = -1;
        }
        int timeout = next == UINT64_MAX ? 1000 : (int)((next - now) / 1000000 + 1);
        if (timeout > 1000)
            timeout = 1000; /* the descriptor check runs at least every second */
        int rc = poll(p, (nfds_t)n, timeout);
        if (rc <= 0)
            continue;
        for (int k = 0; k < n; k++) {
            if (!p[k].revents)
                continue;
            if (map[k] < 0) {
                if (p[k].revents & POLLNVAL)
                    goto out;
                take_client();
            } else {
                take_input(&S.clients[map[k]]);
            }
        }
    }
out:
    return NULL;
}

static int bind_listen(char *err, size_t errlen)
{
    int fd = ownfd_move(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (fd < 0) {
        snprintf(err, errlen, "pyprof: control socket: %s; no live control", strerror(errno));
        return -1;
    }
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    int len = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "pyprof.%ld", (long)getpid());
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
    struct stat st;
    if (bind(fd, (struct sockaddr *)&a, alen) != 0 || listen(fd, 16) != 0 ||
        fstat(fd, &st) != 0) {
        snprintf(err, errlen, "pyprof: control socket @pyprof.%ld: %s; no live control",
                 (long)getpid(), strerror(errno));
        close(fd);
        return -1;
    }
    S.fd = fd;
    S.ino = st.st_ino;
    return 0;
}

static int start_thread(char *err, size_t errlen)
{
    for (int i = 0; i < CTLSOCK_CLIENTS; i++)
        S.clients[i].fd = -1;
    int rc = ownthreads_start(&S.thread, ctl_main, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "pyprof: cannot start the control thread: %s; no live control",
                 strerror(rc));
        close(S.fd);
        S.fd = -1;
        return -1;
    }
    pthread_detach(S.thread);
    S.running = 1;
    return 0;
}

int ctlsock_start(ctlsock_handler handle, char *err, size_t errlen)
{
    if (S.running)
        return 0;
    S.handle = handle;
    if (bind_listen(err, errlen) < 0)
        return -1;
    return start_thread(err, errlen);
}

void ctlsock_forget_in_child(void)
{
    /* Copies of the parent's descriptors, still ours unless the program closed them. */
    if (still_ours())
        close(S.fd);
    S.fd = -1;
    for (int i = 0; i < CTLSOCK_CLIENTS; i++)
        drop(&S.clients[i]);
    S.running = 0;
}

void ctlsock_restart_in_child(void)
{
    int had = S.running;
    ctlsock_forget_in_child();
    if (!had)
        return;
    char err[256];
    if (bind_listen(err, sizeof err) == 0)
        start_thread(err, sizeof err);
}
