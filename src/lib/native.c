/*
 * native: native stacks through libunwind.  See native.h; docs/NATIVE.md has the
 * design, the measurements behind it and the hazards that remain.
 *
 * SIGNAL-HANDLER CODE: native_walk, native_in_walk, native_active and
 * native_snapshot_iterate run inside the sampling signal handler.  They are
 * async-signal-safe under the conditions below: no malloc, no lock of ours, no stdio,
 * errno untouched (libunwind may set it; the handler restores it).  What they call:
 *   unw_backtrace (libunwind, dlsym'd)  only on a thread that made one walk outside
 *                                       signal context (its per-thread cache is mmapped,
 *                                       its dynamic TLS allocated: no malloc after), never
 *                                       re-entered on one thread (tls_in_walk).  On a hit
 *                                       of its per-thread frame cache it takes no lock; a
 *                                       miss runs unw_step, whose global register-state
 *                                       cache takes a mutex with every signal blocked
 *                                       (sigprocmask) and, for the first frame of a
 *                                       module range, calls dl_iterate_phdr, which
 *                                       reaches our exported definition and is served
 *                                       from the snapshot (native_snapshot_iterate)
 *   native_snapshot_iterate             a loop over a static array, built outside
 *                                       signal context while no walker runs
 *   __builtin_setjmp (SAFE_GUARD_BEGIN) no libc: a fault inside the walk comes back here
 *   clock_gettime(CLOCK_MONOTONIC)      on signal-safety(7); the vDSO
 *   atomics on our counters             lock-free on x86_64
 * The libunwind mutex cannot deadlock against an interrupted holder: it is only taken
 * with every signal blocked, so no sampling signal lands while a thread holds it, and
 * the handler's walk never runs nested in another libunwind call on its own thread.
 *
 * Everything else here (set-up, warm-up, the snapshot's rebuilds) runs outside signal
 * context and may lock, wait and allocate.
 */
#include "native.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <pyprof/format.h>

#include "common/clock.h"
#include "libc_next.h"
#include "safe_read.h"
#include "sigstate.h"

/* The modules a snapshot holds.  A process with more serves the first ones: walks
 * through the rest stop early (TRUNCATED), nothing worse. */
#define NATIVE_MODULES 4096u

/* libunwind's register-state cache policy.  UNW_CACHE_GLOBAL keeps unw_step's DWARF
 * decoding cached across walks, under a mutex taken with every signal blocked; with
 * UNW_CACHE_NONE every step decodes again and its memory pool still locks: measured on
 * a zlib/hashlib workload at 5 kHz, 3.5-15 us and ~1 mutex per walk (GLOBAL) against
 * 110 us and ~60 mutex calls per walk (NONE).  docs/NATIVE.md has the numbers. */
#define NATIVE_CACHE_POLICY UNW_CACHE_GLOBAL
#define NATIVE_CACHE_SIZE 1024

typedef int (*backtrace_fn)(void **, int);
typedef int (*set_caching_policy_fn)(unw_addr_space_t, unw_caching_policy_t);
typedef int (*set_cache_size_fn)(unw_addr_space_t, size_t, int);
typedef void (*flush_cache_fn)(unw_addr_space_t, unw_word_t, unw_word_t);

static struct {
    void *handle;
    backtrace_fn backtrace;
    set_caching_policy_fn set_caching_policy;
    set_cache_size_fn set_cache_size;
    flush_cache_fn flush_cache;
    unw_addr_space_t as;
    int checked; /* the dl_iterate_phdr check passed once: the process's binding holds */
} U;

static _Atomic int active;
/* Native walks now inside libunwind, and changes to the module set under way (a
 * counter: dlclose may nest in a destructor, and two threads may close at once). */
static _Atomic int walkers, changing;
/* dl_iterate_phdr calls served from the snapshot (the binding check at set-up). */
static _Atomic uint64_t served;

/* This thread made its warm-up walk / is inside a libunwind call of ours. */
static __thread int tls_warm __attribute__((tls_model("initial-exec")));
static __thread int tls_in_walk __attribute__((tls_model("initial-exec")));

