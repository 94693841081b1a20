/*
 * threadtimer: each thread's CPU timer in cpu mode.  See threadtimer.h.
 *
 * Why a random first period.  The perf task-clock event counts one thread's CPU time on
 * an hrtimer and overflows every `period` of it.  A counter that starts at zero when the
 * thread starts (what an inherited event does) overflows at period, 2 x period, ...: a
 * thread that uses c of CPU gets floor(c / period) samples, none at all below one
 * period, which makes a thread-per-request server all but invisible.  Started at a
 * uniformly random point of the first period instead, it gets floor(c / period) or one
 * more, with expectation exactly c / period.
 *
 * How.  The kernel gives an inherited event the parent's period, and the period of a
 * running event can only be changed through its descriptor; so each thread gets its
 * own events, opened by the thread itself (threadtimer_thread_start, from the
 * pthread_create wrapper's trampoline) or, for the threads that exist when sampling
 * starts, by the starting thread:
 *
 *   1. the first event: period U x period (U uniform in (0, 1]), created disabled and
 *      enabled with PERF_EVENT_IOC_REFRESH 1, so it overflows once and then stops;
 *   2. at that overflow, the handler (on that thread) makes the steady timer, period
 *      `period`, counting from there;
 *   3. at the steady timer's first signal, the spent first event is released (not in
 *      its own signal: releasing an event from the handler of its own pending signal
 *      makes the kernel spin).
 *
 * Why the steady timer is a perf event too.  A POSIX timer on the thread's own CPU clock
 * (timer_create(CLOCK_THREAD_CPUTIME_ID)) costs no timer interrupt of its own, but the
 * kernel checks it only when a scheduler tick finds the thread running.  On a busy host a
 * thread runs in slices shorter than a tick and most ticks find another task: a thread
 * that ran 297 slices of a median 1.7 ms was found by 18 of about 133 ticks, which took
 * 9 samples for about 48 periods of its CPU (the rest merged into late signals).  The perf
 * task-clock event's hrtimer follows the thread's own CPU time across slices, whatever runs
 * beside it, so it is the steady timer at every period (docs/ARCHITECTURE.md has the costs).
 *
 * An event lives as long as a file holds it.  A descriptor would do, but one per
 * thread in the program's descriptor table is not ours to take (RLIMIT_NOFILE, select's
 * 1024, programs that count or close their descriptors), so each event is mapped (one
 * page: the event's control page, no data pages) and its descriptor closed at once; the
 * mapping holds it, and munmap releases it.  Perf mappings are not copied into fork
 * children.  The kernel charges each page to the user's perf_event_mlock_kb allowance,
 * then to RLIMIT_MEMLOCK; a thread whose event cannot be mapped is not sampled, and is
 * counted (threadtimer_take_lost).
 *
 * Slots.  Each thread's events are in a slot: {owner tid, first mapping, steady
 * mapping or steady timer id}; the slot's index rides in the low bits of the signal's
 * si_perf_data (si_value for the POSIX timer), so the handler finds it without any lookup, and
 * checks the owner (a late signal of a slot already given to another thread is ignored).  A
 * thread frees its slot at exit (a pthread key destructor, which pthread_exit runs too); a slot
 * of a thread that ended without it (threads that existed at start) is reclaimed when the table
 * is full.  Ownership changes by compare-and-swap; mappings are taken with exchange, so whoever
 * takes one releases it, exactly once.
 */
#include "threadtimer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "cpucredit.h"
#include "ownthreads.h"
#include "sysprobe.h"

#define TT_SLOTS 16384u            /* threads timed at once */
#define TT_KIND_FIRST (1ull << 23) /* si_perf_data: the first-period event */
#define TT_SLOT_MASK ((1ull << 22) - 1)
#define TT_TAG_MASK ((1ull << 24) - 1) /* the bits that are not the cookie's */
#define TT_DYING UINT32_MAX            /* owner tid while the owner releases its slot */

