/*
 * cpucredit: SIGNAL-HANDLER RULES (pure arithmetic and atomics, no call).  See
 * cpucredit.h.
 */
#include "cpucredit.h"

static void set_fresh(cpucredit *c, const cpucredit_now *at)
{
    c->mono_ns = at->mono_ns;
    c->switches = at->switches;
    c->fresh = 1;
}

void cpucredit_start(cpucredit *c, const cpucredit_now *at, uint64_t seed_ns)
{
    c->last_ns = c->start_ns = at->cpu_ns;
    c->credit_ns = seed_ns;
    set_fresh(c, at);
}

void cpucredit_rebase(cpucredit *c, uint64_t now_ns)
{
    uint64_t start = c->start_ns;
    if (now_ns > start)
        __atomic_compare_exchange_n(&c->last_ns, &start, now_ns, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
}

void cpucredit_restart(cpucredit *c, const cpucredit_now *at)
{
    if (at->cpu_ns > c->last_ns)
        __atomic_store_n(&c->last_ns, at->cpu_ns, __ATOMIC_RELAXED);
    set_fresh(c, at);
}

int cpucredit_fresh(const cpucredit *c) { return c->fresh && c->mono_ns; }

/* a * b / c without overflow (c > 0). */
static uint64_t muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    return (uint64_t)((unsigned __int128)a * b / c);
}

/* The kernel's CPU `d` of a fresh interval, as the timer's count of it would be without
 * the lateness at its end (cpucredit.h); the lateness into `seen` when it shows. */
static uint64_t fresh_cpu(const cpucredit *c, const cpucredit_now *now, uint64_t d,
                          uint64_t timer_ns, uint64_t late_ns, cpucredit_seen *seen)
{
    if (c->mono_ns && now->mono_ns > c->mono_ns && now->switches == c->switches) {
        /* On the CPU all along: the wall time is what the timer counted and its lateness,
         * of which the kernel gave the thread d / wall. */
        uint64_t wall = now->mono_ns - c->mono_ns;
        if (d >= wall)
            return timer_ns;
        if (wall > timer_ns) {
            seen->late_ns = muldiv(d, wall - timer_ns, wall);
            seen->late_known = 1;
        }
        return muldiv(d, timer_ns, wall);
    }
    return d > late_ns ? d - late_ns : 0;
}

uint32_t cpucredit_signal(cpucredit *c, const cpucredit_now *now, uint64_t timer_ns,
                          uint64_t period_ns, uint64_t late_ns, cpucredit_seen *seen)
{
    seen->late_ns = 0;
    seen->late_known = 0;
    if (!period_ns)
        period_ns = 1;
    /* A thread's CPU clock never goes back; should a reading, the interval counts as
     * none and the later reading stays the base. */
    uint64_t last = __atomic_load_n(&c->last_ns, __ATOMIC_RELAXED);
    uint64_t d = now->cpu_ns > last ? now->cpu_ns - last : 0;
    if (now->cpu_ns > last)
        __atomic_store_n(&c->last_ns, now->cpu_ns, __ATOMIC_RELAXED);
    seen->kernel_ns = d;
    if (c->fresh) {
        d = fresh_cpu(c, now, d, timer_ns, late_ns, seen);
        c->fresh = 0;
    }
    /* The first, shorter interval stands for a whole period of the timer: its kernel CPU
     * is scaled by period / timer_ns, at most to one period. */
    if (timer_ns && timer_ns < period_ns)
        d = d >= timer_ns ? period_ns : muldiv(d, period_ns, timer_ns);
    uint64_t credit = c->credit_ns + d;
    if (credit < d) /* wrapped: a broken clock */
        credit = UINT64_MAX;
    uint64_t n = credit / period_ns;
    if (n > CPUCREDIT_MAX_SAMPLES) {
        c->credit_ns = 0;
        return CPUCREDIT_MAX_SAMPLES;
    }
    c->credit_ns = credit - n * period_ns;
    return (uint32_t)n;
}
