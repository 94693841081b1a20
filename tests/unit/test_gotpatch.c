/*
 * Unit tests of src/lib/gotpatch.c, real and unmocked, in this process.  gotpatch.o is
 * linked into this test program, so the program is the module gotpatch leaves alone (as
 * libpyprof.so is in a profiled process), while the shared objects it loaded, the C
 * library and liblz4 among them, get their GOT slots of malloc, calloc, realloc and free
 * pointed at counting wrappers that forward through the originals gotpatch resolved.
 * What is checked: the slots themselves (found here from each module's dynamic section,
 * independently of gotpatch), that calls made from liblz4 and from inside the C library
 * reach the wrappers while this program's own calls do not, that the data still
 * round-trips, that the C library's RELRO pages are read-only again, that a library
 * dlopen'd later (zlib, or zstd) is patched by gotpatch_refresh and only then, that a
 * second refresh finds nothing, refreshes while other threads load and unload
 * libraries, a fork child, and the refusals (refresh before install, a second install,
 * bad arguments).  The tests run in order: the first ones see nothing installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <lz4.h>
#include <lz4frame.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/gotpatch.h"

/* The relocations looked at here (gotpatch supports x86_64, and aarch64 untested). */
#if defined(__aarch64__)
#define T_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define T_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#define T_JUMP_SLOT R_X86_64_JUMP_SLOT
#define T_GLOB_DAT R_X86_64_GLOB_DAT
#endif

/* ElfW(...) under names clang-format lays out as types. */
typedef ElfW(Addr) elf_addr;
typedef ElfW(Dyn) elf_dyn;
typedef ElfW(Phdr) elf_phdr;
typedef ElfW(Rela) elf_rela;
typedef ElfW(Sym) elf_sym;

enum { S_MALLOC, S_CALLOC, S_REALLOC, S_FREE, S_N };
static const char *const names[S_N] = {"malloc", "calloc", "realloc", "free"};
static void *orig[S_N];
static atomic_ulong calls[S_N];

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);

/* The wrappers forward through orig[], which gotpatch fills before its first write. */
static void *count_malloc(size_t n)
{
    atomic_fetch_add(&calls[S_MALLOC], 1);
    return ((malloc_fn)orig[S_MALLOC])(n);
}

static void *count_calloc(size_t k, size_t n)
{
    atomic_fetch_add(&calls[S_CALLOC], 1);
    return ((calloc_fn)orig[S_CALLOC])(k, n);
}

static void *count_realloc(void *p, size_t n)
{
    atomic_fetch_add(&calls[S_REALLOC], 1);
    return ((realloc_fn)orig[S_REALLOC])(p, n);
}

static void count_free(void *p)
{
    atomic_fetch_add(&calls[S_FREE], 1);
    ((free_fn)orig[S_FREE])(p);
}

/* A second user's wrapper: forwards. */
static void *orig_memset[1];
static void *count_memset(void *p, int c, size_t n)
{
    return ((void *(*)(void *, int, size_t))orig_memset[0])(p, c, n);
}

static const gotpatch_sym syms[S_N] = {
    {"malloc", (void *)count_malloc},
    {"calloc", (void *)count_calloc},
    {"realloc", (void *)count_realloc},
    {"free", (void *)count_free},
};

static unsigned long allocs(void)
{
    return atomic_load(&calls[S_MALLOC]) + atomic_load(&calls[S_CALLOC]) +
           atomic_load(&calls[S_REALLOC]);
}

static unsigned long frees(void) { return atomic_load(&calls[S_FREE]); }

/* ---- a module's GOT slot of a name, read here without gotpatch ---------------------- */

typedef struct module_q {
    const char *want; /* a substring of the name; "" the main program */
    uintptr_t base, relro_lo, relro_hi;
    const elf_dyn *dyn;
    const elf_phdr *phdr;
    int phnum;
    int found;
} module_q;

