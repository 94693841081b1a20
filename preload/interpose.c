/*
 * interpose: the interposed symbols, in one list.  See interpose.h.
 *
 * Every wrapper is exported (visibility default, listed in exports.map) and forwards to
 * the next definition.  A wrapper whose target is missing does what the program would
 * see without us where that is possible (nothing to forward to means the symbol was
 * never going to be called through us) and otherwise fails like a missing symbol would.
 */
#include "interpose.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pyprof/format.h>

#include "entry.h"
#include "lib/allochook.h"
#include "lib/asyncabi.h"
#include "lib/libc_next.h"
#include "lib/native.h"
#include "lib/pyabi.h"
#include "lib/sigdisp.h"
#include "lib/threadtimer.h"
#include "lib/procexit.h"
#include "procstat.h"

#define EXPORT __attribute__((visibility("default")))

/* CPython's PyStatus, returned in memory by Py_InitializeFromConfig: the wrapper must
 * declare the same 32-byte type or the hidden return pointer is lost. */
typedef struct {
    int type;
    const char *func;
    const char *err_msg;
    int exitcode;
} py_status;

/* The next definition of `name`: the C library's or libpython's, including a libpython
 * that a plugin loaded RTLD_LOCAL (invisible to RTLD_NEXT). */
static void *next_sym(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    return p ? p : pyabi_dlsym_python(name);
}

/* The wrappers' own prototypes: each has the exact signature of what it replaces. */
EXPORT void Py_Initialize(void);
EXPORT void Py_InitializeEx(int install_sigs);
EXPORT py_status Py_InitializeFromConfig(const void *config);
EXPORT int Py_Main(int argc, void **argv);
EXPORT int Py_BytesMain(int argc, char **argv);
EXPORT int _Py_UnixMain(int argc, char **argv);
EXPORT int Py_RunMain(void);
EXPORT int Py_FinalizeEx(void);
EXPORT void Py_Finalize(void);
EXPORT int execve(const char *path, char *const argv[], char *const envp[]);
EXPORT int execv(const char *path, char *const argv[]);
EXPORT int execvp(const char *file, char *const argv[]);
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]);
EXPORT int fexecve(int fd, char *const argv[], char *const envp[]);
EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                          void *arg);
EXPORT int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);
EXPORT int dlclose(void *handle);
/* dlopen is defined in assembly below; these are its hidden helpers. */
int interpose_dlopen_direct(const char *file);
void *interpose_dlopen_tracked(const char *file, int mode);

#define REAL(name, type)                                                                       \
    static __typeof__(&name) real_##name;                                                      \
    if (!real_##name)                                                                          \
        real_##name = (__typeof__(&name))next_sym(#name);

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);
/* Read by the dlopen trampoline: hidden, resolved in the constructor. */
dlopen_fn interpose_real_dlopen;
static dlclose_fn real_dlclose;

/* The C library's dlopen and dlclose, found before any wrapper can run concurrently.
 * The wrappers find them too when they run before this constructor (another object's
 * constructor loading a plugin), in whatever order the loader runs this library's. */
__attribute__((constructor)) static void interpose_resolve(void)
{
    interpose_real_dlopen = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
    real_dlclose = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
}

/* ---- threads ------------------------------------------------------------------------ */

/* What a new thread runs first while CPU timers are armed: its own timer, then the
 * program's start routine (threadtimer.h).  Threads created while they are not armed
 * (wall clock, the POSIX timer, paused, not profiling) start exactly as without us.
 *
 * The routine and its argument reach the new thread through a static pool, not malloc:
 * pthread_create may be called from inside an allocator (jemalloc starts its background
 * threads so), where allocating again could deadlock.  A creator takes a free entry, the
 * new thread gives it back first thing; with every entry taken (that many threads
 * starting at once), a thread starts as without us, untimed and counted. */
#define START_POOL 512

typedef struct thread_start {
    _Atomic int taken;
    void *(*start)(void *);
    void *arg;
} thread_start;

static thread_start start_pool[START_POOL];
static _Atomic unsigned start_next;

static void *timed_thread_main(void *p)
{
    thread_start *ts = p;
    void *(*start)(void *) = ts->start;
    void *arg = ts->arg;
    atomic_store(&ts->taken, 0);
    /* Native mode: one libunwind walk here, outside signal context, before this
     * thread's samples may walk natively (native.h). */
    native_thread_start();
    threadtimer_thread_start();
    return start(arg);
}

static thread_start *take_start_entry(void)
{
    unsigned first = atomic_fetch_add_explicit(&start_next, 1, memory_order_relaxed);
    for (unsigned i = 0; i < START_POOL; i++) {
        thread_start *ts = &start_pool[(first + i) % START_POOL];
        int free_entry = 0;
        if (atomic_compare_exchange_strong(&ts->taken, &free_entry, 1))
            return ts;
    }
    return NULL;
}

EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                          void *arg)
{
    int timed = threadtimer_create_begin();
    int rc;
    thread_start *ts = timed || native_active() ? take_start_entry() : NULL;
    if (ts) {
        ts->start = start;
        ts->arg = arg;
        rc = libc_next_pthread_create(thread, attr, timed_thread_main, ts);
        if (rc != 0)
            atomic_store(&ts->taken, 0);
    } else {
        if (timed)
            threadtimer_count_lost();
        rc = libc_next_pthread_create(thread, attr, start, arg);
    }
    if (!timed)
        threadtimer_create_end();
    return rc;
}

/* ---- the loaded modules (native mode) ----------------------------------------------- */

/* libunwind, looking a frame's module up, calls dl_iterate_phdr; inside the sampling
 * handler the C library's would take the loader lock and may malloc.  Calls made from
 * a native walk of ours are served from the module snapshot; every other call goes to
 * the C library's, as without us. */
EXPORT int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
    if (native_in_walk())
        return native_snapshot_iterate(cb, data);
    return libc_next_dl_iterate_phdr(cb, data);
}

/* dlopen.  The C library's dlopen resolves $ORIGIN, the caller's RUNPATH/RPATH and the
 * caller's namespace from its return address, so a wrapper that calls it would make
 * every dlopen look as if libpyprof made it.  This one jumps to it instead, leaving the
 * program's return address in place, whenever it does not need to run after it: always
 * without native mode or allocation sampling, and for any name that the caller could
 * influence (no '/', or a '$' token).  In native mode or with allocation sampling, a path with
 * a '/' and no '$' is caller-independent (in the default namespace): the wrapper calls dlopen
 * and then updates the module snapshot (native_after_dlopen) and hooks the new modules'
 * allocations (allochook_after_dlopen). A module loaded through a jump is missing from the
 * snapshot until the next update: walks through its code end there (TRUNCATED), nothing worse.
 * Returns 1 for a jump. */
int interpose_dlopen_direct(const char *file)
{
    /* Before the constructor ran (another object's constructor loading a plugin), the
     * C library's dlopen is found here: the jump must never go through a null pointer. */
    if (!interpose_real_dlopen)
        interpose_real_dlopen = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
    /* _asyncio's extension module (3.14+) holds the asyncio layout: the cron looks for it
     * as soon as it is loaded (asyncabi_after_dlopen), so the first tasks have it too. */
    int asyncio = file && strstr(file, "_asyncio") && asyncabi_waiting();
    if ((!native_active() && !allochook_installed() && !asyncio) || !file)
        return 1;
    return !strchr(file, '/') || strchr(file, '$');
}

void *interpose_dlopen_tracked(const char *file, int mode)
{
    void *h = interpose_real_dlopen(file, mode);
    native_after_dlopen();
    allochook_after_dlopen();
    asyncabi_after_dlopen();
    return h;
}

/* dlopen(file, mode): keeps rdi/rsi across the decision, with the stack 16-byte aligned
 * for the call, then tail-jumps to the C library's dlopen or to the tracked path.  Its
 * CFI lets unwinders (libunwind in the handler among them) step through it. */
__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        "dlopen:\n"
        "    .cfi_startproc\n"
        "    pushq %rdi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    pushq %rsi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    call interpose_dlopen_direct\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    popq %rsi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    popq %rdi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    testl %eax, %eax\n"
        "    jz 1f\n"
        "    jmp *interpose_real_dlopen(%rip)\n"
        "1:  jmp interpose_dlopen_tracked\n"
        "    .cfi_endproc\n"
        ".size dlopen, .-dlopen\n");

/* dlclose: in native mode, walks stop before the module can be unmapped, and the
 * snapshot and libunwind's caches are renewed before they run again. */
EXPORT int dlclose(void *handle)
{
    if (!real_dlclose)
        real_dlclose = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
    if (!native_active())
        return real_dlclose(handle);
    native_change_begin();
    int rc = real_dlclose(handle);
    native_loader_works();
    native_change_end(1);
    return rc;
}

/* ---- signals ------------------------------------------------------------------------ */

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sigdisp_program_sigaction(sig, act, old))
        return 0;
    return libc_next_sigaction(sig, act, old);
}

EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
    /* glibc's signal() is BSD signal(): SA_RESTART, handler stays installed. */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, sig);
    if (sigaction(sig, &sa, &old) < 0)
        return SIG_ERR;
    return old.sa_handler;
}

/* ---- /proc/self/stat --------------------------------------------------------------- */

EXPORT FILE *fopen(const char *path, const char *mode)
{
    FILE *f = procstat_fopen(path, mode);
    if (f)
        return f;
    REAL(fopen, FILE *)
    if (!real_fopen) {
        errno = ENOSYS;
        return NULL;
    }
    return real_fopen(path, mode);
}

