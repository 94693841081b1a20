/*
 * allochook: the allocation hooks (allochook.h).  SIGNAL HANDLER rules for every wrapper:
 * they run inside the program's allocation calls, on any thread, possibly inside its own
 * signal handlers; beyond the allocator they forward to, they call only allocsample.h's
 * [sigsafe] functions and touch an initial-exec thread-local.  errno is the allocator's:
 * nothing after the forwarded call changes it (allocsample saves it where it could).
 * Two exceptions, both on the rare way, never in a signal handler of ours: while the
 * interpreter starts, the malloc hook wraps the domains again (recheck_from_hook), and
 * a sampled small allocation closes an allocation window the cron left open too long
 * (win_close_overdue): both call the interpreter's PyMem_GetAllocator and
 * PyMem_SetAllocator, which copy a table (3.12 on under the allocators' own lock, which
 * no code holds while it allocates), clock_gettime (the vDSO) and allocwin.h (libm's
 * log).
 */
#include "allochook.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <pyprof/format.h>

#include "common/clock.h"
#include "common/config.h"
#include "allocsample.h"
#include "allocset.h"
#include "allocwin.h"
#include "gotpatch.h"
#include "libc_next.h"
#include "pyabi.h"
#include "safe_read.h"

/* After an allocation of n bytes returned p: the countdown, with the hook's return
 * address (in the allocator's caller), where a native chain of the sample starts. */
#define SAMPLE(p, n, dom) allocsample_after(p, n, dom, (uintptr_t)__builtin_return_address(0))

/* This thread is inside a hook's forwarded call: nested hooks only forward. */
static __thread int tls_guard __attribute__((tls_model("initial-exec")));

static _Atomic int installed;
static int python_hooked;
/* The interpreter's start may replace the domains after our constructor wrapped them:
 * 3.6's Py_Main puts its default allocators back, and every version installs the ones
 * PYTHONMALLOC or -X dev asks for (malloc, mimalloc, the debug hooks).  Until the
 * interpreter is initialized, the malloc hooks (which see that start) wrap the domains
 * again where they were replaced; a process whose libpython never starts an interpreter
 * stops after RECHECK_MAX of them. */
static _Atomic int recheck_pending;
static _Atomic uint32_t recheck_left;
#define RECHECK_MAX (1u << 20)
/* A fork child where another thread of the parent may have held the loader's lock at the
 * fork (glibc does not reset it): no module scan until the program's own dlopen has
 * returned there (the periodic refresh waits; allochook_after_dlopen clears it). */
static _Atomic int loader_suspect;
static int (*py_is_initialized)(void);

/* One forwarded allocation call, guarded: inside another hook's call it only forwards
 * (returns its result), else its result goes to `p` for the hook to sample. */
#define GUARDED(call, p)                                                                       \
    do {                                                                                       \
        if (tls_guard)                                                                         \
            return call;                                                                       \
        tls_guard = 1;                                                                         \
        p = call;                                                                              \
        tls_guard = 0;                                                                         \
    } while (0)

/* ---- CPython's domains -------------------------------------------------------------- */

/* PyMemAllocatorEx, stable since 3.5. */
typedef struct py_allocator {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr);
} py_allocator;

enum { PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ };

static py_allocator orig_py[3];

/* PyObjectArenaAllocator, stable since 3.4: where pymalloc gets its arenas. */
typedef struct py_arena_allocator {
    void *ctx;
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *ptr, size_t size);
} py_arena_allocator;

static py_arena_allocator orig_arena;

/* A domain that forwards straight to pymalloc (see wrap_python) serves a request of 1 to
 * POOLED_MAX bytes from its pools, and the one hooked call it can make for it is through
 * the arena allocator, which guards itself.  POOLED_MAX is pymalloc's
 * SMALL_REQUEST_THRESHOLD, 512 on every interpreter from 3.6 on (sys._debugmallocstats()
 * says "Small block threshold = 512").
 *
 * Such a domain's sampled blocks never come from its pools: a pooled request that is due
 * is served by the raw domain instead, as pymalloc serves every larger one.  pymalloc
 * gives a block it did not carve back to the raw domain (PyMem_RawFree, which is free),
 * so every sampled block of the domain is freed through the C library's hooked free, and
 * the domain's own free needs no wrapper at all: its table keeps pymalloc's. */
static int pooled[3];
#define POOLED_MAX 512u
/* The raw domain frees through the hooked free (set at the first look), and serves
 * sampled pooled requests through these. */
static int raw_ours, c_hooked;
static void *(*raw_malloc)(size_t);
static void *(*raw_calloc)(size_t, size_t);

static inline int pooled_size(size_t n) { return n - 1 < POOLED_MAX; }

