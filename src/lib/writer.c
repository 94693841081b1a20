/*
 * writer: from the handler's rings to the compressed log.  See writer.h.
 *
 * The writer thread wakes every WAKE_NS, takes every committed CODE record (kept in a map
 * for the line tables) and SAMPLE record, turns each frame's instruction offset into a
 * line, interns the stack as a sequence of (code id, line) from the outermost frame, and
 * emits THREAD/CODE/STACK records the first time they are needed and a SAMPLE record for
 * every sample.  Records are staged uncompressed and fed to LZ4F_compressUpdate; every
 * PYPROF_FLUSH the frame is flushed to the file, so a killed process leaves a log
 * readable up to the last flush.  All the writer's memory is its own heap, never touched
 * by the handler.
 *
 * Generations.  When the handler's code table fills to half, the writer flips it to the
 * other (empty) table, waits until no handler still uses the old one, drains the rings,
 * clears the old table and forgets every code id that the new table does not hold, and
 * every stack and thread (they are emitted again when seen).  That keeps memory bounded
 * in a process that creates code objects for weeks.
 */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <pyprof/format.h>

#include "diag.h"
#include "libc_next.h"
#include "common/clock.h"
#include "common/linetable.h"
#include "ownthreads.h"
#include "pynames.h"
#include "common/record.h"
#include "safe_read.h"
#include "sampler.h"
#include "codetable.h"
#include "sighandler.h"
#include "threadtimer.h"

#define WAKE_IDLE_NS 50000000ull  /* the writer drains every 50 ms ... */
#define WAKE_BUSY_NS 5000000ull   /* ... or every 5 ms while the ring fills fast */
#define RSS_EVERY_NS 20000000ull  /* RSS at most every 20 ms */
#define NAMES_EVERY_NS 1000000000ull /* thread names re-read every second (renames) ... */
#define NAMES_NEW_NS 10000000ull     /* ... and for a new thread, at most every 10 ms */
#define ALONE_EVERY_NS 200000000ull  /* are the program's threads all gone? (ownthreads.h) */
#define NAMES_MAX 4096               /* threads whose names are read at a time */
#define THREADS_MAX 4096             /* threads remembered before the map starts afresh */
#define STAGE_BYTES (64u << 10)
#define SAMPLE_RING_HINT (4u << 20) /* sampler.c's sample ring size */   /* uncompressed records per compress call */
#define STACK_ARENA_MAX (4u << 20) /* frames kept for dedup before a reset */

typedef struct code_info {
    uint32_t id;
    int32_t first_line;
    uint8_t kind;
    uint32_t lt_len;
    uint8_t *lt;
} code_info;

typedef struct stack_entry {
    uint64_t hash;
    uint32_t off, n, id;
} stack_entry;

typedef struct wframe {
    uint32_t code_id;
    int32_t line;
} wframe;

typedef struct wthread {
    uint32_t tid, idx;
    char name[PYNAMES_NAME_MAX]; /* as last emitted */
} wthread;

static struct {
    /* configuration */
    pyprof_config cfg;
    pyabi abi;
    char run_id[64];
    unsigned window;
    char dir[PATH_MAX];       /* directory of the log */
    char path[PATH_MAX];      /* the log, once created */
    pid_t pid;
    /* output */
    int fd;
    int failed;               /* a write failed: data is discarded from then on */
    LZ4F_cctx *cctx;
    uint8_t *stage;
    size_t stage_len;
    uint8_t *out;
    size_t out_cap;
    int statm_fd;
    /* thread */
    pthread_t thread;
    int thread_running;
    sem_t wake;               /* posted to wake the thread early (sem_post is sigsafe) */
    _Atomic int stop;
    _Atomic int finished;     /* the footer was written (or is being written) */
    _Atomic int end_requested, end_done; /* writer_request_end */
    int end_req_kind, end_req_status;
    uint64_t writer_cpu_ns;
    /* state */
    int64_t last_t_us;
    uint64_t last_rss_t_ns, last_rss;
    uint64_t last_flush_ns;
    uint64_t samples;
    uint64_t cpu_start_ns, unix_start_ns;
    /* code map: open addressing on id */
    code_info *codes;
    size_t codes_cap, codes_n;
    /* stack dedup */
    wframe *arena;
    size_t arena_len, arena_cap;
    stack_entry *stacks;
    size_t stacks_n, stacks_cap;
    uint32_t *stack_index; /* slots hold entry index + 1 */
    size_t stack_index_cap;
    uint32_t next_stack_id;
    /* threads: tid -> idx */
    wthread *threads;
    size_t threads_n, threads_cap;
    uint32_t next_thread_idx;
    /* thread names, as last read from the interpreter */
    pynames_entry *names;
    int names_n;
    uint64_t names_t_ns;
} W = { .fd = -1, .statm_fd = -1 };

