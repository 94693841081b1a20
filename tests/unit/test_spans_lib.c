/*
 * Unit tests of src/lib/spans.c, against the contract in src/lib/spans.h: nothing is
 * recorded while the gate is closed (before it opens, after it closes, in a fork child);
 * ids start at 1, grow, and are never given twice, however many threads ask; the records
 * carry the thread, the time on the samples' clock and every string as valid UTF-8 cut at
 * a character boundary to the format's limits; a full ring refuses and counts the event;
 * and spans_parse refuses a record whose lengths do not fit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <pyprof/format.h>

#include "common/clock.h"
#include "lib/ring.h"
#include "lib/spans.h"
#include "lib/rrec.h"

#define RING_BYTES (1u << 20)

static ring R;
static void *mem;

static int setup(void **state)
{
    (void)state;
    mem = aligned_alloc(64, RING_BYTES);
    memset(mem, 0, RING_BYTES);
    ring_init(&R, mem, RING_BYTES);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    spans_close();
    free(mem);
    return 0;
}

/* The next record of the ring, parsed (the test fails when there is none). */
static spans_rec next_rec(void)
{
    size_t len;
    const void *p = ring_peek(&R, &len);
    assert_non_null(p);
    spans_rec v;
    assert_int_equal(spans_parse(p, len, &v), 0);
    return v;
}

static void release(void) { ring_release(&R); }

static void test_gate(void **state)
{
    (void)state;
    size_t len;
    /* Before the gate opens: nothing. */
    assert_int_equal(spans_start("a", NULL, NULL, NULL, NULL, 0), 0);
    assert_int_equal(spans_stop(1, NULL), 0);
    assert_null(ring_peek(&R, &len));
    uint64_t t0 = clock_mono_ns();
    spans_open(&R, t0);
    uint64_t id = spans_start("a", "t", "p", "b", "{}", 0);
    assert_true(id >= 1);
    assert_int_equal(spans_stop(id, NULL), 1);
    assert_int_equal(spans_stop(0, NULL), 0); /* 0 is no span */
    spans_rec v = next_rec();
    assert_int_equal(v.kind, RREC_SPAN_START);
    assert_int_equal(v.span_id, id);
    assert_int_equal(v.tid, (uint32_t)syscall(SYS_gettid));
    assert_true(v.t_ns <= clock_mono_ns() - t0);
    uint64_t t_start = v.t_ns;
    release();
    v = next_rec();
    assert_int_equal(v.kind, RREC_SPAN_STOP);
    assert_int_equal(v.span_id, id);
    assert_true(v.t_ns >= t_start);
    release();
    assert_null(ring_peek(&R, &len));
    spans_close();
    assert_int_equal(spans_start("a", NULL, NULL, NULL, NULL, 0), 0);
    assert_int_equal(spans_stop(id, NULL), 0);
    assert_null(ring_peek(&R, &len));
    /* Opened again (a new window): ids go on from where they were. */
    spans_open(&R, clock_mono_ns());
    uint64_t id2 = spans_start("b", NULL, NULL, NULL, NULL, id);
    assert_true(id2 > id);
    v = next_rec();
    assert_int_equal(v.parent_span, id);
    assert_int_equal(v.name_len, 1);
    assert_memory_equal(v.name, "b", 1);
    assert_int_equal(v.trace_id_len + v.parent_id_len + v.base_id_len + v.info_len, 0);
    release();
    /* A fork child's gate is closed until its own profiling opens it. */
    spans_forget_in_child();
    assert_int_equal(spans_start("c", NULL, NULL, NULL, NULL, 0), 0);
    assert_null(ring_peek(&R, &len));
}

static void test_strings(void **state)
{
    (void)state;
    spans_open(&R, clock_mono_ns());
    /* 300 x "é" (2 bytes): cut to 128 characters (256 bytes); an id of 70 ASCII bytes to
     * 64; an info of 5000 bytes to 4096; a byte that starts no sequence becomes U+FFFD. */
    char name[601], id[71], info[5001];
    for (int i = 0; i < 300; i++)
        memcpy(name + 2 * i, "\xc3\xa9", 2);
    name[600] = 0;
    memset(id, 'x', 70);
    id[70] = 0;
    memset(info, 'i', 5000);
    info[5000] = 0;
    /* A name of 255 ASCII bytes then a 2-byte character: the character does not fit. */
    char edge[258];
    memset(edge, 'e', 255);
    memcpy(edge + 255, "\xc3\xa9", 3);
    uint64_t a = spans_start(name, id, "p\xff", "", info, 0);
    uint64_t b = spans_start(edge, NULL, NULL, NULL, NULL, 0);
    assert_true(a && b > a);
    spans_rec v = next_rec();
    assert_int_equal(v.name_len, 256);
    assert_memory_equal(v.name, name, 256);
    assert_int_equal(v.trace_id_len, 64);
    assert_int_equal(v.parent_id_len, 4);
    assert_memory_equal(v.parent_id, "p\xef\xbf\xbd", 4);
    assert_int_equal(v.base_id_len, 0);
    assert_int_equal(v.info_len, PYPROF_SPAN_INFO_MAX);
    release();
    v = next_rec();
    assert_int_equal(v.name_len, 255);
    release();
    assert_int_equal(spans_stop(a, info), 1);
    v = next_rec();
    assert_int_equal(v.info_len, PYPROF_SPAN_INFO_MAX);
    assert_int_equal(v.name_len, 0);
    release();
    spans_close();
}