/* The shift a small request of a pooled domain counts with: 0 while the domains stay
 * wrapped, the open window's while they are switched (see "the allocation windows"). */
static _Atomic int win_shift;

static inline int cur_shift(void)
{
    return atomic_load_explicit(&win_shift, memory_order_relaxed);
}

static void win_close_overdue(void);

/* A pooled request while the countdown lasts: counted here, and the wrapper then
 * forwards it with nothing after the call (a tail call: no guard to set and clear, no
 * frame).  0 for anything else, which takes the guarded way. */
static inline int pooled_fast(int d, size_t n)
{
    if (!pooled[d] || !pooled_size(n))
        return 0;
    int64_t left = allocsample_left - ((int64_t)n << cur_shift());
    if (__builtin_expect(left < 0, 0))
        return 0;
    allocsample_left = left;
    return 1;
}

/* The guarded way of a domain's malloc and calloc, out of line so that their pooled way
 * needs no frame; `ret` is the wrapper's return address (in the allocator's caller).  A
 * pooled request comes here when it is due: the raw domain serves it (above). */
#define PY_SLOW(d, dom)                                                                        \
    __attribute__((noinline)) static void *d##_malloc_slow(size_t n, uintptr_t ret)            \
    {                                                                                          \
        const py_allocator *o = &orig_py[d];                                                   \
        void *p;                                                                               \
        if (pooled[d] && pooled_size(n)) {                                                     \
            GUARDED(raw_malloc(n), p);                                                         \
            allocsample_after_shifted(p, n, cur_shift(), dom, ret);                            \
            win_close_overdue();                                                               \
            return p;                                                                          \
        }                                                                                      \
        GUARDED(o->malloc(o->ctx, n), p);                                                      \
        allocsample_after(p, n, dom, ret);                                                     \
        return p;                                                                              \
    }                                                                                          \
    __attribute__((noinline)) static void *d##_calloc_slow(size_t k, size_t n, uintptr_t ret)  \
    {                                                                                          \
        const py_allocator *o = &orig_py[d];                                                   \
        void *p;                                                                               \
        size_t total;                                                                          \
        if (pooled[d] && !__builtin_mul_overflow(k, n, &total) && pooled_size(total)) {        \
            GUARDED(raw_calloc(k, n), p);                                                      \
            allocsample_after_shifted(p, total, cur_shift(), dom, ret);                        \
            win_close_overdue();                                                               \
            return p;                                                                          \
        }                                                                                      \
        GUARDED(o->calloc(o->ctx, k, n), p);                                                   \
        allocsample_after(p, k *n, dom, ret);                                                  \
        return p;                                                                              \
    }                                                                                          \
    /* A pooled block realloc made that is due: moved to a block of the raw domain (it         \
     * holds n bytes, all of them the block's), pymalloc's own given back. */                  \
    __attribute__((noinline)) static void *d##_unpool(void *p, size_t n)                       \
    {                                                                                          \
        const py_allocator *o = &orig_py[d];                                                   \
        void *q;                                                                               \
        GUARDED(raw_malloc(n), q);                                                             \
        if (!q)                                                                                \
            return p; /* kept where it is: the count stays due */                              \
        memcpy(q, p, n);                                                                       \
        int guard = tls_guard;                                                                 \
        tls_guard = 1;                                                                         \
        o->free(o->ctx, p);                                                                    \
        tls_guard = guard;                                                                     \
        return q;                                                                              \
    }

/* The wrappers of one domain.  They get the original's ctx too (see wrap_python), and
 * ignore it: the original is called with its own.  The free wrapper is in the table only
 * when the domain is not pooled. */
#define PY_WRAPPERS(d, dom)                                                                    \
    static void *d##_malloc(void *ctx, size_t n)                                               \
    {                                                                                          \
        (void)ctx;                                                                             \
        const py_allocator *o = &orig_py[d];                                                   \
        if (pooled_fast(d, n))                                                                 \
            return o->malloc(o->ctx, n);                                                       \
        return d##_malloc_slow(n, (uintptr_t)__builtin_return_address(0));                     \
    }                                                                                          \
    static void *d##_calloc(void *ctx, size_t k, size_t n)                                     \
    {                                                                                          \
        (void)ctx;                                                                             \
        const py_allocator *o = &orig_py[d];                                                   \
        size_t total;                                                                          \
        if (!__builtin_mul_overflow(k, n, &total) && pooled_fast(d, total))                    \
            return o->calloc(o->ctx, k, n);                                                    \
        return d##_calloc_slow(k, n, (uintptr_t)__builtin_return_address(0));                  \
    }                                                                                          \
    static void *d##_realloc(void *ctx, void *old, size_t n)                                   \
    {                                                                                          \
        (void)ctx;                                                                             \
        const py_allocator *o = &orig_py[d];                                                   \
        if (!tls_guard)                                                                        \
            allocsample_before_free(old);                                                      \
        void *p;                                                                               \
        GUARDED(o->realloc(o->ctx, old, n), p);                                                \
        int sh = pooled[d] && pooled_size(n) ? cur_shift() : 0;                                \
        if (p && pooled[d] && pooled_size(n) && allocsample_left - ((int64_t)n << sh) < 0)     \
            p = d##_unpool(p, n);                                                              \
        allocsample_after_shifted(p, n, sh, dom, (uintptr_t)__builtin_return_address(0));      \
        return p;                                                                              \
    }                                                                                          \
    static void d##_free(void *ctx, void *p)                                                   \
    {                                                                                          \
        (void)ctx;                                                                             \
        const py_allocator *o = &orig_py[d];                                                   \
        allocsample_before_free(p); /* no guard: a nested free finds nothing to record */      \
        o->free(o->ctx, p);                                                                    \
    }

