/*
 * Unit tests of the writer's modules below its thread: src/lib/logfile.c (naming,
 * creating, the LZ4 frame), src/lib/stackmap.c and src/lib/procself.c; and the round
 * trip writer -> reader: a log written with logenc's payloads and logfile's staging into
 * a temporary directory, read back with the public reader (include/pyprof/reader.h),
 * every value checked.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <pyprof/reader.h>

#include "common/logenc.h"
#include "common/record.h"
#include "lib/diag.h"
#include "lib/logfile.h"
#include "lib/modules.h"
#include "lib/procself.h"
#include "lib/stackmap.h"

/* ---- a temporary directory per test ------------------------------------------------- */

static int setup_dir(void **state)
{
    char *dir = strdup("/tmp/pyprof-test-logfile.XXXXXX");
    if (!dir || !mkdtemp(dir))
        return -1;
    *state = dir;
    return 0;
}

static int teardown_dir(void **state)
{
    char *dir = *state;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    free(dir);
    return 0;
}

static int write_errors;
static void count_write_error(void) { write_errors++; }

static uint8_t pl[1 << 17];

static void emit(logfile *lf, uint8_t type, int (*put)(rec_out *o, const void *arg),
                 const void *arg)
{
    rec_out o;
    rec_out_init(&o, pl, sizeof pl);
    assert_int_equal(put(&o, arg), 0);
    logfile_emit(lf, type, &o);
}

/* ---- the round trip ----------------------------------------------------------------- */

static const char cmdline[] = "/usr/bin/python3\0-m\0srv\0--port=80\0";
static const uint8_t small_lt[] = {0x01, 0x02, 0x03};
#define BIG_LT_LEN (100u << 10) /* larger than the stage: compressed on its own */
static uint8_t big_lt[BIG_LT_LEN];
static const logenc_frame frames[] = {{16, 10}, {PYPROF_CODE_CUT, 42}, {17, -1}};

static int put_header(rec_out *o, const void *arg) { return logenc_put_header(o, arg); }
static int put_code(rec_out *o, const void *arg) { return logenc_put_code(o, arg); }
static int put_footer(rec_out *o, const void *arg) { return logenc_put_footer(o, arg); }

static logfile_naming naming(const char *output)
{
    return (logfile_naming){.output = output,
                            .pid = 4242,
                            .ppid = 1,
                            .prog = "python3",
                            .host = "host-1",
                            .run_id = "r1d",
                            .start_unix_ns = 1700000000123456789ull};
}