static void test_full_ring(void **state)
{
    (void)state;
    spans_open(&R, clock_mono_ns());
    uint64_t lost0 = spans_lost();
    char info[4000];
    memset(info, 'j', sizeof info - 1);
    info[sizeof info - 1] = 0;
    uint64_t last = 0, n = 0;
    for (;;) {
        /* No name: the size of a stop with the same info, refused as well below. */
        uint64_t id = spans_start("", NULL, NULL, NULL, info, 0);
        if (!id)
            break;
        assert_true(id > last);
        last = id;
        n++;
    }
    assert_true(n > 100);
    assert_int_equal(spans_lost(), lost0 + 1);
    assert_int_equal(spans_stop(last, info), 0);
    assert_int_equal(spans_lost(), lost0 + 2);
    /* Drained, it takes records again; the refused start used no id. */
    size_t len;
    while (ring_peek(&R, &len))
        release();
    uint64_t id = spans_start("again", NULL, NULL, NULL, NULL, 0);
    assert_int_equal(id, last + 1);
    release();
    spans_close();
}

#define THREADS 4
#define PER_THREAD 5000

static void *starter(void *arg)
{
    uint64_t *ids = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        ids[i] = spans_start("t", NULL, NULL, NULL, NULL, 0);
        spans_stop(ids[i], NULL);
    }
    return NULL;
}

static void *drainer(void *arg)
{
    volatile int *stop = arg;
    size_t len;
    for (;;) {
        if (ring_peek(&R, &len)) {
            spans_rec v;
            if (spans_parse(ring_peek(&R, &len), len, &v) != 0)
                abort();
            release();
        } else if (*stop) {
            break;
        }
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Ids from four threads at once: every one given is unique. */
static void test_threads_unique_ids(void **state)
{
    (void)state;
    spans_open(&R, clock_mono_ns());
    static uint64_t ids[THREADS][PER_THREAD];
    pthread_t t[THREADS], d;
    volatile int stop = 0;
    pthread_create(&d, NULL, drainer, (void *)&stop);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, starter, ids[i]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    stop = 1;
    pthread_join(d, NULL);
    uint64_t *all = &ids[0][0];
    size_t given = 0;
    for (size_t i = 0; i < THREADS * PER_THREAD; i++)
        if (all[i])
            all[given++] = all[i];
    assert_true(given > 0);
    qsort(all, given, sizeof *all, cmp_u64);
    for (size_t i = 1; i < given; i++)
        assert_true(all[i] > all[i - 1]);
    spans_close();
}

/* spans_parse: a record whose strings run past its length, or longer than the format
 * allows, or of another kind, is refused. */
static void test_parse_refuses(void **state)
{
    (void)state;
    union {
        rrec_span r;
        uint8_t b[sizeof(rrec_span) + 512];
    } u;
    memset(&u, 0, sizeof u);
    u.r.head.kind = RREC_SPAN_START;
    u.r.span_id = 3;
    u.r.name_len = 10;
    spans_rec v;
    assert_int_equal(spans_parse(&u, sizeof u.r + 10, &v), 0);
    assert_int_equal(spans_parse(&u, sizeof u.r + 9, &v), -1);
    assert_int_equal(spans_parse(&u, sizeof u.r - 1, &v), -1);
    u.r.name_len = PYPROF_SPAN_NAME_MAX + 1;
    assert_int_equal(spans_parse(&u, sizeof u, &v), -1);
    u.r.name_len = 0;
    u.r.trace_id_len = PYPROF_SPAN_ID_MAX + 1;
    assert_int_equal(spans_parse(&u, sizeof u, &v), -1);
    u.r.trace_id_len = 0;
    u.r.span_id = 0;
    assert_int_equal(spans_parse(&u, sizeof u, &v), -1);
    u.r.span_id = 3;
    u.r.head.kind = RREC_SAMPLE;
    assert_int_equal(spans_parse(&u, sizeof u, &v), -1);
    u.r.head.kind = RREC_SPAN_STOP;
    assert_int_equal(spans_parse(&u, sizeof u, &v), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_ring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_unique_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parse_refuses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