/* The snapshot.  Pointers in it (names, program headers) point into the dynamic
 * linker's own records of each module, valid while the module is loaded: a dlclose
 * rebuilds the snapshot before any walk can run again. */
static struct dl_phdr_info snap[NATIVE_MODULES];
static unsigned snap_n;
static unsigned long long snap_adds, snap_subs;
/* Rebuilds are serialized; recursive because a dlclose may run destructors that
 * dlopen or dlclose again on the same thread. */
static pthread_mutex_t change_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

int native_active(void) { return atomic_load_explicit(&active, memory_order_relaxed); }
int native_in_walk(void) { return tls_in_walk; }

/* ---- the snapshot ------------------------------------------------------------------ */

int native_snapshot_iterate(native_phdr_cb cb, void *data)
{
    atomic_fetch_add_explicit(&served, 1, memory_order_relaxed);
    for (unsigned i = 0; i < snap_n; i++) {
        int rc = cb(&snap[i], sizeof snap[i], data);
        if (rc)
            return rc;
    }
    return 0;
}

static int copy_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)data;
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        return 0;
    if (snap_n == 0) {
        snap_adds = info->dlpi_adds;
        snap_subs = info->dlpi_subs;
    }
    if (snap_n < NATIVE_MODULES) {
        memset(&snap[snap_n], 0, sizeof snap[snap_n]);
        snap[snap_n].dlpi_addr = info->dlpi_addr;
        snap[snap_n].dlpi_name = info->dlpi_name;
        snap[snap_n].dlpi_phdr = info->dlpi_phdr;
        snap[snap_n].dlpi_phnum = info->dlpi_phnum;
        snap[snap_n].dlpi_adds = info->dlpi_adds;
        snap[snap_n].dlpi_subs = info->dlpi_subs;
        snap_n++;
    }
    return 0;
}

/* The library's own calls of the C library's dl_iterate_phdr hold loader_mutex, which
 * fork's prepare handler takes too: no thread of ours is inside the loader's lock when
 * the process forks.  In a fork child, loader_suspect stays set until the program's own
 * dlopen or dlclose has returned there: another thread of the parent may have held the
 * loader's write lock at the fork, which glibc does not reset in the child, so until
 * the program shows the loader works, the library reads the snapshot it inherited
 * instead (its modules are the child's: the address space is a copy). */
static pthread_mutex_t loader_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int loader_suspect;

int native_iterate_loaded(native_phdr_cb cb, void *data)
{
    if (atomic_load(&loader_suspect))
        return native_snapshot_iterate(cb, data);
    pthread_mutex_lock(&loader_mutex);
    int rc = libc_next_dl_iterate_phdr(cb, data);
    pthread_mutex_unlock(&loader_mutex);
    return rc;
}

void native_loader_works(void) { atomic_store(&loader_suspect, 0); }

/* Only while no walker can read the snapshot (set-up before sampling, or `changing`
 * held with walkers at 0).  In a fork child that has not seen the loader work, the
 * inherited snapshot is kept as it is. */
static void snapshot_build(void)
{
    if (atomic_load(&loader_suspect))
        return;
    snap_n = 0;
    native_iterate_loaded(copy_module, NULL);
}

typedef struct {
    unsigned long long adds, subs;
} load_counts;

static int read_counts(struct dl_phdr_info *info, size_t size, void *data)
{
    load_counts *c = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c->adds = info->dlpi_adds;
        c->subs = info->dlpi_subs;
    }
    return 1;
}

/* ---- changes of the module set ----------------------------------------------------- */

void native_change_begin(void)
{
    if (!native_active())
        return;
    pthread_mutex_lock(&change_lock);
    atomic_fetch_add(&changing, 1);
    /* A walker that came in before `changing` was set finishes within microseconds;
     * one that comes in after sees it and backs out. */
    while (atomic_load(&walkers) > 0)
        sched_yield();
}

void native_change_end(int closed)
{
    if (!native_active())
        return;
    if (closed && U.flush_cache)
        U.flush_cache(U.as, 0, 0);
    snapshot_build();
    atomic_fetch_sub(&changing, 1);
    pthread_mutex_unlock(&change_lock);
}

/* ---- warm-up ----------------------------------------------------------------------- */