const char *writer_path(void) { return W.path; }

/* ---- output ------------------------------------------------------------------------- */

static void write_all(const void *buf, size_t len)
{
    if (W.failed || W.fd < 0)
        return;
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(W.fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            diag_error("pyprof: cannot write %s: %s; profiling data from now on is lost",
                       W.path, n < 0 ? strerror(errno) : "short write");
            W.failed = 1;
            sampler_count_drop(PYPROF_DROP_WRITE_ERROR);
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

static void compress_stage(void)
{
    if (!W.stage_len)
        return;
    if (!W.cctx || W.failed) {
        W.stage_len = 0;
        return;
    }
    size_t n = LZ4F_compressUpdate(W.cctx, W.out, W.out_cap, W.stage, W.stage_len, NULL);
    W.stage_len = 0;
    if (LZ4F_isError(n)) {
        diag_error("pyprof: compression failed: %s", LZ4F_getErrorName(n));
        W.failed = 1;
        return;
    }
    write_all(W.out, n);
}

static void flush_log(void)
{
    compress_stage();
    if (!W.cctx)
        return;
    size_t n = LZ4F_flush(W.cctx, W.out, W.out_cap, NULL);
    if (!LZ4F_isError(n))
        write_all(W.out, n);
}

/* Appends one record (type + payload) to the stage. */
static void emit(uint8_t type, const rec_out *payload)
{
    if (W.stage_len + payload->len + 16 > STAGE_BYTES)
        compress_stage();
    if (payload->len + 16 > STAGE_BYTES) {
        /* Larger than the stage (a huge CODE record): compress it on its own. */
        uint8_t *tmp = malloc(payload->len + 16);
        if (!tmp)
            return;
        size_t n = rec_envelope(tmp, payload->len + 16, type, payload->buf, payload->len);
        size_t c = LZ4F_compressUpdate(W.cctx, W.out, W.out_cap, tmp, n, NULL);
        free(tmp);
        if (!LZ4F_isError(c))
            write_all(W.out, c);
        return;
    }
    W.stage_len += rec_envelope(W.stage + W.stage_len, STAGE_BYTES - W.stage_len, type,
                                payload->buf, payload->len);
}

/* ---- header and file ---------------------------------------------------------------- */

static void read_file(const char *path, char *buf, size_t cap, size_t *len)
{
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n;
    while (*len < cap && (n = read(fd, buf + *len, cap - *len)) > 0)
        *len += (size_t)n;
    close(fd);
}

static void prog_name(char *out, size_t cap)
{
    char cmd[4096];
    size_t n;
    read_file("/proc/self/cmdline", cmd, sizeof cmd - 1, &n);
    cmd[n] = 0;
    const char *base = strrchr(cmd, '/');
    const char *name = n ? (base ? base + 1 : cmd) : "unknown";
    size_t l = strnlen(name, cap - 1);
    memcpy(out, name, l);
    out[l] = 0;
}

static int random_suffix(char *out, size_t len)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    uint8_t r[16];
    if (len > sizeof r || getrandom(r, len, GRND_NONBLOCK) != (ssize_t)len)
        return -1;
    for (size_t i = 0; i < len; i++)
        out[i] = chars[r[i] % (sizeof chars - 1)];
    out[len] = 0;
    return 0;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Creates the log file: O_EXCL, 0600, O_NOFOLLOW; a random suffix when the name from the
 * template is taken (or always, with the default name). */
static int create_file(void)
{
    char prog[256], host[256] = "", start[32];
    prog_name(prog, sizeof prog);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(host, sizeof host, "%s", u.nodename);
    time_t now = (time_t)(W.unix_start_ns / 1000000000ull);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(start, sizeof start, "%Y%m%dT%H%M%S", &tm);
    config_template_vars v = { .pid = W.pid, .ppid = getppid(), .prog = prog, .start = start,
                               .host = host, .run_id = W.run_id };
    const char *out = W.cfg.output;
    int template = out[0] && !is_dir(out) && out[strlen(out) - 1] != '/';
    char name[PATH_MAX];
    for (int attempt = 0; attempt < 20; attempt++) {
        char rnd[8];
        if (random_suffix(rnd, 6) < 0)
            snprintf(rnd, sizeof rnd, "%06d", (int)(clock_mono_ns() % 1000000));
        if (template) {
            if (config_expand_template(out, &v, name, sizeof name) < 0)
                return -1;
            if (attempt > 0) {
                /* Taken: put the random part before a .lz4 extension, or at the end. */
                size_t l = strlen(name);
                char tail[16] = "";
                if (l > 4 && strcmp(name + l - 4, ".lz4") == 0) {
                    strcpy(tail, ".lz4");
                    name[l - 4] = 0;
                }
                size_t room = sizeof name - strlen(name);
                if ((size_t)snprintf(name + strlen(name), room, ".%s%s", rnd, tail) >= room)
                    return -1;
            }
        } else {
            const char *dir = out[0] ? out : (getenv("TMPDIR") && getenv("TMPDIR")[0]
                                                  ? getenv("TMPDIR") : "/tmp");
            size_t dl = strlen(dir);
            if ((size_t)snprintf(name, sizeof name, "%s%spyprof.%s.%ld.%s.lz4", dir,
                                 dl && dir[dl - 1] == '/' ? "" : "/", prog, (long)W.pid,
                                 rnd) >= sizeof name)
                return -1;
        }
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            snprintf(W.path, sizeof W.path, "%s", name);
            return fd;
        }
        if (errno != EEXIST)
            break;
    }
    diag_error("pyprof: cannot create %s: %s; not profiling", name, strerror(errno));
    return -1;
}

static void put_header(void)
{
    uint8_t buf[16384];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    char host[256] = "";
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(host, sizeof host, "%s", u.nodename);
    char exe[PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = 0;
    char cmd[8192];
    size_t cl;
    read_file("/proc/self/cmdline", cmd, sizeof cmd, &cl);
    rec_put_uvarint(&o, PYPROF_FORMAT_VERSION);
    rec_put_uvarint(&o, (uint64_t)W.pid);
    rec_put_uvarint(&o, (uint64_t)getppid());
    rec_put_cstr(&o, W.run_id);
    rec_put_uvarint(&o, W.unix_start_ns);
    rec_put_cstr(&o, host);
    rec_put_cstr(&o, exe);
    uint64_t argc = 0;
    for (size_t i = 0; i < cl; i++)
        argc += cmd[i] == 0;
    rec_put_uvarint(&o, argc);
    for (size_t i = 0; i < cl;) {
        size_t l = strnlen(cmd + i, cl - i);
        rec_put_str(&o, cmd + i, l);
        i += l + 1;
    }
    rec_put_cstr(&o, W.abi.version);
    rec_put_uvarint(&o, W.abi.hex);
    rec_put_uvarint(&o, W.cfg.period_ns);
    rec_put_u8(&o, (uint8_t)W.cfg.clock);
    rec_put_cstr(&o, sampler_timer_name());
    rec_put_uvarint(&o, W.cfg.max_depth);
    /* PYPROF_HDR_NATIVE stays clear: no native frames are recorded yet, whatever
     * PYPROF_NATIVE says. */
    rec_put_uvarint(&o, W.cfg.memory ? PYPROF_HDR_MEMORY : 0);
    rec_put_uvarint(&o, W.window);
    emit(PYPROF_REC_HEADER, &o);
}

/* Opens the log and writes the frame header, magic and HEADER.  Returns 0 or -1. */
static int open_log(void)
{
    if (W.fd >= 0 || W.failed)
        return W.fd >= 0 ? 0 : -1;
    int fd = create_file();
    if (fd < 0) {
        W.failed = 1;
        return -1;
    }
    W.fd = fd;
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs.frameInfo.blockMode = LZ4F_blockLinked;
    prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
    prefs.compressionLevel = 0;
    if (LZ4F_isError(LZ4F_createCompressionContext(&W.cctx, LZ4F_VERSION))) {
        W.failed = 1;
        return -1;
    }
    W.out_cap = LZ4F_compressBound(STAGE_BYTES * 2, &prefs) + 64;
    W.out = malloc(W.out_cap);
    if (!W.out) {
        W.failed = 1;
        return -1;
    }
    size_t n = LZ4F_compressBegin(W.cctx, W.out, W.out_cap, &prefs);
    if (LZ4F_isError(n)) {
        W.failed = 1;
        return -1;
    }
    write_all(W.out, n);
    memcpy(W.stage, PYPROF_MAGIC, PYPROF_MAGIC_LEN);
    W.stage_len = PYPROF_MAGIC_LEN;
    put_header();
    diag_verbose("pyprof: profiling pid %ld into %s (%s)", (long)W.pid, W.path,
                 sampler_timer_name());
    return 0;
}

/* ---- maps --------------------------------------------------------------------------- */

/* Makes room for `need` elements of `elem` bytes in *arr (capacity *cap, doubling from
 * `first`).  Returns 0, or -1 when memory is short (the array is unchanged). */
static int grow_array(void **arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : first;
    while (ncap < need)
        ncap *= 2;
    void *n = realloc(*arr, ncap * elem);
    if (!n)
        return -1;
    *arr = n;
    *cap = ncap;
    return 0;
}

static code_info *code_find(uint32_t id)
{
    if (!W.codes_cap)
        return NULL;
    size_t mask = W.codes_cap - 1;
    for (size_t i = (id * 2654435761u) & mask;; i = (i + 1) & mask) {
        if (W.codes[i].id == id)
            return &W.codes[i];
        if (W.codes[i].id == 0)
            return NULL;
    }
}

static code_info *code_insert_slot(uint32_t id)
{
    if ((W.codes_n + 1) * 2 > W.codes_cap) {
        size_t ncap = W.codes_cap ? W.codes_cap * 2 : 1024;
        code_info *n = calloc(ncap, sizeof *n);
        if (!n)
            return NULL;
        code_info *old = W.codes;
        size_t ocap = W.codes_cap;
        W.codes = n;
        W.codes_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].id) {
                size_t j = (old[i].id * 2654435761u) & (ncap - 1);
                while (n[j].id)
                    j = (j + 1) & (ncap - 1);
                n[j] = old[i];
            }
        free(old);
    }
    size_t mask = W.codes_cap - 1;
    size_t i = (id * 2654435761u) & mask;
    while (W.codes[i].id && W.codes[i].id != id)
        i = (i + 1) & mask;
    if (!W.codes[i].id)
        W.codes_n++;
    return &W.codes[i];
}