/* Index names for the macro. */
#define mem PYMEM_DOMAIN_MEM
#define obj PYMEM_DOMAIN_OBJ
PY_SLOW(mem, PYPROF_ALLOC_PYMEM)
PY_SLOW(obj, PYPROF_ALLOC_PYOBJECT)
PY_WRAPPERS(mem, PYPROF_ALLOC_PYMEM)
PY_WRAPPERS(obj, PYPROF_ALLOC_PYOBJECT)
#undef mem
#undef obj

typedef void (*allocator_fn)(int, py_allocator *);
typedef void (*arena_fn)(py_arena_allocator *);

/* The arena allocator's wrappers: what pymalloc maps for its pools is its own, never a
 * sample, whether or not the request that needed it was guarded. */
static void *arena_alloc(void *ctx, size_t size)
{
    (void)ctx;
    int guard = tls_guard;
    tls_guard = 1;
    void *p = orig_arena.alloc(orig_arena.ctx, size);
    tls_guard = guard;
    return p;
}

static void arena_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    int guard = tls_guard;
    tls_guard = 1;
    orig_arena.free(orig_arena.ctx, ptr, size);
    tls_guard = guard;
}

/* Wraps the MEM and OBJ domains where they are not wrapped yet.  The raw domain is malloc
 * itself, seen by the GOT hooks.  Another thread may be allocating while a domain's table
 * is replaced, and may read a mix of the old and the new entries: each entry works with
 * either, since the new table carries the old ctx and every wrapper forwards to the old
 * entries.  Returns 0, or -1 when the interpreter has no PyMem_SetAllocator (2.7). */
static allocator_fn get_allocator, set_allocator; /* resolved once, at install */
static arena_fn get_arena, set_arena;

/* Wraps the arena allocator where it is not wrapped yet, as the domains.  1 when it is
 * ours. */
static int wrap_arena(void)
{
    if (!get_arena || !set_arena)
        return 0;
    py_arena_allocator cur;
    get_arena(&cur);
    if (cur.alloc != arena_alloc) {
        orig_arena = cur;
        py_arena_allocator w = {cur.ctx, arena_alloc, arena_free};
        set_arena(&w);
    }
    return 1;
}

/* Bytes of another table's ctx looked through for our wrapper: the debug hooks' ctx is
 * {api id, the table they wrap} (48 bytes), tracemalloc's the table it wraps (40). */
#define WRAPS_SCAN 48u

/* Whether the table `t` in force, another's, forwards to our wrapper `fn`: its ctx holds
 * the table it wraps.  Wrapping it again would close a loop (ours calling it calling
 * ours), as 3.6 makes when it sets up its debug hooks again over ours.  The read is
 * guarded: a ctx that is no such table reads as "no". */
static int wraps_ours(const py_allocator *t, void *fn)
{
    uintptr_t ctx = (uintptr_t)t->ctx;
    if (!safe_span_ok(ctx, WRAPS_SCAN))
        return 0;
    safe_jmpbuf jb;
    int found = 0;
    if (SAFE_GUARD_BEGIN(jb)) {
        for (uintptr_t off = 0; off < WRAPS_SCAN && !found; off += 8)
            found = safe_at_ptr(ctx + off) == (uintptr_t)fn;
        SAFE_GUARD_END();
    }
    return found;
}

/* pymalloc's malloc, as the object domain had it when we first looked (the compiled-in
 * default, when the library is preloaded: before the interpreter's start can install
 * another), or NULL when that was not pymalloc: debug hooks (a ctx), malloc (the raw
 * domain's), mimalloc (a function per domain), or a host's own (outside the module
 * that holds the interpreter).  The first look is at install, never inside a hook
 * (dladdr takes the loader's lock). */
static void *pymalloc_fn;
static int first_look_done;

