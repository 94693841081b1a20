/*
 * Unit tests of the signal path's frame walk (src/lib/walk.c) and code ids
 * (src/lib/codeid.c), linked alone: a chain of CPython 3.11 interpreter frames, code
 * objects, str and bytes objects fabricated in memory with the offsets pyabi_layout gives
 * for 3.11, walked the way the sampling handler walks its own thread (code ids looked up
 * during the walk, CODE records into the code ring).
 *
 * What is held: frames innermost first with their instruction offsets; one id per code
 * object and one CODE record the first time (names as UTF-8, first line, line table); a
 * deep stack keeps its innermost and outermost halves with the cut counted; a cycle is
 * rejected; a frame whose code is not a code object ends the walk as an unreadable tail
 * (or rejects it at the top); a frame whose prologue has not run is hidden; a wild
 * pointer, or a name that is not a str, leaves through the guard, and codeid_abandon then
 * leaves no half-made record behind; a new code object at a reused address gets a new id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pyprof/format.h>

#include "lib/codeid.h"
#include "lib/codetable.h"
#include "lib/pyabi.h"
#include "lib/rrec.h"
#include "lib/ring.h"
#include "lib/safe_read.h"
#include "lib/sigstate.h"
#include "lib/walk.h"

#define CODE_RING_BYTES (1u << 20)
#define MAX_FRAMES 256

static pyabi A;
/* Stand-ins for the interpreter's type objects: only their addresses matter. */
static char code_type[64], str_type[64], bytes_type[64], other_type[64];
static void *table_mem, *ring_mem;
/* Every fabricated object, freed after each test. */
static void *objects[4096];
static unsigned nobjects;

static uintptr_t object(size_t size, const void *type)
{
    size = (size + 15) & ~(size_t)15;
    void *o = aligned_alloc(16, size);
    assert_non_null(o);
    memset(o, 0, size);
    objects[nobjects++] = o;
    *(uint64_t *)((char *)o + PYABI_OB_REFCNT) = 1;
    *(const void **)((char *)o + PYABI_OB_TYPE) = type;
    return (uintptr_t)o;
}

static void put_ptr(uintptr_t o, int off, uintptr_t v) { memcpy((char *)o + off, &v, 8); }
static void put_u64(uintptr_t o, int off, uint64_t v) { memcpy((char *)o + off, &v, 8); }
static void put_i32(uintptr_t o, int off, int32_t v) { memcpy((char *)o + off, &v, 4); }

/* A compact ASCII str (PEP 393), as 3.11 lays one out. */
static uintptr_t str_obj(const char *s)
{
    size_t n = strlen(s);
    uintptr_t o = object((size_t)A.uni_ascii_size + n + 1, str_type);
    put_u64(o, A.str_length, n);
    uint32_t state = 1u << 2 | 1u << 5 | 1u << 6; /* kind 1, compact, ascii */
    memcpy((char *)o + A.str_state, &state, 4);
    memcpy((char *)o + A.uni_ascii_size, s, n);
    return o;
}

static uintptr_t bytes_obj(const void *data, size_t n)
{
    uintptr_t o = object((size_t)A.bytes_data + n + 1, bytes_type);
    put_u64(o, A.bytes_size, n);
    memcpy((char *)o + A.bytes_data, data, n);
    return o;
}

static uintptr_t code_obj(const char *name, const char *file, int first_line,
                          int first_traceable)
{
    static const uint8_t table[] = {0x80, 0x01, 0x02, 0x03}; /* bytes, copied as they are */
    uintptr_t c = object(PYREAD_SPAN + 512, code_type);
    put_ptr(c, A.co_name, str_obj(name));
    if (A.co_qualname >= 0)
        put_ptr(c, A.co_qualname, str_obj(name));
    put_ptr(c, A.co_filename, str_obj(file));
    put_ptr(c, A.co_linetable, bytes_obj(table, sizeof table));
    put_i32(c, A.co_firstlineno, first_line);
    put_i32(c, A.co_firsttraceable, first_traceable);
    return c;
}

