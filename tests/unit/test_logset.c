/*
 * Unit tests for src/read/logset.c: which files of a directory are candidates and which
 * of them are logs (by content, whatever their names: fixtures copied under other names
 * into a temporary directory), and the orders over logs (by series then seq, newest
 * first, the next file of a process and run) on sets built by hand.
 */
#include <errno.h>
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

#include "read/logset.h"

/* ---- sets built by hand --------------------------------------------------------------- */

/* Adds a file whose header "was read": (host, run, pid, window, series start, seq). */
static logset_file *put(logset *s, const char *path, const char *host, const char *run,
                        uint64_t pid, uint64_t window, uint64_t start, uint64_t seq)
{
    assert_int_equal(logset_add(s, path, 0), 0);
    logset_file *f = &s->files[s->n - 1];
    f->err = PYPROF_R_OK;
    f->host = strdup(host);
    f->run_id = strdup(run);
    assert_non_null(f->host);
    assert_non_null(f->run_id);
    f->pid = pid;
    f->window = window;
    f->series_start_unix_ns = start;
    f->seq = seq;
    f->use = 1;
    return f;
}

static void test_series_order(void **state)
{
    (void)state;
    logset s = {0};
    put(&s, "a2", "h", "r", 1, 0, 100, 2);         /* 0: series A */
    put(&s, "b0", "h", "r", 2, 0, 100, 0);         /* 1: B, another pid */
    put(&s, "a0", "h", "r", 1, 0, 100, 0);         /* 2: A */
    put(&s, "a1", "h", "r", 1, 0, 100, 1);         /* 3: A */
    put(&s, "a1b", "h", "r", 1, 0, 100, 1);        /* 4: A's seq 1 again: a series of its own */
    put(&s, "x", "h", "r", 1, 0, 100, 3)->use = 0; /* 5: left out (a filter) */
    put(&s, "w1", "h", "r", 1, 1, 200, 0);         /* 6: A's next window: another series */
    put(&s, "oh", "other", "r", 1, 0, 100, 3);     /* 7: another host */
    put(&s, "or", "h", "r2", 1, 0, 100, 4);        /* 8: another run */
    assert_int_equal(logset_add(&s, "notread", 0), 0); /* 9: header never read */
    size_t *order;
    long n = logset_series_order(&s, &order);
    assert_int_equal(n, 8);
    const size_t want[] = {2, 3, 0, 1, 4, 6, 7, 8};
    for (long i = 0; i < n; i++)
        assert_int_equal(order[i], want[i]);
    assert_int_equal(s.files[0].series, 0);
    assert_int_equal(s.files[1].series, 1);
    assert_int_equal(s.files[4].series, 2);
    assert_int_equal(s.files[8].series, 5);
    free(order);
    logset_free(&s);

    /* Nothing to take: no array. */
    assert_int_equal(logset_add(&s, "notread", 0), 0);
    assert_int_equal(logset_series_order(&s, &order), 0);
    assert_null(order);
    logset_free(&s);
}

static void test_newest(void **state)
{
    (void)state;
    logset s = {0};
    put(&s, "b", "h", "r", 1, 0, 0, 0)->mtime = (struct timespec){10, 5};
    put(&s, "c", "h", "r", 1, 0, 0, 1)->mtime = (struct timespec){12, 0};
    put(&s, "a", "h", "r", 1, 0, 0, 2)->mtime = (struct timespec){10, 5};
    put(&s, "d", "h", "r", 1, 0, 0, 3)->mtime = (struct timespec){10, 7};
    logset_sort_newest(&s);
    const char *want[] = {"c", "d", "a", "b"};
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(s.files[i].path, want[i]);
    logset_free(&s);
}

static void test_next(void **state)
{
    (void)state;
    logset s = {0};
    put(&s, "w0s0", "h", "r", 7, 0, 100, 0);
    put(&s, "w0s2", "h", "r", 7, 0, 100, 2);
    put(&s, "w0s1", "h", "r", 7, 0, 100, 1);
    put(&s, "w2s0", "h", "r", 7, 2, 300, 0);
    put(&s, "w1s1", "h", "r", 7, 1, 200, 1);
    put(&s, "w1s0", "h", "r", 7, 1, 200, 0);
    put(&s, "other-pid", "h", "r", 8, 0, 100, 1);
    put(&s, "other-run", "h", "q", 7, 0, 100, 1);
    assert_int_equal(logset_add(&s, "not-a-log", 0), 0);
    s.files[s.n - 1].err = PYPROF_R_NOT_LZ4;
#define NEXT(w, q, skip) logset_next(&s, 7, "r", (w), (q), (skip))
#define PATH(i) ((i) >= 0 ? s.files[(i)].path : "(none)")
    assert_string_equal(PATH(NEXT(0, 0, NULL)), "w0s1");
    assert_string_equal(PATH(NEXT(0, 1, NULL)), "w0s2");
    assert_string_equal(PATH(NEXT(0, 2, NULL)), "w1s0");
    assert_string_equal(PATH(NEXT(1, 0, NULL)), "w1s1");
    assert_string_equal(PATH(NEXT(1, 1, NULL)), "w2s0");
    assert_int_equal(NEXT(2, 0, NULL), -1);
    assert_string_equal(PATH(NEXT(0, 0, "w0s1")), "w0s2");
    assert_string_equal(PATH(logset_next(&s, 8, "r", 0, 0, NULL)), "other-pid");
    assert_int_equal(logset_next(&s, 9, "r", 0, 0, NULL), -1);
#undef NEXT
#undef PATH
    logset_free(&s);
}

