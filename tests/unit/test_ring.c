/*
 * Unit tests of src/lib/ring.c, written against the contract in src/lib/ring.h: records
 * come out in reservation order, cancelled records and the padding at the end of the
 * buffer never reach the consumer, a full ring refuses instead of waiting, a record
 * reserved early but committed late holds back the ones behind it, and under four
 * concurrent producers every record arrives exactly once, intact and in per-producer
 * order, with every loss accounted for by a failed reserve.
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
#include <sched.h>
#include <stdatomic.h>

#include "lib/ring.h"

#define SMALL 4096u

/* A zeroed, 8-byte aligned ring of `size` bytes, returned with its memory. */
static void *new_ring(ring *r, uint64_t size)
{
    void *mem = aligned_alloc(64, size);
    assert_non_null(mem);
    memset(mem, 0, size);
    assert_int_equal(ring_init(r, mem, size), 0);
    return mem;
}

static size_t round8(size_t n) { return (n + 7) & ~(size_t)7; }

/* The record must lie inside the buffer, in one piece, 8-byte aligned. */
static void assert_inside(const ring *r, const void *p, size_t len)
{
    const uint8_t *b = p;
    assert_non_null(p);
    assert_true(((uintptr_t)p & 7) == 0);
    assert_true(b >= r->buf);
    assert_true(b + len <= r->buf + r->size);
}

/* Peeks, checks the record is `want` (a byte pattern of `len` bytes), releases it. */
static void expect_record(ring *r, uint8_t tag, size_t len)
{
    size_t got_len = 0;
    const uint8_t *p = ring_peek(r, &got_len);
    if (!p)
        fail_msg("expected record %u, ring gave nothing", tag);
    assert_int_equal(got_len, round8(len));
    assert_inside(r, p, got_len);
    for (size_t i = 0; i < len; i++)
        if (p[i] != tag)
            fail_msg("record %u byte %zu is %u", tag, i, p[i]);
    ring_release(r);
}

static void *reserve_fill(ring *r, uint8_t tag, size_t len)
{
    uint8_t *p = ring_reserve(r, len);
    if (!p)
        fail_msg("reserve of %zu bytes for record %u failed", len, tag);
    assert_inside(r, p, len);
    memset(p, tag, len);
    return p;
}

static void test_init(void **state)
{
    ring r;
    void *mem = aligned_alloc(64, 1 << 16);
    (void)state;
    assert_non_null(mem);
    memset(mem, 0, 1 << 16);
    assert_int_equal(ring_init(&r, mem, 4096), 0);
    assert_int_equal(ring_init(&r, mem, 1 << 16), 0);
    assert_int_equal(ring_init(&r, mem, 2048), -1); /* too small */
    assert_int_equal(ring_init(&r, mem, 0), -1);
    assert_int_equal(ring_init(&r, mem, 6144), -1);                /* not a power of two */
    assert_int_equal(ring_init(&r, (uint8_t *)mem + 4, 4096), -1); /* misaligned */
    assert_int_equal(ring_init(&r, mem, 4096), 0);
    assert_int_equal(ring_used(&r), 0);
    size_t len;
    assert_null(ring_peek(&r, &len));
    free(mem);
}

static void test_order(void **state)
{
    ring r;
    void *mem = new_ring(&r, SMALL);
    (void)state;
    static const size_t lens[] = {1, 7, 8, 9, 100, 1024, 16, 3};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        ring_commit(&r, reserve_fill(&r, (uint8_t)(i + 1), lens[i]));
    assert_true(ring_used(&r) > 0);
    /* Peeking twice without releasing gives the same record. */
    size_t l1, l2;
    const void *a = ring_peek(&r, &l1), *b = ring_peek(&r, &l2);
    assert_ptr_equal(a, b);
    assert_int_equal(l1, l2);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        expect_record(&r, (uint8_t)(i + 1), lens[i]);
    assert_null(ring_peek(&r, &l1));
    assert_int_equal(ring_used(&r), 0);
    free(mem);
}