/* A frame running `code`, `units` code units into it, called from `back`. */
static uintptr_t frame_obj(uintptr_t code, uintptr_t back, unsigned units)
{
    uintptr_t f = object(PYREAD_SPAN, NULL);
    put_ptr(f, A.fr_code, code);
    put_ptr(f, A.fr_back, back);
    put_ptr(f, A.fr_lasti, code + (uintptr_t)A.co_code_adaptive + PYABI_CODEUNIT * units);
    return f;
}

static int setup(void **state)
{
    (void)state;
    char err[200];
    assert_int_equal(pyabi_layout(&A, 3, 11, 7, err, sizeof err), 0);
    assert_int_equal(A.frame_kind, PYABI_FRAME_INTERP);
    A.code_type = (uintptr_t)code_type;
    A.str_type = (uintptr_t)str_type;
    A.bytes_type = (uintptr_t)bytes_type;
    table_mem = aligned_alloc(64, CODETABLE_BYTES);
    ring_mem = aligned_alloc(64, CODE_RING_BYTES);
    assert_non_null(table_mem);
    assert_non_null(ring_mem);
    memset(table_mem, 0, CODETABLE_BYTES);
    memset(ring_mem, 0, CODE_RING_BYTES);
    codetable_start(table_mem);
    assert_int_equal(ring_init(&sighandler_g.codes, ring_mem, CODE_RING_BYTES), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (unsigned i = 0; i < nobjects; i++)
        free(objects[i]);
    nobjects = 0;
    free(table_mem);
    free(ring_mem);
    return 0;
}

/* A record's stack with its frames after it, as in the ring. */
typedef struct sample {
    rrec_stack r;
    rframe frames[MAX_FRAMES];
} sample;

/* One walk as the handler makes it: the code table held, inside a guarded region whose
 * failure path abandons a half-made CODE record.  Returns walk's result, or 1 when the
 * guard was left through its failure path. */
static int handler_walk(uintptr_t top, sample *s, unsigned max_depth)
{
    memset(s, 0, sizeof *s);
    assert_ptr_equal(rrec_frames(&s->r), s->frames);
    walk_out o = {.a = &A, .t = codetable_enter()};
    int rc;
    safe_jmpbuf jb;
    if (SAFE_GUARD_BEGIN(jb)) {
        rc = walk(&o, top, &s->r, max_depth);
        SAFE_GUARD_END();
    } else {
        codeid_abandon();
        rc = 1;
    }
    codetable_leave(o.t);
    return rc;
}

/* The CODE records committed so far, taken from the ring in order. */
static int take_codes(const rrec_code **out, int max)
{
    int n = 0;
    size_t len;
    const void *rec;
    static char copies[16][8192];
    while ((rec = ring_peek(&sighandler_g.codes, &len)) != NULL) {
        assert_true(n < max && len <= sizeof copies[0]);
        memcpy(copies[n], rec, len);
        out[n] = (const rrec_code *)(void *)copies[n];
        n++;
        ring_release(&sighandler_g.codes);
    }
    return n;
}

static void test_chain_innermost_first_with_codes(void **state)
{
    (void)state;
    uintptr_t outer = code_obj("main", "/srv/app.py", 10, 0);
    uintptr_t mid = code_obj("handle", "/srv/app.py", 20, 0);
    uintptr_t inner = code_obj("parse", "/srv/parse.py", 30, 0);
    /* parse is recursive: two of its frames share one code object. */
    uintptr_t f4 = frame_obj(outer, 0, 0);
    uintptr_t f3 = frame_obj(mid, f4, 7);
    uintptr_t f2 = frame_obj(inner, f3, 3);
    uintptr_t f1 = frame_obj(inner, f2, 5);
    sample s;
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), WALK_OK);
    assert_int_equal(s.r.nframes, 4);
    assert_int_equal(s.r.cut, 0);
    assert_int_equal(s.r.unreadable_tail, 0);
    int32_t offsets[4] = {10, 6, 14, 0}; /* bytes: two per code unit */
    for (int i = 0; i < 4; i++)
        assert_int_equal(s.frames[i].offset, offsets[i]);
    assert_int_equal(s.frames[0].code_id, s.frames[1].code_id);
    assert_true(s.frames[0].code_id >= PYPROF_CODE_FIRST);
    assert_int_not_equal(s.frames[1].code_id, s.frames[2].code_id);
    assert_int_not_equal(s.frames[2].code_id, s.frames[3].code_id);

    const rrec_code *c[8];
    assert_int_equal(take_codes(c, 8), 3); /* one record per code object */
    const char *names[3] = {"parse", "handle", "main"};
    const char *files[3] = {"/srv/parse.py", "/srv/app.py", "/srv/app.py"};
    int lines[3] = {30, 20, 10};
    uint32_t ids[3] = {s.frames[0].code_id, s.frames[2].code_id, s.frames[3].code_id};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c[i]->head.kind, RREC_CODE);
        assert_int_equal(c[i]->code_id, ids[i]);
        assert_int_equal(c[i]->first_line, lines[i]);
        assert_int_equal(c[i]->name_len, strlen(names[i]));
        assert_memory_equal(c[i]->data, names[i], strlen(names[i]));
        assert_int_equal(c[i]->qualname_len, strlen(names[i]));
        assert_int_equal(c[i]->filename_len, strlen(files[i]));
        assert_memory_equal(c[i]->data + 2 * c[i]->name_len, files[i], strlen(files[i]));
        assert_int_equal(c[i]->lt_len, 4);
        assert_int_equal((uint8_t)c[i]->data[2 * c[i]->name_len + c[i]->filename_len], 0x80);
    }

    /* The same stack again: the same ids, and no record made twice. */
    sample again;
    assert_int_equal(handler_walk(f1, &again, MAX_FRAMES), WALK_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(again.frames[i].code_id, s.frames[i].code_id);
    assert_int_equal(take_codes(c, 8), 0);
}