typedef struct tt_slot {
    _Atomic uint32_t tid;     /* owner; 0 free */
    _Atomic uintptr_t first;  /* the first event's mapping, until released */
    _Atomic uintptr_t steady; /* the steady event's mapping */
    _Atomic uint64_t asked;   /* wall mode: (tid << 32) | the samples asked of that thread,
                               * three 10-bit counts by GIL state (THREADTIMER_ASKED_N) */
    /* Set before the first event is opened, then the owner's handler's alone: the first
     * period's length, and the thread's kernel CPU turned into samples (cpucredit.h). */
    uint64_t first_ns;
    cpucredit credit;
} tt_slot;

static tt_slot slots[TT_SLOTS];
static _Atomic uint32_t slots_used; /* slots [0, slots_used) have been handed out */
static _Atomic int armed;
static uint64_t period;
/* The period the events are given: `period`, unless a test makes them count faster
 * than the threads' CPU (threadtimer_configure). */
static uint64_t event_period;
static unsigned skew_milli = 1000;
static int uncorrected;
/* The share of on-CPU time the kernel gave the threads in their recent fresh intervals
 * (cpucredit.h), fixed-point: a running mean, 1/16 weight to the newest; 0 until one
 * was measured.  Kept in a fork child: the same host. */
static _Atomic uint32_t fresh_ratio;
/* Over the signals handled: what the timers counted, and the kernel's CPU meanwhile. */
static _Atomic uint64_t clock_timer_ns, clock_kernel_ns;
static uint64_t cookie_hi;
static int exclude_kernel;
static size_t page;
static _Atomic uint64_t rng;
static _Atomic uint64_t lost;
static _Atomic uint64_t ended_asked;    /* samples asked of threads that ended first */
static _Atomic uint64_t timer_cpu_ns;   /* CPU spent making and releasing events */
static _Atomic uint64_t untimed_cpu_ns; /* threads' CPU outside any event of theirs */
static pthread_key_t exit_key;
static int have_exit_key;
/* Held while a thread is given its events by the scan of threadtimer_arm or by its own
 * start (threadtimer_thread_start): each looks for a slot the thread owns already, so a
 * thread both see gets one pair of events, not two. */
static pthread_mutex_t arm_lock = PTHREAD_MUTEX_INITIALIZER;
/* pthread_creates under way that found no timers armed (threadtimer_create_begin): the
 * scan waits for their threads to exist, so that it sees them. */
static _Atomic int creating;

static uint32_t gettid_raw(void) { return (uint32_t)syscall(SYS_gettid); }

/* [sigsafe] The calling thread's CPU time. */
static uint64_t thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

/* [sigsafe] Adds the CPU from `since` to now to what the library spent on timers, and to
 * the threads' untimed CPU (no event of the thread counted it). */
static void account(uint64_t since)
{
    uint64_t d = thread_cpu_ns() - since;
    atomic_fetch_add_explicit(&timer_cpu_ns, d, memory_order_relaxed);
    atomic_fetch_add_explicit(&untimed_cpu_ns, d, memory_order_relaxed);
}

