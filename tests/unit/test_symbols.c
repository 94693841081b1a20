/*
 * Unit tests for the native symbolizer (src/read/symbols.c), on a real ELF file: this
 * test program itself.  Its module is described the way the library records it (the
 * load bias, PT_LOAD segments and GNU build-id note from dl_iterate_phdr, the file's
 * identity from stat), addresses of its own functions are symbolized, and the names and
 * lines are checked against eu-addr2line run on the same file.  Then the refusals: a
 * wrong build-id, a file that is not the recorded one, a missing file, a device and a
 * FIFO as module paths, an address in no module; and the choice among modules that
 * covered the same addresses at different times.  Last, a root (--root): the recorded
 * path under it first, then as recorded, and its debug root before the host's.
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
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

#include "read/symbols.h"

/* ---- the functions looked up --------------------------------------------------------- */

volatile int symtest_sink;

__attribute__((noinline)) int symtest_target(int x);
__attribute__((noinline)) int symtest_target(int x)
{
    for (int i = 0; i < x; i++)
        symtest_sink += i * x;
    return symtest_sink;
}

__attribute__((noinline)) int symtest_other(int x);
__attribute__((noinline)) int symtest_other(int x)
{
    symtest_sink ^= x;
    return symtest_sink + 3;
}

/* ---- this program's module, as the library records it --------------------------------- */

static char exe_path[4096];
static uint64_t exe_bias;
static uint8_t exe_build_id[64];
static size_t exe_build_id_len;
static pyprof_segment exe_segs[16];
static size_t exe_nseg;
static struct stat exe_st;

static int find_main(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    exe_bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && exe_nseg < 16) {
            uint64_t fl = ((ph->p_flags & PF_X) ? 1 : 0) | ((ph->p_flags & PF_W) ? 2 : 0) |
                          ((ph->p_flags & PF_R) ? 4 : 0);
            exe_segs[exe_nseg++] = (pyprof_segment){ph->p_vaddr, ph->p_memsz, ph->p_offset, fl};
        }
        if (ph->p_type == PT_NOTE) {
            const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
            const uint8_t *end = p + ph->p_memsz;
            while (p + sizeof(ElfW(Nhdr)) <= end) {
                const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
                const uint8_t *name = p + sizeof *n;
                const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
                if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
                    !memcmp(name, "GNU", 4) && n->n_descsz <= sizeof exe_build_id) {
                    memcpy(exe_build_id, desc, n->n_descsz);
                    exe_build_id_len = n->n_descsz;
                }
                p = desc + ((n->n_descsz + 3) & ~3u);
            }
        }
    }
    return 1; /* the first entry is the main program */
}

static int setup(void **state)
{
    (void)state;
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    if (n <= 0)
        return -1;
    exe_path[n] = 0;
    dl_iterate_phdr(find_main, NULL);
    if (stat(exe_path, &exe_st) < 0 || !exe_nseg || !exe_build_id_len)
        return -1;
    return 0;
}

static pyprof_module_rec exe_module(uint64_t id)
{
    pyprof_module_rec m;
    memset(&m, 0, sizeof m);
    m.module_id = id;
    m.path = (pyprof_str){exe_path, strlen(exe_path)};
    m.base = exe_bias;
    m.build_id = (pyprof_str){(const char *)exe_build_id, exe_build_id_len};
    m.nseg = exe_nseg;
    m.segs = exe_segs;
    m.dev = exe_st.st_dev;
    m.ino = exe_st.st_ino;
    m.size = (uint64_t)exe_st.st_size;
    m.mtime_ns = (uint64_t)exe_st.st_mtim.tv_sec * 1000000000u +
                 (uint64_t)exe_st.st_mtim.tv_nsec;
    return m;
}

