/*
 * Unit tests for the sampled allocations of the tool's model (src/read/allocload.c,
 * allocs.c, their part of profile.c and series.c): a rotated series of two logs is written
 * here with the record codec and LZ4F from a plan of ALLOC and FREE events (addresses
 * reused, frees lost, frees of blocks never allocated, untracked blocks, blocks of 0
 * bytes, equal times, a FREE written before its ALLOC), loaded, and every sum is checked
 * against the same numbers computed naively from the plan (event by event, by function
 * name, with 1 - exp rather than expm1), never through the code under test: with no
 * filter, per thread, in a time window, inside a span, and with the files loaded one call
 * at a time in the wrong order.  The peak of the estimated heap is checked the same way
 * (by trying every allocation's time), on that plan and on a small one where the heap
 * rises then falls (the peak's blocks are not the end's), alone and beside a second
 * process that starts later.  A third series holds allocation windows (AWINDOW records
 * after the allocations they hold, pauses of them): each windowed sample is weighed by
 * its window, and the process's windows summed, whichever order its files load in.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/logenc.h"
#include "common/record.h"
#include "logbuf.h"
#include "read/allocs.h"
#include "read/profile.h"

/* ---- the plan --------------------------------------------------------------------- */

#define INTERVAL 4096ull /* the mean sampling interval, bytes */
#define NEVENTS 700
#define NADDR 24
#define FILE1_US 2000000 /* file 1's start on the series' axis */
#define SERIES_START 1710000000000000000ull
#define SPAN_START_US 300000 /* the span "req" of thread 0, in file 0 */
#define SPAN_STOP_US 900000
#define MAXF 4

static const char *const fname[] = {"main", "f", "g", "C.h"};
static const int64_t fline[] = {1, 10, 20, 30};
#define NFUNCS 4

/* Stacks by plan number (stack id k in file 0, 10 + k in file 1); 0 is no Python frame.
 * g recurses in 3, C.h in 4. */
typedef struct pstack {
    int n;
    int func[MAXF];
} pstack;
static const pstack plan_stacks[] = {
    {0, {0}}, {2, {0, 1}}, {3, {0, 1, 2}}, {3, {0, 2, 2}}, {4, {0, 3, 1, 3}},
};
#define NSTACKS 5

typedef struct pevent {
    int is_free;
    int64_t t_us; /* on the series' axis */
    int thread;   /* 0: tid 100, 1: tid 101 */
    int stack;
    uint64_t size, address;
    int domain, untracked;
    /* The naive answers for an allocation. */
    int freed;
    int64_t free_us;
} pevent;
static pevent plan[NEVENTS];
static int plan_unmatched; /* frees that end no allocation */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 17;
}

static int file_of(int64_t t_us) { return t_us >= FILE1_US; }

static void make_plan(void)
{
    int64_t t = 1000;
    for (int i = 0; i < NEVENTS; i++) {
        pevent *e = &plan[i];
        memset(e, 0, sizeof *e);
        if (i == NEVENTS - 2) {
            /* The last two: an ALLOC and its FREE 5 us later, written the other way
             * round (the writer drains threads' buffers in any order). */
            t += 1000;
            *e = (pevent){0, t, 1, 1, 100, 0xabc000, PYPROF_ALLOC_MALLOC, 0, 0, 0};
            continue;
        }
        if (i == NEVENTS - 1) {
            *e = (pevent){1, t + 5, 0, 0, 0, 0xabc000, 0, 0, 0, 0};
            continue;
        }
        uint64_t r = rnd();
        t += r % 5 == 0 ? 0 : (int64_t)(rnd() % 12000);
        e->t_us = t;
        e->is_free = r % 100 >= 62;
        e->thread = rnd() % 3 == 0;
        if (e->is_free) {
            e->address = 0x10000 * (1 + rnd() % (NADDR + 4)); /* some never allocated */
            continue;
        }
        e->stack = (int)(rnd() % NSTACKS);
        uint64_t c = rnd() % 20;
        e->size = c == 0   ? 0
                  : c < 10 ? 1 + rnd() % 256
                  : c < 17 ? 1 + rnd() % 65536
                           : 1 + rnd() % (1u << 20);
        e->address = 0x10000 * (1 + rnd() % NADDR);
        e->domain = (int)(rnd() % PYPROF_ALLOC_DOMAINS);
        e->untracked = rnd() % 15 == 0;
    }
    assert_true(file_of(plan[NEVENTS / 3].t_us) == 0 && file_of(plan[NEVENTS - 1].t_us) == 1);
    /* Naively: a FREE ends the newest earlier allocation of its address still alive. */
    for (int i = 0; i < NEVENTS; i++) {
        if (!plan[i].is_free)
            continue;
        int j = i - 1;
        while (j >= 0 && (plan[j].is_free || plan[j].untracked || plan[j].freed ||
                          plan[j].address != plan[i].address))
            j--;
        if (j < 0) {
            plan_unmatched++;
            continue;
        }
        plan[j].freed = 1;
        plan[j].free_us = plan[i].t_us;
    }
}

/* ---- writing the logs -------------------------------------------------------------- */

static uint8_t scratch[1 << 16];

static void put_header_of(logbuf *b, uint64_t pid, uint64_t series_start, uint64_t seq,
                          uint64_t offset_us)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, PYPROF_FORMAT_VERSION);
    rec_put_uvarint(&o, pid);
    rec_put_uvarint(&o, 1);
    rec_put_cstr(&o, "0123456789abcdef");
    rec_put_uvarint(&o, series_start + offset_us * 1000);
    rec_put_cstr(&o, "host");
    rec_put_cstr(&o, "/usr/bin/python3");
    rec_put_uvarint(&o, 1);
    rec_put_cstr(&o, "python3");
    rec_put_cstr(&o, "3.11.7");
    rec_put_uvarint(&o, 0x030b07f0);
    rec_put_uvarint(&o, 10000000);
    rec_put_u8(&o, PYPROF_CLOCK_CPU);
    rec_put_cstr(&o, "test");
    rec_put_uvarint(&o, 256);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, seq);
    rec_put_uvarint(&o, series_start);
    rec_put_uvarint(&o, offset_us);
    rec_put_uvarint(&o, INTERVAL);
    logbuf_put(b, PYPROF_REC_HEADER, &o);
}