/* splitmix64 over a shared counter: uniform, lock-free, no system call. */
static uint64_t next_random(void)
{
    uint64_t z = atomic_fetch_add_explicit(&rng, 0x9e3779b97f4a7c15ull, memory_order_relaxed) +
                 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* [sigsafe] The CPU clock of thread `tid` (0: the caller). */
static uint64_t cpu_of(uint32_t tid) { return tid ? clock_thread_ns(tid) : thread_cpu_ns(); }

/* [sigsafe] The calling thread's context switches, voluntary and not (a raw system
 * call: getrusage(RUSAGE_THREAD)); 0 when they cannot be read. */
static uint64_t switches(void)
{
    struct rusage ru;
    if (syscall(SYS_getrusage, RUSAGE_THREAD, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

/* [sigsafe] The readings a credit needs now (cpucredit.h) of thread `tid` (0: the
 * caller, which alone can read its monotonic clock and switches with it). */
static void read_now(uint32_t tid, int wall, cpucredit_now *at)
{
    at->cpu_ns = cpu_of(tid);
    /* Under PYPROF_TEST_SKEW the timer's clock runs faster than the thread's CPU; on-CPU
     * wall time is that clock (cpucredit.h), so it runs as much faster. */
    at->mono_ns = wall && !tid
                      ? (uint64_t)((unsigned __int128)clock_mono_ns() * skew_milli / 1000u)
                      : 0;
    at->switches = wall && !tid ? switches() : 0;
}

/* [sigsafe] Opens a task-clock event on thread `tid` (0: the caller) and pins it with a
 * one-page mapping; the descriptor is closed again.  `one_shot`: created disabled, then
 * enabled for a single overflow.  `started`, when given, gets the readings (read_now)
 * right after the event started counting: opening an event costs the thread tens of
 * microseconds on a virtual machine, which the interval its signal closes must not
 * count.  Returns the mapping, or 0 (errno set). */
static uintptr_t open_pinned(uint32_t tid, uint64_t period_ns, uint64_t sig_data, int one_shot,
                             cpucredit_now *started)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = period_ns;
    attr.disabled = (unsigned)one_shot;
    attr.remove_on_exec = 1;
    attr.sigtrap = 1;
    attr.sig_data = sig_data;
    attr.exclude_kernel = (unsigned)exclude_kernel;
    attr.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &attr, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (one_shot && ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return 0;
    }
    if (started)
        read_now(tid, 1, started);
    void *m = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    errno = e;
    return m == MAP_FAILED ? 0 : (uintptr_t)m;
}

/* [sigsafe] What an event is given for a period of `ns` of the thread's CPU: `ns`, or
 * less under PYPROF_TEST_SKEW. */
static uint64_t skewed(uint64_t ns)
{
    uint64_t v = (uint64_t)((unsigned __int128)ns * 1000u / skew_milli);
    return v ? v : 1;
}

/* [sigsafe] Releases a mapping taken from a slot (0: nothing). */
static void release(uintptr_t m)
{
    if (m)
        munmap((void *)m, page);
}

static void release_slot_maps(tt_slot *s)
{
    release(atomic_exchange(&s->first, 0));
    release(atomic_exchange(&s->steady, 0));
}

static int thread_alive(uint32_t tid)
{
    return syscall(SYS_tgkill, getpid(), (pid_t)tid, 0) == 0 || errno != ESRCH;
}

/* A free slot for `tid`, the lowest one; when none is free, one whose owner has ended
 * without freeing it (looked for only at every 256th claim that finds the table full:
 * that search costs a system call per slot).  Returns its index, or -1. */
static int claim_slot(uint32_t tid)
{
    static _Atomic uint32_t full_claims;
    for (uint32_t i = 0; i < TT_SLOTS; i++) {
        uint32_t free_tid = 0;
        if (atomic_load_explicit(&slots[i].tid, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&slots[i].tid, &free_tid, tid)) {
            uint32_t used = atomic_load(&slots_used);
            while (used < i + 1 && !atomic_compare_exchange_weak(&slots_used, &used, i + 1))
                ;
            return (int)i;
        }
    }
    if (atomic_fetch_add(&full_claims, 1) % 256 != 0)
        return -1;
    for (uint32_t i = 0; i < TT_SLOTS; i++) {
        uint32_t owner = atomic_load(&slots[i].tid);
        if (owner == 0 || owner == TT_DYING || thread_alive(owner))
            continue;
        if (atomic_compare_exchange_strong(&slots[i].tid, &owner, TT_DYING)) {
            release_slot_maps(&slots[i]);
            atomic_store(&slots[i].tid, tid);
            return (int)i;
        }
    }
    return -1;
}

/* [sigsafe] Takes mapping `m` back from `*at` if it is still there (threadtimer_disarm
 * may have taken and released it already). */
static void take_back(_Atomic uintptr_t *at, uintptr_t m)
{
    if (atomic_compare_exchange_strong(at, &m, 0))
        release(m);
}

/* Frees slot `s` if `tid` still owns it. */
static void free_slot(uint32_t s, uint32_t tid)
{
    uint32_t owner = tid;
    if (s >= TT_SLOTS || !atomic_compare_exchange_strong(&slots[s].tid, &owner, TT_DYING))
        return;
    /* Marked dying first: a signal arriving now finds another owner and does nothing. */
    release_slot_maps(&slots[s]);
    uint64_t asked = atomic_exchange(&slots[s].asked, 0);
    if (asked >> 32 == tid)
        atomic_fetch_add(&ended_asked, THREADTIMER_ASKED((uint32_t)asked));
    atomic_store(&slots[s].tid, 0);
}

static void on_thread_exit(void *v)
{
    uint64_t c0 = thread_cpu_ns();
    free_slot((uint32_t)((uintptr_t)v - 1), gettid_raw());
    account(c0);
}

/* The slot thread `tid` owns, or -1. */
static int slot_of(uint32_t tid)
{
    uint32_t used = atomic_load(&slots_used);
    for (uint32_t i = 0; i < used && i < TT_SLOTS; i++)
        if (atomic_load_explicit(&slots[i].tid, memory_order_relaxed) == tid)
            return (int)i;
    return -1;
}

/* Gives thread `tid` a slot and its first event.  Returns the slot, or -1 with errno. */
static int arm_thread(uint32_t tid)
{
    int s = claim_slot(tid);
    if (s < 0) {
        errno = EAGAIN;
        return -1;
    }
    uint64_t first = 1 + next_random() % period;
    slots[s].first_ns = first;
    uint64_t seed = next_random() % period;
    uint64_t data = cookie_hi | TT_KIND_FIRST | (uint64_t)s;
    cpucredit_now at;
    uintptr_t m;
    if (tid == gettid_raw()) {
        /* The credit starts from readings made right after the event started, with its
         * signal held until the slot is ready. */
        sigset_t trap, old;
        sigemptyset(&trap);
        sigaddset(&trap, SIGTRAP);
        pthread_sigmask(SIG_BLOCK, &trap, &old);
        m = open_pinned(0, skewed(first), data, 1, &at);
        if (m)
            cpucredit_start(&slots[s].credit, &at, seed);
        int e = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        errno = e;
    } else {
        /* Another thread, running meanwhile: its credit is ready before its event
         * starts, and moves to the event's start unless its signal came first. */
        read_now(tid, 0, &at);
        cpucredit_start(&slots[s].credit, &at, seed);
        atomic_thread_fence(memory_order_release);
        m = open_pinned(tid, skewed(first), data, 1, &at);
        if (m)
            cpucredit_rebase(&slots[s].credit, at.cpu_ns);
    }
    if (!m) {
        int e = errno;
        free_slot((uint32_t)s, tid);
        errno = e;
        return -1;
    }
    atomic_store(&slots[s].first, m);
    /* Disarmed meanwhile: threadtimer_disarm may have swept this slot before the store. */
    if (!atomic_load(&armed)) {
        take_back(&slots[s].first, m);
        free_slot((uint32_t)s, tid);
        errno = ECANCELED;
        return -1;
    }
    return s;
}

/* 1 when thread `tid` is one of the library's own (named OWNTHREADS_PREFIX...). */
static int own_thread(uint32_t tid)
{
    char path[64], comm[32];
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, comm, sizeof comm - 1);
    close(fd);
    if (n <= 0)
        return 0;
    comm[n] = '\0';
    return strncmp(comm, OWNTHREADS_PREFIX, strlen(OWNTHREADS_PREFIX)) == 0;
}

int threadtimer_arm(uint64_t period_ns, uint64_t cookie)
{
    if (atomic_load(&armed))
        return 0;
    uint64_t c0 = thread_cpu_ns();
    atomic_store(&timer_cpu_ns, 0);
    atomic_store(&untimed_cpu_ns, 0);
    page = (size_t)sysconf(_SC_PAGESIZE);
    period = period_ns ? period_ns : 1;
    event_period = skewed(period);
    atomic_store(&clock_timer_ns, 0);
    atomic_store(&clock_kernel_ns, 0);
    cookie_hi = cookie & ~TT_TAG_MASK;
    atomic_store(&rng, cookie);
    if (!have_exit_key) {
        if (pthread_key_create(&exit_key, on_thread_exit) != 0)
            return -1;
        have_exit_key = 1;
    }
    /* The calling thread first: whether perf events work here, and whether kernel time
     * may be counted (not for an unprivileged user under perf_event_paranoid 2). */
    if (!sysprobe_perf_allowed()) {
        errno = EPERM; /* a seccomp filter would kill the process for the call */
        return -1;
    }
    uint32_t self = gettid_raw();
    pthread_mutex_lock(&arm_lock);
    atomic_store(&armed, 1);
    exclude_kernel = 0;
    int s = arm_thread(self);
    if (s < 0 && (errno == EACCES || errno == EPERM)) {
        exclude_kernel = 1;
        s = arm_thread(self);
    }
    if (s < 0) {
        int e = errno;
        atomic_store(&armed, 0);
        pthread_mutex_unlock(&arm_lock);
        errno = e;
        return -1;
    }
    if (own_thread(self))
        free_slot((uint32_t)s, self); /* a thread of the library's (the toggle's): a probe */
    else
        pthread_setspecific(exit_key, (void *)(uintptr_t)(s + 1));
    pthread_mutex_unlock(&arm_lock);
    /* A pthread_create that found no timers armed starts its thread as without us; once
     * it has returned, the thread is in the task list.  Those begun before `armed` was
     * set are waited for (each ends at its clone; later ones find the timers armed). */
    for (int i = 0; i < 2000 && atomic_load(&creating); i++)
        nanosleep(&(struct timespec){0, 50000}, NULL);
    DIR *d = opendir("/proc/self/task");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            long tid = strtol(e->d_name, NULL, 10);
            if (tid <= 0 || (uint32_t)tid == self || own_thread((uint32_t)tid))
                continue;
            pthread_mutex_lock(&arm_lock);
            /* A thread that started since gave itself its events. */
            if (slot_of((uint32_t)tid) < 0 && arm_thread((uint32_t)tid) < 0 && errno != ESRCH)
                atomic_fetch_add(&lost, 1); /* ESRCH: it ended meanwhile */
            pthread_mutex_unlock(&arm_lock);
        }
        closedir(d);
    }
    atomic_fetch_add(&timer_cpu_ns, thread_cpu_ns() - c0);
    return 0;
}