static int same_module(const void *a, const void *b)
{
    Dl_info x, y;
    return dladdr(a, &x) && dladdr(b, &y) && x.dli_fbase == y.dli_fbase;
}

static const py_allocator ours[3] = {
    [PYMEM_DOMAIN_MEM] = {NULL, mem_malloc, mem_calloc, mem_realloc, mem_free},
    [PYMEM_DOMAIN_OBJ] = {NULL, obj_malloc, obj_calloc, obj_realloc, obj_free},
};
/* The table of each domain while it is wrapped (ours, with the original's ctx, and
 * pymalloc's free where pooled). */
static py_allocator wrapped[3];

/* The windows' state (see "the allocation windows" below). */
enum { WIN_WRAPPED, WIN_OPEN, WIN_SHUT, WIN_PAUSED, WIN_BUSY };
static _Atomic int win_state;

static int same_table(const py_allocator *a, const py_allocator *b)
{
    return a->malloc == b->malloc && a->ctx == b->ctx && a->calloc == b->calloc &&
           a->realloc == b->realloc && a->free == b->free;
}

static int wrap_python(void)
{
    allocator_fn get = get_allocator, set = set_allocator;
    if (!get || !set)
        return -1;
    if (!first_look_done) {
        py_allocator raw, mem, obj;
        get(PYMEM_DOMAIN_RAW, &raw);
        get(PYMEM_DOMAIN_MEM, &mem);
        get(PYMEM_DOMAIN_OBJ, &obj);
        if (!obj.ctx && !mem.ctx && obj.malloc == mem.malloc && obj.malloc != raw.malloc &&
            same_module((void *)obj.malloc, (void *)get))
            pymalloc_fn = (void *)obj.malloc;
        /* The raw domain pymalloc gives its blocks back to is the interpreter's own,
         * which calls the C library's free through a hooked slot. */
        raw_ours = c_hooked && !raw.ctx && same_module((void *)raw.free, (void *)get);
        first_look_done = 1;
    }
    int arena = -1; /* not looked at yet */
    for (int d = PYMEM_DOMAIN_MEM; d <= PYMEM_DOMAIN_OBJ; d++) {
        py_allocator cur;
        get(d, &cur);
        if (cur.malloc == ours[d].malloc || wraps_ours(&cur, (void *)ours[d].malloc))
            continue; /* still ours, or still calling ours */
        if (pooled[d] && atomic_load(&win_state) != WIN_WRAPPED &&
            same_table(&cur, &orig_py[d]))
            continue; /* the original, between two windows */
        /* pymalloc with no ctx: not PYTHONMALLOC=malloc, mimalloc or the debug hooks,
         * which the interpreter's start may have put in its place. */
        int pool = pymalloc_fn && raw_ours && !cur.ctx && (void *)cur.malloc == pymalloc_fn &&
                   raw_malloc && raw_calloc;
        if (pool && arena < 0)
            arena = wrap_arena();
        pool = pool && arena > 0;
        /* Nobody calls our wrappers of this domain now (the table holds another's), so
         * the originals they forward to can change. */
        pooled[d] = 0;
        orig_py[d] = cur;
        py_allocator w = ours[d];
        w.ctx = cur.ctx;
        if (pool)
            w.free = cur.free; /* pymalloc's: see pooled */
        wrapped[d] = w;
        set(d, &w);
        pooled[d] = pool;
    }
    return 0;
}

/* ---- the allocation windows ------------------------------------------------------------ */

/* When the program makes many small Python allocations, the pooled domains hold our
 * wrappers only inside short windows at random times (allocwin.h) and pymalloc's own
 * functions the rest of the time, so that pymalloc runs at full speed (and an interpreter
 * built to inline it when its table holds pymalloc's own, as Debian's 3.14 is, inlines it
 * again).  The GOT hooks stay: they see every larger request, native allocations, mmap,
 * and the free of every sampled block (a sampled small block is the raw domain's).
 *
 * States (win_state):
 *   WRAPPED  the domains wrapped for good, small requests counted once (shift 0): the
 *            cost cap's choice for a quiet process, PYPROF_ALLOC_WINDOWS=off, and until
 *            the interpreter is initialized
 *   OPEN     a window: wrapped, small requests counted 2^shift times; closes at win_due
 *   SHUT     between windows: the tables hold the originals; the next opens at win_due
 *   PAUSED   another hook is on top of ours, or on top of the originals (tracemalloc
 *            started, ddtrace): the tables are left as they are until they are ours, or
 *            the originals, again
 *   BUSY     one thread (the cron, or a hook closing a window that ran late) is switching
 * A switch is made only over a table that is exactly ours or exactly the original, the
 * rule for a hook installed after start-up (it must wrap what was there): any other
 * means another hook sits on top, and windows pause (an AWINDOW record says so).  Every
 * window's real times go into the log. */