static void test_deep_stack_keeps_both_ends(void **state)
{
    (void)state;
    uintptr_t code = code_obj("recurse", "/srv/deep.py", 1, 0);
    /* 100 frames; frame k (k = 0 innermost) runs k code units in. */
    uintptr_t back = 0, frames[100];
    for (int k = 99; k >= 0; k--)
        back = frames[k] = frame_obj(code, back, (unsigned)k);
    sample s;
    assert_int_equal(handler_walk(frames[0], &s, 10), WALK_OK);
    assert_int_equal(s.r.nframes, 10);
    assert_int_equal(s.r.keep_inner, 5);
    assert_int_equal(s.r.cut, 90);
    for (int i = 0; i < 5; i++)
        assert_int_equal(s.frames[i].offset, 2 * i);
    for (int i = 5; i < 10; i++)
        assert_int_equal(s.frames[i].offset, 2 * (i + 90));
}

static void test_cycle_is_rejected(void **state)
{
    (void)state;
    uintptr_t code = code_obj("loop", "/srv/x.py", 1, 0);
    uintptr_t c = frame_obj(code, 0, 1);
    uintptr_t b = frame_obj(code, c, 2);
    uintptr_t a = frame_obj(code, b, 3);
    put_ptr(c, A.fr_back, a); /* a -> b -> c -> a */
    sample s;
    assert_int_equal(handler_walk(a, &s, MAX_FRAMES), WALK_BAD);
    /* Longer than the memo and the tortoise's first meeting: still caught. */
    uintptr_t first = frame_obj(code, 0, 0), prev = first;
    for (int k = 1; k < 50; k++)
        prev = frame_obj(code, prev, (unsigned)k);
    put_ptr(first, A.fr_back, prev);
    assert_int_equal(handler_walk(prev, &s, MAX_FRAMES), WALK_BAD);
}

