/*
 * cmd_dump: `pyprof dump PID` — where every thread of a running profiled process is,
 * now.  The `dump` request has the library read every thread's stack and write it into
 * its log as a SNAPSHOT record; this command reads that log up to the record (the log
 * is still being written: the reader's follow mode) and prints each thread's stack,
 * innermost frame first, or the same as JSON.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pyprof/reader.h>

#include "common/clock.h"
#include "cli.h"
#include "cli_parse.h"
#include "cli_text.h"
#include "cmd.h"
#include "ctlclient.h"
#include "jsonw.h"
#include "livelog.h"

const char cmd_dump_usage[] =
    "usage: pyprof dump [--json] [--tasks] PID\n"
    "\n"
    "Prints the Python stack of every thread of the profiled process PID as it is now,\n"
    "innermost frame first, with each thread's id, name, state (running, sleeping, disk\n"
    "wait, ...) and whether it holds the GIL.  The process's library reads the stacks\n"
    "(without stopping any thread) into its log, where this command reads them; so PID\n"
    "must run under the library with its control socket on (docs/CONTROL.md) and not be\n"
    "paused.\n"
    "\n"
    "A thread whose stack changed while it was read shows its innermost frame only.  A\n"
    "thread running an asyncio task shows the task as a frame, <task NAME>, then the\n"
    "tasks awaiting it (before 3.14: as the library last found them, every 20 ms).\n"
    "\n"
    "options:\n"
    "  --json           print one JSON object: pid, argv, python, snapshot, log, threads\n"
    "                   (each: tid, name, state, os_state, gil, gil_wait, changed,\n"
    "                   frames; a frame is function, name, qualname, file, line, or a\n"
    "                   marker: \"cut\" with the count of frames left out, or\n"
    "                   \"unreadable\")\n"
    "  --tasks          also every asyncio task suspended at an await,\n"
    "                   after the threads: its thread, and its coroutines down to the\n"
    "                   await, then its task frame and its awaiters' (--json: \"tasks\",\n"
    "                   each with tid and frames)\n"
    "  -h, --help       show this text\n"
    "\n"
    "Exit status: 0 ok, 1 when PID has no control socket, refuses the request (paused) or\n"
    "its log cannot be read, 2 usage.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof dump 4242\n"
    "  pyprof dump --json 4242 | jq '.threads[].frames[0]'\n"
    "  pyprof dump --tasks 4242     # where every asyncio task waits\n";

/* How long the log may stay without the snapshot before we give up: the library
 * flushes it before it replies, so it is normally there at once. */
#define DUMP_WAIT_NS (3000ull * 1000000ull)

typedef struct dump_ctx {
    pid_t pid;
    int json, tasks;
    uint64_t snapshot_id;
    const char *path;
    const pyprof_header *hdr;
    livelog log;
} dump_ctx;