static void test_cancel_is_skipped(void **state)
{
    ring r;
    size_t len;
    void *mem = new_ring(&r, SMALL);
    (void)state;
    void *a = reserve_fill(&r, 1, 40);
    void *b = reserve_fill(&r, 2, 40);
    void *c = reserve_fill(&r, 3, 40);
    void *d = reserve_fill(&r, 4, 40);
    ring_cancel(&r, b);
    ring_commit(&r, a);
    ring_cancel(&r, d);
    ring_commit(&r, c);
    expect_record(&r, 1, 40);
    expect_record(&r, 3, 40);
    assert_null(ring_peek(&r, &len));
    assert_int_equal(ring_used(&r), 0);
    /* A ring holding only cancelled records is empty to the consumer. */
    ring_cancel(&r, reserve_fill(&r, 5, 8));
    ring_cancel(&r, reserve_fill(&r, 6, 8));
    assert_null(ring_peek(&r, &len));
    assert_int_equal(ring_used(&r), 0);
    free(mem);
}

static void test_out_of_order_commit(void **state)
{
    ring r;
    size_t len;
    void *mem = new_ring(&r, SMALL);
    (void)state;
    void *a = reserve_fill(&r, 1, 24);
    void *b = reserve_fill(&r, 2, 24);
    ring_commit(&r, b);
    /* B is ready but A, reserved first, is not: the consumer must wait. */
    assert_null(ring_peek(&r, &len));
    assert_null(ring_peek(&r, &len));
    ring_commit(&r, a);
    expect_record(&r, 1, 24);
    expect_record(&r, 2, 24);
    assert_null(ring_peek(&r, &len));
    /* The same behind a cancelled record that is still being written. */
    void *c = reserve_fill(&r, 3, 8);
    void *d = reserve_fill(&r, 4, 8);
    ring_commit(&r, d);
    assert_null(ring_peek(&r, &len));
    ring_cancel(&r, c);
    expect_record(&r, 4, 8);
    free(mem);
}

/* A record that does not fit before the end of the buffer starts at its beginning; the
 * padding left at the end is never seen by the consumer. */
static void test_wrap_padding(void **state)
{
    ring r;
    size_t len;
    void *mem = new_ring(&r, SMALL);
    (void)state;
    /* Four records of 1000 bytes (1008 with the header) fill 4032 of 4096 bytes. */
    for (int i = 0; i < 4; i++)
        ring_commit(&r, reserve_fill(&r, (uint8_t)(10 + i), 1000));
    expect_record(&r, 10, 1000);
    /* The fifth needs 1008 bytes: 64 are left at the end, 1008 were freed at the start.
     * It must go to the start, in one piece. */
    uint8_t *e = reserve_fill(&r, 14, 1000);
    assert_true(e < r.buf + 1008);
    ring_commit(&r, e);
    expect_record(&r, 11, 1000);
    expect_record(&r, 12, 1000);
    expect_record(&r, 13, 1000);
    expect_record(&r, 14, 1000); /* Not the padding. */
    assert_null(ring_peek(&r, &len));
    assert_int_equal(ring_used(&r), 0);
    free(mem);
}

static void test_full_ring(void **state)
{
    ring r;
    size_t len;
    void *mem = new_ring(&r, SMALL);
    (void)state;
    /* 504-byte records take 512 bytes with their header: eight fill the ring. */
    int n = 0;
    void *p;
    while ((p = ring_reserve(&r, 504))) {
        memset(p, n + 1, 504);
        ring_commit(&r, p);
        n++;
        assert_true(n <= 8);
    }
    assert_int_equal(n, 8);
    uint64_t used = ring_used(&r);
    assert_int_equal(used, SMALL);
    /* Failing changes nothing, and a smaller record does not fit either. */
    assert_null(ring_reserve(&r, 504));
    assert_null(ring_reserve(&r, 1));
    assert_int_equal(ring_used(&r), used);
    /* Freeing one record makes room for exactly one more. */
    expect_record(&r, 1, 504);
    ring_commit(&r, reserve_fill(&r, 9, 504));
    assert_null(ring_reserve(&r, 1));
    for (int i = 2; i <= 9; i++)
        expect_record(&r, (uint8_t)i, 504);
    assert_null(ring_peek(&r, &len));
    free(mem);
}

