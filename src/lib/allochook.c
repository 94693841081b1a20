/*
 * allochook: the allocation hooks (allochook.h).  SIGNAL HANDLER rules for every wrapper:
 * they run inside the program's allocation calls, on any thread, possibly inside its own
 * signal handlers; beyond the allocator they forward to, they call only allocsample.h's
 * [sigsafe] functions and touch an initial-exec thread-local.  errno is the allocator's:
 * nothing after the forwarded call changes it (allocsample saves it where it could).
 */
#include "allochook.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <pyprof/format.h>

#include "allocsample.h"
#include "allocset.h"
#include "gotpatch.h"
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

/* A pooled request while the countdown lasts: counted here, and the wrapper then
 * forwards it with nothing after the call (a tail call: no guard to set and clear, no
 * frame).  0 for anything else, which takes the guarded way. */
static inline int pooled_fast(int d, size_t n)
{
    if (!pooled[d] || !pooled_size(n))
        return 0;
    int64_t left = allocsample_left - (int64_t)n;
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
        if (pooled[d] && pooled_size(n))                                                       \
            GUARDED(raw_malloc(n), p);                                                         \
        else                                                                                   \
            GUARDED(o->malloc(o->ctx, n), p);                                                  \
        allocsample_after(p, n, dom, ret);                                                     \
        return p;                                                                              \
    }                                                                                          \
    __attribute__((noinline)) static void *d##_calloc_slow(size_t k, size_t n, uintptr_t ret)  \
    {                                                                                          \
        const py_allocator *o = &orig_py[d];                                                   \
        void *p;                                                                               \
        size_t total;                                                                          \
        if (pooled[d] && !__builtin_mul_overflow(k, n, &total) && pooled_size(total))          \
            GUARDED(raw_calloc(k, n), p);                                                      \
        else                                                                                   \
            GUARDED(o->calloc(o->ctx, k, n), p);                                               \
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
        if (p && pooled[d] && pooled_size(n) && allocsample_left - (int64_t)n < 0)             \
            p = d##_unpool(p, n);                                                              \
        SAMPLE(p, n, dom);                                                                     \
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
    static const py_allocator ours[3] = {
        [PYMEM_DOMAIN_MEM] = {NULL, mem_malloc, mem_calloc, mem_realloc, mem_free},
        [PYMEM_DOMAIN_OBJ] = {NULL, obj_malloc, obj_calloc, obj_realloc, obj_free},
    };
    int arena = -1; /* not looked at yet */
    for (int d = PYMEM_DOMAIN_MEM; d <= PYMEM_DOMAIN_OBJ; d++) {
        py_allocator cur;
        get(d, &cur);
        if (cur.malloc == ours[d].malloc || wraps_ours(&cur, (void *)ours[d].malloc))
            continue; /* still ours, or still calling ours */
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
        set(d, &w);
        pooled[d] = pool;
    }
    return 0;
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

int allochook_install(uint64_t interval, char *err, size_t errlen)
{
    if (atomic_load(&installed))
        return 0;
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
}

void allochook_recheck(void)
{
    if (atomic_load(&installed) && python_hooked)
        wrap_python();
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

void allochook_tick(uint64_t now)
{
    static uint64_t last;
    if (!atomic_load(&installed) || (last && now - last < TICK_EVERY_NS))
        return;
    last = now;
    allocsample_sweep();
    if (!atomic_load(&loader_suspect))
        refresh();
}