EXPORT FILE *fopen64(const char *path, const char *mode)
{
    FILE *f = procstat_fopen(path, mode);
    if (f)
        return f;
    REAL(fopen64, FILE *)
    if (!real_fopen64) {
        errno = ENOSYS;
        return NULL;
    }
    return real_fopen64(path, mode);
}

/* ---- interpreter start -------------------------------------------------------------- */

EXPORT void Py_Initialize(void)
{
    REAL(Py_Initialize, void (*)(void));
    if (!real_Py_Initialize)
        abort(); /* unreachable: whoever called this linked against libpython */
    real_Py_Initialize();
    entry_python_appeared();
}

EXPORT void Py_InitializeEx(int install_sigs)
{
    REAL(Py_InitializeEx, void (*)(int));
    if (!real_Py_InitializeEx)
        abort();
    real_Py_InitializeEx(install_sigs);
    entry_python_appeared();
}

EXPORT py_status Py_InitializeFromConfig(const void *config)
{
    REAL(Py_InitializeFromConfig, py_status(*)(const void *));
    if (!real_Py_InitializeFromConfig)
        abort();
    py_status st = real_Py_InitializeFromConfig(config);
    entry_python_appeared();
    return st;
}

/* ---- Python's own main: the exit status ---------------------------------------------- */

/* Python's own main returns the exit status, and while it runs a Py_FinalizeEx is not
 * an embedder's end of Python. */
#define MAIN_WRAPPER(name, params, args)                                                       \
    EXPORT int name params                                                                     \
    {                                                                                          \
        REAL(name, __typeof__(&name));                                                         \
        if (!real_##name)                                                                      \
            abort(); /* unreachable: whoever called this linked against libpython */           \
        entry_note_python_main(1);                                                             \
        int rc = real_##name args;                                                             \
        procexit_note_status(rc);                                                              \
        return rc;                                                                             \
    }

MAIN_WRAPPER(Py_Main, (int argc, void **argv), (argc, argv))
MAIN_WRAPPER(Py_BytesMain, (int argc, char **argv), (argc, argv))
MAIN_WRAPPER(_Py_UnixMain, (int argc, char **argv), (argc, argv)) /* 3.7's python */
MAIN_WRAPPER(Py_RunMain, (void), ())

/* ---- interpreter end ---------------------------------------------------------------- */

EXPORT int Py_FinalizeEx(void)
{
    REAL(Py_FinalizeEx, int (*)(void));
    if (!real_Py_FinalizeEx)
        abort();
    int rc = real_Py_FinalizeEx();
    /* An embedder's finalize ends its Python; python's own main exits right after, and
     * the destructor says "exit" with the status. */
    if (!entry_in_python_main())
        entry_finish(PYPROF_END_FINALIZE, 0, 0);
    return rc;
}

EXPORT void Py_Finalize(void)
{
    REAL(Py_Finalize, void (*)(void));
    if (!real_Py_Finalize)
        abort();
    real_Py_Finalize();
    if (!entry_in_python_main())
        entry_finish(PYPROF_END_FINALIZE, 0, 0);
}

/* ---- process exit ------------------------------------------------------------------- */

EXPORT void exit(int status)
{
    REAL(exit, void (*)(int));
    procexit_note_status(status);
    real_exit(status);
    __builtin_unreachable();
}

EXPORT void _exit(int status)
{
    REAL(_exit, void (*)(int));
    entry_finish(PYPROF_END_UNDERSCORE_EXIT, 1, status);
    real__exit(status);
    __builtin_unreachable();
}

EXPORT void _Exit(int status)
{
    REAL(_Exit, void (*)(int));
    entry_finish(PYPROF_END_UNDERSCORE_EXIT, 1, status);
    real__Exit(status);
    __builtin_unreachable();
}

/* ---- exec --------------------------------------------------------------------------- */

/* The new program replaces us without running destructors: finalize the log first (the
 * perf event is removed by the kernel at exec).  If the exec fails, this process goes on
 * unprofiled; the log already ended, marked "exec". */
#define EXEC_WRAPPER(name, first_type, first, call_args, ...)                                  \
    EXPORT int name(first_type first, __VA_ARGS__)                                             \
    {                                                                                          \
        REAL(name, __typeof__(&name));                                                         \
        if (!real_##name) {                                                                    \
            errno = ENOSYS;                                                                    \
            return -1;                                                                         \
        }                                                                                      \
        entry_finish(PYPROF_END_EXEC, 0, 0);                                                   \
        return real_##name call_args;                                                          \
    }

EXEC_WRAPPER(execve, const char *, path, (path, argv, envp), char *const argv[],
             char *const envp[])
EXEC_WRAPPER(execv, const char *, path, (path, argv), char *const argv[])
EXEC_WRAPPER(execvp, const char *, file, (file, argv), char *const argv[])
EXEC_WRAPPER(execvpe, const char *, file, (file, argv, envp), char *const argv[],
             char *const envp[])
EXEC_WRAPPER(fexecve, int, fd, (fd, argv, envp), char *const argv[], char *const envp[])