/* eu-addr2line's function name and line for a module-relative address of this file. */
static void addr2line(uint64_t vaddr, char *func, size_t fcap, int *line)
{
    char cmd[8192], buf[4096];
    snprintf(cmd, sizeof cmd, "eu-addr2line -f -e '%s' 0x%llx", exe_path,
             (unsigned long long)vaddr);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    assert_non_null(fgets(func, (int)fcap, f));
    func[strcspn(func, "\n")] = 0;
    assert_non_null(fgets(buf, sizeof buf, f));
    pclose(f);
    /* "FILE:LINE" or "FILE:LINE:COLUMN" */
    char *colon = strstr(buf, ".c:");
    assert_non_null(colon);
    *line = atoi(colon + 3);
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_eval_names(void **state)
{
    (void)state;
    assert_true(symbols_is_eval_name("_PyEval_EvalFrameDefault"));
    assert_true(symbols_is_eval_name("_PyEval_EvalFrameDefault.cold"));
    assert_true(symbols_is_eval_name("PyEval_EvalFrameEx"));
    assert_true(symbols_is_eval_name("PyEval_EvalFrameEx.part.0"));
    assert_false(symbols_is_eval_name("_PyEval_EvalFrameDefaultX"));
    assert_false(symbols_is_eval_name("_PyEval_EvalFrame"));
    assert_false(symbols_is_eval_name("PyEval_EvalCode"));
}

/* Names and lines agree with eu-addr2line; a return address is looked up one byte back. */
static void test_own_functions(void **state)
{
    (void)state;
    symbols *s = symbols_new(NULL, NULL);
    pyprof_module_rec m = exe_module(1);
    assert_int_equal(symbols_add_module(s, &m, 0), 0);
    uint64_t fns[2] = {(uint64_t)(uintptr_t)&symtest_target,
                       (uint64_t)(uintptr_t)&symtest_other};
    const char *names[2] = {"symtest_target", "symtest_other"};
    for (int k = 0; k < 2; k++) {
        for (uint64_t d = 0; d < 12; d += 3) {
            uint64_t a = fns[k] + d;
            const sym_info *si = symbols_lookup(s, a, 1, 0);
            assert_non_null(si);
            assert_true(si->flags & SYM_RESOLVED);
            assert_false(si->flags & (SYM_EVAL | SYM_INTERP | SYM_LIBC));
            assert_int_equal(si->nframes, 1);
            assert_string_equal(si->frames[0].name, names[k]);
            assert_string_equal(si->frames[0].module, exe_path);
            char func[512];
            int line;
            addr2line(a - exe_bias, func, sizeof func, &line);
            assert_string_equal(func, names[k]);
            assert_int_equal(si->frames[0].line, line);
            assert_true(line > 0);
            /* The same address as a return address is one byte further on. */
            assert_ptr_equal(symbols_lookup(s, a + 1, 1, 1), si);
        }
    }
    assert_int_equal(symbols_nmodules(s), 1);
    const sym_module *sm = symbols_module(s, 0);
    assert_non_null(sm->elf_path);
    assert_string_equal(sm->elf_path, exe_path);
    assert_int_equal(strlen(sm->build_id_hex), 2 * exe_build_id_len);
    assert_true(sm->start <= fns[0] && fns[0] < sm->limit);
    assert_int_equal(symbols_unresolved(s), 0);
    symbols_free(s);
}

/* A module with a build-id that is not the file's is not read: the frame is
 * "basename+0xVADDR", never a name from the wrong file. */
static void test_wrong_build_id(void **state)
{
    (void)state;
    symbols *s = symbols_new("/nonexistent-debug-root", NULL);
    pyprof_module_rec m = exe_module(1);
    uint8_t wrong[64];
    memcpy(wrong, exe_build_id, exe_build_id_len);
    wrong[0] ^= 0xff;
    m.build_id.s = (const char *)wrong;
    assert_int_equal(symbols_add_module(s, &m, 0), 0);
    uint64_t a = (uint64_t)(uintptr_t)&symtest_target;
    const sym_info *si = symbols_lookup(s, a, 1, 0);
    assert_non_null(si);
    assert_false(si->flags & SYM_RESOLVED);
    char want[256];
    const char *base = strrchr(exe_path, '/') + 1;
    snprintf(want, sizeof want, "%s+0x%llx", base, (unsigned long long)(a - exe_bias));
    assert_string_equal(si->frames[0].name, want);
    assert_int_equal(si->frames[0].line, 0);
    assert_null(symbols_module(s, 0)->elf_path);
    assert_int_equal(symbols_unresolved(s), 1);
    symbols_free(s);
}

/* Without a build-id the file must be the recorded one by device, inode, size and
 * modification time. */
static void test_identity_without_build_id(void **state)
{
    (void)state;
    symbols *s = symbols_new(NULL, NULL);
    pyprof_module_rec m = exe_module(1);
    m.build_id = (pyprof_str){"", 0};
    assert_int_equal(symbols_add_module(s, &m, 0), 0);
    uint64_t a = (uint64_t)(uintptr_t)&symtest_other;
    const sym_info *si = symbols_lookup(s, a, 1, 0);
    assert_true(si->flags & SYM_RESOLVED);
    assert_string_equal(si->frames[0].name, "symtest_other");
    symbols_free(s);

    s = symbols_new(NULL, NULL);
    m.size += 1;
    assert_int_equal(symbols_add_module(s, &m, 0), 0);
    si = symbols_lookup(s, a, 1, 0);
    assert_false(si->flags & SYM_RESOLVED);
    symbols_free(s);

    s = symbols_new(NULL, NULL);
    m.size -= 1;
    m.mtime_ns += 1;
    assert_int_equal(symbols_add_module(s, &m, 0), 0);
    si = symbols_lookup(s, a, 1, 0);
    assert_false(si->flags & SYM_RESOLVED);
    symbols_free(s);
}

/* Paths a log may name that must not be read: missing, relative, a device, a FIFO (an
 * open that would block forever without O_NONBLOCK). */
static void test_hostile_paths(void **state)
{
    (void)state;
    char fifo[] = "/tmp/pyprof-symtest-XXXXXX";
    assert_non_null(mkdtemp(fifo));
    char fifo_path[sizeof fifo + 8];
    snprintf(fifo_path, sizeof fifo_path, "%s/fifo", fifo);
    assert_int_equal(mkfifo(fifo_path, 0600), 0);
    const char *paths[] = {"/nonexistent/libfoo.so.1", "libfoo.so.1", "/dev/zero", fifo_path,
                           "/"};
    const char *want[] = {"libfoo.so.1+0x1234", "libfoo.so.1+0x1234", "zero+0x1234",
                          "fifo+0x1234", "[module]+0x1234"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        symbols *s = symbols_new(NULL, NULL);
        pyprof_segment seg = {0x1000, 0x1000, 0, 5};
        pyprof_module_rec m;
        memset(&m, 0, sizeof m);
        m.module_id = 3;
        m.path = (pyprof_str){paths[i], strlen(paths[i])};
        m.base = 0x400000;
        m.build_id = (pyprof_str){"\x01\x02\x03\x04", 4};
        m.nseg = 1;
        m.segs = &seg;
        assert_int_equal(symbols_add_module(s, &m, 0), 0);
        const sym_info *si = symbols_lookup(s, 0x401234, 1, 0);
        assert_non_null(si);
        assert_false(si->flags & SYM_RESOLVED);
        assert_string_equal(si->frames[0].name, want[i]);
        assert_string_equal(si->frames[0].module, paths[i]);
        /* Outside the module's segments: no module. */
        si = symbols_lookup(s, 0x400100, 1, 0);
        assert_true(si->flags & SYM_NO_MODULE);
        assert_string_equal(si->frames[0].name, "0x400100");
        assert_string_equal(si->frames[0].module, "");
        symbols_free(s);
    }
    unlink(fifo_path);
    rmdir(fifo);
}

/* Two modules loaded at the same place one after the other: a sample gets the one that
 * was loaded at its position; a position outside both lives gets the nearest. */
static void test_module_lifetimes(void **state)
{
    (void)state;
    symbols *s = symbols_new(NULL, NULL);
    pyprof_segment seg = {0, 0x10000, 0, 5};
    pyprof_module_rec a, b;
    memset(&a, 0, sizeof a);
    a.module_id = 1;
    a.path = (pyprof_str){"/nonexistent/a.so", 17};
    a.base = 0x7f0000000000;
    a.nseg = 1;
    a.segs = &seg;
    b = a;
    b.module_id = 2;
    b.path = (pyprof_str){"/nonexistent/b.so", 17};
    assert_int_equal(symbols_add_module(s, &a, 10), 0);
    symbols_module_gone(s, 1, 20);
    assert_int_equal(symbols_add_module(s, &b, 30), 0);
    uint64_t addr = 0x7f0000000040;
    assert_string_equal(symbols_lookup(s, addr, 15, 0)->frames[0].name, "a.so+0x40");
    assert_string_equal(symbols_lookup(s, addr, 35, 0)->frames[0].name, "b.so+0x40");
    assert_string_equal(symbols_lookup(s, addr, 5, 0)->frames[0].name, "a.so+0x40");
    assert_string_equal(symbols_lookup(s, addr, 28, 0)->frames[0].name, "b.so+0x40");
    /* A segment whose end wraps around is dropped. */
    pyprof_segment wrap = {UINT64_MAX - 0x10, 0x100, 0, 5};
    a.module_id = 9;
    a.segs = &wrap;
    assert_int_equal(symbols_add_module(s, &a, 40), 0);
    assert_true(symbols_lookup(s, UINT64_MAX - 1, 40, 0)->flags & SYM_NO_MODULE);
    symbols_free(s);
}

/* Copies the file `from` to `to`, making the directories above `to`. */
static void copy_file(const char *from, const char *to)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", to);
    for (char *c = dir + 1; *c; c++)
        if (*c == '/') {
            *c = 0;
            mkdir(dir, 0700);
            *c = '/';
        }
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    assert_int_equal(n, 0);
    close(in);
    close(out);
}