static void emit_thread(const wthread *t)
{
    uint8_t buf[64 + PYNAMES_NAME_MAX];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    rec_put_uvarint(&o, t->idx);
    rec_put_uvarint(&o, t->tid);
    rec_put_cstr(&o, t->name);
    emit(PYPROF_REC_THREAD, &o);
}

/* Reads the threads' Python names again; emits a THREAD record for every known thread
 * whose name changed (the reader keeps the newest). */
static void refresh_names(void)
{
    if (!W.names && !(W.names = malloc(NAMES_MAX * sizeof *W.names)))
        return;
    W.names_n = pynames_collect(&W.abi, W.names, NAMES_MAX);
    W.names_t_ns = clock_mono_ns();
    for (int i = 0; i < W.names_n; i++)
        for (size_t j = 0; j < W.threads_n; j++) {
            wthread *t = &W.threads[j];
            if (t->tid == W.names[i].tid && strcmp(t->name, W.names[i].name) != 0) {
                snprintf(t->name, sizeof t->name, "%s", W.names[i].name);
                emit_thread(t);
            }
        }
}

static const char *name_of(uint32_t tid)
{
    for (int i = 0; i < W.names_n; i++)
        if (W.names[i].tid == tid)
            return W.names[i].name;
    return tid == (uint32_t)W.pid ? "MainThread" : "";
}