static void test_max_record(void **state)
{
    ring r;
    size_t len;
    void *mem = new_ring(&r, SMALL);
    (void)state;
    assert_int_equal(RING_MAX_RECORD(SMALL), 1024);
    assert_null(ring_reserve(&r, 0));
    assert_null(ring_reserve(&r, RING_MAX_RECORD(SMALL) + 1));
    assert_null(ring_reserve(&r, SIZE_MAX));
    assert_int_equal(ring_used(&r), 0);
    void *p = reserve_fill(&r, 7, RING_MAX_RECORD(SMALL));
    ring_commit(&r, p);
    expect_record(&r, 7, RING_MAX_RECORD(SMALL));
    /* Maximum-size records, lap after lap, at every alignment the ring produces. */
    for (int i = 0; i < 50; i++) {
        ring_commit(&r, reserve_fill(&r, (uint8_t)i, RING_MAX_RECORD(SMALL) - (size_t)i));
        ring_commit(&r, reserve_fill(&r, (uint8_t)(i + 100), RING_MAX_RECORD(SMALL)));
        expect_record(&r, (uint8_t)i, RING_MAX_RECORD(SMALL) - (size_t)i);
        expect_record(&r, (uint8_t)(i + 100), RING_MAX_RECORD(SMALL));
    }
    assert_null(ring_peek(&r, &len));
    free(mem);
}

/* Many laps of records of varied sizes, some cancelled, with a lag between producer and
 * consumer so the ring is often nearly full at the wrap. */
static void test_single_thread_laps(void **state)
{
    ring r;
    size_t len;
    void *mem = new_ring(&r, SMALL);
    uint32_t rnd = 12345;
    uint32_t next_in = 0, next_out = 0;
    (void)state;
    for (int step = 0; step < 200000; step++) {
        rnd = rnd * 1103515245u + 12345u;
        if ((rnd >> 16) % 3) {
            size_t n = 8 + (rnd >> 8) % 300;
            uint32_t *p = ring_reserve(&r, n);
            if (p) {
                assert_inside(&r, p, n);
                p[0] = next_in;
                p[1] = (uint32_t)n;
                if ((rnd >> 4) % 11 == 0) {
                    ring_cancel(&r, p);
                } else {
                    ring_commit(&r, p);
                    next_in++;
                }
            }
        } else {
            const uint32_t *p = ring_peek(&r, &len);
            if (p) {
                assert_int_equal(p[0], next_out);
                assert_int_equal(len, round8(p[1]));
                next_out++;
                ring_release(&r);
            }
        }
        assert_true(ring_used(&r) <= SMALL);
    }
    while (ring_peek(&r, &len)) {
        next_out++;
        ring_release(&r);
    }
    assert_int_equal(next_out, next_in);
    assert_true(next_in > 30000);
    assert_int_equal(ring_used(&r), 0);
    free(mem);
}

/* ---- four producers, one consumer --------------------------------------------------- */

#define NPROD 4
#define NREC 200000
#define MT_RING (1u << 18)

enum { REC_NONE, REC_COMMITTED, REC_CANCELLED, REC_FAILED };

typedef struct mt_rec {
    uint32_t producer;
    uint32_t seq;
    uint32_t len;      /* bytes reserved, this header included */
    uint32_t checksum; /* over the header fields above and the payload */
    uint8_t payload[];
} mt_rec;

typedef struct mt_state {
    ring r;
    _Atomic int producers_done;
    uint8_t fate[NPROD][NREC];    /* written by each producer before commit/cancel */
    uint8_t arrived[NPROD][NREC]; /* written by the consumer */
    uint64_t failures[NPROD];
    pthread_t threads[NPROD];
} mt_state;

typedef struct mt_arg {
    mt_state *s;
    uint32_t id;
} mt_arg;

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static uint32_t rec_checksum(const mt_rec *m)
{
    uint32_t h = 2166136261u;
    const uint8_t *b = (const uint8_t *)m;
    for (size_t i = 0; i < m->len; i++)
        if (i < 12 || i >= 16) /* every byte but the checksum's own */
            h = (h ^ b[i]) * 16777619u;
    return h;
}