static int find_module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    module_q *q = arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    (void)size;
    if (*q->want ? !strstr(name, q->want) : *name != '\0')
        return 0;
    long page = sysconf(_SC_PAGESIZE);
    q->base = info->dlpi_addr;
    q->phdr = info->dlpi_phdr;
    q->phnum = info->dlpi_phnum;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const elf_phdr *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            q->dyn = (const elf_dyn *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_GNU_RELRO) {
            q->relro_lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)(page - 1);
            q->relro_hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) &
                          ~(uintptr_t)(page - 1);
        }
    }
    q->found = 1;
    return 1;
}

static module_q find_module(const char *want)
{
    module_q q = {.want = want};
    dl_iterate_phdr(find_module_cb, &q);
    if (!q.found || !q.dyn)
        fail_msg("module '%s' is not loaded", want);
    return q;
}

static uintptr_t dptr(const module_q *q, elf_addr p) { return p < q->base ? q->base + p : p; }

/* The slot of the first JUMP_SLOT or GLOB_DAT relocation of `name` in the module, or 0;
 * *type gets the relocation type. */
static void **got_slot(const module_q *q, const char *name, unsigned *type)
{
    const elf_sym *symtab = NULL;
    const char *strtab = NULL;
    const elf_rela *tab[2] = {NULL, NULL};
    size_t size[2] = {0, 0};
    for (const elf_dyn *d = q->dyn; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_SYMTAB)
            symtab = (const elf_sym *)dptr(q, d->d_un.d_ptr);
        else if (d->d_tag == DT_STRTAB)
            strtab = (const char *)dptr(q, d->d_un.d_ptr);
        else if (d->d_tag == DT_JMPREL)
            tab[0] = (const elf_rela *)dptr(q, d->d_un.d_ptr);
        else if (d->d_tag == DT_PLTRELSZ)
            size[0] = d->d_un.d_val;
        else if (d->d_tag == DT_RELA)
            tab[1] = (const elf_rela *)dptr(q, d->d_un.d_ptr);
        else if (d->d_tag == DT_RELASZ)
            size[1] = d->d_un.d_val;
    }
    assert_non_null(symtab);
    assert_non_null(strtab);
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; tab[t] && i < size[t] / sizeof(elf_rela); i++) {
            const elf_rela *r = &tab[t][i];
            unsigned ty = (unsigned)ELF64_R_TYPE(r->r_info);
            size_t si = ELF64_R_SYM(r->r_info);
            if (si && (ty == T_JUMP_SLOT || ty == T_GLOB_DAT) &&
                !strcmp(strtab + symtab[si].st_name, name)) {
                *type = ty;
                return (void **)(q->base + r->r_offset);
            }
        }
    return NULL;
}

static int in_module(const module_q *q, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < q->phnum; i++)
        if (q->phdr[i].p_type == PT_LOAD && a >= q->base + q->phdr[i].p_vaddr &&
            a < q->base + q->phdr[i].p_vaddr + q->phdr[i].p_memsz)
            return 1;
    return 0;
}

static const char *slot_state(const module_q *q, void **slot, int s)
{
    void *v = *slot;
    if (v == syms[s].replacement)
        return "patched";
    if (v == orig[s] || v == dlsym(RTLD_DEFAULT, names[s]))
        return "bound";
    return in_module(q, v) ? "lazy (PLT stub)" : "other";
}

/* The permissions /proc/self/maps shows for every mapping overlapping [lo, hi) must all
 * be `perms`; returns how many mappings that was. */
static int check_maps(uintptr_t lo, uintptr_t hi, const char *perms)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    assert_non_null(f);
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char p[8];
        if (sscanf(line, "%lx-%lx %7s", &a, &b, p) != 3 || b <= lo || a >= hi)
            continue;
        if (strcmp(p, perms))
            fail_msg("mapping %s is %s, not %s", line, p, perms);
        n++;
    }
    fclose(f);
    return n;
}

/* ---- a thread calling through the slots while they are written ------------------- */

static atomic_int hammer_stop;

static atomic_ulong hammer_rounds;

