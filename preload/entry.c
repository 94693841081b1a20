/*
 * entry: constructor, destructor, fork, and the decision to profile this process at
 * all.  See entry.h.
 *
 * Fail open: every failure before sampling starts prints one line (unless PYPROF_QUIET)
 * and returns, leaving the program exactly as it would run without the library.  A
 * process without CPython does nothing beyond one dlsym: no configuration parsing, no
 * file, no timer, no thread.  In secure-execution mode (set-uid and the like) the library
 * does nothing at all.
 */
#include "entry.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <pyprof/format.h>
#include <pyprof/pyprof.h>

#include "common/config.h"
#include "lib/control.h"
#include "lib/ctlcmd.h"
#include "lib/ctlsock.h"
#include "lib/diag.h"
#include "lib/libc_next.h"
#include "lib/procself.h"
#include "lib/pyabi.h"
#include "lib/rrec.h"
#include "lib/spans.h"
#include "lib/procexit.h"
#include "lib/window.h"
#include "lib/writer.h"

_Static_assert(CONFIG_MAX_DEPTH_MAX <= RREC_MAX_DEPTH,
               "PYPROF_MAX_DEPTH may not exceed what a sample can record");

#define EXPORT __attribute__((visibility("default")))

/* Under the window lock: no window starts before the library is set up. */
static int tried; /* start was attempted (successfully or not) */
/* The process this state belongs to: set by the constructor and in each fork child.  A
 * vfork child (subprocess's, before its exec) shares the memory and runs no fork
 * handler: its exec and _exit hooks must change nothing here. */
static pid_t home_pid;
static _Atomic int python_main;
static int atfork_registered;

void entry_note_python_main(int inside) { atomic_store(&python_main, inside); }
int entry_in_python_main(void) { return atomic_load(&python_main); }

/* In a fork child (pthread_atfork, inside fork): the parent's profile is not ours.  The
 * child gets its own log, timer and writer thread unless PYPROF_CHILDREN=0. */
static void after_fork_child(void)
{
    home_pid = getpid();
    int was_open = window_forget_in_child();
    pyprof_config cfg;
    window_config(&cfg);
    if (cfg.control && cfg.children)
        ctlsock_restart_in_child();
    else
        ctlsock_forget_in_child();
    if (cfg.signal && cfg.children)
        control_restart_in_child(); /* a paused child can be toggled too */
    if (was_open && cfg.children) {
        window_lock();
        window_start();
        window_unlock();
    }
}

/* PYPROF_FILTER: a shell glob matched against the program name or the command line. */
static int filter_matches(const char *glob)
{
    if (!glob[0])
        return 1;
    char cmd[4096];
    ssize_t n = (ssize_t)procself_cmdline(cmd, sizeof cmd);
    if (n <= 0)
        return 0;
    const char *slash = strrchr(cmd, '/');
    if (fnmatch(glob, slash ? slash + 1 : cmd, 0) == 0 || fnmatch(glob, cmd, 0) == 0)
        return 1;
    for (ssize_t i = 0; i < n - 1; i++) /* the argv words joined by spaces */
        if (!cmd[i])
            cmd[i] = ' ';
    return fnmatch(glob, cmd, 0) == 0;
}

/* The run id: inherited from the environment (a parent, or `pyprof run`), else new, and
 * exported so every process of this run shares it. */
static void run_id(char *out, size_t cap, int may_setenv)
{
    const char *env = getenv("PYPROF_RUN_ID");
    if (env && env[0]) {
        snprintf(out, cap, "%s", env);
        return;
    }
    uint8_t r[8] = {0};
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != sizeof r) {
        uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
        memcpy(r, &x, sizeof r);
    }
    snprintf(out, cap, "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5],
             r[6], r[7]);
    if (may_setenv)
        setenv("PYPROF_RUN_ID", out, 0);
}

/* Starts profiling if CPython is here.  `late`: from an init hook, not the constructor. */
static void try_start(int late)
{
    window_lock();
    if (tried) {
        window_unlock();
        return;
    }
    pyabi abi;
    pyprof_config cfg = {0};
    char err[1024], abi_err[1024], rid[64];
    int found = pyabi_find(&abi, late, abi_err, sizeof abi_err);
    if (found == 0) {
        /* Not (yet) Python: an init hook may still find it later. */
        window_unlock();
        return;
    }
    tried = 1;
    if (config_load(&cfg, err, sizeof err) < 0) {
        /* PYPROF_QUIET may itself be the bad value; it is read first, so honour it. */
        diag_set(cfg.quiet, 0);
        diag_error("%s", err);
        goto out;
    }
    diag_set(cfg.quiet, cfg.verbose);
    if (found < 0) {
        diag_error("%s", abi_err);
        goto out;
    }
    /* PYPROF_CHILDREN=0: only the first profiled process of a tree; it marks the
     * environment its exec'd children inherit. */
    if (!cfg.children && getenv("PYPROF_PROFILED_PARENT"))
        goto out;
    if (!filter_matches(cfg.filter))
        goto out;
    run_id(rid, sizeof rid, !late);
    if (!late && !cfg.children) {
        char pid[24];
        snprintf(pid, sizeof pid, "%ld", (long)getpid());
        setenv("PYPROF_PROFILED_PARENT", pid, 0);
    }
    window_configure(&cfg, &abi, rid);
    if (control_install(cfg.signal, err, sizeof err) < 0) {
        diag_error("%s", err);
        goto out;
    }
    /* With a toggle signal the process starts paused: the first delivery starts.  A
     * process where profiling could not start (an unwritable PYPROF_OUTPUT, say) gets
     * no control socket either. */
    if (!cfg.signal && window_start() < 0)
        goto out;
    if (!atfork_registered) {
        pthread_atfork(NULL, NULL, after_fork_child);
        atfork_registered = 1;
    }
    if (cfg.control && ctlsock_start(ctlcmd_handle, err, sizeof err) < 0)
        diag_error("%s", err); /* profiling goes on without live control */
out:
    window_unlock();
}

void entry_python_appeared(void) { try_start(1); }

void entry_finish(int end, int known, int status)
{
    if (getpid() != home_pid)
        return; /* a vfork child: the parent's profile goes on */
    window_end(end, known, status);
}

__attribute__((constructor)) static void pyprof_constructor(void)
{
    home_pid = getpid();
    libc_next_init(); /* before any wrapper can run concurrently */
    /* Secure execution: nothing at all, not even later from an init hook. */
    if (getauxval(AT_SECURE)) {
        tried = 1;
        return;
    }
    try_start(0);
}

__attribute__((destructor)) static void pyprof_destructor(void)
{
    int status;
    int known = procexit_noted_status(&status);
    entry_finish(PYPROF_END_EXIT, known, status);
}

/* ---- the exported C API ------------------------------------------------------------- */

EXPORT const char *pyprof_version(void) { return PYPROF_VERSION_STRING; }
EXPORT int pyprof_active(void) { return window_is_open(); }
EXPORT const char *pyprof_log_path(void) { return writer_path(); }

/* Spans (lib/spans.h): recorded only while a log of this process is being written. */
EXPORT unsigned long long pyprof_span_start(const char *name, const char *trace_id,
                                            const char *parent_id, const char *base_id,
                                            const char *info_json,
                                            unsigned long long parent_span)
{
    return spans_start(name, trace_id, parent_id, base_id, info_json, parent_span);
}

EXPORT int pyprof_span_stop(unsigned long long span_id, const char *info_json)
{
    return spans_stop(span_id, info_json);
}