static int win_config = CONFIG_WINDOWS_AUTO; /* PYPROF_ALLOC_WINDOWS */
static int win_ready;                        /* the writer's recheck is done */
static int win_next;                         /* the shift the next window takes */
static uint64_t win_open_ns, win_due_ns;     /* monotonic; written before win_state */
static uint64_t win_late_ns; /* how late windows opened, not yet taken off a gap */
static uint64_t win_rng;
static _Atomic int foreign_hook; /* a module known to hook the allocators is loaded */
#define WIN_LATE_NS 2000000ull   /* a window this late is closed by a sampled allocation */
/* What a window's real length and an opening's lateness count for, at most.  Longer
 * means the cron was away (profiling paused, the process stopped): a window open that
 * long saw no small allocation (the first sampled one closes it), so its length says
 * nothing about the duty, and a late opening is not made up by windows kept open for
 * as long. */
#define WIN_COUNT_MAX_NS (4 * ALLOCWIN_LEN_NS)

static double win_uniform(void)
{
    uint64_t x = win_rng ? win_rng : (clock_mono_ns() | 1);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    win_rng = x;
    return (double)(((x * 0x2545f4914f6cdd1dull) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

/* Whether every pooled domain's table is ours (1) or the original (0), exactly. */
static int tables_are(int wrapped_ones)
{
    int any = 0;
    for (int d = PYMEM_DOMAIN_MEM; d <= PYMEM_DOMAIN_OBJ; d++) {
        if (!pooled[d])
            continue;
        py_allocator cur;
        get_allocator(d, &cur);
        if (!same_table(&cur, wrapped_ones ? &wrapped[d] : &orig_py[d]))
            return 0;
        any = 1;
    }
    return any;
}

static void tables_set(int wrapped_ones)
{
    for (int d = PYMEM_DOMAIN_MEM; d <= PYMEM_DOMAIN_OBJ; d++)
        if (pooled[d])
            set_allocator(d, wrapped_ones ? &wrapped[d] : &orig_py[d]);
}

static int win_floor(void)
{
    return win_config == CONFIG_WINDOWS_AUTO ? ALLOCWIN_FLOOR_SHIFT : win_config;
}

static void win_pause(uint64_t now, int still_wrapped)
{
    atomic_store(&win_shift, 0);
    allocsample_window(now, 0, 0, 0, win_floor(),
                       PYPROF_AWINDOW_F_PAUSED |
                           (still_wrapped ? PYPROF_AWINDOW_F_WRAPPED : 0));
    atomic_store(&win_state, WIN_PAUSED);
}

/* Closes the open window, if this thread wins it.  The cron's, or a sampled allocation's
 * when the cron is late; the switch's own calls are never sampled. */
static void win_close(void)
{
    int open = WIN_OPEN;
    if (!atomic_compare_exchange_strong(&win_state, &open, WIN_BUSY))
        return;
    int guard = tls_guard;
    tls_guard = 1;
    int shift = atomic_load(&win_shift);
    if (!tables_are(1)) {
        /* Another hook went on top of ours inside the window: ours is still called, every
         * small request from now on counted once. */
        uint64_t now = clock_mono_ns();
        allocsample_window(win_open_ns, now - win_open_ns, ALLOCWIN_LEN_NS, shift, win_floor(),
                           0);
        win_pause(now, 1);
    } else {
        tables_set(0);
        uint64_t end = clock_mono_ns(), len = end - win_open_ns;
        allocsample_window(win_open_ns, len, ALLOCWIN_LEN_NS, shift, win_floor(), 0);
        /* The time the cron opened this window late is taken off the gaps that follow,
         * so that the share of the time inside windows stays the duty. */
        uint64_t gap = allocwin_gap_ns(len < WIN_COUNT_MAX_NS ? len : WIN_COUNT_MAX_NS, shift,
                                       win_uniform());
        uint64_t off = gap < win_late_ns ? gap : win_late_ns;
        win_late_ns -= off;
        win_due_ns = end + gap - off;
        atomic_store(&win_state, WIN_SHUT);
    }
    tls_guard = guard;
}

static void win_close_overdue(void)
{
    if (__builtin_expect(atomic_load_explicit(&win_state, memory_order_acquire) != WIN_OPEN, 1))
        return;
    if (clock_mono_ns() > win_due_ns + WIN_LATE_NS)
        win_close();
}

/* Opens a window of `shift` (the cron's): the tables become ours. */
static void win_open(int shift)
{
    atomic_store(&win_shift, shift);
    tables_set(1);
    win_open_ns = clock_mono_ns();
    win_due_ns = win_open_ns + ALLOCWIN_LEN_NS;
    atomic_store(&win_state, WIN_OPEN);
}

/* The cron's step: the next switch due, as a delay in ns (0: none to wait for). */
static uint64_t win_step(uint64_t now)
{
    if (!win_ready || win_config == 0 || atomic_load(&recheck_pending) ||
        !(pooled[PYMEM_DOMAIN_MEM] || pooled[PYMEM_DOMAIN_OBJ]))
        return 0;
    int state = atomic_load(&win_state);
    if (state == WIN_BUSY || state == WIN_PAUSED)
        return 0;
    int guard = tls_guard;
    tls_guard = 1;
    uint64_t wait = 0;
    if (state == WIN_OPEN) {
        if (now >= win_due_ns)
            win_close();
        else
            wait = win_due_ns - now;
    } else if (state == WIN_WRAPPED && win_next > 0 && !atomic_load(&foreign_hook) &&
               atomic_compare_exchange_strong(&win_state, &state, WIN_BUSY)) {
        /* From wrapped for good to windows: this moment opens the first (the tables are
         * ours already: setting them again changes nothing). */
        if (!tables_are(1)) {
            win_pause(now, 1);
        } else {
            win_open(win_next);
            wait = ALLOCWIN_LEN_NS;
        }
    } else if (state == WIN_SHUT && now < win_due_ns) {
        wait = win_due_ns - now;
    } else if (state == WIN_SHUT &&
               atomic_compare_exchange_strong(&win_state, &state, WIN_BUSY)) {
        if (!tables_are(0)) {
            win_pause(now, 0);
        } else if (win_next == 0 || atomic_load(&foreign_hook)) {
            /* Quiet now, or a hook of another tool may come: wrapped for good. */
            atomic_store(&win_shift, 0);
            tables_set(1);
            atomic_store(&win_state, WIN_WRAPPED);
        } else {
            uint64_t late = now - win_due_ns;
            win_late_ns += late < WIN_COUNT_MAX_NS ? late : WIN_COUNT_MAX_NS;
            win_open(win_next);
            wait = ALLOCWIN_LEN_NS;
        }
    }
    tls_guard = guard;
    return wait;
}

/* Every RATE_EVERY_NS: the cost cap's shift for the next windows, from the allocation
 * rate the samples measured since the last, and a paused process looked at again. */
#define RATE_EVERY_NS 250000000ull
static void win_upkeep(uint64_t now)
{
    static uint64_t last_ns, last_n;
    if (last_ns && now - last_ns < RATE_EVERY_NS)
        return;
    allocsample_counts c;
    allocsample_stats(&c);
    uint64_t n = c.samples + c.lost;
    if (win_config != CONFIG_WINDOWS_AUTO) {
        win_next = win_config;
    } else if (last_ns && now > last_ns) {
        double rate = (double)(n - last_n) * (double)allocsample_interval() * 1e9 /
                      (double)(now - last_ns);
        win_next = allocwin_shift_for_rate(rate, ALLOCWIN_FLOOR_SHIFT);
    }
    last_ns = now;
    last_n = n;
    int state = WIN_PAUSED;
    if (win_ready && atomic_compare_exchange_strong(&win_state, &state, WIN_BUSY)) {
        int guard = tls_guard;
        tls_guard = 1;
        if (tables_are(1)) { /* the other hook is gone and ours is back */
            atomic_store(&win_shift, 0);
            atomic_store(&win_state, WIN_WRAPPED);
        } else if (tables_are(0)) {
            win_due_ns = now;
            atomic_store(&win_state, WIN_SHUT);
        } else {
            atomic_store(&win_state, WIN_PAUSED);
        }
        tls_guard = guard;
    }
}

/* ---- the C library's allocator, through the GOT ---------------------------------------- */

enum {
    H_MALLOC,
    H_CALLOC,
    H_REALLOC,
    H_FREE,
    H_POSIX_MEMALIGN,
    H_ALIGNED_ALLOC,
    H_MEMALIGN,
    H_VALLOC,
    H_PVALLOC,
    H_REALLOCARRAY,
    H_MMAP,
    H_MMAP64,
    H_MUNMAP,
    H_COUNT
};
static void *orig_c[H_COUNT];

#define ORIG(i, type) ((type)orig_c[i])

static void recheck_from_hook(void);

static void *h_malloc(size_t n)
{
    if (__builtin_expect(atomic_load_explicit(&recheck_pending, memory_order_relaxed), 0))
        recheck_from_hook();
    void *p;
    GUARDED(ORIG(H_MALLOC, void *(*)(size_t))(n), p);
    SAMPLE(p, n, PYPROF_ALLOC_MALLOC);
    return p;
}

static void *h_calloc(size_t k, size_t n)
{
    void *p;
    GUARDED(ORIG(H_CALLOC, void *(*)(size_t, size_t))(k, n), p);
    SAMPLE(p, k * n, PYPROF_ALLOC_MALLOC);
    return p;
}

static void *h_realloc(void *old, size_t n)
{
    if (!tls_guard)
        allocsample_before_free(old);
    void *p;
    GUARDED(ORIG(H_REALLOC, void *(*)(void *, size_t))(old, n), p);
    SAMPLE(p, n, PYPROF_ALLOC_MALLOC);
    return p;
}

static void *h_reallocarray(void *old, size_t k, size_t n)
{
    if (!tls_guard)
        allocsample_before_free(old);
    void *p;
    GUARDED(ORIG(H_REALLOCARRAY, void *(*)(void *, size_t, size_t))(old, k, n), p);
    SAMPLE(p, k * n, PYPROF_ALLOC_MALLOC);
    return p;
}

static void h_free(void *p)
{
    if (!tls_guard)
        allocsample_before_free(p);
    ORIG(H_FREE, void (*)(void *))(p);
}

static int h_posix_memalign(void **out, size_t align, size_t n)
{
    int rc;
    GUARDED(ORIG(H_POSIX_MEMALIGN, int (*)(void **, size_t, size_t))(out, align, n), rc);
    if (rc == 0)
        SAMPLE(*out, n, PYPROF_ALLOC_MALLOC);
    return rc;
}

static void *h_aligned_alloc(size_t align, size_t n)
{
    void *p;
    GUARDED(ORIG(H_ALIGNED_ALLOC, void *(*)(size_t, size_t))(align, n), p);
    SAMPLE(p, n, PYPROF_ALLOC_MALLOC);
    return p;
}

static void *h_memalign(size_t align, size_t n)
{
    void *p;
    GUARDED(ORIG(H_MEMALIGN, void *(*)(size_t, size_t))(align, n), p);
    SAMPLE(p, n, PYPROF_ALLOC_MALLOC);
    return p;
}

static void *h_valloc(size_t n)
{
    void *p;
    GUARDED(ORIG(H_VALLOC, void *(*)(size_t))(n), p);
    SAMPLE(p, n, PYPROF_ALLOC_MALLOC);
    return p;
}

static void *h_pvalloc(size_t n)
{
    void *p;
    GUARDED(ORIG(H_PVALLOC, void *(*)(size_t))(n), p);
    SAMPLE(p, n, PYPROF_ALLOC_MALLOC);
    return p;
}

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);

/* Inline, so that the return address is the hook's. */
__attribute__((always_inline)) static inline void *
mmap_common(int i, void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p;
    GUARDED(ORIG(i, mmap_fn)(addr, len, prot, flags, fd, off), p);
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS))
        SAMPLE(p, len, PYPROF_ALLOC_MMAP);
    return p;
}