/* ---- a directory ------------------------------------------------------------------------ */

static void copy_file(const char *from, const char *to, size_t max)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    size_t n, total = 0;
    while (total < max && (n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (n > max - total)
            n = max - total;
        assert_int_equal(fwrite(buf, 1, n, out), n);
        total += n;
    }
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

static void test_scan_dir(void **state)
{
    (void)state;
    char dir[] = "/tmp/pyprof-test-logset.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[4096];
    /* A log named without .lz4, one cut inside its LZ4 magic, a text file, a pyprof-less
     * .lz4, an empty file, a subdirectory. */
    snprintf(path, sizeof path, "%s/prof.1234", dir);
    copy_file("tests/fixtures/good.lz4", path, SIZE_MAX);
    snprintf(path, sizeof path, "%s/cut", dir);
    copy_file("tests/fixtures/good.lz4", path, 3);
    snprintf(path, sizeof path, "%s/README.txt", dir);
    copy_file("tests/fixtures/not_a_log.txt", path, SIZE_MAX);
    snprintf(path, sizeof path, "%s/other.lz4", dir);
    copy_file("tests/fixtures/not_pyprof.lz4", path, SIZE_MAX);
    snprintf(path, sizeof path, "%s/empty.lz4", dir);
    copy_file("tests/fixtures/good.lz4", path, 0);
    snprintf(path, sizeof path, "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);

    logset s = {0};
    assert_int_equal(logset_add(&s, "named", LOGSET_NAMED), 0);
    assert_int_equal(logset_scan_dir(&s, dir, 3), 0);
    assert_int_equal(s.n, 5);
    const char *names[] = {"named", "README.txt", "cut", "other.lz4", "prof.1234"};
    for (size_t i = 1; i < s.n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        assert_string_equal(s.files[i].path, path);
        assert_int_equal(s.files[i].dir, 3);
        assert_true(s.files[i].mtime.tv_sec > 0);
        assert_int_equal(logset_read_header(&s.files[i]), 0);
    }
    assert_int_equal(s.files[0].dir, LOGSET_NAMED);
    assert_int_equal(s.files[1].err, PYPROF_R_NOT_LZ4);
    assert_true(logset_not_log(&s.files[1]));
    assert_int_equal(s.files[2].err, PYPROF_R_TRUNCATED);
    assert_false(logset_not_log(&s.files[2]));
    assert_int_equal(s.files[3].err, PYPROF_R_NOT_PYPROF);
    assert_true(logset_not_log(&s.files[3]));
    const logset_file *log = &s.files[4];
    assert_int_equal(log->err, PYPROF_R_OK);
    assert_false(logset_not_log(log));
    assert_true(log->use);
    int err;
    pyprof_reader *r = pyprof_reader_open("tests/fixtures/good.lz4", &err);
    assert_non_null(r);
    const pyprof_header *h = pyprof_reader_header(r);
    assert_int_equal(log->pid, h->pid);
    assert_int_equal(log->seq, h->seq);
    assert_int_equal(strlen(log->run_id), h->run_id.len);
    assert_memory_equal(log->run_id, h->run_id.s, h->run_id.len);
    pyprof_reader_close(r);
    for (size_t i = 0; i < 4; i++)
        assert_false(s.files[i].use);
    logset_free(&s);

    /* A trailing slash gives the same paths. */
    snprintf(path, sizeof path, "%s/", dir);
    assert_int_equal(logset_scan_dir(&s, path, 0), 0);
    snprintf(path, sizeof path, "%s/README.txt", dir);
    assert_string_equal(s.files[0].path, path);
    logset_free(&s);

    const char *all[] = {"prof.1234", "cut", "README.txt", "other.lz4", "empty.lz4"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, all[i]);
        assert_int_equal(unlink(path), 0);
    }
    snprintf(path, sizeof path, "%s/sub", dir);
    assert_int_equal(rmdir(path), 0);
    /* A directory that is gone: -1, errno. */
    assert_int_equal(rmdir(dir), 0);
    errno = 0;
    assert_int_equal(logset_scan_dir(&s, dir, 0), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(s.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_series_order),
        cmocka_unit_test(test_newest),
        cmocka_unit_test(test_next),
        cmocka_unit_test(test_scan_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