void threadtimer_disarm(void)
{
    if (!atomic_exchange(&armed, 0))
        return;
    /* After `armed` is clear, a handler or a starting thread that stores a mapping
     * checks it again and takes its mapping back itself; whatever was stored before is
     * taken here.  Slots are freed too: the threads' exit hooks then find another owner
     * (or none) and leave them alone. */
    uint32_t used = atomic_load(&slots_used);
    for (uint32_t i = 0; i < used && i < TT_SLOTS; i++) {
        release_slot_maps(&slots[i]);
        atomic_store(&slots[i].tid, 0);
    }
}

int threadtimer_create_begin(void)
{
    atomic_fetch_add(&creating, 1);
    if (!atomic_load(&armed))
        return 0;
    atomic_fetch_sub(&creating, 1);
    return 1;
}

void threadtimer_create_end(void) { atomic_fetch_sub(&creating, 1); }

void threadtimer_forget_in_child(void)
{
    /* Only the forking thread runs here; the mappings were not copied into this
     * process, so there is nothing to release, only to forget. */
    atomic_store(&armed, 0);
    uint32_t used = atomic_load(&slots_used);
    for (uint32_t i = 0; i < used && i < TT_SLOTS; i++) {
        atomic_store(&slots[i].first, 0);
        atomic_store(&slots[i].steady, 0);
        atomic_store(&slots[i].tid, 0);
    }
    atomic_store(&slots_used, 0);
    atomic_store(&lost, 0);
    /* Another thread of the parent may have held the lock or been creating a thread. */
    pthread_mutex_init(&arm_lock, NULL);
    atomic_store(&creating, 0);
}