static void *h_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap_common(H_MMAP, addr, len, prot, flags, fd, off);
}

static void *h_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap_common(H_MMAP64, addr, len, prot, flags, fd, off);
}

static int h_munmap(void *addr, size_t len)
{
    if (!tls_guard)
        allocsample_before_free(addr);
    return ORIG(H_MUNMAP, int (*)(void *, size_t))(addr, len);
}

static const gotpatch_sym c_syms[H_COUNT] = {
    [H_MALLOC] = {"malloc", (void *)h_malloc},
    [H_CALLOC] = {"calloc", (void *)h_calloc},
    [H_REALLOC] = {"realloc", (void *)h_realloc},
    [H_FREE] = {"free", (void *)h_free},
    [H_POSIX_MEMALIGN] = {"posix_memalign", (void *)h_posix_memalign},
    [H_ALIGNED_ALLOC] = {"aligned_alloc", (void *)h_aligned_alloc},
    [H_MEMALIGN] = {"memalign", (void *)h_memalign},
    [H_VALLOC] = {"valloc", (void *)h_valloc},
    [H_PVALLOC] = {"pvalloc", (void *)h_pvalloc},
    [H_REALLOCARRAY] = {"reallocarray", (void *)h_reallocarray},
    [H_MMAP] = {"mmap", (void *)h_mmap},
    [H_MMAP64] = {"mmap64", (void *)h_mmap64},
    [H_MUNMAP] = {"munmap", (void *)h_munmap},
};