/* Writes the reference log into `dir`; its path into `path`. */
static void write_log(const char *dir, char *path, size_t cap)
{
    logfile lf;
    assert_int_equal(logfile_init(&lf, count_write_error), 0);
    assert_int_equal(lf.fd, -1);
    logfile_naming nm = naming(dir);
    assert_int_equal(logfile_open(&lf, &nm), 0);
    assert_true(lf.fd >= 0);
    /* The descriptor never reaches an exec'd program; the file is the user's alone. */
    assert_true(fcntl(lf.fd, F_GETFD) & FD_CLOEXEC);
    struct stat st;
    assert_int_equal(fstat(lf.fd, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    snprintf(path, cap, "%s", lf.path);

    logenc_header_fields h = {
        .pid = 4242,
        .ppid = 1,
        .run_id = "r1d",
        .start_unix_ns = 1700000000123456789ull,
        .host = "host-1",
        .exe = "/usr/bin/python3.11",
        .cmdline = cmdline,
        .cmdline_len = sizeof cmdline - 1,
        .python_version = "3.12.1",
        .python_hex = 0x030c01f0,
        .period_ns = 5000000,
        .clock = PYPROF_CLOCK_CPU,
        .timer = "posix-cpu-timer",
        .max_depth = 128,
        .flags = PYPROF_HDR_MEMORY,
        .window = 2,
    };
    emit(&lf, PYPROF_REC_HEADER, put_header, &h);
    rec_out o;
    rec_out_init(&o, pl, sizeof pl);
    logenc_put_thread(&o, 0, 4242, "MainThread");
    logfile_emit(&lf, PYPROF_REC_THREAD, &o);
    logenc_code_fields c = {
        .code_id = 16,
        .first_line = 7,
        .name = "main",
        .name_len = 4,
        .qualname = "main",
        .qualname_len = 4,
        .filename = "/srv/app.py",
        .filename_len = 11,
        .lt_kind = PYPROF_LT_LINETABLE_310,
        .lt = small_lt,
        .lt_len = sizeof small_lt,
        .flags = 0,
    };
    emit(&lf, PYPROF_REC_CODE, put_code, &c);
    for (size_t i = 0; i < BIG_LT_LEN; i++)
        big_lt[i] = (uint8_t)(i * 7 + i / 251);
    logenc_code_fields big = {
        .code_id = 17,
        .first_line = 100,
        .name = "gen",
        .name_len = 3,
        .qualname = "",
        .qualname_len = 0,
        .filename = "/srv/gen.py",
        .filename_len = 11,
        .lt_kind = PYPROF_LT_LOCATIONS_311,
        .lt = big_lt,
        .lt_len = BIG_LT_LEN,
        .flags = PYPROF_CODE_F_TABLE_CUT,
    };
    emit(&lf, PYPROF_REC_CODE, put_code, &big);
    rec_out_init(&o, pl, LOGENC_STACK_MAX(3));
    assert_int_equal(logenc_put_stack(&o, 1, frames, 3), 0);
    logfile_emit(&lf, PYPROF_REC_STACK, &o);
    rec_out_init(&o, pl, sizeof pl);
    logenc_put_sample(&o, 1500, 0, 1, 5000);
    logfile_emit(&lf, PYPROF_REC_SAMPLE, &o);
    logfile_flush(&lf); /* a flush in the middle of the frame changes nothing read */
    rec_out_init(&o, pl, sizeof pl);
    logenc_put_rss(&o, 500, 15u << 20);
    logfile_emit(&lf, PYPROF_REC_RSS, &o);
    rec_out_init(&o, pl, sizeof pl);
    logenc_put_thread(&o, 1, 4250, "worker");
    logfile_emit(&lf, PYPROF_REC_THREAD, &o);
    /* Enough samples to fill the stage several times. */
    for (int i = 0; i < 30000; i++) {
        rec_out_init(&o, pl, sizeof pl);
        logenc_put_sample(&o, i % 3 == 2 ? -1 : 1, (uint64_t)(i & 1), 1, 5000);
        logfile_emit(&lf, PYPROF_REC_SAMPLE, &o);
    }
    logenc_footer_fields f = {
        .end_unix_ns = 1700000009000000000ull,
        .duration_ns = 8876543211ull,
        .samples = 30001,
        .signals = 30005,
        .end = PYPROF_END_EXIT,
        .status_known = 1,
        .status = 3,
        .achieved_hz_milli = 199500,
        .lib_cpu_ns = 1234567,
        .handler_ns = 1000,
        .writer_ns = 234567,
        .timer_ns = 555,
        .untimed_ns = 66,
        .clock_timer_ns = 300100,
        .clock_kernel_ns = 299000,
        .clock_corrected = 1,
    };
    f.drops[PYPROF_DROP_RING_FULL] = 4;
    f.drops[PYPROF_DROP_CHANGING] = 9;
    f.cost[1][2] = 30001;
    f.cost[PYPROF_COST_NDEPTH - 1][PYPROF_COST_NTIME - 1] = 5;
    emit(&lf, PYPROF_REC_FOOTER, put_footer, &f);
    logfile_close(&lf);
    assert_int_equal(lf.fd, -1);
    assert_false(lf.failed);
    assert_int_equal(write_errors, 0);
    logfile_free(&lf);
}

static void expect_str(pyprof_str s, const char *want, size_t len)
{
    assert_int_equal(s.len, len);
    if (len)
        assert_memory_equal(s.s, want, len);
}
#define EXPECT_CSTR(s, want) expect_str((s), (want), strlen(want))

static void next(pyprof_reader *r, pyprof_record *rec, int type)
{
    assert_int_equal(pyprof_reader_next(r, rec), 1);
    assert_int_equal(rec->type, type);
}

static void test_roundtrip(void **state)
{
    const char *dir = *state;
    char path[PATH_MAX];
    write_log(dir, path, sizeof path);
    /* The default name: <dir>/pyprof.<prog>.<pid>.<random>.lz4 */
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s/pyprof.python3.4242.", dir);
    assert_memory_equal(path, prefix, strlen(prefix));
    assert_int_equal(strlen(path), strlen(prefix) + 6 + 4);
    assert_string_equal(path + strlen(path) - 4, ".lz4");

    int err = 0;
    pyprof_reader *r = pyprof_reader_open(path, &err);
    assert_non_null(r);
    const pyprof_header *h = pyprof_reader_header(r);
    assert_int_equal(h->format_version, PYPROF_FORMAT_VERSION);
    assert_int_equal(h->pid, 4242);
    assert_int_equal(h->ppid, 1);
    EXPECT_CSTR(h->run_id, "r1d");
    assert_int_equal(h->start_unix_ns, 1700000000123456789ull);
    EXPECT_CSTR(h->host, "host-1");
    EXPECT_CSTR(h->exe, "/usr/bin/python3.11");
    assert_int_equal(h->argc, 4);
    EXPECT_CSTR(h->argv[0], "/usr/bin/python3");
    EXPECT_CSTR(h->argv[1], "-m");
    EXPECT_CSTR(h->argv[2], "srv");
    EXPECT_CSTR(h->argv[3], "--port=80");
    EXPECT_CSTR(h->python_version, "3.12.1");
    assert_int_equal(h->python_hex, 0x030c01f0);
    assert_int_equal(h->period_ns, 5000000);
    assert_int_equal(h->clock, PYPROF_CLOCK_CPU);
    EXPECT_CSTR(h->timer, "posix-cpu-timer");
    assert_int_equal(h->max_depth, 128);
    assert_int_equal(h->flags, PYPROF_HDR_MEMORY);
    assert_int_equal(h->window, 2);

    pyprof_record rec;
    next(r, &rec, PYPROF_REC_THREAD);
    assert_int_equal(rec.u.thread.thread_idx, 0);
    assert_int_equal(rec.u.thread.tid, 4242);
    EXPECT_CSTR(rec.u.thread.name, "MainThread");

    next(r, &rec, PYPROF_REC_CODE);
    assert_int_equal(rec.u.code.code_id, 16);
    assert_int_equal(rec.u.code.first_line, 7);
    EXPECT_CSTR(rec.u.code.name, "main");
    EXPECT_CSTR(rec.u.code.qualname, "main");
    EXPECT_CSTR(rec.u.code.filename, "/srv/app.py");
    assert_int_equal(rec.u.code.line_table_kind, PYPROF_LT_LINETABLE_310);
    expect_str(rec.u.code.line_table, (const char *)small_lt, sizeof small_lt);
    assert_int_equal(rec.u.code.flags, 0);

    next(r, &rec, PYPROF_REC_CODE);
    assert_int_equal(rec.u.code.code_id, 17);
    assert_int_equal(rec.u.code.first_line, 100);
    EXPECT_CSTR(rec.u.code.name, "gen");
    EXPECT_CSTR(rec.u.code.qualname, "");
    EXPECT_CSTR(rec.u.code.filename, "/srv/gen.py");
    assert_int_equal(rec.u.code.line_table_kind, PYPROF_LT_LOCATIONS_311);
    expect_str(rec.u.code.line_table, (const char *)big_lt, BIG_LT_LEN);
    assert_int_equal(rec.u.code.flags, PYPROF_CODE_F_TABLE_CUT);

    next(r, &rec, PYPROF_REC_STACK);
    assert_int_equal(rec.u.stack.stack_id, 1);
    assert_int_equal(rec.u.stack.nframes, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(rec.u.stack.frames[i].code_id, frames[i].code_id);
        assert_int_equal(rec.u.stack.frames[i].line, frames[i].line);
    }

    next(r, &rec, PYPROF_REC_SAMPLE);
    assert_int_equal(rec.u.sample.t_us, 1500);
    assert_int_equal(rec.u.sample.thread_idx, 0);
    assert_int_equal(rec.u.sample.stack_id, 1);
    assert_int_equal(rec.u.sample.cpu_us, 5000);

    next(r, &rec, PYPROF_REC_RSS);
    assert_int_equal(rec.u.rss.t_us, 2000);
    assert_int_equal(rec.u.rss.rss_bytes, 15u << 20);

    next(r, &rec, PYPROF_REC_THREAD);
    assert_int_equal(rec.u.thread.thread_idx, 1);
    assert_int_equal(rec.u.thread.tid, 4250);
    EXPECT_CSTR(rec.u.thread.name, "worker");

    int64_t t = 2000;
    for (int i = 0; i < 30000; i++) {
        next(r, &rec, PYPROF_REC_SAMPLE);
        t += i % 3 == 2 ? -1 : 1;
        assert_int_equal(rec.u.sample.t_us, t);
        assert_int_equal(rec.u.sample.thread_idx, (uint64_t)(i & 1));
        assert_int_equal(rec.u.sample.stack_id, 1);
        assert_int_equal(rec.u.sample.cpu_us, 5000);
    }

    next(r, &rec, PYPROF_REC_FOOTER);
    const pyprof_footer *f = &rec.u.footer;
    assert_int_equal(f->end_unix_ns, 1700000009000000000ull);
    assert_int_equal(f->duration_ns, 8876543211ull);
    assert_int_equal(f->samples, 30001);
    assert_int_equal(f->signals, 30005);
    for (int i = 0; i < PYPROF_DROP_COUNT; i++)
        assert_int_equal(f->dropped[i], i == PYPROF_DROP_RING_FULL  ? 4
                                        : i == PYPROF_DROP_CHANGING ? 9
                                                                    : 0);
    assert_int_equal(f->end, PYPROF_END_EXIT);
    assert_int_equal(f->status_known, 1);
    assert_int_equal(f->status, 3);
    assert_int_equal(f->achieved_hz_milli, 199500);
    assert_int_equal(f->lib_cpu_ns, 1234567);
    assert_true(f->has_cost);
    assert_int_equal(f->handler_ns, 1000);
    assert_int_equal(f->writer_ns, 234567);
    static const uint32_t time_bounds[] = PYPROF_COST_TIME_BOUNDS_NS;
    static const uint32_t depth_bounds[] = PYPROF_COST_DEPTH_BOUNDS;
    assert_int_equal(f->cost_ntime, PYPROF_COST_NTIME);
    assert_int_equal(f->cost_ndepth, PYPROF_COST_NDEPTH);
    for (int i = 0; i < PYPROF_COST_NTIME; i++)
        assert_int_equal(f->cost_time_bound[i], time_bounds[i]);
    for (int d = 0; d < PYPROF_COST_NDEPTH; d++) {
        assert_int_equal(f->cost_depth_bound[d], depth_bounds[d]);
        for (int i = 0; i < PYPROF_COST_NTIME; i++) {
            int last = d == PYPROF_COST_NDEPTH - 1 && i == PYPROF_COST_NTIME - 1;
            assert_int_equal(f->cost[d][i], d == 1 && i == 2 ? 30001 : last ? 5 : 0);
        }
    }
    assert_true(f->has_timers);
    assert_int_equal(f->timer_ns, 555);
    assert_int_equal(f->untimed_ns, 66);
    assert_false(f->has_alloc);
    assert_true(f->has_clock);
    assert_int_equal(f->clock_timer_ns, 300100);
    assert_int_equal(f->clock_kernel_ns, 299000);
    assert_int_equal(f->clock_corrected, 1);
    assert_int_equal(pyprof_reader_next(r, &rec), 0); /* a clean end */
    pyprof_reader_close(r);
}

/* ---- a native log ------------------------------------------------------------------ */

static int put_module(rec_out *o, const void *arg) { return logenc_put_module(o, arg); }

/* The native records, as the writer composes them, through logfile and the reader. */
static void test_native_roundtrip(void **state)
{
    const char *dir = *state;
    logfile lf;
    assert_int_equal(logfile_init(&lf, count_write_error), 0);
    logfile_naming nm = naming(dir);
    assert_int_equal(logfile_open(&lf, &nm), 0);
    logenc_header_fields h = {
        .run_id = "r",
        .host = "h",
        .exe = "/e",
        .cmdline = "",
        .python_version = "3.12.1",
        .timer = "perf-task-clock",
        .flags = PYPROF_HDR_NATIVE,
    };
    emit(&lf, PYPROF_REC_HEADER, put_header, &h);
    static const uint8_t bid[] = {1, 2, 3, 4};
    const logenc_segment segs[] = {{0, 0x1000, 0, 4}, {0x1000, 0x2000, 0x1000, 5}};
    logenc_module_fields m = {
        .module_id = 1,
        .path = "/usr/lib/libx.so",
        .base = 0x7f0000000000ull,
        .build_id = bid,
        .build_id_len = sizeof bid,
        .segs = segs,
        .nseg = 2,
        .dev = 1,
        .ino = 2,
        .size = 3,
        .mtime_ns = 4,
    };
    emit(&lf, PYPROF_REC_MODULE, put_module, &m);
    const uint64_t addrs[] = {0x7f0000001234ull, 0x7f0000001000ull};
    rec_out o;
    rec_out_init(&o, pl, LOGENC_NSTACK_MAX(2));
    assert_int_equal(logenc_put_nstack(&o, 1, addrs, 2), 0);
    logfile_emit(&lf, PYPROF_REC_NSTACK, &o);
    const uint32_t runs[] = {2, 1};
    rec_out_init(&o, pl, LOGENC_STACK_MAX(3) + LOGENC_RUNS_MAX(3));
    assert_int_equal(logenc_put_stack(&o, 1, frames, 3), 0);
    assert_int_equal(logenc_put_stack_runs(&o, runs, 2), 0);
    logfile_emit(&lf, PYPROF_REC_STACK, &o);
    rec_out_init(&o, pl, 64);
    logenc_put_sample(&o, 10, 0, 1, 5000);
    logenc_put_sample_native(&o, 1, PYPROF_NATIVE_F_TRUNCATED);
    logfile_emit(&lf, PYPROF_REC_SAMPLE, &o);
    rec_out_init(&o, pl, 16);
    logenc_put_module_gone(&o, 1);
    logfile_emit(&lf, PYPROF_REC_MODULE_GONE, &o);
    logenc_footer_fields f = {.has_native = 1,
                              .native_ok = 5,
                              .native_truncated = 6,
                              .native_skipped = 7,
                              .native_ns = 8};
    emit(&lf, PYPROF_REC_FOOTER, put_footer, &f);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", lf.path);
    logfile_close(&lf);
    logfile_free(&lf);

    int err;
    pyprof_reader *r = pyprof_reader_open(path, &err);
    assert_non_null(r);
    assert_int_equal(pyprof_reader_header(r)->flags, PYPROF_HDR_NATIVE);
    pyprof_record rec;
    next(r, &rec, PYPROF_REC_MODULE);
    assert_int_equal(rec.u.module.module_id, 1);
    EXPECT_CSTR(rec.u.module.path, "/usr/lib/libx.so");
    assert_int_equal(rec.u.module.base, 0x7f0000000000ull);
    expect_str(rec.u.module.build_id, (const char *)bid, sizeof bid);
    assert_int_equal(rec.u.module.nseg, 2);
    assert_int_equal(rec.u.module.segs[1].vaddr, 0x1000);
    assert_int_equal(rec.u.module.segs[1].memsz, 0x2000);
    assert_int_equal(rec.u.module.segs[1].file_offset, 0x1000);
    assert_int_equal(rec.u.module.segs[1].flags, 5);
    assert_int_equal(rec.u.module.dev, 1);
    assert_int_equal(rec.u.module.ino, 2);
    assert_int_equal(rec.u.module.size, 3);
    assert_int_equal(rec.u.module.mtime_ns, 4);
    next(r, &rec, PYPROF_REC_NSTACK);
    assert_int_equal(rec.u.nstack.nstack_id, 1);
    assert_int_equal(rec.u.nstack.n, 2);
    assert_int_equal(rec.u.nstack.addrs[0], addrs[0]);
    assert_int_equal(rec.u.nstack.addrs[1], addrs[1]);
    next(r, &rec, PYPROF_REC_STACK);
    assert_int_equal(rec.u.stack.nframes, 3);
    assert_int_equal(rec.u.stack.nruns, 2);
    assert_int_equal(rec.u.stack.runs[0], 2);
    assert_int_equal(rec.u.stack.runs[1], 1);
    next(r, &rec, PYPROF_REC_SAMPLE);
    assert_int_equal(rec.u.sample.stack_id, 1);
    assert_int_equal(rec.u.sample.nstack_id, 1);
    assert_int_equal(rec.u.sample.native_flags, PYPROF_NATIVE_F_TRUNCATED);
    next(r, &rec, PYPROF_REC_MODULE_GONE);
    assert_int_equal(rec.u.module_gone, 1);
    next(r, &rec, PYPROF_REC_FOOTER);
    assert_true(rec.u.footer.has_native);
    assert_int_equal(rec.u.footer.native_ok, 5);
    assert_int_equal(rec.u.footer.native_truncated, 6);
    assert_int_equal(rec.u.footer.native_skipped, 7);
    assert_int_equal(rec.u.footer.native_ns, 8);
    assert_int_equal(pyprof_reader_next(r, &rec), 0);
    pyprof_reader_close(r);
}

/* ---- modules ------------------------------------------------------------------------ */

typedef struct seen_mods {
    int nnew, ngone;
    uint32_t last_new, gone[8];
    int exe_found, vdso_found, libc_bid, libz_new;
    uint32_t libz_id;
} seen_mods;

/* The library the test loads and unloads: one this process has not loaded yet (a
 * sanitizer build links libz in already, through libdw), and its name up to ".so". */
static const char *probe_lib;
static char probe_stem[64];

static const char *pick_probe_lib(void)
{
    static const char *const candidates[] = {"libz.so.1", "libbz2.so.1.0", "liblzma.so.5",
                                             "libexpat.so.1", "libffi.so.8"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        void *h = dlopen(candidates[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            dlclose(h); /* already loaded: loading it again changes nothing */
            continue;
        }
        const char *so = strstr(candidates[i], ".so");
        snprintf(probe_stem, sizeof probe_stem, "%.*s", (int)(so - candidates[i] + 3),
                 candidates[i]);
        return candidates[i];
    }
    return NULL;
}

static void on_new(const logenc_module_fields *m, void *ctx)
{
    seen_mods *s = ctx;
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[l > 0 ? l : 0] = 0;
    assert_true(m->module_id > s->last_new); /* ids grow */
    s->last_new = (uint32_t)m->module_id;
    s->nnew++;
    assert_true(m->nseg >= 1);
    if (!strcmp(m->path, exe)) {
        s->exe_found = 1;
        assert_true(m->ino != 0);
        assert_true(m->size > 0);
    }
    if (!strcmp(m->path, "linux-vdso.so.1")) {
        s->vdso_found = 1;
        assert_int_equal(m->ino, 0);
    }
    if (strstr(m->path, "libc.so"))
        s->libc_bid = (int)m->build_id_len;
    if (probe_stem[0] && strstr(m->path, probe_stem)) {
        s->libz_new++;
        s->libz_id = (uint32_t)m->module_id;
    }
}

static void on_gone(uint32_t id, void *ctx)
{
    seen_mods *s = ctx;
    if (s->ngone < 8)
        s->gone[s->ngone] = id;
    s->ngone++;
}

static void test_modules(void **state)
{
    (void)state;
    modules m = {0};
    seen_mods s = {0};
    assert_true(modules_changed(&m)); /* never synced */
    assert_int_equal(modules_sync(&m, on_new, on_gone, &s), 0);
    assert_true(s.exe_found);
    assert_true(s.libc_bid >= 8 && s.libc_bid <= PYPROF_BUILD_ID_MAX);
    assert_int_equal(s.ngone, 0);
    int first = s.nnew;
    assert_false(modules_changed(&m));
    assert_int_equal(modules_sync(&m, on_new, on_gone, &s), 0); /* nothing new */
    assert_int_equal(s.nnew, first);

    probe_lib = pick_probe_lib();
    void *h = probe_lib ? dlopen(probe_lib, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
        modules_free(&m);
        skip(); /* no library to load here: the load and unload half cannot run */
    }
    assert_true(modules_changed(&m));
    assert_int_equal(modules_sync(&m, on_new, on_gone, &s), 0);
    assert_int_equal(s.libz_new, 1);
    uint32_t libz = s.libz_id;
    dlclose(h);
    assert_true(modules_changed(&m));
    assert_int_equal(modules_sync(&m, on_new, on_gone, &s), 0);
    assert_int_equal(s.ngone, 1);
    assert_int_equal(s.gone[0], libz);
    /* Loaded again: a new id, never the old one. */
    h = dlopen(probe_lib, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    assert_int_equal(modules_sync(&m, on_new, on_gone, &s), 0);
    assert_int_equal(s.libz_new, 2);
    assert_true(s.libz_id > libz);
    dlclose(h);
    modules_free(&m);
    assert_null(m.e);
}

/* ---- naming ------------------------------------------------------------------------- */

static void test_template_taken(void **state)
{
    const char *dir = *state;
    char tmpl[PATH_MAX], want[PATH_MAX];
    snprintf(tmpl, sizeof tmpl, "%s/run-%%p-%%n-%%h.lz4", dir);
    snprintf(want, sizeof want, "%s/run-4242-python3-host-1.lz4", dir);
    logfile_naming nm = naming(tmpl);
    logfile a, b;
    assert_int_equal(logfile_init(&a, NULL), 0);
    assert_int_equal(logfile_init(&b, NULL), 0);
    assert_int_equal(logfile_open(&a, &nm), 0);
    assert_string_equal(a.path, want);
    /* The name is taken: a random part goes before the extension. */
    assert_int_equal(logfile_open(&b, &nm), 0);
    size_t stem = strlen(want) - 4;
    assert_memory_equal(b.path, want, stem);
    assert_int_equal(b.path[stem], '.');
    assert_string_equal(b.path + stem + 7, ".lz4");
    assert_int_equal(strlen(b.path), strlen(want) + 7);
    logfile_close(&a);
    logfile_close(&b);
    logfile_free(&a);
    logfile_free(&b);
}

static void test_check_dir(void **state)
{
    const char *dir = *state;
    char d[PATH_MAX], err[256] = "", out[PATH_MAX];
    assert_int_equal(logfile_check_dir(dir, d, sizeof d, err, sizeof err), 0);
    assert_string_equal(d, dir);
    /* A template: its directory. */
    snprintf(out, sizeof out, "%s/x-%%p.lz4", dir);
    assert_int_equal(logfile_check_dir(out, d, sizeof d, err, sizeof err), 0);
    assert_string_equal(d, dir);
    snprintf(out, sizeof out, "%s/missing/x.lz4", dir);
    assert_int_equal(logfile_check_dir(out, d, sizeof d, err, sizeof err), -1);
    assert_non_null(strstr(err, "missing; not profiling"));
}

static void test_open_fails(void **state)
{
    const char *dir = *state;
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s/missing/x.lz4", dir);
    logfile_naming nm = naming(out);
    logfile lf;
    assert_int_equal(logfile_init(&lf, NULL), 0);
    diag_set(1, 0); /* the line on stderr is expected */
    assert_int_equal(logfile_open(&lf, &nm), -1);
    diag_set(0, 0);
    assert_true(lf.failed);
    assert_int_equal(lf.fd, -1);
    /* Records are taken and dropped, never a crash, whatever their size. */
    rec_out o;
    rec_out_init(&o, pl, sizeof pl);
    o.len = 100u << 10;
    logfile_emit(&lf, PYPROF_REC_CODE, &o);
    logfile_flush(&lf);
    logfile_close(&lf);
    assert_int_equal(logfile_open(&lf, &nm), -1); /* never retried */
    logfile_free(&lf);
}

/* ---- stackmap ----------------------------------------------------------------------- */

/* The writer's packing of Python frames, without run marks. */
static uint32_t intern_frames(stackmap *m, const logenc_frame *f, size_t n, int *fresh)
{
    uint64_t w[8];
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++)
        w[i] = stackmap_frame_word(f[i].code_id, f[i].line, 0);
    return stackmap_intern(m, w, n, fresh);
}

static void test_stackmap(void **state)
{
    (void)state;
    stackmap m = {0};
    const logenc_frame a[] = {{16, 1}, {17, 2}}, b[] = {{16, 1}, {17, 3}};
    int fresh;
    uint32_t ia = intern_frames(&m, a, 2, &fresh);
    assert_int_equal(ia, 1);
    assert_true(fresh);
    assert_int_equal(intern_frames(&m, b, 2, &fresh), 2);
    assert_true(fresh);
    assert_int_equal(intern_frames(&m, a, 2, &fresh), 1);
    assert_false(fresh);
    assert_int_equal(intern_frames(&m, a, 1, &fresh), 3); /* a prefix is another stack */
    assert_true(fresh);
    assert_int_equal(intern_frames(&m, NULL, 0, &fresh), 4);
    assert_int_equal(intern_frames(&m, NULL, 0, &fresh), 4);
    assert_false(fresh);
    /* Many stacks: the index grows and every id is still found. */
    logenc_frame f[3];
    for (uint32_t i = 0; i < 20000; i++) {
        f[0] = (logenc_frame){16, (int32_t)i};
        f[1] = (logenc_frame){i, -1};
        f[2] = (logenc_frame){PYPROF_CODE_CUT, 7};
        assert_int_equal(intern_frames(&m, f, 3, &fresh), 5 + i);
        assert_true(fresh);
    }
    for (uint32_t i = 0; i < 20000; i += 997) {
        f[0] = (logenc_frame){16, (int32_t)i};
        f[1] = (logenc_frame){i, -1};
        assert_int_equal(intern_frames(&m, f, 3, &fresh), 5 + i);
        assert_false(fresh);
    }
    /* After a reset a stack is new again, under a new id. */
    stackmap_reset(&m);
    assert_int_equal(intern_frames(&m, a, 2, &fresh), 20005);
    assert_true(fresh);
    /* The same frames with other runs are another stack. */
    const logenc_frame c[] = {{16, 1}, {17, 2}, {18, 3}};
    uint64_t w1[3], w2[3];
    for (int i = 0; i < 3; i++) {
        w1[i] = stackmap_frame_word(c[i].code_id, c[i].line, i == 0);
        w2[i] = stackmap_frame_word(c[i].code_id, c[i].line, i == 0 || i == 2);
    }
    uint32_t i1 = stackmap_intern(&m, w1, 3, &fresh);
    assert_true(fresh);
    uint32_t i2 = stackmap_intern(&m, w2, 3, &fresh);
    assert_true(fresh);
    assert_int_not_equal(i1, i2);
    assert_int_equal(stackmap_intern(&m, w1, 3, &fresh), i1);
    assert_false(fresh);
    /* Native stacks: addresses, whole 64-bit words. */
    stackmap n = {0};
    const uint64_t na[] = {0x401000, UINT64_MAX}, nb[] = {0x401000, UINT64_MAX - 1};
    assert_int_equal(stackmap_intern(&n, na, 2, &fresh), 1);
    assert_int_equal(stackmap_intern(&n, nb, 2, &fresh), 2);
    assert_int_equal(stackmap_intern(&n, na, 2, &fresh), 1);
    assert_false(fresh);
    stackmap_free(&n);
    stackmap_free(&m);
    assert_null(m.arena);
}

/* ---- procself ----------------------------------------------------------------------- */

static void test_procself(void **state)
{
    (void)state;
    char cmd[8192], small[8], prog[256];
    size_t n = procself_cmdline(cmd, sizeof cmd);
    assert_true(n > 0);
    assert_int_equal(cmd[n - 1], 0);              /* each argument NUL-terminated */
    assert_non_null(strstr(cmd, "test_logfile")); /* argv[0] is this program */
    /* Cut: cap - 1 bytes and a NUL. */
    assert_int_equal(procself_cmdline(small, sizeof small), sizeof small - 1);
    assert_int_equal(small[sizeof small - 1], 0);
    assert_memory_equal(small, cmd, sizeof small - 1);
    procself_prog_name(prog, sizeof prog);
    assert_string_equal(prog, "test_logfile");
    procself_prog_name(prog, 5);
    assert_string_equal(prog, "test");
    char exe[PATH_MAX];
    procself_exe(exe, sizeof exe);
    assert_non_null(strstr(exe, "test_logfile"));
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    uint64_t rss = 0;
    assert_int_equal(procself_rss(fd, &rss), 0);
    assert_true(rss > 4096 && rss % 4096 == 0);
    close(fd);
    assert_int_equal(procself_rss(-1, &rss), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_template_taken, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_check_dir, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_open_fails, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_native_roundtrip, setup_dir, teardown_dir),
        cmocka_unit_test(test_stackmap),
        cmocka_unit_test(test_modules),
        cmocka_unit_test(test_procself),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