int threadtimer_armed(void) { return atomic_load_explicit(&armed, memory_order_relaxed); }

void threadtimer_thread_start(void)
{
    if (!atomic_load(&armed))
        return;
    /* Before this the thread ran the kernel's clone and the C library's set-up, which no
     * event of its own counted; then the library's. */
    uint64_t c0 = thread_cpu_ns();
    uint32_t self = gettid_raw();
    pthread_mutex_lock(&arm_lock);
    /* The scan of threadtimer_arm may have given this thread events already (it found the
     * thread before its start routine), or a slot may be left by an ended thread that had
     * this tid: the thread's own events replace them. */
    int old = slot_of(self);
    if (old >= 0)
        free_slot((uint32_t)old, self);
    int s = arm_thread(self);
    pthread_mutex_unlock(&arm_lock);
    uint64_t c1 = thread_cpu_ns();
    atomic_fetch_add_explicit(&timer_cpu_ns, c1 - c0, memory_order_relaxed);
    atomic_fetch_add_explicit(&untimed_cpu_ns, c1, memory_order_relaxed);
    if (s < 0) {
        if (atomic_load(&armed))
            atomic_fetch_add(&lost, 1);
        return;
    }
    pthread_setspecific(exit_key, (void *)(uintptr_t)(s + 1));
}