/* ---- installation --------------------------------------------------------------------- */

/* While the interpreter starts (recheck_pending): the domains wrapped again if its start
 * replaced them, until it is initialized with them ours.  Runs in a malloc hook, on the
 * starting thread: PyMem_GetAllocator and PyMem_SetAllocator copy a table and allocate
 * nothing (3.12 on take the allocators' lock for it, which no code holds while it
 * allocates). */
static void recheck_from_hook(void)
{
    if (tls_guard)
        return;
    tls_guard = 1;
    int initialized = py_is_initialized && py_is_initialized();
    wrap_python();
    if (initialized || atomic_fetch_sub(&recheck_left, 1) <= 1)
        atomic_store(&recheck_pending, 0);
    tls_guard = 0;
}

int allochook_install(uint64_t interval, int windows, char *err, size_t errlen)
{
    if (atomic_load(&installed))
        return 0;
    win_config = windows;
    if (allocset_init() < 0) {
        snprintf(err, errlen, "allocation sampling off: cannot map its address set");
        return -1;
    }
    allocsample_configure(interval);
    /* The originals first: a patched slot may be called the moment it is written. */
    char gerr[256] = "";
    if (gotpatch_install(c_syms, H_COUNT, orig_c, gerr, sizeof gerr) < 0) {
        snprintf(err, errlen, "allocation sampling of the C library's malloc off: %s", gerr);
        /* The Python domains can still be sampled. */
    } else {
        c_hooked = orig_c[H_FREE] != NULL;
    }
    get_allocator = (allocator_fn)pyabi_dlsym_python("PyMem_GetAllocator");
    set_allocator = (allocator_fn)pyabi_dlsym_python("PyMem_SetAllocator");
    get_arena = (arena_fn)pyabi_dlsym_python("PyObject_GetArenaAllocator");
    raw_malloc = (void *(*)(size_t))pyabi_dlsym_python("PyMem_RawMalloc");
    raw_calloc = (void *(*)(size_t, size_t))pyabi_dlsym_python("PyMem_RawCalloc");
    set_arena = (arena_fn)pyabi_dlsym_python("PyObject_SetArenaAllocator");
    python_hooked = wrap_python() == 0;
    if (python_hooked) {
        py_is_initialized = (int (*)(void))pyabi_dlsym_python("Py_IsInitialized");
        atomic_store(&recheck_left, RECHECK_MAX);
        atomic_store(&recheck_pending, py_is_initialized && !py_is_initialized());
    }
    atomic_store(&installed, 1);
    return 0;
}