static void put_header(logbuf *b, uint64_t seq, uint64_t offset_us)
{
    put_header_of(b, 4242, SERIES_START, seq, offset_us);
}

static void put_thread(logbuf *b, uint64_t idx, uint64_t tid)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, idx);
    rec_put_uvarint(&o, tid);
    rec_put_cstr(&o, tid == 100 ? "Main" : "Worker");
    logbuf_put(b, PYPROF_REC_THREAD, &o);
}

static void put_code(logbuf *b, uint64_t base, int f)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, 16 + base + (uint64_t)f);
    rec_put_svarint(&o, fline[f]);
    const char *dot = strchr(fname[f], '.');
    rec_put_cstr(&o, dot ? dot + 1 : fname[f]);
    rec_put_cstr(&o, dot ? fname[f] : "");
    rec_put_cstr(&o, "a.py");
    rec_put_u8(&o, PYPROF_LT_LOCATIONS_311);
    rec_put_str(&o, "", 0);
    rec_put_uvarint(&o, 0);
    logbuf_put(b, PYPROF_REC_CODE, &o);
}

static void put_stack(logbuf *b, uint64_t base, int s)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, base / 10 + (uint64_t)s);
    rec_put_uvarint(&o, (uint64_t)plan_stacks[s].n);
    for (int k = 0; k < plan_stacks[s].n; k++) {
        rec_put_uvarint(&o, 16 + base + (uint64_t)plan_stacks[s].func[k]);
        rec_put_svarint(&o, fline[plan_stacks[s].func[k]] + 1);
    }
    logbuf_put(b, PYPROF_REC_STACK, &o);
}

/* Event e of the plan in file `file`, whose thread indexes are swapped in file 1. */
static void put_event(logbuf *b, int file, const pevent *e)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    uint64_t t = (uint64_t)(e->t_us - (file ? FILE1_US : 0));
    rec_put_uvarint(&o, t);
    if (e->is_free) {
        rec_put_uvarint(&o, e->address);
        logbuf_put(b, PYPROF_REC_FREE, &o);
        return;
    }
    rec_put_uvarint(&o, (uint64_t)(e->thread ^ file));
    rec_put_uvarint(&o, e->stack ? (uint64_t)(10 * file + e->stack) : 0);
    rec_put_uvarint(&o, e->size);
    rec_put_uvarint(&o, e->address);
    rec_put_u8(&o, (uint8_t)e->domain);
    /* 64: a bit this reader does not know (bits 1-5 are the window's shift) */
    rec_put_uvarint(&o, e->untracked ? PYPROF_ALLOC_F_UNTRACKED | 64 : 64);
    logbuf_put(b, PYPROF_REC_ALLOC, &o);
}

static void put_span(logbuf *b)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, 7);
    rec_put_uvarint(&o, SPAN_START_US);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, 0);
    rec_put_cstr(&o, "req");
    for (int i = 0; i < 4; i++)
        rec_put_cstr(&o, "");
    logbuf_put(b, PYPROF_REC_SPAN_START, &o);
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, 7);
    rec_put_uvarint(&o, SPAN_STOP_US);
    rec_put_uvarint(&o, 0);
    rec_put_cstr(&o, "");
    logbuf_put(b, PYPROF_REC_SPAN_STOP, &o);
}

/* The naive footer counts of file `file`. */
typedef struct pfooter {
    uint64_t allocs, frees, lost, frees_lost, live;
} pfooter;

static pfooter plan_footer(int file)
{
    pfooter f = {0, 0, (uint64_t)file + 1, 2 * (uint64_t)file, 0};
    int64_t end = file ? INT64_MAX : FILE1_US;
    for (int i = 0; i < NEVENTS; i++) {
        const pevent *e = &plan[i];
        if (file_of(e->t_us) == file)
            f.allocs += !e->is_free, f.frees += e->is_free;
        if (!e->is_free && !e->untracked && e->t_us < end && (!e->freed || e->free_us >= end))
            f.live++;
    }
    return f;
}

static void put_footer_counts(logbuf *b, int file, pfooter pf)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    uint64_t duration_ns = (file ? 2000000 : FILE1_US) * 1000ull;
    rec_put_uvarint(&o, SERIES_START + duration_ns);
    rec_put_uvarint(&o, duration_ns);
    rec_put_uvarint(&o, 0); /* samples */
    rec_put_uvarint(&o, 0); /* signals */
    rec_put_uvarint(&o, 0); /* ndrop */
    rec_put_uvarint(&o, file ? PYPROF_END_EXIT : PYPROF_END_ROTATED);
    rec_put_u8(&o, 1);
    rec_put_svarint(&o, 0);
    rec_put_uvarint(&o, 0);    /* achieved_hz_milli */
    rec_put_uvarint(&o, 1000); /* lib_cpu_ns */
    rec_put_uvarint(&o, 10);   /* handler_ns */
    rec_put_uvarint(&o, 20);   /* writer_ns */
    rec_put_uvarint(&o, 0);    /* ntime */
    rec_put_uvarint(&o, 0);    /* ndepth */
    rec_put_uvarint(&o, 0);    /* timer_ns */
    rec_put_uvarint(&o, 0);    /* untimed_ns */
    for (int i = 0; i < 4; i++)
        rec_put_uvarint(&o, 0); /* the whole cost */
    rec_put_uvarint(&o, 0);     /* spans_lost */
    rec_put_uvarint(&o, pf.allocs);
    rec_put_uvarint(&o, pf.frees);
    rec_put_uvarint(&o, pf.lost);
    rec_put_uvarint(&o, pf.frees_lost);
    rec_put_uvarint(&o, pf.live);
    logbuf_put(b, PYPROF_REC_FOOTER, &o);
}