/* One walk outside signal context on the calling thread.  A handler that lands during
 * it sees tls_in_walk and skips its own native walk (libunwind is not reentrant). */
static void warm_up(void)
{
    void *buf[NATIVE_MAX + NATIVE_SLACK];
    for (;;) {
        atomic_fetch_add(&walkers, 1);
        if (!atomic_load(&changing))
            break;
        atomic_fetch_sub(&walkers, 1);
        sched_yield();
    }
    tls_in_walk = 1;
    U.backtrace(buf, (int)(sizeof buf / sizeof buf[0]));
    tls_in_walk = 0;
    atomic_fetch_sub(&walkers, 1);
    tls_warm = 1;
}

void native_thread_start(void)
{
    if (native_active())
        warm_up();
}

void native_refresh(void)
{
    if (!native_active())
        return;
    if (atomic_load(&loader_suspect))
        return;
    load_counts c = {snap_adds, snap_subs};
    native_iterate_loaded(read_counts, &c);
    if (c.adds != snap_adds || c.subs != snap_subs) {
        native_change_begin();
        native_change_end(c.subs != snap_subs);
    }
}

void native_after_dlopen(void)
{
    if (!native_active())
        return;
    native_loader_works();
    native_refresh();
    warm_up();
}

/* ---- set-up ------------------------------------------------------------------------ */

#define NEED(field, type, name)                                                                \
    do {                                                                                       \
        U.field = (type)dlsym(U.handle, name);                                                 \
        if (!U.field) {                                                                        \
            snprintf(err, errlen, "pyprof: native frames off: libunwind lacks %s", name);      \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

static int load_libunwind(char *err, size_t errlen)
{
    if (U.handle)
        return 0;
    /* Never linked: a DT_NEEDED on libunwind would let its _Unwind_RaiseException take
     * the program's C++ exceptions over.  RTLD_LOCAL keeps its symbols out of the global
     * scope for the same reason. */
    void *h = libc_next_dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, errlen, "pyprof: native frames off: cannot load libunwind.so.8: %s",
                 why ? why : "not found");
        return -1;
    }
    U.handle = h;
    NEED(backtrace, backtrace_fn, "unw_backtrace");
    NEED(set_caching_policy, set_caching_policy_fn, "_ULx86_64_set_caching_policy");
    NEED(set_cache_size, set_cache_size_fn, "_ULx86_64_set_cache_size");
    NEED(flush_cache, flush_cache_fn, "_Ux86_64_flush_cache");
    unw_addr_space_t *as = (unw_addr_space_t *)dlsym(h, "_ULx86_64_local_addr_space");
    if (!as || !*as) {
        snprintf(err, errlen,
                 "pyprof: native frames off: libunwind lacks its local "
                 "address space");
        return -1;
    }
    U.as = *as;
    U.set_caching_policy(U.as, NATIVE_CACHE_POLICY);
    U.set_cache_size(U.as, NATIVE_CACHE_SIZE, 0);
    return 0;
}

/* fork() while another thread is inside libunwind would leave libunwind's cache mutex
 * locked forever in the child, whose own first walk (native_setup's warm-up) would then
 * wait on it for ever.  So fork waits, like a dlclose, until no walk runs and holds new
 * ones off until it returns; the child starts with no walker (native_forget_in_child). */
static int fork_held;

static void fork_prepare(void)
{
    if (!native_active())
        return;
    native_change_begin();
    pthread_mutex_lock(&loader_mutex);
    fork_held = 1;
}

static void fork_parent(void)
{
    if (!fork_held)
        return;
    fork_held = 0;
    pthread_mutex_unlock(&loader_mutex);
    atomic_fetch_sub(&changing, 1);
    pthread_mutex_unlock(&change_lock);
}