/* No cmocka assertion here: they belong to the main thread. */
static void *hammer(void *arg)
{
    (void)arg;
    while (!atomic_load(&hammer_stop)) {
        LZ4_stream_t *s = LZ4_createStream();
        if (s)
            LZ4_freeStream(s);
        FILE *f = fopen("/dev/null", "r");
        if (f)
            fclose(f);
        atomic_fetch_add(&hammer_rounds, 1);
    }
    return NULL;
}

/* ---- the tests, in order ------------------------------------------------------------ */

static void test_refresh_before_install(void **state)
{
    unsigned m = 99, s = 99;
    assert_int_equal(gotpatch_refresh(), -1);
    gotpatch_stats(&m, &s);
    assert_int_equal(m, 0);
    assert_int_equal(s, 0);
}

static void test_bad_arguments(void **state)
{
    char err[200] = "";
    void *o[S_N];
    gotpatch_sym bad[1] = {{"malloc", NULL}};
    assert_int_equal(gotpatch_install(NULL, 1, o, err, sizeof err), -1);
    assert_true(err[0] != '\0');
    err[0] = '\0';
    assert_int_equal(gotpatch_install(syms, 0, o, err, sizeof err), -1);
    assert_true(err[0] != '\0');
    err[0] = '\0';
    assert_int_equal(gotpatch_install(bad, 1, o, err, sizeof err), -1);
    assert_non_null(strstr(err, "replacement"));
    /* None of that installed anything. */
    assert_int_equal(gotpatch_refresh(), -1);
}

static void test_install(void **state)
{
    module_q libc = find_module("libc.so"), lz4 = find_module("liblz4"), self = find_module("");
    unsigned ty_libc, ty_lz4, ty_self;
    void **libc_malloc = got_slot(&libc, "malloc", &ty_libc);
    void **lz4_free = got_slot(&lz4, "free", &ty_lz4);
    void **self_malloc = got_slot(&self, "malloc", &ty_self);
    assert_non_null(libc_malloc);
    assert_non_null(lz4_free);
    assert_non_null(self_malloc);
    print_message("before: libc's malloc %s (%s), liblz4's free %s (%s), ours %s (%s)\n",
                  ty_libc == T_GLOB_DAT ? "GLOB_DAT" : "JUMP_SLOT",
                  slot_state(&libc, libc_malloc, S_MALLOC),
                  ty_lz4 == T_GLOB_DAT ? "GLOB_DAT" : "JUMP_SLOT",
                  slot_state(&lz4, lz4_free, S_FREE),
                  ty_self == T_GLOB_DAT ? "GLOB_DAT" : "JUMP_SLOT",
                  slot_state(&self, self_malloc, S_MALLOC));
    void *self_before = *self_malloc;

    /* Another thread calls through the slots being written. */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hammer, NULL), 0);
    while (atomic_load(&hammer_rounds) < 100)
        sched_yield();

    char err[200] = "";
    int rc = gotpatch_install(syms, S_N, orig, err, sizeof err);
    usleep(20000);
    atomic_store(&hammer_stop, 1);
    assert_int_equal(pthread_join(t, NULL), 0);
    if (rc < 0)
        fail_msg("install: %s", err);
    print_message("install wrote %d slots; the other thread ran %lu rounds\n", rc,
                  (unsigned long)atomic_load(&hammer_rounds));
    assert_true(rc >= 4);

    for (int s = 0; s < S_N; s++) {
        assert_non_null(orig[s]);
        /* A PIE program takes no function's address through a canonical PLT entry, so the
         * originals are what dlsym answers. */
        assert_ptr_equal(orig[s], dlsym(RTLD_DEFAULT, names[s]));
    }
    unsigned m, sl;
    gotpatch_stats(&m, &sl);
    print_message("modules %u, slots %u\n", m, sl);
    assert_int_equal(sl, (unsigned)rc);
    assert_true(m >= 2); /* the C library and liblz4 at least */

    /* The slots themselves: the C library's (in its RELRO), liblz4's; not ours. */
    assert_ptr_equal(*libc_malloc, (void *)count_malloc);
    assert_ptr_equal(*lz4_free, (void *)count_free);
    assert_ptr_equal(*self_malloc, self_before);
    assert_ptr_not_equal(*self_malloc, (void *)count_malloc);
    assert_true((uintptr_t)libc_malloc >= libc.relro_lo &&
                (uintptr_t)libc_malloc < libc.relro_hi);

    /* The C library's RELRO pages are read-only again. */
    assert_true(libc.relro_lo < libc.relro_hi);
    assert_true(check_maps(libc.relro_lo, libc.relro_hi, "r--p") >= 1);

    /* Once only. */
    err[0] = '\0';
    void *o2[S_N];
    assert_int_equal(gotpatch_install(syms, S_N, o2, err, sizeof err), -1);
    assert_non_null(strstr(err, "already"));

    /* Another user's names are added, and patched in the modules patched before: the
     * C library's own memset slot (it calls memset through its PLT) and liblz4's. */
    static const gotpatch_sym more[1] = {{"memset", (void *)count_memset}};
    int more_rc = gotpatch_install(more, 1, orig_memset, err, sizeof err);
    assert_true(more_rc >= 0);
    unsigned m2, sl2;
    gotpatch_stats(&m2, &sl2);
    assert_int_equal(sl2, sl + (unsigned)more_rc);
    assert_ptr_equal(orig_memset[0], dlsym(RTLD_DEFAULT, "memset"));
    assert_int_equal(gotpatch_install(more, 1, orig_memset, err, sizeof err), -1);
    assert_non_null(strstr(err, "already"));
}