static void put_footer(logbuf *b, int file) { put_footer_counts(b, file, plan_footer(file)); }

static char dir_path[64], file_path[2][96], peak_path[2][96];

/* A log's magic; put_model: its threads, functions and stacks as file `file` of the
 * series names them. */
static void begin_log(logbuf *b)
{
    b->p = malloc(1024);
    b->len = PYPROF_MAGIC_LEN;
    b->cap = 1024;
    assert_non_null(b->p);
    memcpy(b->p, PYPROF_MAGIC, PYPROF_MAGIC_LEN);
}

static void put_model(logbuf *b, int file)
{
    put_thread(b, (uint64_t)file, 100);
    put_thread(b, (uint64_t)(1 - file), 101);
    for (int f = 0; f < NFUNCS; f++)
        put_code(b, 100 * (uint64_t)file, f);
    for (int s = 1; s < NSTACKS; s++)
        put_stack(b, 100 * (uint64_t)file, s);
}

static void write_file(int file)
{
    logbuf b;
    begin_log(&b);
    put_header(&b, (uint64_t)file, file ? FILE1_US : 0);
    put_model(&b, file);
    if (!file)
        put_span(&b);
    for (int i = 0; i < NEVENTS; i++) {
        int k = i < NEVENTS - 2 ? i : i == NEVENTS - 2 ? NEVENTS - 1 : NEVENTS - 2;
        if (file_of(plan[k].t_us) == file)
            put_event(&b, file, &plan[k]);
    }
    put_footer(&b, file);
    snprintf(file_path[file], sizeof file_path[file], "%s/log.%d.lz4", dir_path, file);
    logbuf_write(&b, file_path[file]);
    free(b.p);
}

/* ---- the rise and fall ---------------------------------------------------------------
 *
 * Process A (pid 4242): a block that stays (C.h), eight of 1 MiB in f that are all freed,
 * a small one in g freed soon after, then three of 256 KiB in f > g, an untracked block
 * and one of 0 bytes that stay.  Its heap peaks when the small block comes, before the
 * first free; at the end only the blocks that stay are in use, none of the eight.
 * Process B (pid 4343) starts PEAK_B_SHIFT_US later and holds 4 MiB briefly, while A is
 * still rising: the two together peak then, at A's seventh block.  Freed and free_us are
 * the plan's own answers. */
#define MIB (1ull << 20)
#define PEAK_B_SHIFT_US 5000
static pevent peak_a[] = {
    {0, 1000, 0, 4, 65536, 0x900000, PYPROF_ALLOC_MALLOC, 0, 0, 0},
    {0, 2000, 0, 1, MIB, 0x100000, PYPROF_ALLOC_PYMEM, 0, 1, 10000},
    {0, 3000, 0, 1, MIB, 0x200000, PYPROF_ALLOC_PYMEM, 0, 1, 11000},
    {0, 4000, 1, 1, MIB, 0x300000, PYPROF_ALLOC_PYMEM, 0, 1, 12000},
    {0, 5000, 0, 1, MIB, 0x400000, PYPROF_ALLOC_PYMEM, 0, 1, 13000},
    {0, 6000, 0, 1, MIB, 0x500000, PYPROF_ALLOC_PYMEM, 0, 1, 14000},
    {0, 7000, 1, 1, MIB, 0x600000, PYPROF_ALLOC_PYMEM, 0, 1, 15000},
    {0, 8000, 0, 1, MIB, 0x700000, PYPROF_ALLOC_PYMEM, 0, 1, 16000},
    {0, 9000, 0, 1, MIB, 0x800000, PYPROF_ALLOC_PYMEM, 0, 1, 17000},
    {0, 9500, 0, 3, 4096, 0xa00000, PYPROF_ALLOC_PYOBJECT, 0, 1, 12000},
    {1, 10000, 0, 0, 0, 0x100000, 0, 0, 0, 0},
    {1, 11000, 0, 0, 0, 0x200000, 0, 0, 0, 0},
    {1, 12000, 0, 0, 0, 0x300000, 0, 0, 0, 0},
    {1, 12000, 0, 0, 0, 0xa00000, 0, 0, 0, 0},
    {1, 13000, 0, 0, 0, 0x400000, 0, 0, 0, 0},
    {1, 14000, 0, 0, 0, 0x500000, 0, 0, 0, 0},
    {1, 15000, 0, 0, 0, 0x600000, 0, 0, 0, 0},
    {1, 16000, 0, 0, 0, 0x700000, 0, 0, 0, 0},
    {1, 17000, 0, 0, 0, 0x800000, 0, 0, 0, 0},
    {0, 20000, 0, 2, 256 * 1024, 0xb00000, PYPROF_ALLOC_MALLOC, 0, 0, 0},
    {0, 21000, 0, 2, 256 * 1024, 0xc00000, PYPROF_ALLOC_MALLOC, 0, 0, 0},
    {0, 22000, 1, 2, 256 * 1024, 0xd00000, PYPROF_ALLOC_MALLOC, 0, 0, 0},
    {0, 23000, 0, 1, MIB, 0xe00000, PYPROF_ALLOC_MALLOC, 1, 0, 0},
    {0, 24000, 0, 3, 0, 0xf00000, PYPROF_ALLOC_PYOBJECT, 0, 0, 0},
};
#define NPEAK_A ((int)(sizeof peak_a / sizeof peak_a[0]))
static pevent peak_b[] = {
    {0, 8000 - PEAK_B_SHIFT_US, 0, 3, 4 * MIB, 0x100000, PYPROF_ALLOC_MMAP, 0, 1,
     9000 - PEAK_B_SHIFT_US},
    {1, 9000 - PEAK_B_SHIFT_US, 0, 0, 0, 0x100000, 0, 0, 0, 0},
};
#define NPEAK_B ((int)(sizeof peak_b / sizeof peak_b[0]))

