/*
 * cli_log: what a log's header and footer hold, in the outputs' words.  See cli_log.h.
 */
#include "cli_log.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_need_allocs(const profile *p)
{
    for (size_t i = 0; i < p->nprocs; i++)
        if (p->procs[i].alloc_interval || p->procs[i].allocs_read)
            return -1;
    cli_error("no allocation samples: the logs were written without PYPROF_ALLOC");
    return CLI_EXIT_BAD_INPUT;
}

const char *cli_end_text(uint64_t end)
{
    static const char *const text[] = {
#define PYPROF_X_TEXT(name, t) t,
        PYPROF_END_LIST(PYPROF_X_TEXT)
#undef PYPROF_X_TEXT
    };
    return end < PYPROF_END_COUNT ? text[end] : "unknown";
}

const char *cli_fmt_end(const profile_process *pr, char *buf, size_t len)
{
    if (!pr->has_footer) {
        snprintf(buf, len, "truncated (no footer: the process was killed or crashed)");
        return buf;
    }
    const pyprof_footer *f = &pr->footer;
    if (f->end == PYPROF_END_SIGNAL && f->status_known)
        snprintf(buf, len, "signal %" PRId64 " (%s)", f->status, strsignal((int)f->status));
    else if (f->status_known)
        snprintf(buf, len, "%s (status %" PRId64 ")", cli_end_text(f->end), f->status);
    else
        snprintf(buf, len, "%s", cli_end_text(f->end));
    return buf;
}

const char *cli_clock_name(int clock)
{
    return clock == PYPROF_CLOCK_WALL ? "wall" : clock == PYPROF_CLOCK_CPU ? "cpu" : "unknown";
}

const char *cli_drop_name(int reason)
{
    static const char *const names[] = {
#define PYPROF_X_NAME(name, t) #name,
        PYPROF_DROP_LIST(PYPROF_X_NAME)
#undef PYPROF_X_NAME
    };
    static char lower[PYPROF_DROP_COUNT][32];
    if (reason < 0 || reason >= PYPROF_DROP_COUNT)
        return "unknown";
    if (!lower[reason][0]) {
        size_t i;
        for (i = 0; names[reason][i] && i + 1 < sizeof lower[reason]; i++)
            lower[reason][i] = (char)tolower((unsigned char)names[reason][i]);
        lower[reason][i] = 0;
    }
    return lower[reason];
}

const char *cli_drop_text(int reason)
{
    static const char *const text[] = {
#define PYPROF_X_TEXT(name, t) t,
        PYPROF_DROP_LIST(PYPROF_X_TEXT)
#undef PYPROF_X_TEXT
    };
    return reason >= 0 && reason < PYPROF_DROP_COUNT ? text[reason] : "unknown";
}

uint64_t cli_cost_samples(const pyprof_footer *f, uint32_t d)
{
    uint64_t n = 0;
    for (uint32_t t = 0; t < f->cost_ntime; t++)
        n += f->cost[d][t];
    return n;
}

double cli_cost_quantile_ns(const pyprof_footer *f, uint32_t d, double q)
{
    uint64_t n = cli_cost_samples(f, d);
    if (!n)
        return 0;
    double want = q * (double)n, seen = 0, lo = 0;
    for (uint32_t t = 0; t < f->cost_ntime; t++) {
        double hi = f->cost_time_bound[t] ? (double)f->cost_time_bound[t] : 2 * lo;
        double c = (double)f->cost[d][t];
        if (c > 0 && seen + c >= want)
            return lo + (hi - lo) * (want - seen) / c;
        seen += c;
        lo = hi;
    }
    return lo;
}

double cli_clock_drift(const pyprof_footer *f, const char **way, const char **why)
{
    double pct = 100.0 * ((double)f->clock_timer_ns / (double)f->clock_kernel_ns - 1.0);
    /* A timer that counts more than the kernel also counted time the kernel did not give
     * the thread (a hypervisor's steal, interrupts).  The library counts no interval's
     * kernel CPU above the timer's, so one that counts less is rare: a fresh interval's
     * share taken from the process's (the kernel counts a thread's context switches to
     * it, which the timer does not). */
    *way = pct >= 0 ? "ahead of" : "behind";
    *why = pct >= 0 ? "hypervisor steal or interrupt time"
                    : "the kernel counts the threads' context switches, which the timer "
                      "does not";
    return pct;
}