static void *producer(void *argp)
{
    mt_arg *a = argp;
    mt_state *s = a->s;
    for (uint32_t seq = 0; seq < NREC; seq++) {
        uint32_t h = mix(a->id * 1000003u + seq);
        uint32_t len = (uint32_t)sizeof(mt_rec) + h % 240;
        mt_rec *m = ring_reserve(&s->r, len);
        if (!m) {
            s->fate[a->id][seq] = REC_FAILED;
            s->failures[a->id]++;
            sched_yield(); /* Let the consumer catch up. */
            continue;
        }
        m->producer = a->id;
        m->seq = seq;
        m->len = len;
        for (uint32_t i = 0; i < len - sizeof(mt_rec); i++)
            m->payload[i] = (uint8_t)(h >> (i % 4 * 8)) ^ (uint8_t)i;
        m->checksum = rec_checksum(m);
        if (h % 97 == 0) {
            s->fate[a->id][seq] = REC_CANCELLED;
            ring_cancel(&s->r, m);
        } else {
            s->fate[a->id][seq] = REC_COMMITTED;
            ring_commit(&s->r, m);
        }
    }
    atomic_fetch_add(&s->producers_done, 1);
    return NULL;
}

static void test_multi_thread(void **state)
{
    mt_state *s = calloc(1, sizeof *s);
    mt_arg args[NPROD];
    int64_t last_seq[NPROD];
    uint64_t received = 0;
    (void)state;
    assert_non_null(s);
    void *mem = new_ring(&s->r, MT_RING);
    for (int i = 0; i < NPROD; i++) {
        last_seq[i] = -1;
        args[i].s = s;
        args[i].id = (uint32_t)i;
        assert_int_equal(pthread_create(&s->threads[i], NULL, producer, &args[i]), 0);
    }
    for (;;) {
        /* Read the done count before peeking: when all were done before an empty peek,
         * nothing more can come. */
        int done = atomic_load(&s->producers_done);
        size_t len;
        const mt_rec *m = ring_peek(&s->r, &len);
        if (!m) {
            if (done == NPROD)
                break;
            sched_yield();
            continue;
        }
        if (m->producer >= NPROD || m->seq >= NREC)
            fail_msg("garbage record: producer %u seq %u", m->producer, m->seq);
        if (len != round8(m->len))
            fail_msg("producer %u seq %u: length %zu, reserved %u", m->producer, m->seq, len,
                     m->len);
        if (m->checksum != rec_checksum(m))
            fail_msg("producer %u seq %u: corrupted", m->producer, m->seq);
        if ((int64_t)m->seq <= last_seq[m->producer])
            fail_msg("producer %u: seq %u after %lld", m->producer, m->seq,
                     (long long)last_seq[m->producer]);
        last_seq[m->producer] = m->seq;
        s->arrived[m->producer][m->seq]++;
        received++;
        ring_release(&s->r);
    }
    for (int i = 0; i < NPROD; i++)
        assert_int_equal(pthread_join(s->threads[i], NULL), 0);
    size_t dummy;
    assert_null(ring_peek(&s->r, &dummy));
    assert_int_equal(ring_used(&s->r), 0);

    uint64_t committed = 0, cancelled = 0, failed = 0;
    for (int p = 0; p < NPROD; p++) {
        for (uint32_t q = 0; q < NREC; q++) {
            int fate = s->fate[p][q], got = s->arrived[p][q];
            if ((fate == REC_COMMITTED && got != 1) || (fate != REC_COMMITTED && got != 0))
                fail_msg("producer %d seq %u: fate %d, arrived %d times", p, q, fate, got);
            committed += fate == REC_COMMITTED;
            cancelled += fate == REC_CANCELLED;
            failed += fate == REC_FAILED;
        }
    }
    uint64_t counted_failures = 0;
    for (int p = 0; p < NPROD; p++)
        counted_failures += s->failures[p];
    print_message("%llu received, %llu cancelled, %llu reserve failures\n",
                  (unsigned long long)received, (unsigned long long)cancelled,
                  (unsigned long long)failed);
    assert_int_equal(failed, counted_failures);
    assert_int_equal(committed + cancelled + failed, (uint64_t)NPROD * NREC);
    assert_int_equal(received, committed);
    assert_true(cancelled > 0);
    /* How many get through depends on scheduling; enough must, for many laps. */
    assert_true(received > 20000);
    free(mem);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_cancel_is_skipped),
        cmocka_unit_test(test_out_of_order_commit),
        cmocka_unit_test(test_wrap_padding),
        cmocka_unit_test(test_full_ring),
        cmocka_unit_test(test_max_record),
        cmocka_unit_test(test_single_thread_laps),
        cmocka_unit_test(test_multi_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