int threadtimer_ask(uint32_t tid, int how)
{
    int s = slot_of(tid);
    if (s < 0 || (!atomic_load_explicit(&slots[s].steady, memory_order_relaxed) &&
                  !atomic_load_explicit(&slots[s].first, memory_order_relaxed)))
        return -1; /* no event (yet): nothing would take the sample */
    uint64_t v = atomic_load(&slots[s].asked), want;
    do {
        /* A count left by the slot's last owner is not this thread's. */
        uint32_t n = v >> 32 == tid ? (uint32_t)v : 0;
        if (THREADTIMER_ASKED_N(n, how) == 0x3ffu)
            return -1;
        want = (uint64_t)tid << 32 | (n + (1u << (10 * how)));
    } while (!atomic_compare_exchange_weak(&slots[s].asked, &v, want));
    return 0;
}

/* Takes the count asked of thread `tid` in slot `s`. */
static uint32_t take_asked(uint32_t s, uint32_t tid)
{
    uint64_t v = atomic_load(&slots[s].asked);
    while (v >> 32 == tid && (uint32_t)v) {
        if (atomic_compare_exchange_weak(&slots[s].asked, &v, (uint64_t)tid << 32))
            return (uint32_t)v;
    }
    return 0;
}

uint32_t threadtimer_take_asked(uint64_t sig_data, uint32_t tid)
{
    uint64_t s = sig_data & TT_SLOT_MASK;
    return s < TT_SLOTS ? take_asked((uint32_t)s, tid) : 0;
}

uint32_t threadtimer_take_asked_tid(uint32_t tid)
{
    int s = slot_of(tid);
    return s < 0 ? 0 : take_asked((uint32_t)s, tid);
}

int threadtimer_is_ours(uint64_t sig_data)
{
    return cookie_hi && (sig_data & ~TT_TAG_MASK) == cookie_hi;
}

/* [sigsafe] The samples a signal of slot `slot` stands for (cpucredit.h), the interval
 * it closes counted as `timer_ns` by the timer. */