static void test_own_calls_left_alone(void **state)
{
    unsigned long a = allocs(), f = frees();
    void *volatile p = malloc(64);
    void *volatile q = calloc(4, 16);
    p = realloc(p, 128);
    unsigned long a2 = allocs();
    free(p);
    free(q);
    unsigned long f2 = frees();
    assert_int_equal(a2, a);
    assert_int_equal(f2, f);
}

static void test_liblz4_calls_wrappers(void **state)
{
    unsigned long a = allocs(), f = frees();
    LZ4_stream_t *s = LZ4_createStream(); /* malloc */
    assert_non_null(s);
    unsigned long a1 = allocs();
    LZ4_freeStream(s);
    unsigned long f1 = frees();
    assert_true(a1 > a);
    assert_true(f1 > f);

    /* A frame through the decompression context: liblz4 allocates it and its buffers
     * through the wrappers, and the data comes back intact. */
    char src[20000], dst[20000];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (char)("gotpatch"[i % 8] + (i / 1000));
    size_t cap = LZ4F_compressFrameBound(sizeof src, NULL);
    char *frame = malloc(cap);
    assert_non_null(frame);
    size_t flen = LZ4F_compressFrame(frame, cap, src, sizeof src, NULL);
    assert_false(LZ4F_isError(flen));
    a = allocs();
    f = frees();
    LZ4F_dctx *d = NULL;
    assert_false(LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)));
    size_t out = sizeof dst, in = flen;
    size_t r = LZ4F_decompress(d, dst, &out, frame, &in, NULL);
    assert_false(LZ4F_isError(r));
    assert_int_equal(r, 0);
    assert_int_equal(out, sizeof src);
    assert_memory_equal(dst, src, sizeof src);
    LZ4F_freeDecompressionContext(d);
    assert_true(allocs() > a);
    assert_true(frees() > f);
    free(frame);
}

static void test_libc_calls_wrappers(void **state)
{
    /* fopen allocates its FILE inside the C library, through the C library's GOT. */
    unsigned long a = allocs(), f = frees();
    FILE *fp = fopen("/dev/null", "r");
    assert_non_null(fp);
    unsigned long a1 = allocs();
    fclose(fp);
    unsigned long f1 = frees();
    assert_true(a1 > a);
    assert_true(f1 > f);
}

/* A compression library this process has not loaded yet, round-tripping data through
 * functions that allocate through its GOT: zlib (compress and uncompress; deflateInit
 * and inflateInit allocate), else zstd (a sanitizer build links libdw without
 * --as-needed, and libdw brings zlib in). */