static void write_peak_log(const char *path, uint64_t pid, uint64_t shift_us, const pevent *ev,
                           int n)
{
    logbuf b;
    begin_log(&b);
    put_header_of(&b, pid, SERIES_START + shift_us * 1000, 0, 0);
    put_model(&b, 0);
    pfooter pf = {0, 0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
        put_event(&b, 0, &ev[i]);
        pf.allocs += !ev[i].is_free;
        pf.frees += ev[i].is_free;
        pf.live += !ev[i].is_free && !ev[i].untracked && !ev[i].freed;
    }
    put_footer_counts(&b, 1, pf);
    logbuf_write(&b, path);
    free(b.p);
}

/* ---- the allocation windows -----------------------------------------------------------
 *
 * A series of two files (pid 4545; file 1 starts WIN_FILE1_US later) whose ALLOC records
 * carry window shifts, and AWINDOW records written after the allocations they hold:
 * W1 8000 +8000 us (planned 4000, shift 4) holds A1 (shift 4) and A3 (no shift), A4 is
 * untracked (shift 3); a pause at 20000 (domains not wrapped) ends at W2, 30000 +1000 us
 * (shift 5); A2 (shift 4, at 50000) is in no window.  In file 1, W3 0 +1000 us (planned
 * 3000, shift 2) holds A5, and a pause with the domains wrapped runs from 1 s to the end.
 * Each allocation is weighed by its own shift alone, whatever window holds it or does
 * not (the design weight: the library keeps the duty 2^-shift). */
#define WIN_FILE1_US 2000000
static char win_path[2][96];

typedef struct pwin {
    int file;
    int64_t t_us; /* on the file's axis */
    uint64_t len_us, planned_us, shift, flags;
} pwin;
static const pwin plan_wins[] = {
    {0, 8000, 8000, 4000, 4, 0},
    {0, 20000, 0, 0, 0, PYPROF_AWINDOW_F_PAUSED},
    {0, 30000, 1000, 1000, 5, 0},
    {1, 0, 1000, 3000, 2, 0},
    {1, 1000000, 0, 0, 0, PYPROF_AWINDOW_F_PAUSED | PYPROF_AWINDOW_F_WRAPPED},
};

typedef struct pwalloc {
    int file;
    int64_t t_us; /* on the file's axis */
    uint64_t size, flags;
} pwalloc;
static const pwalloc plan_walloc[] = {
    {0, 10000, 48, 4 << 1},                             /* A1 */
    {0, 11000, 48, 0},                                  /* A3 */
    {0, 12000, 100, PYPROF_ALLOC_F_UNTRACKED | 3 << 1}, /* A4 */
    {0, 50000, 48, 4 << 1},                             /* A2 */
    {1, 500, 48, 2 << 1},                               /* A5 */
};
#define NWALLOC ((int)(sizeof plan_walloc / sizeof plan_walloc[0]))

static void write_win_file(int file)
{
    logbuf b;
    begin_log(&b);
    put_header_of(&b, 4545, SERIES_START, (uint64_t)file, file ? WIN_FILE1_US : 0);
    put_model(&b, file);
    pfooter pf = {0, 0, 0, 0, 0};
    rec_out o;
    for (int i = 0; i < NWALLOC; i++) {
        const pwalloc *a = &plan_walloc[i];
        if (a->file != file)
            continue;
        logenc_alloc_fields f = {.t_us = (uint64_t)a->t_us,
                                 .stack_id = 10 * (uint64_t)file + 1,
                                 .size = a->size,
                                 .address = 0x1000 * (uint64_t)(i + 1),
                                 .domain = PYPROF_ALLOC_PYOBJECT,
                                 .flags = a->flags};
        rec_out_init(&o, scratch, sizeof scratch);
        assert_int_equal(logenc_put_alloc(&o, &f), 0);
        logbuf_put(&b, PYPROF_REC_ALLOC, &o);
        pf.allocs++;
    }
    for (size_t i = 0; i < sizeof plan_wins / sizeof plan_wins[0]; i++) {
        const pwin *w = &plan_wins[i];
        if (w->file != file)
            continue;
        logenc_awindow_fields f = {(uint64_t)w->t_us, w->len_us, w->planned_us,
                                   w->shift,          6,         w->flags};
        rec_out_init(&o, scratch, sizeof scratch);
        assert_int_equal(logenc_put_awindow(&o, &f), 0);
        logbuf_put(&b, PYPROF_REC_AWINDOW, &o);
    }
    put_footer_counts(&b, file, pf); /* 2 s long */
    snprintf(win_path[file], sizeof win_path[file], "%s/win.%d.lz4", dir_path, file);
    logbuf_write(&b, win_path[file]);
    free(b.p);
}