static void put_clean(FILE *f, const char *s)
{
    for (; *s; s++)
        putc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

static const char *state_word(uint8_t st, char *buf, size_t len)
{
    switch (st) {
    case 'R':
        return "running";
    case 'S':
        return "sleeping";
    case 'D':
        return "disk wait";
    case 0:
        return "unknown";
    default:
        if (st < 0x20 || st >= 0x7f)
            return "unknown";
        snprintf(buf, len, "%c", st);
        return buf;
    }
}

static void print_frame_text(const dump_ctx *d, const pyprof_frame *f)
{
    fputs("    ", stdout);
    if (f->code_id == PYPROF_CODE_CUT) {
        printf("... %" PRId64 " frames cut ...\n", f->line);
        return;
    }
    if (f->code_id == PYPROF_CODE_UNREADABLE) {
        puts("[unreadable]");
        return;
    }
    if (f->code_id < PYPROF_CODE_FIRST) {
        printf("[marker %" PRIu64 "]\n", f->code_id);
        return;
    }
    const livelog_code *c = livelog_get_code(&d->log, f->code_id);
    if (!c) {
        printf("[code %" PRIu64 ": not in the log]\n", f->code_id);
        return;
    }
    put_clean(stdout, livelog_code_name(c));
    if (c->task) {
        putchar('\n');
        return;
    }
    fputs(" (", stdout);
    put_clean(stdout, c->filename);
    if (f->line >= 0)
        printf(":%" PRId64, f->line);
    puts(")");
}

static void print_text(const dump_ctx *d, const pyprof_snapshot_rec *s)
{
    printf("Process %ld: ", (long)d->pid);
    if (d->hdr->argc) {
        char **argv = calloc(d->hdr->argc, sizeof *argv);
        size_t n = 0;
        for (; argv && n < d->hdr->argc; n++) {
            argv[n] = strndup(d->hdr->argv[n].s, d->hdr->argv[n].len);
            if (!argv[n])
                break;
        }
        if (argv)
            cli_print_argv(stdout, argv, n);
        for (size_t i = 0; argv && i < n; i++)
            free(argv[i]);
        free(argv);
    } else {
        char *exe = strndup(d->hdr->exe.s, d->hdr->exe.len);
        if (exe)
            put_clean(stdout, exe);
        free(exe);
    }
    putchar('\n');
    char *ver = strndup(d->hdr->python_version.s, d->hdr->python_version.len);
    fputs("Python ", stdout);
    put_clean(stdout, ver ? ver : "?");
    free(ver);
    putchar('\n');

    uint64_t ntasks = 0;
    for (uint64_t i = 0; i < s->nthreads; i++) {
        const pyprof_snap_thread *t = &s->threads[i];
        const livelog_thread *th = livelog_get_thread(&d->log, t->thread_idx);
        char sb[8];
        if (t->flags & PYPROF_SNAP_F_TASK) {
            ntasks++;
            continue;
        }
        putchar('\n');
        if (th)
            printf("Thread %" PRIu64, th->tid);
        else
            printf("Thread #%" PRIu64, t->thread_idx);
        printf(" (%s%s): \"", state_word(t->os_state, sb, sizeof sb),
               t->flags & PYPROF_SNAP_F_GIL        ? ", gil"
               : t->flags & PYPROF_SNAP_F_GIL_WAIT ? ", waiting for the gil"
                                                   : "");
        put_clean(stdout, th ? th->name : "");
        puts("\"");
        if (t->flags & PYPROF_SNAP_F_CHANGED)
            puts("    (stack changed while read: innermost frame only)");
        if (!t->stack_id) {
            puts("    (no Python frame could be read)");
            continue;
        }
        const livelog_stack *st = livelog_get_stack(&d->log, t->stack_id);
        if (!st) {
            printf("    (stack %" PRIu64 " is not in the log)\n", t->stack_id);
            continue;
        }
        for (uint64_t k = st->nframes; k-- > 0;)
            print_frame_text(d, &st->frames[k]);
    }
    if (!d->tasks)
        return;
    printf("\n%" PRIu64 " asyncio task%s suspended at an await\n", ntasks,
           ntasks == 1 ? "" : "s");
    for (uint64_t i = 0; i < s->nthreads; i++) {
        const pyprof_snap_thread *t = &s->threads[i];
        if (!(t->flags & PYPROF_SNAP_F_TASK))
            continue;
        const livelog_thread *th = livelog_get_thread(&d->log, t->thread_idx);
        const livelog_stack *st = t->stack_id ? livelog_get_stack(&d->log, t->stack_id) : NULL;
        /* Named by its own task frame, the innermost one. */
        const livelog_code *task = NULL;
        for (uint64_t k = st ? st->nframes : 0; k-- > 0 && !task;) {
            const livelog_code *c = livelog_get_code(&d->log, st->frames[k].code_id);
            if (c && c->task)
                task = c;
        }
        putchar('\n');
        put_clean(stdout, task ? task->name : "<task ?>");
        if (th)
            printf(" in thread %" PRIu64 ":\n", th->tid);
        else
            printf(" in thread #%" PRIu64 ":\n", t->thread_idx);
        for (uint64_t k = st ? st->nframes : 0; k-- > 0;)
            print_frame_text(d, &st->frames[k]);
    }
}

static void json_strn(jsonw *w, pyprof_str s)
{
    char *c = strndup(s.s, s.len);
    jsonw_string(w, c ? c : "");
    free(c);
}

static void print_frame_json(jsonw *w, const dump_ctx *d, const pyprof_frame *f)
{
    jsonw_begin_object(w);
    const livelog_code *c = NULL;
    if (f->code_id == PYPROF_CODE_CUT) {
        jsonw_key_string(w, "marker", "cut");
        jsonw_key_i64(w, "count", f->line);
    } else if (f->code_id < PYPROF_CODE_FIRST) {
        jsonw_key_string(w, "marker",
                         f->code_id == PYPROF_CODE_UNREADABLE ? "unreadable" : "unknown");
    } else if (!(c = livelog_get_code(&d->log, f->code_id))) {
        jsonw_key_string(w, "marker", "unknown");
    } else {
        jsonw_key_string(w, "function", livelog_code_name(c));
        jsonw_key_string(w, "name", c->name);
        jsonw_key_string(w, "qualname", c->qualname);
        jsonw_key_string(w, "file", c->filename);
        jsonw_key(w, "line");
        if (f->line >= 0)
            jsonw_i64(w, f->line);
        else
            jsonw_null(w);
    }
    jsonw_end_object(w);
}

/* docs/JSON.md, "dump", describes every key. */
/* An entry's "tid" (null when its thread is not in the log). */
static void json_tid(jsonw *w, const livelog_thread *th)
{
    jsonw_key(w, "tid");
    if (th)
        jsonw_u64(w, th->tid);
    else
        jsonw_null(w);
}

/* An entry's "frames", innermost first. */
static void json_frames(jsonw *w, const dump_ctx *d, const pyprof_snap_thread *t)
{
    jsonw_key(w, "frames");
    jsonw_begin_array(w);
    const livelog_stack *st = t->stack_id ? livelog_get_stack(&d->log, t->stack_id) : NULL;
    for (uint64_t k = st ? st->nframes : 0; k-- > 0;)
        print_frame_json(w, d, &st->frames[k]);
    jsonw_end_array(w);
}

static void print_json(const dump_ctx *d, const pyprof_snapshot_rec *s)
{
    jsonw w;
    jsonw_init(&w, stdout, 0);
    jsonw_begin_object(&w);
    jsonw_key_i64(&w, "pid", d->pid);
    jsonw_key(&w, "argv");
    jsonw_begin_array(&w);
    for (uint64_t i = 0; i < d->hdr->argc; i++)
        json_strn(&w, d->hdr->argv[i]);
    jsonw_end_array(&w);
    jsonw_key(&w, "python");
    json_strn(&w, d->hdr->python_version);
    jsonw_key_u64(&w, "snapshot", d->snapshot_id);
    jsonw_key_string(&w, "log", d->path);
    jsonw_key(&w, "threads");
    jsonw_begin_array(&w);
    for (uint64_t i = 0; i < s->nthreads; i++) {
        const pyprof_snap_thread *t = &s->threads[i];
        const livelog_thread *th = livelog_get_thread(&d->log, t->thread_idx);
        char sb[8];
        if (t->flags & PYPROF_SNAP_F_TASK)
            continue;
        jsonw_break(&w, 2);
        jsonw_begin_object(&w);
        json_tid(&w, th);
        jsonw_key_string(&w, "name", th ? th->name : "");
        jsonw_key_string(&w, "state", state_word(t->os_state, sb, sizeof sb));
        char os[2] = {(char)(t->os_state >= 0x20 && t->os_state < 0x7f ? t->os_state : 0), 0};
        jsonw_key(&w, "os_state");
        if (os[0])
            jsonw_string(&w, os);
        else
            jsonw_null(&w);
        jsonw_key_bool(&w, "gil", (t->flags & PYPROF_SNAP_F_GIL) != 0);
        jsonw_key_bool(&w, "gil_wait", (t->flags & PYPROF_SNAP_F_GIL_WAIT) != 0);
        jsonw_key_bool(&w, "changed", (t->flags & PYPROF_SNAP_F_CHANGED) != 0);
        json_frames(&w, d, t);
        jsonw_end_object(&w);
    }
    jsonw_break(&w, 0);
    jsonw_end_array(&w);
    if (d->tasks) {
        jsonw_key(&w, "tasks");
        jsonw_begin_array(&w);
        for (uint64_t i = 0; i < s->nthreads; i++) {
            const pyprof_snap_thread *t = &s->threads[i];
            if (!(t->flags & PYPROF_SNAP_F_TASK))
                continue;
            jsonw_break(&w, 2);
            jsonw_begin_object(&w);
            json_tid(&w, livelog_get_thread(&d->log, t->thread_idx));
            json_frames(&w, d, t);
            jsonw_end_object(&w);
        }
        jsonw_break(&w, 0);
        jsonw_end_array(&w);
    }
    jsonw_end_object(&w);
    jsonw_finish(&w);
}

/* Reads the log up to snapshot d->snapshot_id and prints it. */
static int read_snapshot(dump_ctx *d)
{
    int err = 0;
    pyprof_reader *r = pyprof_reader_open(d->path, &err);
    if (!r) {
        fprintf(stderr, "pyprof dump: %s: %s\n", d->path, pyprof_reader_strerror(err));
        return CLI_EXIT_BAD_INPUT;
    }
    pyprof_reader_follow(r, 1);
    d->hdr = pyprof_reader_header(r);
    uint64_t give_up = clock_mono_ns() + DUMP_WAIT_NS;
    int rc = CLI_EXIT_BAD_INPUT;
    for (;;) {
        pyprof_record rec;
        int n = pyprof_reader_next(r, &rec);
        if (n == 1) {
            give_up = clock_mono_ns() + DUMP_WAIT_NS;
            if (livelog_add(&d->log, &rec) < 0) {
                rc = cli_oom();
                break;
            }
            if (rec.type == PYPROF_REC_SNAPSHOT &&
                rec.u.snapshot.snapshot_id == d->snapshot_id) {
                if (d->json)
                    print_json(d, &rec.u.snapshot);
                else
                    print_text(d, &rec.u.snapshot);
                rc = CLI_EXIT_OK;
                break;
            }
            continue;
        }
        if (n == -PYPROF_R_AGAIN && clock_mono_ns() < give_up) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        if (n == 0 || n == -PYPROF_R_AGAIN)
            fprintf(stderr, "pyprof dump: %s: snapshot %" PRIu64 " is not in the log\n",
                    d->path, d->snapshot_id);
        else
            fprintf(stderr, "pyprof dump: %s: %s (snapshot %" PRIu64 " not found)\n", d->path,
                    pyprof_reader_strerror(-n), d->snapshot_id);
        break;
    }
    pyprof_reader_close(r);
    return rc;
}

int cmd_dump(int argc, char **argv)
{
    dump_ctx d = {0};
    const char *pid_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(cmd_dump_usage, stdout);
            return CLI_EXIT_OK;
        }
        if (!strcmp(argv[i], "--json"))
            d.json = 1;
        else if (!strcmp(argv[i], "--tasks"))
            d.tasks = 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("dump", "unrecognized option '%s'", argv[i]);
        else if (pid_arg)
            return cli_usage_error("dump", "one PID only");
        else
            pid_arg = argv[i];
    }
    if (!pid_arg)
        return cli_usage_error("dump", "no PID given");
    int rc = cli_parse_pid("dump", pid_arg, &d.pid);
    if (rc)
        return rc;

    char *reply, err[256];
    rc = ctl_request(d.pid, "dump", &reply, err, sizeof err);
    if (rc == CTL_NO_SOCKET) {
        fprintf(stderr, "pyprof dump: %s\n", ctl_no_socket_text(d.pid, err, sizeof err));
        return CLI_EXIT_BAD_INPUT;
    }
    if (rc != CTL_OK) {
        fprintf(stderr, "pyprof dump: %s\n", err);
        return CLI_EXIT_BAD_INPUT;
    }
    /* "ok snapshot <id> <path>" */
    char *nl = strchr(reply, '\n');
    if (nl)
        *nl = 0;
    char *end;
    if (strncmp(reply, "ok snapshot ", 12) ||
        (d.snapshot_id = strtoull(reply + 12, &end, 10)) == 0 || *end != ' ' || !end[1]) {
        fputs("pyprof dump: ", stderr);
        if (ctl_reply_kind(reply) >= 0)
            fprintf(stderr, "unexpected reply from pid %ld: ", (long)d.pid);
        cli_put_line(stderr, reply);
        fputc('\n', stderr);
        free(reply);
        return CLI_EXIT_BAD_INPUT;
    }
    d.path = end + 1;
    rc = read_snapshot(&d);
    livelog_free(&d.log);
    free(reply);
    return rc;
}
