/*
 * safe_read: the one way the signal handler reads interpreter memory.
 *
 * A sample walks pointers that may be stale or uninitialised (3.11/3.12 link a frame
 * before setting its pointer; see docs/CPYTHON.md, "The 3.11/3.12 frame-linking window").
 * Reads go through the inline functions below, inside a guarded region opened by
 * SAFE_GUARD_BEGIN: a pointer that is NULL, misaligned, in the first page or outside user
 * space jumps straight out of the region, and a read that faults (SIGSEGV/SIGBUS) is
 * turned by our fault handler into the same jump.  The handler is installed once, with
 * SA_NODEFER so a jump out of it leaves the fault signals unblocked.  Faults outside a
 * guarded region go to the program's own handler (which the program installs through our
 * interposed sigaction, kept in sigdisp.h), or the default action.
 *
 * The jump is GCC's __builtin_setjmp/__builtin_longjmp: it saves three words, calls no
 * libc function (so no sanitizer interceptor runs inside a signal handler) and leaves
 * the signal mask alone, which is right here: we jump from the fault handler back into
 * the sampling handler, whose mask must stay in force until it returns.
 *
 * Cost on the fast path: one __builtin_setjmp per sample and one range check per object:
 * safe_span checks the few hundred bytes of a frame or code object that are read at
 * once, and the safe_at_* loads that follow inside that span carry no check of their
 * own (a fault is still caught; the span only has to keep the address plausible).  The
 * safe_u64/u32/u8 reads check their own address, for lone reads.
 */
#ifndef PYPROF_SAFE_READ_H
#define PYPROF_SAFE_READ_H

#include <signal.h>
#include <stdint.h>

/* A jump buffer for __builtin_setjmp. */
typedef void *safe_jmpbuf[5];

/* The current thread's open guard, or NULL.  Initial-exec TLS: the library is
 * preloaded, so its TLS is static and reading it never allocates. */
extern __thread void **safe_guard_tls __attribute__((tls_model("initial-exec")));

/* [sigsafe] Opens a guarded region in the calling function; evaluates to 1 on entry and
 * to 0 when a read inside the region failed (control comes back here).  `jb` is a
 * safe_jmpbuf local to the caller, which must not return before SAFE_GUARD_END. */
#define SAFE_GUARD_BEGIN(jb)                                                                   \
    (__builtin_setjmp(jb) == 0 ? (safe_guard_tls = (jb), 1) : (safe_guard_tls = NULL, 0))
#define SAFE_GUARD_END() (safe_guard_tls = NULL)

/* Reads of interpreter memory are expected to meet freed or foreign memory now and then:
 * that is what the guard is for, so sanitizers must not instrument them (nor add their
 * no-return hooks, which are not async-signal-safe, to the jump). */
#define SAFE_NO_SANITIZE __attribute__((no_sanitize_address, no_sanitize("undefined")))

/* [sigsafe] Leaves the guarded region through its failure path. */
SAFE_NO_SANITIZE __attribute__((noreturn)) void safe_fail(void);

/* The end of user space on x86_64 (47-bit addresses). */
#define SAFE_USER_END 0x800000000000ull

static inline int safe_ptr_ok(uintptr_t p, uintptr_t align)
{
    return p >= 4096 && p < SAFE_USER_END && !(p & (align - 1));
}

/* [sigsafe] Is `p` 8-aligned with [p, p + n) in user space above the first page?
 * safe_span leaves the guarded region when not.  One check for all the fields of one
 * object, which safe_at_* then read; n is the size of a struct (at most a page). */
static inline int safe_span_ok(uintptr_t p, uintptr_t n)
{
    return p >= 4096 && p <= SAFE_USER_END - n && !(p & 7);
}
static inline void safe_span(uintptr_t p, uintptr_t n)
{
    if (!safe_span_ok(p, n))
        safe_fail();
}

/* [sigsafe] Loads inside a span checked by safe_span (their only check); a fault still
 * leaves the guarded region.  Naturally aligned fields of an object whose start is
 * 8-aligned. */
SAFE_NO_SANITIZE static inline uint64_t safe_at_u64(uintptr_t p)
{
    return *(volatile const uint64_t *)p;
}
static inline uintptr_t safe_at_ptr(uintptr_t p) { return (uintptr_t)safe_at_u64(p); }
SAFE_NO_SANITIZE static inline uint32_t safe_at_u32(uintptr_t p)
{
    return *(volatile const uint32_t *)p;
}
static inline int32_t safe_at_i32(uintptr_t p) { return (int32_t)safe_at_u32(p); }
SAFE_NO_SANITIZE static inline uint8_t safe_at_u8(uintptr_t p)
{
    return *(volatile const uint8_t *)p;
}

/* [sigsafe] Reads inside a guarded region; an unusable address leaves it. */
SAFE_NO_SANITIZE static inline uint64_t safe_u64(uintptr_t p)
{
    if (!safe_ptr_ok(p, 8))
        safe_fail();
    return *(volatile const uint64_t *)p;
}
static inline uintptr_t safe_ptr(uintptr_t p) { return (uintptr_t)safe_u64(p); }
SAFE_NO_SANITIZE static inline uint32_t safe_u32(uintptr_t p)
{
    if (!safe_ptr_ok(p, 4))
        safe_fail();
    return *(volatile const uint32_t *)p;
}
static inline int32_t safe_i32(uintptr_t p) { return (int32_t)safe_u32(p); }
SAFE_NO_SANITIZE static inline uint8_t safe_u8(uintptr_t p)
{
    if (!safe_ptr_ok(p, 1))
        safe_fail();
    return *(volatile const uint8_t *)p;
}
/* [sigsafe] Copies n bytes; the source range must lie in user space. */
SAFE_NO_SANITIZE void safe_copy(void *dst, uintptr_t src, uint64_t n);

/* [not sigsafe] Installs the fault handler for SIGSEGV and SIGBUS, remembering the
 * dispositions already there as the program's.  Returns 0 or -1. */
int safe_read_install(void);

/* [not sigsafe] For a thread of ours started with every signal blocked that reads under
 * the guard (the writer, the wall-clock sampler): unblocks SIGSEGV and SIGBUS, because a
 * fault the kernel finds blocked kills the process instead of running the guard. */
void safe_read_unblock_faults(void);

#endif