static int setup(void **state)
{
    (void)state;
    make_plan();
    snprintf(dir_path, sizeof dir_path, "/tmp/test_allocs.XXXXXX");
    assert_non_null(mkdtemp(dir_path));
    write_file(0);
    write_file(1);
    snprintf(peak_path[0], sizeof peak_path[0], "%s/peak_a.lz4", dir_path);
    snprintf(peak_path[1], sizeof peak_path[1], "%s/peak_b.lz4", dir_path);
    write_peak_log(peak_path[0], 4242, 0, peak_a, NPEAK_A);
    write_peak_log(peak_path[1], 4343, PEAK_B_SHIFT_US, peak_b, NPEAK_B);
    write_win_file(0);
    write_win_file(1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(file_path[0]);
    unlink(file_path[1]);
    unlink(peak_path[0]);
    unlink(peak_path[1]);
    unlink(win_path[0]);
    unlink(win_path[1]);
    rmdir(dir_path);
    return 0;
}

/* Both files, named in the wrong order (the model orders a series by seq). */
static profile *load(const profile_filter *f)
{
    profile *p = profile_new(f, 0, NULL);
    assert_non_null(p);
    const char *paths[] = {file_path[1], file_path[0]};
    assert_int_equal(profile_load_paths(p, paths, 2), 0);
    return p;
}

/* ---- naive answers ----------------------------------------------------------------- */

static void naive_estimate(uint64_t size, double *bytes, double *objects)
{
    if (!size) {
        *bytes = (double)INTERVAL;
        *objects = 1;
        return;
    }
    double p = 1.0 - exp(-(double)size / (double)INTERVAL);
    *bytes = (double)size / p;
    *objects = 1.0 / p;
}

static int plan_func(const profile *p, uint32_t f)
{
    for (int i = 0; i < NFUNCS; i++)
        if (!strcmp(p->funcs[f].name, fname[i]) && p->funcs[f].line == fline[i])
            return i;
    fail_msg("function %s is not in the plan", p->funcs[f].name);
    return -1;
}

/* What the filters keep: by thread (-1: both), window and span. */
typedef struct pfilter {
    int thread;
    int has_window;
    double from_s, to_s;
    int span;
} pfilter;

static int kept(const pfilter *k, const pevent *e)
{
    if (e->is_free || (k->thread >= 0 && e->thread != k->thread))
        return 0;
    if (k->has_window && ((double)e->t_us / 1e6 < k->from_s || (double)e->t_us / 1e6 > k->to_s))
        return 0;
    return !k->span || (e->thread == 0 && e->t_us >= SPAN_START_US && e->t_us < SPAN_STOP_US);
}

static int in_use(const pfilter *k, const pevent *e)
{
    if (e->untracked)
        return 0;
    return !e->freed || (k->has_window && (double)e->free_us / 1e6 > k->to_s);
}

/* Naively, the peak of the estimated heap of the events kept (their times on one axis):
 * the heap at every allocation's time, the highest, the earliest on a tie. */
static int naive_peak_found;
static int64_t naive_peak_t;
static double naive_peak_bytes;

static int in_use_at(const pfilter *k, const pevent *e, int64_t t)
{
    return kept(k, e) && !e->untracked && e->t_us <= t && (!e->freed || e->free_us > t);
}

static void naive_peak(const pfilter *k, const pevent *ev, int n)
{
    naive_peak_found = 0;
    naive_peak_t = 0;
    naive_peak_bytes = 0;
    for (int i = 0; i < n; i++) {
        if (!kept(k, &ev[i]) || ev[i].untracked)
            continue;
        int64_t t = ev[i].t_us;
        double h = 0, b, o;
        for (int j = 0; j < n; j++)
            if (in_use_at(k, &ev[j], t)) {
                naive_estimate(ev[j].size, &b, &o);
                h += b;
            }
        double tol = 1e-9 * fabs(naive_peak_bytes) + 1e-6;
        if (!naive_peak_found || h > naive_peak_bytes + tol ||
            (h >= naive_peak_bytes - tol && t < naive_peak_t)) {
            naive_peak_found = 1;
            naive_peak_t = t;
            naive_peak_bytes = h;
        }
    }
}

static void add(allocs_cost *c, const pfilter *k, const pevent *e)
{
    double b, o;
    naive_estimate(e->size, &b, &o);
    c->samples++;
    c->alloc_bytes += b;
    c->alloc_objects += o;
    if (in_use(k, e)) {
        c->inuse_samples++;
        c->inuse_bytes += b;
        c->inuse_objects += o;
    }
    if (naive_peak_found && in_use_at(k, e, naive_peak_t)) {
        c->peak_samples++;
        c->peak_bytes += b;
        c->peak_objects += o;
    }
}

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fabs(want) + 1e-6)
        fail_msg("%.17g is not %.17g", got, want);
}

static void same_cost(const allocs_cost *got, const allocs_cost *want)
{
    assert_int_equal(got->samples, want->samples);
    assert_int_equal(got->inuse_samples, want->inuse_samples);
    near(got->alloc_bytes, want->alloc_bytes);
    near(got->alloc_objects, want->alloc_objects);
    near(got->inuse_bytes, want->inuse_bytes);
    near(got->inuse_objects, want->inuse_objects);
    assert_int_equal(got->peak_samples, want->peak_samples);
    near(got->peak_bytes, want->peak_bytes);
    near(got->peak_objects, want->peak_objects);
}

/* The peak found against the naive one. */
static void same_peak(const allocs_peak *pk, const allocs_cost *all)
{
    assert_int_equal(pk->found, naive_peak_found);
    assert_int_equal(pk->t_us, naive_peak_t);
    near(pk->t_s, (double)naive_peak_t / 1e6);
    near(pk->bytes, naive_peak_bytes);
    near(pk->bytes, all->peak_bytes);
    near(pk->objects, all->peak_objects);
    assert_int_equal(pk->samples, all->peak_samples);
}

