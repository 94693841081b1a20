/*
 * ctlcmd: the control socket's requests (ctlcmd.h, docs/CONTROL.md).
 *
 * pause and resume end and start profiling windows, exactly as the toggle signal does;
 * period and clock start a new window with the changed setting (a log's header holds one
 * period and one clock); flush and rotate are the writer thread's work, asked with
 * writer_request; dump reads every thread here, on the control thread, into the sample
 * ring (wall_snapshot), then has the writer write and flush it.
 */
#include "ctlcmd.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pyprof/format.h>

#include "common/config.h"
#include "sampler.h"
#include "wall.h"
#include "window.h"
#include "writer.h"

static uint32_t snapshot_next = 1;

/* Appends to the reply; returns the new length (never past cap - 1). */
static size_t put(char *out, size_t cap, size_t len, const char *fmt, ...)
{
    if (len >= cap)
        return len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + len, cap - len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return len;
    return len + (size_t)n < cap ? len + (size_t)n : cap - 1;
}

static const char *clock_name(int c) { return c == PYPROF_CLOCK_WALL ? "wall" : "cpu"; }

static size_t status(char *out, size_t cap)
{
    pyprof_config cfg;
    window_config(&cfg);
    int active = window_is_open();
    writer_status_info w;
    writer_status(&w, window_cron_cpu_ns());
    char rot[64];
    if (cfg.rotate_ns)
        snprintf(rot, sizeof rot, "%llu s",
                 (unsigned long long)(cfg.rotate_ns / 1000000000ull));
    else if (cfg.rotate_bytes)
        snprintf(rot, sizeof rot, "%llu bytes", (unsigned long long)cfg.rotate_bytes);
    else
        snprintf(rot, sizeof rot, "off");
    size_t n = put(out, cap, 0, "ok\n");
    n = put(out, cap, n, "state: %s\n", active ? "running" : "paused");
    n = put(out, cap, n, "pid: %ld\n", (long)getpid());
    n = put(out, cap, n, "period_ns: %llu\n", (unsigned long long)cfg.period_ns);
    n = put(out, cap, n, "clock: %s\n", clock_name(cfg.clock));
    n = put(out, cap, n, "native: %d\n", active ? sampler_native() > 0 : cfg.native);
    n = put(out, cap, n, "timer: %s\n", active ? sampler_timer_name() : "");
    n = put(out, cap, n, "log: %s\n", active ? w.path : "");
    n = put(out, cap, n, "seq: %u\n", w.seq);
    n = put(out, cap, n, "window: %u\n", w.window);
    n = put(out, cap, n, "samples: %llu\n", (unsigned long long)(active ? w.samples : 0));
    n = put(out, cap, n, "dropped: %llu\n", (unsigned long long)(active ? w.dropped : 0));
    n = put(out, cap, n, "lib_cpu_ns: %llu\n", (unsigned long long)(active ? w.lib_cpu_ns : 0));
    n = put(out, cap, n, "rotate: %s\n", rot);
    if (cfg.keep)
        n = put(out, cap, n, "keep: %u\n", cfg.keep);
    else
        n = put(out, cap, n, "keep: all\n");
    n = put(out, cap, n, "snapshots: %u\n", snapshot_next - 1);
    return n;
}

/* A new window with `cfg`, the running one (if any) ended first. */
static size_t restart(const pyprof_config *cfg, const char *what, char *out, size_t cap)
{
    if (window_is_open())
        window_pause();
    if (window_resume(cfg) < 0)
        return put(out, cap, 0,
                   "error: profiling could not start again (see the program's "
                   "stderr)\n");
    /* The new log, created now rather than at the writer's next wake. */
    char path[4096] = "";
    writer_request(WRITER_REQ_FLUSH, path, sizeof path);
    return put(out, cap, 0, "ok %s %s\n", what, path);
}