/* Symbolizes symtest_target with module `m` and root `root`: the file it was read from,
 * or NULL when none was found (the frame then a raw offset). */
static const char *elf_under_root(const char *root, const pyprof_module_rec *m, char *buf,
                                  size_t cap)
{
    symbols *s = symbols_new("/nonexistent-debug-root", root);
    assert_non_null(s);
    assert_int_equal(symbols_add_module(s, m, 0), 0);
    const sym_info *si = symbols_lookup(s, (uint64_t)(uintptr_t)&symtest_target, 1, 0);
    assert_non_null(si);
    const char *elf = symbols_module(s, 0)->elf_path;
    if (elf) {
        assert_true(si->flags & SYM_RESOLVED);
        assert_string_equal(si->frames[0].name, "symtest_target");
        assert_string_equal(si->frames[0].module, m->path.s); /* the recorded path */
        snprintf(buf, cap, "%s", elf);
    } else {
        assert_false(si->flags & SYM_RESOLVED);
    }
    symbols_free(s);
    return elf ? buf : NULL;
}

/* A process that ran in another root recorded its paths as it saw them: the file is
 * looked for under the root first, with the same build-id check, then as recorded. */
static void test_root(void **state)
{
    (void)state;
    char root[] = "/tmp/pyprof-symroot-XXXXXX";
    assert_non_null(mkdtemp(root));
    char got[4096], want[8192], root_slash[sizeof root + 1];
    snprintf(root_slash, sizeof root_slash, "%s/", root);
    /* Recorded as /opt/app/bin/prog, which only the root has. */
    const char *recorded = "/opt/app/bin/prog";
    snprintf(want, sizeof want, "%s%s", root, recorded);
    copy_file(exe_path, want);
    pyprof_module_rec m = exe_module(1);
    m.path = (pyprof_str){recorded, strlen(recorded)};
    assert_null(elf_under_root(NULL, &m, got, sizeof got));
    assert_string_equal(elf_under_root(root, &m, got, sizeof got), want);
    assert_string_equal(elf_under_root(root_slash, &m, got, sizeof got), want);
    assert_null(elf_under_root("tmp", &m, got, sizeof got)); /* a relative root: nothing */
    /* Without a build-id: identified by device, inode, size and time, as without a root. */
    struct stat st;
    assert_int_equal(stat(want, &st), 0);
    pyprof_module_rec nb = m;
    nb.build_id = (pyprof_str){"", 0};
    nb.dev = st.st_dev;
    nb.ino = st.st_ino;
    nb.size = (uint64_t)st.st_size;
    nb.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    assert_string_equal(elf_under_root(root, &nb, got, sizeof got), want);
    nb.ino ^= 1;
    assert_null(elf_under_root(root, &nb, got, sizeof got));
    /* The root's file is not the recorded one (another build-id): the recorded path. */
    m = exe_module(1);
    snprintf(want, sizeof want, "%s%s", root, exe_path);
    copy_file("/proc/self/cmdline", want);
    assert_string_equal(elf_under_root(root, &m, got, sizeof got), exe_path);
    unlink(want);
    /* Neither path: the build-id file under the root's debug root. */
    m.path = (pyprof_str){"/gone/prog", 10};
    int n = snprintf(want, sizeof want, "%s/nonexistent-debug-root/.build-id/%02x/", root,
                     exe_build_id[0]);
    for (size_t i = 1; i < exe_build_id_len; i++)
        n += snprintf(want + n, sizeof want - (size_t)n, "%02x", exe_build_id[i]);
    snprintf(want + n, sizeof want - (size_t)n, ".debug");
    copy_file(exe_path, want);
    assert_string_equal(elf_under_root(root, &m, got, sizeof got), want);
    assert_null(elf_under_root(NULL, &m, got, sizeof got));
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_names),     cmocka_unit_test(test_own_functions),
        cmocka_unit_test(test_wrong_build_id), cmocka_unit_test(test_identity_without_build_id),
        cmocka_unit_test(test_hostile_paths),  cmocka_unit_test(test_module_lifetimes),
        cmocka_unit_test(test_root),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