static uint32_t thread_idx(uint32_t tid)
{
    for (size_t i = 0; i < W.threads_n; i++)
        if (W.threads[i].tid == tid)
            return W.threads[i].idx;
    /* A daemon that churns through threads for weeks: forget them all now and then (a
     * thread seen again is announced again, as after a table flip). */
    if (W.threads_n >= THREADS_MAX)
        W.threads_n = 0;
    if (grow_array((void **)&W.threads, &W.threads_cap, W.threads_n + 1, sizeof *W.threads, 16) < 0)
        return 0;
    /* A thread seen for the first time: its name may be newer than our last read. */
    if (!name_of(tid)[0] && clock_mono_ns() - W.names_t_ns >= NAMES_NEW_NS)
        refresh_names();
    wthread *t = &W.threads[W.threads_n++];
    t->tid = tid;
    t->idx = W.next_thread_idx++;
    snprintf(t->name, sizeof t->name, "%s", name_of(tid));
    emit_thread(t);
    return t->idx;
}

static uint64_t hash_frames(const wframe *f, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= ((uint64_t)f[i].code_id << 32) | (uint32_t)f[i].line;
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

static void stacks_reset(void)
{
    W.arena_len = 0;
    W.stacks_n = 0;
    if (W.stack_index)
        memset(W.stack_index, 0, W.stack_index_cap * sizeof *W.stack_index);
}

static int stack_index_grow(void)
{
    size_t ncap = W.stack_index_cap ? W.stack_index_cap * 2 : 4096;
    uint32_t *n = calloc(ncap, sizeof *n);
    if (!n)
        return -1;
    for (size_t e = 0; e < W.stacks_n; e++) {
        size_t j = W.stacks[e].hash & (ncap - 1);
        while (n[j])
            j = (j + 1) & (ncap - 1);
        n[j] = (uint32_t)e + 1;
    }
    free(W.stack_index);
    W.stack_index = n;
    W.stack_index_cap = ncap;
    return 0;
}

/* The id of this stack, emitting its STACK record the first time.  0 on failure. */
static uint32_t stack_id(const wframe *f, size_t n)
{
    if (W.arena_len + n > STACK_ARENA_MAX)
        stacks_reset();
    if ((W.stacks_n + 1) * 2 > W.stack_index_cap && stack_index_grow() < 0)
        return 0;
    uint64_t h = hash_frames(f, n);
    size_t mask = W.stack_index_cap - 1;
    size_t j = h & mask;
    for (; W.stack_index[j]; j = (j + 1) & mask) {
        stack_entry *e = &W.stacks[W.stack_index[j] - 1];
        if (e->hash == h && e->n == n && memcmp(W.arena + e->off, f, n * sizeof *f) == 0)
            return e->id;
    }
    if (grow_array((void **)&W.stacks, &W.stacks_cap, W.stacks_n + 1, sizeof *W.stacks,
                   1024) < 0 ||
        grow_array((void **)&W.arena, &W.arena_cap, W.arena_len + n, sizeof *W.arena,
                   65536) < 0)
        return 0;
    memcpy(W.arena + W.arena_len, f, n * sizeof *f);
    uint32_t id = ++W.next_stack_id;
    W.stacks[W.stacks_n] = (stack_entry){ .hash = h, .off = (uint32_t)W.arena_len,
                                          .n = (uint32_t)n, .id = id };
    W.arena_len += n;
    W.stack_index[j] = (uint32_t)++W.stacks_n;

    /* STACK: stack_id, nframes, (code_id, line)... */
    size_t cap = 32 + n * 16;
    uint8_t small[4096];
    uint8_t *buf = cap <= sizeof small ? small : malloc(cap);
    if (!buf)
        return 0;
    rec_out o;
    rec_out_init(&o, buf, cap);
    rec_put_uvarint(&o, id);
    rec_put_uvarint(&o, n);
    for (size_t i = 0; i < n; i++) {
        rec_put_uvarint(&o, f[i].code_id);
        rec_put_svarint(&o, f[i].line);
    }
    emit(PYPROF_REC_STACK, &o);
    if (buf != small)
        free(buf);
    return id;
}

/* ---- draining ----------------------------------------------------------------------- */

static void take_code(const rrec_code *c)
{
    code_info *ci = code_insert_slot(c->code_id);
    if (!ci)
        return;
    free(ci->lt);
    const char *p = c->data;
    ci->id = c->code_id;
    ci->first_line = c->first_line;
    ci->kind = c->lt_kind;
    ci->lt_len = c->lt_len;
    ci->lt = malloc(c->lt_len ? c->lt_len : 1);
    if (ci->lt)
        memcpy(ci->lt, p + c->name_len + c->qualname_len + c->filename_len, c->lt_len);
    else
        ci->lt_len = 0;
    size_t cap = 64 + (size_t)c->name_len + c->qualname_len + c->filename_len + c->lt_len;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return;
    rec_out o;
    rec_out_init(&o, buf, cap);
    rec_put_uvarint(&o, c->code_id);
    rec_put_svarint(&o, c->first_line);
    rec_put_str(&o, p, c->name_len);
    p += c->name_len;
    rec_put_str(&o, p, c->qualname_len);
    p += c->qualname_len;
    rec_put_str(&o, p, c->filename_len);
    p += c->filename_len;
    rec_put_u8(&o, c->lt_kind);
    rec_put_str(&o, p, c->lt_len);
    rec_put_uvarint(&o, c->flags);
    emit(PYPROF_REC_CODE, &o);
    free(buf);
}

static void drain_codes(void)
{
    if (W.fd < 0 && !W.failed)
        return;
    const void *rec;
    size_t len;
    while ((rec = ring_peek(sampler_code_ring(), &len))) {
        take_code(rec);
        ring_release(sampler_code_ring());
    }
}

static int32_t frame_line(uint32_t *code_id, int32_t offset)
{
    if (*code_id < PYPROF_CODE_FIRST)
        return 0;
    code_info *ci = code_find(*code_id);
    if (!ci) {
        /* The CODE record was committed before this sample, but an older record of
         * another thread may still hold the code ring; take what is there now. */
        drain_codes();
        ci = code_find(*code_id);
    }
    if (!ci) {
        *code_id = PYPROF_CODE_UNREADABLE;
        return 0;
    }
    return linetable_line(ci->kind, ci->lt, ci->lt_len, ci->first_line, offset);
}

static void take_sample(const rrec_sample *s)
{
    wframe stackbuf[512];
    size_t n = (size_t)s->nframes + 2;
    wframe *f = n <= 512 ? stackbuf : malloc(n * sizeof *f);
    if (!f)
        return;
    size_t k = 0;
    if (s->unreadable_tail)
        f[k++] = (wframe){ PYPROF_CODE_UNREADABLE, 0 };
    for (size_t i = s->nframes; i-- > s->keep_inner;) {
        uint32_t id = s->frames[i].code_id;
        int32_t line = frame_line(&id, s->frames[i].offset);
        f[k++] = (wframe){ id, line };
    }
    if (s->cut)
        f[k++] = (wframe){ PYPROF_CODE_CUT, (int32_t)s->cut };
    for (size_t i = s->keep_inner; i-- > 0;) {
        uint32_t id = s->frames[i].code_id;
        int32_t line = frame_line(&id, s->frames[i].offset);
        f[k++] = (wframe){ id, line };
    }
    uint32_t tidx = thread_idx(s->tid);
    uint32_t sid = stack_id(f, k);
    if (f != stackbuf)
        free(f);
    if (!sid)
        return;
    uint8_t buf[64];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    int64_t t_us = (int64_t)(s->t_ns / 1000);
    rec_put_svarint(&o, t_us - W.last_t_us);
    W.last_t_us = t_us;
    rec_put_uvarint(&o, tidx);
    rec_put_uvarint(&o, sid);
    rec_put_uvarint(&o, W.cfg.period_ns / 1000);
    emit(PYPROF_REC_SAMPLE, &o);
    W.samples++;
}

static void drain(void)
{
    /* Until the log exists the records wait in the rings (their CODE records must not be
     * lost); once writing has failed they are taken and discarded. */
    if (W.fd < 0 && !W.failed)
        return;
    drain_codes();
    const void *rec;
    size_t len;
    while ((rec = ring_peek(sampler_sample_ring(), &len))) {
        if (W.fd >= 0 && !W.failed)
            take_sample(rec);
        ring_release(sampler_sample_ring());
    }
}

static void record_rss(void)
{
    if (!W.cfg.memory || W.statm_fd < 0 || W.fd < 0)
        return;
    char buf[128];
    ssize_t n = pread(W.statm_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return;
    buf[n] = 0;
    unsigned long size_pages, rss_pages;
    if (sscanf(buf, "%lu %lu", &size_pages, &rss_pages) != 2)
        return;
    uint64_t rss = (uint64_t)rss_pages * (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t t = clock_mono_ns() - sampler_t0_ns();
    uint8_t out[32];
    rec_out o;
    rec_out_init(&o, out, sizeof out);
    int64_t t_us = (int64_t)(t / 1000);
    rec_put_svarint(&o, t_us - W.last_t_us);
    W.last_t_us = t_us;
    rec_put_uvarint(&o, rss);
    emit(PYPROF_REC_RSS, &o);
    W.last_rss = rss;
    W.last_rss_t_ns = t;
}

/* Keeps the code ids the new code table already holds; forgets the rest (and what was
 * announced under them).  codetable_flip calls it once the old table is cleared. */
static void flip_rekey(void *ctx)
{
    (void)ctx;
    code_info *keep = W.codes;
    size_t keep_cap = W.codes_cap;
    W.codes = NULL;
    W.codes_cap = W.codes_n = 0;
    for (size_t i = 0; i < keep_cap; i++) {
        if (!keep[i].id)
            continue;
        code_info *ci = codetable_holds(keep[i].id) ? code_insert_slot(keep[i].id) : NULL;
        if (ci)
            *ci = keep[i];
        else
            free(keep[i].lt);
    }
    free(keep);
    stacks_reset();
    W.threads_n = 0;
}

static void flip_drain(void *ctx)
{
    (void)ctx;
    drain();
}

/* Moves the handler to the other code table and forgets what only the old one knew. */
static void flip_tables(void)
{
    codetable_flip(flip_drain, flip_rekey, NULL);
}

static int interpreter_running(void)
{
    const pyabi *a = &W.abi;
    if (a->runtime)
        return *(volatile int *)(a->runtime + (uintptr_t)a->rt_initialized) != 0;
    return a->is_initialized && a->is_initialized();
}

static void finish_log(int end, int status_known, int status);
static void forget_all(void);

static void *writer_main(void *arg)
{
    (void)arg;
    ownthreads_name_self("writer");
    safe_read_unblock_faults(); /* pynames reads interpreter memory under the guard */
    uint64_t wake_ns = WAKE_IDLE_NS, alone_checked_ns = clock_mono_ns();
    while (!atomic_load(&W.stop)) {
        struct timespec dl = clock_mono_deadline(wake_ns);
        sem_clockwait(&W.wake, CLOCK_MONOTONIC, &dl);
        if (atomic_load(&W.stop))
            break;
        if (atomic_load(&W.end_requested)) {
            /* A terminating signal: the process ends when its handler returns. */
            sampler_stop();
            W.writer_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
            finish_log(W.end_req_kind, 1, W.end_req_status);
            return NULL;
        }
        if (W.fd < 0 && !W.failed &&
            (interpreter_running() || ring_used(sampler_sample_ring())))
            open_log();
        /* Wake often only while the handler fills the ring faster than an idle period
         * could take (more than an eighth of it per wake). */
        wake_ns = ring_used(sampler_sample_ring()) > sampler_sample_ring()->size / 8
                      ? WAKE_BUSY_NS
                      : WAKE_IDLE_NS;
        drain();
        uint64_t now = clock_mono_ns();
        if (now - sampler_t0_ns() - W.last_rss_t_ns >= RSS_EVERY_NS)
            record_rss();
        if (codetable_flip_wanted())
            flip_tables();
        if (W.fd >= 0 && now - W.names_t_ns >= NAMES_EVERY_NS)
            refresh_names();
        if (W.fd >= 0 && now - W.last_flush_ns >= W.cfg.flush_ns) {
            flush_log();
            W.last_flush_ns = now;
        }
        if (now - alone_checked_ns >= ALONE_EVERY_NS) {
            alone_checked_ns = now;
            if (ownthreads_claim_end()) {
                /* Only the library's threads are left: the process ends as glibc would
                 * have ended it, exit(0), with the log finished here first and this
                 * thread out of the way of the exit hooks (which find it finished). */
                sampler_stop();
                W.writer_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
                finish_log(PYPROF_END_EXIT, 1, 0);
                pthread_detach(pthread_self());
                W.thread_running = 0;
                ownthreads_end_process();
            }
        }
    }
    W.writer_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

int writer_start(const pyprof_config *cfg, const pyabi *abi, const writer_meta *meta,
                 char *err, size_t errlen)
{
    /* A new toggle window after a finished one: nothing of the last log is kept. */
    forget_all();
    sem_init(&W.wake, 0, 0);
    W.cfg = *cfg;
    W.abi = *abi;
    snprintf(W.run_id, sizeof W.run_id, "%s", meta->run_id ? meta->run_id : "");
    W.window = meta->window;
    W.pid = getpid();
    W.unix_start_ns = clock_ns(CLOCK_REALTIME);
    W.cpu_start_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    W.last_flush_ns = clock_mono_ns();
    /* The directory must be writable now, so a bad PYPROF_OUTPUT is reported at start. */
    const char *out = cfg->output;
    if (out[0]) {
        snprintf(W.dir, sizeof W.dir, "%s", out);
        if (!is_dir(W.dir) && W.dir[strlen(W.dir) - 1] != '/') {
            char *slash = strrchr(W.dir, '/');
            if (slash)
                slash[slash == W.dir ? 1 : 0] = 0;
            else
                snprintf(W.dir, sizeof W.dir, ".");
        }
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(W.dir, sizeof W.dir, "%s", t && t[0] ? t : "/tmp");
    }
    if (!is_dir(W.dir) || access(W.dir, W_OK | X_OK) != 0) {
        snprintf(err, errlen, "pyprof: PYPROF_OUTPUT: directory %s is %s; not profiling",
                 W.dir, is_dir(W.dir) ? "not writable" : "missing");
        return -1;
    }
    W.stage = malloc(STAGE_BYTES);
    if (!W.stage) {
        snprintf(err, errlen, "pyprof: out of memory; not profiling");
        return -1;
    }
    if (cfg->memory)
        W.statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    /* The writer thread takes no signal of the program's, nor ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = libc_next_pthread_create(&W.thread, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "pyprof: cannot start the writer thread: %s; not profiling",
                 strerror(rc));
        return -1;
    }
    W.thread_running = 1;
    return 0;
}

/* Writes what is left, the footer, and closes the log: once, by the writer thread (for a
 * terminating signal) or by writer_finish once that thread has stopped. */
static void finish_log(int end, int status_known, int status)
{
    if (atomic_exchange(&W.finished, 1))
        return;
    /* At exec, a process that has not written a log yet (the child of fork-and-exec, as
     * subprocess does) leaves none: its Python never ran after the fork. */
    if (W.fd < 0 && !W.failed && end != PYPROF_END_EXEC &&
        (interpreter_running() || ring_used(sampler_sample_ring()) || W.samples))
        open_log();
    drain();
    record_rss();
    if (W.fd >= 0) {
        sampler_stats st;
        sampler_read_stats(&st);
        uint8_t buf[2048];
        rec_out o;
        rec_out_init(&o, buf, sizeof buf);
        uint64_t cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - W.cpu_start_ns;
        rec_put_uvarint(&o, clock_ns(CLOCK_REALTIME));
        rec_put_uvarint(&o, clock_mono_ns() - sampler_t0_ns());
        rec_put_uvarint(&o, W.samples);
        rec_put_uvarint(&o, st.signals);
        rec_put_uvarint(&o, PYPROF_DROP_COUNT);
        for (int i = 0; i < PYPROF_DROP_COUNT; i++) {
            rec_put_uvarint(&o, (uint64_t)i);
            rec_put_uvarint(&o, st.drops[i]);
        }
        rec_put_uvarint(&o, (uint64_t)end);
        rec_put_u8(&o, (uint8_t)(status_known != 0));
        rec_put_svarint(&o, status);
        /* The rate achieved: samples per CPU second (cpu clock); sampling passes over
         * all threads per second (wall clock). */
        uint64_t wall = clock_mono_ns() - sampler_t0_ns();
        uint64_t hz_milli =
            W.cfg.clock == PYPROF_CLOCK_WALL
                ? (wall ? (uint64_t)((double)sampler_wall_passes() * 1e12 / (double)wall) : 0)
                : (cpu ? (uint64_t)((double)W.samples * 1e12 / (double)cpu) : 0);
        rec_put_uvarint(&o, hz_milli);
        rec_put_uvarint(&o, st.handler_ns + W.writer_cpu_ns +
                                threadtimer_cpu_ns());
        rec_put_uvarint(&o, st.handler_ns);
        rec_put_uvarint(&o, W.writer_cpu_ns);
        static const uint32_t time_bounds[] = PYPROF_COST_TIME_BOUNDS_NS;
        static const uint32_t depth_bounds[] = PYPROF_COST_DEPTH_BOUNDS;
        rec_put_uvarint(&o, PYPROF_COST_NTIME);
        for (int t = 0; t < PYPROF_COST_NTIME; t++)
            rec_put_uvarint(&o, time_bounds[t]);
        rec_put_uvarint(&o, PYPROF_COST_NDEPTH);
        for (int d = 0; d < PYPROF_COST_NDEPTH; d++) {
            rec_put_uvarint(&o, depth_bounds[d]);
            for (int t = 0; t < PYPROF_COST_NTIME; t++)
                rec_put_uvarint(&o, st.cost[d][t]);
        }
        rec_put_uvarint(&o, threadtimer_cpu_ns());
        rec_put_uvarint(&o, threadtimer_untimed_ns());
        emit(PYPROF_REC_FOOTER, &o);
        compress_stage();
        size_t n = LZ4F_compressEnd(W.cctx, W.out, W.out_cap, NULL);
        if (!LZ4F_isError(n))
            write_all(W.out, n);
        close(W.fd);
        W.fd = -1;
        diag_verbose("pyprof: wrote %s (%llu samples)", W.path, (unsigned long long)W.samples);
    }
    if (W.statm_fd >= 0) {
        close(W.statm_fd);
        W.statm_fd = -1;
    }
    /* Whoever finished it, the log is complete: a terminating signal may go on. */
    atomic_store(&W.end_done, 1);
}

void writer_finish(int end, int status_known, int status)
{
    if (W.pid != getpid())
        return;
    if (W.thread_running) {
        atomic_store(&W.stop, 1);
        sem_post(&W.wake);
        pthread_join(W.thread, NULL);
        W.thread_running = 0;
    }
    finish_log(end, status_known, status);
}

int writer_request_end(int end, int status)
{
    if (!W.thread_running || W.pid != getpid() || atomic_load(&W.finished) ||
        atomic_exchange(&W.end_requested, 1))
        return 0;
    W.end_req_kind = end;
    W.end_req_status = status;
    sem_post(&W.wake);
    return 1;
}

int writer_end_done(void) { return atomic_load(&W.end_done); }

/* Frees every map and buffer and returns W to its initial state. */
static void forget_all(void)
{
    if (W.fd >= 0)
        close(W.fd);
    if (W.statm_fd >= 0)
        close(W.statm_fd);
    if (W.cctx)
        LZ4F_freeCompressionContext(W.cctx);
    for (size_t i = 0; i < W.codes_cap; i++)
        free(W.codes[i].lt);
    free(W.codes);
    free(W.stage);
    free(W.out);
    free(W.arena);
    free(W.stacks);
    free(W.stack_index);
    free(W.threads);
    free(W.names);
    memset(&W, 0, sizeof W);
    W.fd = -1;
    W.statm_fd = -1;
}

void writer_forget_in_child(void)
{
    /* The writer thread does not exist here: start from a clean state, without touching
     * the parent's file beyond closing our copy of its descriptor. */
    forget_all();
}