static void test_bad_code_ends_the_walk(void **state)
{
    (void)state;
    uintptr_t good = code_obj("ok", "/srv/x.py", 1, 0);
    uintptr_t not_code = object(PYREAD_SPAN, other_type);
    uintptr_t f3 = frame_obj(good, 0, 0);
    uintptr_t f2 = frame_obj(not_code, f3, 0);
    uintptr_t f1 = frame_obj(good, f2, 4);
    sample s;
    /* Below the top: what was read stands, the rest is an unreadable tail. */
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), WALK_OK);
    assert_int_equal(s.r.nframes, 1);
    assert_int_equal(s.r.unreadable_tail, 1);
    assert_int_equal(s.frames[0].offset, 8);
    /* At the top: no sample. */
    assert_int_equal(handler_walk(f2, &s, MAX_FRAMES), WALK_BAD);
    /* A code object with no references left is a freed one. */
    put_u64(good, PYABI_OB_REFCNT, 0);
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), WALK_BAD);
}

static void test_incomplete_frame_is_hidden(void **state)
{
    (void)state;
    uintptr_t caller = code_obj("caller", "/srv/x.py", 1, 0);
    uintptr_t callee = code_obj("callee", "/srv/x.py", 5, 3); /* 3 units of prologue */
    uintptr_t f2 = frame_obj(caller, 0, 6);
    uintptr_t f1 = frame_obj(callee, f2, 1); /* its prologue has not run */
    sample s;
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), WALK_OK);
    assert_int_equal(s.r.nframes, 1);
    assert_int_equal(s.frames[0].offset, 12);
    put_ptr(f1, A.fr_lasti, callee + (uintptr_t)A.co_code_adaptive + 2 * 3); /* now it has */
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), WALK_OK);
    assert_int_equal(s.r.nframes, 2);
}

static void test_wild_pointer_leaves_through_the_guard(void **state)
{
    (void)state;
    uintptr_t code = code_obj("f", "/srv/x.py", 1, 0);
    uintptr_t f1 = frame_obj(code, 0x10, 0); /* a caller in the first page */
    sample s;
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), 1);
    put_ptr(f1, A.fr_back, 0x7f0000000003); /* misaligned */
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), 1);
    put_ptr(f1, A.fr_back, SAFE_USER_END + 4096); /* beyond user space */
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), 1);
}

static void test_bad_name_leaves_no_record(void **state)
{
    (void)state;
    uintptr_t code = code_obj("f", "/srv/x.py", 1, 0);
    uintptr_t name = *(uintptr_t *)(code + (uintptr_t)A.co_name);
    put_ptr(name, PYABI_OB_TYPE, (uintptr_t)other_type); /* not a str */
    uintptr_t f1 = frame_obj(code, 0, 0);
    sample s;
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), 1);
    const rrec_code *c[4];
    assert_int_equal(take_codes(c, 4), 0); /* the half-made record was cancelled */
    assert_int_equal(ring_used(&sighandler_g.codes), 0);
    /* Its slot was given back: once the name is a str, the frame gets an id. */
    put_ptr(name, PYABI_OB_TYPE, (uintptr_t)str_type);
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), WALK_OK);
    assert_true(s.frames[0].code_id >= PYPROF_CODE_FIRST);
    assert_int_equal(take_codes(c, 4), 1);
}

static void test_reused_address_gets_a_new_id(void **state)
{
    (void)state;
    uintptr_t code = code_obj("old", "/srv/x.py", 1, 0);
    uintptr_t f1 = frame_obj(code, 0, 0);
    sample s;
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), WALK_OK);
    uint32_t old_id = s.frames[0].code_id;
    /* Another code object at the same address: other name and first line. */
    put_ptr(code, A.co_name, str_obj("new"));
    put_i32(code, A.co_firstlineno, 77);
    assert_int_equal(handler_walk(f1, &s, MAX_FRAMES), WALK_OK);
    assert_int_not_equal(s.frames[0].code_id, old_id);
    const rrec_code *c[4];
    assert_int_equal(take_codes(c, 4), 2);
    assert_int_equal(c[1]->first_line, 77);
    assert_memory_equal(c[1]->data, "new", 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_chain_innermost_first_with_codes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deep_stack_keeps_both_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cycle_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_code_ends_the_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_incomplete_frame_is_hidden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wild_pointer_leaves_through_the_guard, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_name_leaves_no_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reused_address_gets_a_new_id, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