typedef struct codec {
    const char *file, *module;
} codec;

static const codec codecs[] = {{"libz.so.1", "libz.so"}, {"libzstd.so.1", "libzstd.so"}};

typedef int (*z_fn)(unsigned char *, unsigned long *, const unsigned char *, unsigned long);
typedef size_t (*zstd_compress_fn)(void *, size_t, const void *, size_t, int);
typedef size_t (*zstd_decompress_fn)(void *, size_t, const void *, size_t);
typedef unsigned (*zstd_iserror_fn)(size_t);

static void roundtrip(const codec *c, void *h)
{
    unsigned char src[5000], z[6000], back[5000];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 7 % 251);
    if (!strcmp(c->file, "libz.so.1")) {
        z_fn zcompress = (z_fn)dlsym(h, "compress"), zuncompress = (z_fn)dlsym(h, "uncompress");
        assert_non_null(zcompress);
        assert_non_null(zuncompress);
        unsigned long zlen = sizeof z, blen = sizeof back;
        assert_int_equal(zcompress(z, &zlen, src, sizeof src), 0);
        assert_int_equal(zuncompress(back, &blen, z, zlen), 0);
        assert_int_equal(blen, sizeof src);
    } else {
        zstd_compress_fn zc = (zstd_compress_fn)dlsym(h, "ZSTD_compress");
        zstd_decompress_fn zd = (zstd_decompress_fn)dlsym(h, "ZSTD_decompress");
        zstd_iserror_fn ze = (zstd_iserror_fn)dlsym(h, "ZSTD_isError");
        assert_non_null(zc);
        assert_non_null(zd);
        assert_non_null(ze);
        size_t zlen = zc(z, sizeof z, src, sizeof src, 3);
        assert_false(ze(zlen));
        size_t blen = zd(back, sizeof back, z, zlen);
        assert_false(ze(blen));
        assert_int_equal(blen, sizeof src);
    }
    assert_memory_equal(back, src, sizeof src);
}

static void test_refresh_after_dlopen(void **state)
{
    const codec *c = NULL;
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0] && !c; i++) {
        void *loaded = dlopen(codecs[i].file, RTLD_NOW | RTLD_NOLOAD);
        if (!loaded)
            c = &codecs[i];
        else
            dlclose(loaded);
    }
    if (!c)
        skip(); /* both loaded already: no library new to this process at hand */
    void *h = dlopen(c->file, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        fail_msg("dlopen(%s): %s", c->file, dlerror());

    /* Bound at load to the originals: it allocates past the wrappers. */
    unsigned long a = allocs(), f = frees();
    roundtrip(c, h);
    unsigned long a1 = allocs(), f1 = frees();
    assert_true(a1 == a);
    assert_true(f1 == f);

    unsigned m0, s0, m1, s1;
    gotpatch_stats(&m0, &s0);
    int rc = gotpatch_refresh();
    gotpatch_stats(&m1, &s1);
    print_message("refresh after dlopen(%s) wrote %d slots\n", c->file, rc);
    assert_true(rc >= 2); /* its malloc and free at least */
    assert_int_equal(m1, m0 + 1);
    assert_int_equal(s1, s0 + (unsigned)rc);

    module_q z = find_module(c->module);
    unsigned ty;
    void **zfree = got_slot(&z, "free", &ty);
    assert_non_null(zfree);
    assert_ptr_equal(*zfree, (void *)count_free);
    if (z.relro_lo < z.relro_hi)
        assert_true(check_maps(z.relro_lo, z.relro_hi, "r--p") >= 1);

    a = allocs();
    f = frees();
    roundtrip(c, h);
    assert_true(allocs() > a);
    assert_true(frees() > f);

    /* Nothing new: nothing written. */
    assert_int_equal(gotpatch_refresh(), 0);
    gotpatch_stats(&m0, &s0);
    assert_int_equal(m0, m1);
    assert_int_equal(s0, s1);
    /* It stays loaded: its slots point into this program, which stays loaded too. */
}

/* ---- modules loaded and unloaded while refresh runs ------------------------------ */