void allochook_after_fork_child(void)
{
    allocsample_after_fork_child();
    if (atomic_load(&installed))
        atomic_store(&loader_suspect, 1);
    /* The child's windows go on from its own start.  One another thread of the parent
     * was switching is looked at again by the upkeep (PAUSED, with no record): the
     * tables say where it stopped. */
    int state = atomic_load(&win_state);
    if (state == WIN_OPEN) {
        win_open_ns = clock_mono_ns();
        win_due_ns = win_open_ns + ALLOCWIN_LEN_NS;
    } else if (state == WIN_SHUT) {
        win_due_ns = clock_mono_ns();
    } else if (state == WIN_BUSY) {
        atomic_store(&win_state, WIN_PAUSED);
    }
}

void allochook_pause(void)
{
    if (atomic_load(&installed) && python_hooked)
        win_close();
}

void allochook_recheck(void)
{
    if (atomic_load(&installed) && python_hooked) {
        wrap_python();
        win_ready = 1;
    }
}

int allochook_installed(void) { return atomic_load(&installed); }

int allochook_python_hooked(void) { return python_hooked; }

void allochook_own_thread(void) { tls_guard = 1; }

/* Module scans on the program's threads are the library's work: what they allocate is
 * never sampled. */
static void refresh(void)
{
    int guard = tls_guard;
    tls_guard = 1;
    gotpatch_refresh();
    tls_guard = guard;
}

void allochook_after_dlopen(void)
{
    if (!atomic_load(&installed))
        return;
    atomic_store(&loader_suspect, 0); /* the program's dlopen returned: the loader works */
    refresh();
}

#define TICK_EVERY_NS 1000000000ull /* the upkeep's spacing */

/* Modules of tools that put their own hook on the Python allocators and keep headers in
 * the blocks they hand out (ddtrace's memalloc): a switch racing with their hook's
 * installation could give them a block without one, so windows stop once one is
 * loaded. */
static int foreign_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    return base && !strncmp(base + 1, "_memalloc", 9);
}

uint64_t allochook_tick(uint64_t now)
{
    static uint64_t last;
    if (!atomic_load(&installed))
        return 0;
    if (!last || now - last >= TICK_EVERY_NS) {
        last = now;
        allocsample_sweep();
        if (!atomic_load(&loader_suspect)) {
            refresh();
            if (!atomic_load(&foreign_hook) &&
                libc_next_dl_iterate_phdr(foreign_module, NULL) > 0)
                atomic_store(&foreign_hook, 1);
        }
    }
    if (!python_hooked)
        return 0;
    win_upkeep(now);
    return win_step(now);
}