/* Every sum of p against the plan under filter k. */
static void check_sums(const profile *p, const pfilter *k)
{
    allocs_counts c;
    assert_int_equal(allocs_sum(p, &c), 0);
    naive_peak(k, plan, NEVENTS);
    assert_true(naive_peak_found);
    allocs_cost all = {0}, dom[PYPROF_ALLOC_DOMAINS] = {{0}}, self[NFUNCS] = {{0}},
                total[NFUNCS] = {{0}};
    uint64_t untracked = 0, freed = 0;
    for (int i = 0; i < NEVENTS; i++) {
        const pevent *e = &plan[i];
        if (!kept(k, e))
            continue;
        add(&all, k, e);
        add(&dom[e->domain], k, e);
        untracked += (uint64_t)e->untracked;
        freed += !e->untracked && !in_use(k, e);
        const pstack *s = &plan_stacks[e->stack];
        if (s->n)
            add(&self[s->func[s->n - 1]], k, e);
        for (int f = 0; f < NFUNCS; f++) {
            int on = 0;
            for (int j = 0; j < s->n; j++)
                on |= s->func[j] == f;
            if (on)
                add(&total[f], k, e);
        }
    }
    assert_true(all.samples > 20); /* every filter keeps enough to mean something */
    assert_int_equal(p->nallocs, all.samples);
    same_cost(&c.all, &all);
    same_cost(&c.process[0], &all);
    same_peak(&c.peak, &all);
    allocs_peak pk;
    assert_int_equal(allocs_find_peak(p, &pk), 0);
    assert_true(pk.found == c.peak.found && pk.t_us == c.peak.t_us &&
                pk.bytes == c.peak.bytes && pk.samples == c.peak.samples);
    /* At the end, in use is allocs_in_use; at the peak, what the peak holds. */
    uint64_t at_peak = 0;
    for (size_t i = 0; i < p->nallocs; i++) {
        assert_int_equal(allocs_in_use_at(p, &p->allocs[i], ALLOCS_END),
                         allocs_in_use(p, &p->allocs[i]));
        at_peak += (uint64_t)allocs_in_use_at(p, &p->allocs[i], c.peak.t_us);
    }
    assert_int_equal(at_peak, c.peak.samples);
    for (int d = 0; d < PYPROF_ALLOC_DOMAINS; d++)
        same_cost(&c.domain[d], &dom[d]);
    assert_int_equal(c.untracked, untracked);
    assert_int_equal(c.freed, freed);
    for (uint32_t f = 0; f < p->nfuncs; f++) {
        int pf = plan_func(p, f);
        same_cost(&c.self[f], &self[pf]);
        same_cost(&c.total[f], &total[pf]);
    }
    /* The orders, and the call tree's weights adding up to the total. */
    uint32_t order[NFUNCS];
    for (int by = ALLOCS_BY_ALLOC; by <= ALLOCS_BY_PEAK; by++)
        for (int t = 0; t < 2; t++) {
            size_t n = allocs_sort_funcs(p, &c, by, t, order);
            const allocs_cost *v = t ? c.total : c.self;
            for (size_t i = 1; i < n; i++)
                assert_true(allocs_key(&v[order[i - 1]], by) >= allocs_key(&v[order[i]], by));
            size_t want = 0;
            for (int f = 0; f < NFUNCS; f++)
                want += total[f].samples > 0;
            assert_int_equal(n, want);
        }
    uint64_t *w = allocs_stack_weights(p, &c, ALLOCS_BY_ALLOC);
    assert_non_null(w);
    double sum = 0;
    for (size_t s = 0; s < p->nstacks; s++)
        sum += (double)w[s];
    assert_true(fabs(sum - all.alloc_bytes) <= (double)p->nstacks);
    free(w);
    allocs_counts_free(&c);
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_estimate(void **state)
{
    (void)state;
    double b, o;
    allocs_estimate(0, 4096, &b, &o);
    assert_true(b == 4096 && o == 1);
    allocs_estimate(100, 0, &b, &o);
    assert_true(b == 100 && o == 1);
    allocs_estimate(1u << 30, 4096, &b, &o); /* certain to be sampled */
    assert_true(b == (double)(1u << 30) && o == 1);
    allocs_estimate(4096, 4096, &b, &o);
    near(o, 1 / (1 - exp(-1.0)));
    near(b, 4096 * o);
    /* Far below the interval, where 1 - exp(-x) loses every digit: 1 / p = I / x + 1/2
     * + x / (12 I) + ... */
    uint64_t big = 1ull << 50;
    allocs_estimate(1, big, &b, &o);
    near(o, (double)big + 0.5);
    near(b, (double)big + 0.5);
}

static void test_load(void **state)
{
    (void)state;
    profile *p = load(NULL);
    assert_int_equal(p->nprocs, 1);
    const profile_process *pr = &p->procs[0];
    assert_int_equal(pr->nfiles, 2);
    assert_int_equal(pr->alloc_interval, INTERVAL);
    assert_int_equal(pr->frees_unmatched, plan_unmatched);
    assert_true(plan_unmatched > 0);
    /* In the order they were read: file 0's, then file 1's with the last two swapped. */
    int nfree = 0, k = 0, nfreed = 0;
    for (int i = 0; i < NEVENTS; i++) {
        if (plan[i].is_free) {
            nfree++;
            continue;
        }
        const pevent *e = &plan[i];
        const profile_alloc *a = &p->allocs[k++];
        double b, o;
        naive_estimate(e->size, &b, &o);
        assert_int_equal(a->t_us, e->t_us);
        assert_int_equal(a->size, e->size);
        near(a->bytes, b);
        near(a->objects, o);
        assert_int_equal(p->threads[a->thread].tid, 100 + e->thread);
        assert_int_equal(a->domain, e->domain);
        assert_int_equal(a->flags, e->untracked ? PYPROF_ALLOC_F_UNTRACKED : 0);
        assert_int_equal(a->freed, e->freed);
        if (e->freed)
            assert_int_equal(a->free_us, e->free_us);
        nfreed += e->freed;
        const profile_stack *st = &p->stacks[a->stack];
        const pstack *ps = &plan_stacks[e->stack];
        assert_int_equal(st->nframes, ps->n);
        for (int j = 0; j < ps->n; j++)
            assert_int_equal(plan_func(p, p->frames[st->first + (uint32_t)j].func),
                             ps->func[j]);
    }
    assert_int_equal(p->nallocs, k);
    assert_int_equal(pr->allocs, k);
    assert_int_equal(pr->allocs_read, k);
    assert_int_equal(pr->frees_read, nfree);
    assert_true(nfreed > 20 && plan[NEVENTS - 2].freed);
    /* The footers: counts summed, blocks followed the last file's. */
    pfooter f0 = plan_footer(0), f1 = plan_footer(1);
    assert_true(pr->has_footer && pr->footer.has_alloc);
    assert_int_equal(pr->footer.alloc_samples, f0.allocs + f1.allocs);
    assert_int_equal(pr->footer.alloc_frees, f0.frees + f1.frees);
    assert_int_equal(pr->footer.alloc_lost, 3);
    assert_int_equal(pr->footer.frees_lost, 2);
    assert_int_equal(pr->footer.alloc_live, f1.live);
    assert_int_equal(pr->files[0].footer.alloc_live, f0.live);
    assert_true(pr->files[0].footer.has_alloc && pr->files[1].footer.has_alloc);
    profile_free(p);
}

static void test_sums(void **state)
{
    (void)state;
    profile *p = load(NULL);
    pfilter k = {-1, 0, 0, 0, 0};
    check_sums(p, &k);
    profile_free(p);
}

/* One load call per file, the later file first: the frees of file 1 still end file 0's
 * allocations. */
static void test_load_apart(void **state)
{
    (void)state;
    profile *p = profile_new(NULL, 0, NULL);
    assert_non_null(p);
    assert_int_equal(profile_load(p, file_path[1]), 0);
    assert_int_equal(profile_load(p, file_path[0]), 0);
    assert_int_equal(p->nprocs, 1);
    assert_int_equal(p->procs[0].frees_unmatched, plan_unmatched);
    pfilter k = {-1, 0, 0, 0, 0};
    check_sums(p, &k);
    profile_free(p);
}

static void test_thread_filter(void **state)
{
    (void)state;
    uint64_t tid = 101;
    profile_filter f = {0};
    f.tids = &tid;
    f.ntids = 1;
    profile *p = load(&f);
    pfilter k = {1, 0, 0, 0, 0};
    check_sums(p, &k);
    profile_free(p);
}

/* A window that spans both files: kept when allocated inside it, in use when not freed
 * by its end. */
static void test_window(void **state)
{
    (void)state;
    profile_filter f = {0};
    f.has_from = f.has_to = 1;
    f.from_s = 0.8;
    f.to_s = 2.6;
    profile *p = load(&f);
    pfilter k = {-1, 1, 0.8, 2.6, 0};
    check_sums(p, &k);
    profile_free(p);
}

static void test_span(void **state)
{
    (void)state;
    const char *names[] = {"req"};
    profile_filter f = {0};
    f.span_names = names;
    f.nspan_names = 1;
    profile *p = load(&f);
    pfilter k = {-1, 0, 0, 0, 1};
    check_sums(p, &k);
    profile_free(p);
}

/* The sums of a profile of the rise-and-fall plan against the plan's events `ev` (their
 * times on the profile's common axis), per function by name. */
static void check_peak_sums(const profile *p, const allocs_counts *c, const pevent *ev, int n)
{
    pfilter k = {-1, 0, 0, 0, 0};
    naive_peak(&k, ev, n);
    assert_true(naive_peak_found);
    allocs_cost all = {0}, self[NFUNCS] = {{0}}, total[NFUNCS] = {{0}};
    for (int i = 0; i < n; i++) {
        const pevent *e = &ev[i];
        if (!kept(&k, e))
            continue;
        add(&all, &k, e);
        const pstack *st = &plan_stacks[e->stack];
        if (st->n)
            add(&self[st->func[st->n - 1]], &k, e);
        for (int f = 0; f < NFUNCS; f++) {
            int on = 0;
            for (int j = 0; j < st->n; j++)
                on |= st->func[j] == f;
            if (on)
                add(&total[f], &k, e);
        }
    }
    same_cost(&c->all, &all);
    same_peak(&c->peak, &all);
    for (uint32_t f = 0; f < p->nfuncs; f++) {
        int pf = plan_func(p, f);
        same_cost(&c->self[f], &self[pf]);
        same_cost(&c->total[f], &total[pf]);
    }
}

/* The heap rises then falls: the peak is at the small block in g, when the eight blocks of
 * f are all alive; f holds most of it, and nothing at the end. */
static void test_peak(void **state)
{
    (void)state;
    profile *p = profile_new(NULL, 0, NULL);
    assert_non_null(p);
    assert_int_equal(profile_load(p, peak_path[0]), 0);
    assert_int_equal(p->nprocs, 1);
    allocs_counts c;
    assert_int_equal(allocs_sum(p, &c), 0);
    check_peak_sums(p, &c, peak_a, NPEAK_A);
    assert_int_equal(c.peak.t_us, 9500);
    assert_int_equal(c.peak.samples, 10);
    /* The numbers, by hand: 8 MiB and the 64 KiB and 4 KiB blocks, each over its chance
     * of being sampled. */
    double want = 0, b, o;
    naive_estimate(MIB, &b, &o);
    want += 8 * b;
    naive_estimate(65536, &b, &o);
    want += b;
    naive_estimate(4096, &b, &o);
    want += b;
    near(c.peak.bytes, want);
    uint32_t order[NFUNCS];
    size_t n = allocs_sort_funcs(p, &c, ALLOCS_BY_PEAK, 0, order);
    assert_true(n >= 3);
    assert_string_equal(p->funcs[order[0]].name, "f");
    naive_estimate(MIB, &b, &o);
    near(c.self[order[0]].peak_bytes, 8 * b);
    assert_true(c.self[order[0]].peak_bytes > 0.95 * c.peak.bytes);
    assert_true(c.self[order[0]].inuse_bytes == 0); /* the end's set is another */
    n = allocs_sort_funcs(p, &c, ALLOCS_BY_INUSE, 0, order);
    assert_string_equal(p->funcs[order[0]].name, "g");
    allocs_counts_free(&c);
    profile_free(p);
}

/* With process B beside it, starting later: one axis from A's start, B's 4 MiB on it from
 * 8000 to 9000 us, so the two peak together at 8000 us (A's seventh block). */
static void test_peak_processes(void **state)
{
    (void)state;
    profile *p = profile_new(NULL, 0, NULL);
    assert_non_null(p);
    const char *paths[] = {peak_path[1], peak_path[0]};
    assert_int_equal(profile_load_paths(p, paths, 2), 0);
    assert_int_equal(p->nprocs, 2);
    pevent ev[NPEAK_A + NPEAK_B];
    memcpy(ev, peak_a, sizeof peak_a);
    for (int i = 0; i < NPEAK_B; i++) {
        ev[NPEAK_A + i] = peak_b[i];
        ev[NPEAK_A + i].t_us += PEAK_B_SHIFT_US;
        ev[NPEAK_A + i].free_us += PEAK_B_SHIFT_US;
    }
    for (uint32_t i = 0; i < 2; i++)
        assert_int_equal(allocs_process_offset_us(p, i),
                         p->procs[i].pid == 4343 ? PEAK_B_SHIFT_US : 0);
    allocs_counts c;
    assert_int_equal(allocs_sum(p, &c), 0);
    check_peak_sums(p, &c, ev, NPEAK_A + NPEAK_B);
    assert_int_equal(c.peak.t_us, 8000);
    near(c.peak.t_s, 0.008);
    for (uint32_t i = 0; i < 2; i++) {
        double b, o;
        naive_estimate(4 * MIB, &b, &o);
        if (p->procs[i].pid == 4343)
            near(c.process[i].peak_bytes, b);
    }
    allocs_counts_free(&c);
    profile_free(p);
}

/* The windows' series (see plan_walloc), loaded as one set and one file per call with
 * the later file first: each allocation stands for what its shift says, and the
 * process's windows are summed the same either way. */
static void test_windows(void **state)
{
    (void)state;
    double b, o, b1, o1;
    allocs_estimate_shifted(48, 4, INTERVAL, &b, &o);
    allocs_estimate(48 << 4, INTERVAL, &b1, &o1);
    near(b, b1);
    near(o, 16 * o1);
    allocs_estimate_shifted(48, 0, INTERVAL, &b, &o);
    allocs_estimate(48, INTERVAL, &b1, &o1);
    assert_true(b == b1 && o == o1);
    /* Past 64 bits: what the size stands for, certain to be sampled. */
    allocs_estimate_shifted(UINT64_MAX, 31, INTERVAL, &b, &o);
    near(b, ldexp((double)UINT64_MAX, 31));
    near(o, ldexp(1.0, 31));
    for (int apart = 0; apart < 2; apart++) {
        profile *p = profile_new(NULL, 0, NULL);
        assert_non_null(p);
        if (apart) {
            assert_int_equal(profile_load(p, win_path[1]), 0);
            assert_int_equal(profile_load(p, win_path[0]), 0);
        } else {
            const char *paths[] = {win_path[1], win_path[0]};
            assert_int_equal(profile_load_paths(p, paths, 2), 0);
        }
        assert_int_equal(p->nprocs, 1);
        assert_int_equal(p->nallocs, NWALLOC);
        for (size_t i = 0; i < p->nallocs; i++) {
            const profile_alloc *a = &p->allocs[i];
            const pwalloc *e = NULL;
            for (int k = 0; k < NWALLOC; k++)
                if (plan_walloc[k].t_us + (plan_walloc[k].file ? WIN_FILE1_US : 0) == a->t_us)
                    e = &plan_walloc[k];
            assert_non_null(e);
            unsigned shift = PYPROF_ALLOC_SHIFT(e->flags);
            naive_estimate(e->size << shift, &b, &o);
            o *= (double)(1u << shift);
            near(a->bytes, b);
            near(a->objects, o);
            allocs_estimate(e->size << shift, INTERVAL, &b1, &o1);
            near(a->bytes, b1);
            assert_int_equal(a->shift, shift);
            assert_int_equal(a->flags, e->flags & PYPROF_ALLOC_F_UNTRACKED);
        }
        const profile_process *pr = &p->procs[0];
        const profile_awindows *aw = &pr->awin;
        assert_int_equal(pr->awindows_read, 5);
        assert_int_equal(pr->end_us, 2 * WIN_FILE1_US);
        assert_int_equal(aw->windows, 3);
        assert_int_equal(aw->window_us, 8000 + 1000 + 1000);
        assert_int_equal(aw->shift_min, 2);
        assert_int_equal(aw->shift_max, 5);
        assert_int_equal(aw->floor_shift, 6);
        assert_int_equal(aw->weighed, 4);
        assert_int_equal(aw->pauses, 2);
        assert_int_equal(aw->paused_unseen_us, 30000 - 20000);
        assert_int_equal(aw->paused_us, 30000 - 20000 + WIN_FILE1_US - 1000000);
        profile_free(p);
    }
    /* A process without windows: nothing weighed, nothing summed. */
    profile *p = profile_new(NULL, 0, NULL);
    assert_non_null(p);
    assert_int_equal(profile_load(p, peak_path[0]), 0);
    profile_awindows none;
    memset(&none, 0, sizeof none);
    assert_memory_equal(&p->procs[0].awin, &none, sizeof none);
    assert_int_equal(p->procs[0].awindows_read, 0);
    profile_free(p);
}

/* A log without allocation sampling has none, and says so. */
static void test_no_allocs(void **state)
{
    (void)state;
    profile *p = profile_new(NULL, 0, NULL);
    assert_non_null(p);
    assert_int_equal(profile_load(p, "tests/fixtures/good.lz4"), 0);
    assert_int_equal(p->nallocs, 0);
    assert_int_equal(p->procs[0].alloc_interval, 0);
    assert_false(p->procs[0].footer.has_alloc);
    allocs_counts c;
    assert_int_equal(allocs_sum(p, &c), 0);
    assert_int_equal(c.all.samples, 0);
    assert_false(c.peak.found);
    assert_true(c.peak.bytes == 0 && c.all.peak_samples == 0);
    allocs_counts_free(&c);
    profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate),       cmocka_unit_test(test_load),
        cmocka_unit_test(test_sums),           cmocka_unit_test(test_load_apart),
        cmocka_unit_test(test_thread_filter),  cmocka_unit_test(test_window),
        cmocka_unit_test(test_span),           cmocka_unit_test(test_peak),
        cmocka_unit_test(test_peak_processes), cmocka_unit_test(test_no_allocs),
        cmocka_unit_test(test_windows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