/* Libraries of every Debian system (dpkg's and python3's dependencies) that no test
 * library here depends on; those that fail to load are left out. */
static const char *const churn_libs[] = {"libexpat.so.1", "libsqlite3.so.0", "libzstd.so.1",
                                         "libbz2.so.1.0", "liblzma.so.5"};
static atomic_int churn_stop;
static atomic_ulong churn_loads;

static void *churn(void *arg)
{
    (void)arg;
    while (!atomic_load(&churn_stop))
        for (size_t i = 0; i < sizeof churn_libs / sizeof churn_libs[0]; i++) {
            void *h = dlopen(churn_libs[i], RTLD_NOW | RTLD_LOCAL);
            if (h) {
                atomic_fetch_add(&churn_loads, 1);
                dlclose(h);
            }
        }
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The churn and the refreshes, in a fork child (so that a fault kills it instead of
 * reaching cmocka's handler with the loader's lock held): 0, or what failed. */
static int churn_child(void)
{
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    gotpatch_after_fork_child();
    pthread_t t[2];
    unsigned m0, s0, m1, s1;
    gotpatch_stats(&m0, &s0);
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, churn, NULL))
            return 10;
    unsigned long refreshes = 0, written = 0;
    int bad = 0;
    for (double end = now_s() + 2.0; now_s() < end; refreshes++) {
        int rc = gotpatch_refresh();
        if (rc < 0)
            bad++;
        else
            written += (unsigned long)rc;
    }
    atomic_store(&churn_stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    gotpatch_stats(&m1, &s1);
    printf("%lu loads, %lu refreshes writing %lu slots in %u modules\n",
           (unsigned long)atomic_load(&churn_loads), refreshes, written, m1 - m0);
    fflush(stdout);
    if (bad)
        return 11;
    if (atomic_load(&churn_loads) == 0)
        return 12;
    if (s1 - s0 != written)
        return 13;

    /* What stays loaded is patched and closed again. */
    void *h = dlopen("libexpat.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        if (gotpatch_refresh() < 0)
            return 14;
        module_q x = find_module("libexpat.so");
        unsigned ty;
        void **xfree = got_slot(&x, "free", &ty);
        if (!xfree || *xfree != (void *)count_free)
            return 15;
        if (x.relro_lo < x.relro_hi && check_maps(x.relro_lo, x.relro_hi, "r--p") < 1)
            return 16;
        dlclose(h);
    }
    return 0;
}

/* Another thread's dlopen lists a module before relocating it and protecting its RELRO:
 * a refresh that wrote it then, or closed its RELRO pages, would make either side fault.
 * Before that was handled, two seconds of this faulted about half the time. */
static void test_refresh_during_dlopen(void **state)
{
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(churn_child());
    int st = 0;
    pid_t got = 0;
    for (double end = now_s() + 60; got == 0 && now_s() < end; usleep(10000))
        got = waitpid(pid, &st, WNOHANG);
    if (got == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        fail_msg("the child did not finish in 60 s");
    }
    assert_int_equal(got, pid);
    if (WIFSIGNALED(st))
        fail_msg("the child died of signal %d", WTERMSIG(st));
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);

    module_q libc = find_module("libc.so");
    assert_true(check_maps(libc.relro_lo, libc.relro_hi, "r--p") >= 1);
}

static void test_fork_child(void **state)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        gotpatch_after_fork_child();
        if (gotpatch_refresh() != 0)
            _exit(2);
        unsigned long a = allocs();
        FILE *fp = fopen("/dev/null", "r");
        if (!fp || allocs() <= a)
            _exit(3);
        fclose(fp);
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refresh_before_install),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_install),
        cmocka_unit_test(test_own_calls_left_alone),
        cmocka_unit_test(test_liblz4_calls_wrappers),
        cmocka_unit_test(test_libc_calls_wrappers),
        cmocka_unit_test(test_refresh_after_dlopen),
        cmocka_unit_test(test_refresh_during_dlopen),
        cmocka_unit_test(test_fork_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