static size_t handle_locked(const char *req, const char *arg, char *out, size_t cap)
{
    if (!strcmp(req, "status"))
        return status(out, cap);
    pyprof_config cfg;
    window_config(&cfg);
    char path[4096];
    if (!strcmp(req, "pause")) {
        if (!window_is_open())
            return put(out, cap, 0, "error: already paused\n");
        window_pause();
        return put(out, cap, 0, "ok paused\n");
    }
    if (!strcmp(req, "resume")) {
        if (window_is_open())
            return put(out, cap, 0, "error: already running\n");
        return restart(&cfg, "running", out, cap);
    }
    if (!strcmp(req, "period")) {
        uint64_t ns;
        if (!arg ||
            config_parse_duration(arg, CONFIG_PERIOD_MIN_NS, CONFIG_PERIOD_MAX_NS, &ns) < 0)
            return put(out, cap, 0,
                       "error: bad period '%.64s' (from 100us to 10s, such as "
                       "10ms, 500us or 0.01)\n",
                       arg ? arg : "");
        cfg.period_ns = ns;
        char what[64];
        snprintf(what, sizeof what, "period %llu", (unsigned long long)ns);
        return restart(&cfg, what, out, cap);
    }
    if (!strcmp(req, "clock")) {
        int c;
        if (!arg || config_parse_clock(arg, &c) < 0)
            return put(out, cap, 0, "error: bad clock '%.64s' (cpu or wall)\n", arg ? arg : "");
        cfg.clock = c;
        char what[64];
        snprintf(what, sizeof what, "clock %s", clock_name(c));
        return restart(&cfg, what, out, cap);
    }
    if (!strcmp(req, "flush") || !strcmp(req, "rotate")) {
        if (!window_is_open())
            return put(out, cap, 0, "error: paused\n");
        int rotate = req[0] == 'r';
        if (writer_request(rotate ? WRITER_REQ_ROTATE : WRITER_REQ_FLUSH, path, sizeof path) <
            0)
            return put(out, cap, 0,
                       "error: busy (no log is being written, or the writer "
                       "did not answer within 2 s)\n");
        return put(out, cap, 0, "ok %s %s\n", rotate ? "rotated" : "flushed", path);
    }
    if (!strcmp(req, "dump")) {
        if (!window_is_open())
            return put(out, cap, 0, "error: paused\n");
        uint32_t id = snapshot_next;
        if (wall_snapshot(id) < 0)
            return put(out, cap, 0,
                       "error: the threads could not be read (the interpreter "
                       "is not running, or the buffer is full)\n");
        snapshot_next++;
        if (writer_request(WRITER_REQ_FLUSH, path, sizeof path) < 0)
            return put(out, cap, 0, "error: busy (the writer did not answer within 2 s)\n");
        return put(out, cap, 0, "ok snapshot %u %s\n", id, path);
    }
    return put(out, cap, 0,
               "error: unknown request '%.64s' (status, pause, resume, flush, "
               "rotate, period DURATION, clock cpu|wall, dump)\n",
               req);
}

int ctlcmd_parse(const char *line, ctlcmd_req *r, char *err, size_t errlen)
{
    snprintf(r->buf, sizeof r->buf, "%s", line);
    char *save = NULL;
    char *req = strtok_r(r->buf, " \t", &save);
    char *arg = req ? strtok_r(NULL, " \t", &save) : NULL;
    char *extra = arg ? strtok_r(NULL, " \t", &save) : NULL;
    r->name = req;
    r->arg = arg;
    if (!req) {
        put(err, errlen, 0, "error: empty request\n");
        return -1;
    }
    if (extra) {
        put(err, errlen, 0, "error: too many words in the request\n");
        return -1;
    }
    int needs_arg = !strcmp(req, "period") || !strcmp(req, "clock");
    if (arg && !needs_arg) {
        put(err, errlen, 0, "error: '%.32s' takes no argument\n", req);
        return -1;
    }
    return 0;
}

size_t ctlcmd_handle(const char *line, char *out, size_t cap)
{
    ctlcmd_req req;
    if (ctlcmd_parse(line, &req, out, cap) < 0)
        return cap ? strlen(out) : 0;
    window_lock();
    size_t n = handle_locked(req.name, req.arg, out, cap);
    window_unlock();
    return n;
}