int native_setup(char *err, size_t errlen)
{
    static int atfork_registered;
    if (!atfork_registered) {
        pthread_atfork(fork_prepare, fork_parent, NULL);
        atfork_registered = 1;
    }
    if (native_active()) {
        warm_up();
        return 0;
    }
    if (load_libunwind(err, errlen) < 0) {
        U.backtrace = NULL;
        return -1;
    }
    atomic_store(&walkers, 0);
    atomic_store(&changing, 0);
    snapshot_build();
    /* With a cold cache, libunwind must look its first frames' modules up: those calls
     * have to reach our dl_iterate_phdr.  They do not when this library is not in the
     * global scope (loaded RTLD_LOCAL by a host instead of preloaded): then a walk in the
     * handler would take the loader lock, so native mode is refused. */
    U.flush_cache(U.as, 0, 0);
    atomic_store(&served, 0);
    warm_up();
    if (!U.checked && atomic_load(&served) == 0) {
        snprintf(err, errlen,
                 "pyprof: native frames off: libunwind's module lookups do not "
                 "reach libpyprof's dl_iterate_phdr (is it preloaded?)");
        return -1;
    }
    U.checked = 1;
    atomic_store(&active, 1);
    return 0;
}

void native_forget_in_child(void)
{
    if (native_active())
        atomic_store(&loader_suspect, 1);
    pthread_mutex_t fresh_loader = PTHREAD_MUTEX_INITIALIZER;
    loader_mutex = fresh_loader;
    fork_held = 0;
    atomic_store(&walkers, 0);
    atomic_store(&changing, 0);
    pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    change_lock = fresh;
}

/* ---- the walk ---------------------------------------------------------------------- */

/* The guarded part: libunwind's walk into buf.  Returns the count, or -1 when a fault
 * inside it came back through the guard.  GCC cannot see that SAFE_GUARD_END clears the
 * guard pointer on every path out (the call through a pointer between the two hides it):
 * its dangling-pointer warning is off for this one function. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
SAFE_NO_SANITIZE __attribute__((noinline)) static int guarded_backtrace(uint64_t *buf,
                                                                        unsigned cap)
{
    volatile int n = -1;
    safe_jmpbuf jb;
    if (!SAFE_GUARD_BEGIN(jb)) {
        tls_in_walk = 0;
        return -1;
    }
    tls_in_walk = 1;
    n = U.backtrace((void **)buf, (int)cap);
    tls_in_walk = 0;
    SAFE_GUARD_END();
    return n;
}
#pragma GCC diagnostic pop

unsigned native_walk(uint64_t *buf, unsigned cap, uintptr_t pc, uint8_t *flags)
{
    sighandler_state *g = &sighandler_g;
    *flags = 0;
    if (!tls_warm || tls_in_walk || !native_active()) {
        *flags = PYPROF_NATIVE_F_SKIPPED;
        atomic_fetch_add_explicit(&g->native_skipped, 1, memory_order_relaxed);
        return 0;
    }
    atomic_fetch_add(&walkers, 1);
    if (atomic_load(&changing)) {
        atomic_fetch_sub(&walkers, 1);
        *flags = PYPROF_NATIVE_F_SKIPPED;
        atomic_fetch_add_explicit(&g->native_skipped, 1, memory_order_relaxed);
        return 0;
    }
    uint64_t t0 = clock_mono_ns();
    int n = guarded_backtrace(buf, cap);
    atomic_fetch_sub(&walkers, 1);
    /* The chain starts with the handler's own frames and the kernel's signal
     * trampoline; the interrupted thread's starts at its exact instruction. */
    unsigned start = 0, count = 0;
    int found = 0;
    for (; n > 0 && start < (unsigned)n; start++)
        if (buf[start] == pc) {
            found = 1;
            break;
        }
    if (found) {
        count = (unsigned)n - start;
        for (unsigned i = 0; i < count; i++)
            buf[i] = buf[start + i];
        if ((unsigned)n == cap || count > NATIVE_MAX)
            *flags = PYPROF_NATIVE_F_TRUNCATED;
        if (count > NATIVE_MAX)
            count = NATIVE_MAX;
    } else {
        /* A fault inside the walk, or a chain that never reached the interrupted frame:
         * the exact instruction is still known. */
        buf[0] = pc;
        count = 1;
        *flags = PYPROF_NATIVE_F_TRUNCATED;
    }
    atomic_fetch_add_explicit(*flags ? &g->native_truncated : &g->native_ok, 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&g->native_ns, clock_mono_ns() - t0, memory_order_relaxed);
    return count;
}