static uint32_t credit(tt_slot *slot, uint64_t timer_ns)
{
    if (uncorrected)
        return 1; /* as before the correction: no clock read, a sample per signal */
    /* The reads are the library's CPU: counted with the timers' (a system call each,
     * 0.3-1.5 us; timed on the vDSO's clock, which costs a tenth of that). */
    uint64_t m0 = clock_mono_ns();
    cpucredit_now now;
    read_now(0, cpucredit_fresh(&slot->credit), &now);
    atomic_fetch_add_explicit(&timer_cpu_ns, clock_mono_ns() - m0, memory_order_relaxed);
    if (!now.cpu_ns)
        return 1; /* the clock cannot be read: as the timer counted */
    uint32_t r = atomic_load_explicit(&fresh_ratio, memory_order_relaxed);
    cpucredit_seen seen;
    uint32_t n = cpucredit_signal(&slot->credit, &now, timer_ns, period, r, &seen);
    if (seen.ratio_known) /* racing updates lose one of two readings: no matter */
        atomic_store_explicit(&fresh_ratio, r ? r - r / 16 + seen.ratio_q / 16 : seen.ratio_q,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&clock_timer_ns, timer_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&clock_kernel_ns, seen.kernel_ns, memory_order_relaxed);
    return n;
}

uint32_t threadtimer_on_signal(uint64_t sig_data, uint32_t tid)
{
    uint64_t s = sig_data & TT_SLOT_MASK;
    if (s >= TT_SLOTS)
        return 1;
    tt_slot *slot = &slots[s];
    if (atomic_load(&slot->tid) != tid)
        return 1; /* a late signal of an event whose slot is no longer this thread's */
    int saved = errno;
    atomic_thread_fence(memory_order_acquire);
    if (!(sig_data & TT_KIND_FIRST)) {
        uint32_t n = credit(slot, period);
        if (atomic_load_explicit(&slot->first, memory_order_relaxed)) {
            uint64_t c0 = thread_cpu_ns();
            release(atomic_exchange(&slot->first, 0));
            account(c0);
        }
        errno = saved;
        return n;
    }
    if (atomic_load(&slot->steady)) {
        errno = saved;
        return 1; /* not the first event's one signal: cannot be */
    }
    uint32_t n = credit(slot, slot->first_ns);
    if (!atomic_load(&armed)) {
        errno = saved;
        return n;
    }
    /* The first event has stopped and the steady one is not there yet: this is CPU no
     * event of the thread counts. */
    uint64_t c0 = thread_cpu_ns();
    cpucredit_now started;
    uintptr_t m = open_pinned(0, event_period, cookie_hi | s, 0, &started);
    if (!m) {
        atomic_fetch_add(&lost, 1);
    } else {
        uintptr_t none = 0;
        if (!atomic_compare_exchange_strong(&slot->steady, &none, m))
            release(m);
        else if (!atomic_load(&armed)) /* disarmed meanwhile: see threadtimer_disarm */
            take_back(&slot->steady, m);
        else
            cpucredit_restart(&slot->credit, &started);
    }
    account(c0);
    errno = saved;
    return n;
}

uintptr_t threadtimer_open_probe(void)
{
    if (!atomic_load(&armed)) {
        errno = ECANCELED;
        return 0;
    }
    /* Slot bits all set: beyond the table, so threadtimer_on_signal ignores it. */
    return open_pinned(0, event_period, cookie_hi | TT_SLOT_MASK, 0, NULL);
}

void threadtimer_close_probe(uintptr_t probe) { release(probe); }

const char *threadtimer_name(void)
{
    return exclude_kernel ? "perf-task-clock-user" : "perf-task-clock";
}

uint64_t threadtimer_cpu_ns(void) { return atomic_load(&timer_cpu_ns); }

void threadtimer_configure(unsigned test_skew_milli, int test_uncorrected)
{
    skew_milli = test_skew_milli >= 1000 ? test_skew_milli : 1000;
    uncorrected = test_uncorrected;
}

void threadtimer_clock(uint64_t *timer_ns, uint64_t *kernel_ns)
{
    *timer_ns = atomic_load(&clock_timer_ns);
    *kernel_ns = atomic_load(&clock_kernel_ns);
}

uint64_t threadtimer_untimed_ns(void) { return atomic_load(&untimed_cpu_ns); }

void threadtimer_count_lost(void) { atomic_fetch_add(&lost, 1); }

uint64_t threadtimer_take_lost(void) { return atomic_exchange(&lost, 0); }

uint64_t threadtimer_take_ended_asked(void) { return atomic_exchange(&ended_asked, 0); }
