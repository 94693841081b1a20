/*
 * symbols: native addresses to names, lines and inlined frames.  See symbols.h.
 *
 * Each module with a usable ELF file gets its own libdwfl session, reported with
 * dwfl_report_elf at the recorded load bias, so runtime addresses are looked up as they
 * are and two modules that were loaded at the same place one after the other never mix.
 * libdwfl reads .symtab, .dynsym and .gnu_debugdata, and the DWARF of the file or of its
 * separate debug file; the separate file is found by our own callback (find_debuginfo),
 * not libdwfl's standard one, because the standard one may ask a debuginfod server for
 * any build-id a log names and follows .gnu_debuglink names without a build-id check.
 *
 * A symbol is only believed inside its size: dwfl_module_addrinfo may answer with the
 * nearest sizeless symbol below an address, which in a stripped binary is often an
 * unrelated function, so a sizeless symbol counts only at its exact address.
 *
 * Addresses go to modules through a table of all recorded segments sorted by start, with
 * the running maximum of their ends, so the segments that cover an address are found by
 * a binary search and a short walk back even when modules overlap (one unloaded, another
 * loaded at its place).
 */
#include "symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/growarray.h"
#include "common/mix64.h"

#define MAX_BUILD_ID 64 /* bytes; longer recorded ids are refused */
#define MAX_INLINE 64   /* inlined levels kept per address */
#define NO_MODULE UINT32_MAX

enum { ELF_UNTRIED = 0, ELF_READY = 1, ELF_NONE = -1 };

typedef struct module {
    sym_module pub;
    const char *basename; /* inside pub.path */
    uint8_t build_id[MAX_BUILD_ID];
    size_t build_id_len;
    uint64_t dev, ino, size, mtime_ns;
    int state; /* ELF_* */
    Dwfl *dwfl;
    Dwfl_Module *mod;
    uint64_t eval_lo, eval_hi; /* the eval loop's body outside its symbol (see find_eval_body),
                                * runtime [lo, hi); 0, 0 when none */
} module;

typedef struct seg_entry {
    uint64_t start, end; /* runtime [start, end) */
    uint64_t max_end;    /* the largest end among this entry and those before it */
    uint32_t module;
} seg_entry;

typedef struct cache_slot {
    uint64_t addr;
    uint32_t module; /* NO_MODULE for an address outside every module */
    sym_info *info;  /* NULL: free slot */
} cache_slot;

struct symbols {
    /* One allocation (freed as debug_root) holds the three strings: */
    char *debug_root;       /* the host's debug root */
    const char *root;       /* the root recorded paths are first looked for under, without
                             * its trailing '/'; NULL: none */
    const char *root_debug; /* root + debug_root; NULL with root */
    module *mods;
    size_t nmods, cap_mods;
    seg_entry *segs;
    size_t nsegs, cap_segs;
    int segs_sorted;
    cache_slot *cache;
    size_t cache_cap, cache_n;
    uint64_t unresolved;
};

/* ---- files from the log: opened safely ------------------------------------------------ */

/* Opens `path` for reading when it is an absolute path to a regular file; never blocks
 * (a FIFO or a device is refused before it is opened, and checked again once open).
 * Returns the descriptor, or -1. */
static int open_regular(const char *path)
{
    struct stat st;
    if (path[0] != '/' || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return -1;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* 1 when the ELF file open on `fd` has the GNU build-id `id` (len > 0). */
static int elf_has_build_id(int fd, const uint8_t *id, size_t len)
{
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf)
        return 0;
    int same = 0;
    const void *got;
    if (elf_kind(elf) == ELF_K_ELF) {
        ssize_t n = dwelf_elf_gnu_build_id(elf, &got);
        same = n > 0 && (size_t)n == len && !memcmp(got, id, len);
    }
    elf_end(elf);
    return same;
}

/* 1 when the ELF file open on `fd` is a valid ELF file. */
static int is_elf(int fd)
{
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int ok = elf && elf_kind(elf) == ELF_K_ELF;
    elf_end(elf);
    return ok;
}

/* "<root>/.build-id/xx/rest.debug" for a build-id, into buf; 0, or -1 if it won't fit. */
static int build_id_path(const char *root, const uint8_t *id, size_t len, char *buf, size_t cap)
{
    if (len < 2)
        return -1;
    int n = snprintf(buf, cap, "%s/.build-id/%02x/", root, id[0]);
    if (n < 0 || (size_t)n >= cap)
        return -1;
    size_t at = (size_t)n;
    for (size_t i = 1; i < len; i++) {
        if (at + 3 >= cap)
            return -1;
        snprintf(buf + at, 3, "%02x", id[i]);
        at += 2;
    }
    if (at + sizeof ".debug" > cap)
        return -1;
    memcpy(buf + at, ".debug", sizeof ".debug");
    return 0;
}

/* The file <debug root>/.build-id/xx/rest.debug that has build-id `id`, under the root's
 * debug root first (when there is a root), then the host's: a descriptor with the file's
 * path in buf, or -1. */
static int open_build_id_file(const symbols *s, const uint8_t *id, size_t len, char *buf,
                              size_t cap)
{
    const char *roots[] = {s->root_debug, s->debug_root};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        if (!roots[i] || build_id_path(roots[i], id, len, buf, cap) < 0)
            continue;
        int fd = open_regular(buf);
        if (fd < 0)
            continue;
        if (elf_has_build_id(fd, id, len))
            return fd;
        close(fd);
    }
    return -1;
}

/* libdwfl's find_debuginfo: the separate debug file with the module's own build-id,
 * under the debug roots (the symbolizer is the module's user data); nothing for a module
 * without a build-id.  Returns a descriptor, or -1. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                          Dwarf_Addr base, const char *file_name, const char *debuglink,
                          GElf_Word crc, char **debuginfo_file_name)
{
    (void)modname, (void)base, (void)file_name, (void)debuglink, (void)crc;
    const symbols *s = *userdata;
    const unsigned char *id;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &id, &vaddr);
    char path[4096];
    if (!s || len <= 0 || len > MAX_BUILD_ID)
        return -1;
    int fd = open_build_id_file(s, id, (size_t)len, path, sizeof path);
    if (fd < 0)
        return -1;
    if (!(*debuginfo_file_name = strdup(path))) {
        close(fd);
        return -1;
    }
    return fd;
}

static const Dwfl_Callbacks dwfl_callbacks = {
    .find_elf = NULL,
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = NULL,
};

/* ---- modules -------------------------------------------------------------------------- */

symbols *symbols_new(const char *debug_root, const char *root)
{
    /* libelf refuses every file until told which ELF version its caller speaks. */
    if (elf_version(EV_CURRENT) == EV_NONE)
        return NULL;
    symbols *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (!debug_root)
        debug_root = "/usr/lib/debug";
    size_t dlen = strlen(debug_root), rlen = root ? strlen(root) : 0;
    while (rlen && root[rlen - 1] == '/')
        rlen--; /* "/" (the host's own root) is no root */
    /* debug_root, root and root + debug_root, one after the other. */
    char *strs = malloc(dlen + 1 + 2 * (rlen + 1) + dlen);
    if (!strs) {
        free(s);
        return NULL;
    }
    memcpy(strs, debug_root, dlen + 1);
    s->debug_root = strs;
    if (rlen) {
        char *r = strs + dlen + 1, *rd = r + rlen + 1;
        memcpy(r, root, rlen);
        r[rlen] = '\0';
        memcpy(rd, root, rlen);
        memcpy(rd + rlen, debug_root, dlen + 1);
        s->root = r;
        s->root_debug = debug_root[0] == '/' ? rd : NULL;
    }
    return s;
}

static void free_info(sym_info *info)
{
    for (uint32_t i = 0; i < info->nframes; i++)
        free((char *)info->frames[i].name);
    free(info);
}

void symbols_free(symbols *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->cache_cap; i++)
        if (s->cache[i].info)
            free_info(s->cache[i].info);
    for (size_t i = 0; i < s->nmods; i++) {
        module *m = &s->mods[i];
        if (m->dwfl)
            dwfl_end(m->dwfl);
        free(m->pub.path);
        free(m->pub.build_id_hex);
        free(m->pub.elf_path);
    }
    free(s->cache);
    free(s->mods);
    free(s->segs);
    free(s->debug_root);
    free(s);
}

/* Whether a file's base name is the C library's, its threads library's or the dynamic
 * loader's (glibc and musl): the frames that start processes and threads. */
static int is_libc_name(const char *base)
{
    static const char *const prefixes[] = {"libc.so",  "libc-", "libpthread.so", "libpthread-",
                                           "ld-linux", "ld-",   "libc.musl",     "ld-musl"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

int symbols_add_module(symbols *s, const pyprof_module_rec *r, uint64_t pos)
{
    if (s->nmods >= NO_MODULE - 1 ||
        grow_array((void **)&s->mods, &s->cap_mods, s->nmods + 1, sizeof *s->mods, 16))
        return -1;
    /* The segments, each checked: a runtime range that wraps around is dropped. */
    size_t nok = 0;
    for (uint64_t i = 0; i < r->nseg; i++) {
        const pyprof_segment *g = &r->segs[i];
        uint64_t start = r->base + g->vaddr;
        if (g->memsz && start >= r->base && start + g->memsz > start)
            nok++;
    }
    if (grow_array((void **)&s->segs, &s->cap_segs, s->nsegs + nok, sizeof *s->segs, 64))
        return -1;
    module *m = &s->mods[s->nmods];
    memset(m, 0, sizeof *m);
    m->pub.path = pyprof_str_dup(r->path);
    m->pub.build_id_hex = malloc(2 * r->build_id.len + 1);
    if (!m->pub.path || !m->pub.build_id_hex) {
        free(m->pub.path);
        free(m->pub.build_id_hex);
        return -1;
    }
    for (size_t i = 0; i < r->build_id.len; i++)
        snprintf(m->pub.build_id_hex + 2 * i, 3, "%02x", (uint8_t)r->build_id.s[i]);
    m->pub.build_id_hex[2 * r->build_id.len] = 0;
    /* A recorded build-id too long to be one matches no file. */
    m->build_id_len = r->build_id.len;
    if (r->build_id.len && r->build_id.len <= MAX_BUILD_ID)
        memcpy(m->build_id, r->build_id.s, r->build_id.len);
    const char *slash = strrchr(m->pub.path, '/');
    m->basename = slash ? slash + 1 : m->pub.path;
    m->pub.module_id = r->module_id;
    m->pub.base = r->base;
    m->pub.loaded_at = pos;
    m->pub.gone_at = UINT64_MAX;
    m->pub.flags = is_libc_name(m->basename) ? SYM_LIBC : 0;
    if (!strncmp(m->basename, "libpyprof", 9))
        m->pub.flags |= SYM_PROFILER;
    m->dev = r->dev;
    m->ino = r->ino;
    m->size = r->size;
    m->mtime_ns = r->mtime_ns;

    uint32_t idx = (uint32_t)s->nmods++;
    int have_x = 0;
    uint64_t lo = UINT64_MAX, hi = 0, lo_off = 0;
    for (uint64_t i = 0; i < r->nseg; i++) {
        const pyprof_segment *g = &r->segs[i];
        uint64_t start = r->base + g->vaddr;
        if (!(g->memsz && start >= r->base && start + g->memsz > start))
            continue;
        s->segs[s->nsegs++] = (seg_entry){start, start + g->memsz, 0, idx};
        if ((g->flags & 1) && !have_x) { /* PF_X */
            have_x = 1;
            m->pub.start = start;
            m->pub.limit = start + g->memsz;
            m->pub.file_offset = g->file_offset;
        }
        if (start < lo) {
            lo = start;
            lo_off = g->file_offset;
        }
        if (start + g->memsz > hi)
            hi = start + g->memsz;
    }
    if (!have_x && hi) {
        m->pub.start = lo;
        m->pub.limit = hi;
        m->pub.file_offset = lo_off;
    }
    s->segs_sorted = 0;
    return 0;
}

void symbols_module_gone(symbols *s, uint64_t module_id, uint64_t pos)
{
    for (size_t i = s->nmods; i-- > 0;)
        if (s->mods[i].pub.module_id == module_id) {
            if (s->mods[i].pub.gone_at == UINT64_MAX)
                s->mods[i].pub.gone_at = pos;
            return;
        }
}

size_t symbols_nmodules(const symbols *s) { return s->nmods; }

const sym_module *symbols_module(const symbols *s, size_t i) { return &s->mods[i].pub; }

uint64_t symbols_unresolved(const symbols *s) { return s->unresolved; }

static int name_is(const char *name, const char *base)
{
    size_t n = strlen(base);
    return !strncmp(name, base, n) && (name[n] == 0 || name[n] == '.');
}

int symbols_is_eval_name(const char *name)
{
    return name_is(name, "_PyEval_EvalFrameDefault") || name_is(name, "PyEval_EvalFrameEx");
}

/* ---- addresses to modules --------------------------------------------------------------- */

static int seg_cmp(const void *a, const void *b)
{
    const seg_entry *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->module < y->module ? -1 : x->module > y->module;
}

static void sort_segs(symbols *s)
{
    qsort(s->segs, s->nsegs, sizeof *s->segs, seg_cmp);
    uint64_t max = 0;
    for (size_t i = 0; i < s->nsegs; i++) {
        if (s->segs[i].end > max)
            max = s->segs[i].end;
        s->segs[i].max_end = max;
    }
    s->segs_sorted = 1;
}

/* How far module `m`'s life is from position `pos`: 0 when it was loaded then. */
static uint64_t life_distance(const sym_module *m, uint64_t pos)
{
    if (pos < m->loaded_at)
        return m->loaded_at - pos;
    if (pos >= m->gone_at)
        return pos - m->gone_at + 1;
    return 0;
}

/* The module that covers `addr` at `pos`: among those loaded then the latest loaded,
 * else the one whose life was nearest.  NO_MODULE when none covers it. */
static uint32_t find_module(symbols *s, uint64_t addr, uint64_t pos)
{
    if (!s->segs_sorted)
        sort_segs(s);
    size_t lo = 0, hi = s->nsegs; /* first entry with start > addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->segs[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t best = NO_MODULE;
    uint64_t best_dist = UINT64_MAX;
    for (size_t i = lo; i-- > 0 && s->segs[i].max_end > addr;) {
        if (s->segs[i].end <= addr)
            continue;
        const sym_module *m = &s->mods[s->segs[i].module].pub;
        uint64_t d = life_distance(m, pos);
        if (best == NO_MODULE || d < best_dist ||
            (d == best_dist && m->loaded_at > s->mods[best].pub.loaded_at)) {
            best = s->segs[i].module;
            best_dist = d;
        }
    }
    return best;
}

/* ---- a module's ELF file ----------------------------------------------------------------- */

/* The file at `path` (the recorded path, or it under the root) when it is the recorded
 * file: same build-id, or for a module recorded without one, the same device, inode, size
 * and (when recorded) modification time. */
static int open_recorded(const module *m, const char *path)
{
    int fd = open_regular(path);
    if (fd < 0)
        return -1;
    int same;
    if (m->build_id_len) {
        same = m->build_id_len <= MAX_BUILD_ID &&
               elf_has_build_id(fd, m->build_id, m->build_id_len);
    } else {
        struct stat st;
        same = fstat(fd, &st) == 0 && m->ino && (uint64_t)st.st_dev == m->dev &&
               (uint64_t)st.st_ino == m->ino && (uint64_t)st.st_size == m->size;
        if (same && m->mtime_ns) {
            uint64_t mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
                             (uint64_t)st.st_mtim.tv_nsec;
            same = mtime == m->mtime_ns;
        }
        same = same && is_elf(fd);
    }
    if (!same) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The module's eval-loop symbol (holds_eval: found), its file address and size. */
static int holds_eval(Dwfl_Module *mod, GElf_Sym *eval)
{
    int n = dwfl_module_getsymtab(mod);
    for (int i = 0; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
        if (name && GELF_ST_TYPE(sym.st_info) == STT_FUNC && symbols_is_eval_name(name)) {
            *eval = sym;
            return 1;
        }
    }
    return 0;
}

/* The sorted table of function starts in .eh_frame_hdr (the unwinder's binary search
 * table: one entry per FDE, the unwind table's entry for a function or a part of one). */
typedef struct fde_table {
    const uint8_t *entries; /* pairs of 4-byte (start, FDE) offsets from the header */
    uint32_t count;
    uint64_t hdr_addr; /* the header's file address */
} fde_table;

/* Finds the table; 0, or -1 when the module has none in the layout GCC and binutils
 * write on x86-64 (version 1, pc-relative 4-byte .eh_frame pointer, 4-byte count,
 * header-relative 4-byte entries), the only one read here. */
static int fde_table_of(Elf *elf, fde_table *t)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return -1;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        const char *name;
        if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
            strcmp(name, ".eh_frame_hdr") != 0)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        const uint8_t *h = d ? d->d_buf : NULL;
        if (!h || d->d_size < 12 || h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
            return -1;
        memcpy(&t->count, h + 8, 4);
        if ((d->d_size - 12) / 8 < t->count)
            return -1;
        t->entries = h + 12;
        t->hdr_addr = sh.sh_addr;
        return 0;
    }
    return -1;
}

static uint64_t fde_start(const fde_table *t, uint32_t i)
{
    int32_t rel;
    memcpy(&rel, t->entries + 8 * (size_t)i, 4);
    return t->hdr_addr + (int64_t)rel;
}

/* The part holding file address `a`: from the start of its FDE to the next one's, in
 * [*lo, *hi).  0, or -1 outside the table. */
static int fde_range(const fde_table *t, uint64_t a, uint64_t *lo, uint64_t *hi)
{
    uint32_t l = 0, h = t->count; /* the first entry starting above a is in [l, h] */
    while (l < h) {
        uint32_t mid = l + (h - l) / 2;
        if (fde_start(t, mid) <= a)
            l = mid + 1;
        else
            h = mid;
    }
    if (l == 0 || l == t->count)
        return -1;
    *lo = fde_start(t, l - 1);
    *hi = fde_start(t, l);
    return 0;
}

/* An executable whose full symbol table was stripped may export only the entry part of
 * the eval loop: the compiler moved the opcode bodies, where every activation's return
 * address lies, into a part of their own that only the local symbol table named
 * (Debian's static python3.14 and python3.15: 1,184 and 844 bytes exported, 60-80 KB
 * unnamed).  The entry part branches into that part; the part is found as the unwind
 * table entry (FDE, fde_table) that the entry part's direct branches (call, jmp, jcc
 * with a 32-bit displacement, x86-64) reach most often, taken when at least two of them
 * reach it and it is large enough to be the loop.  Addresses there are then the eval
 * loop's.  Only for an exported symbol too small to hold the loop itself; nothing else
 * is guessed. */
#define EVAL_ENTRY_MAX 4096u      /* bytes: a symbol this small cannot be the whole loop */
#define EVAL_BODY_MIN (16u << 10) /* bytes: an FDE this large can be */
static void find_eval_body(module *m, const GElf_Sym *eval)
{
    if (eval->st_size == 0 || eval->st_size > EVAL_ENTRY_MAX)
        return;
    GElf_Addr bias;
    Elf *elf = dwfl_module_getelf(m->mod, &bias);
    fde_table fdes;
    if (!elf || fde_table_of(elf, &fdes) < 0)
        return;
    /* The entry part's bytes, from the section that holds them. */
    uint8_t code[EVAL_ENTRY_MAX];
    size_t len = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn)) != NULL && !len) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
            !(sh.sh_flags & SHF_EXECINSTR) || eval->st_value < sh.sh_addr ||
            eval->st_value + eval->st_size > sh.sh_addr + sh.sh_size)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        uint64_t at = eval->st_value - sh.sh_addr;
        if (d && d->d_buf && d->d_size >= at + eval->st_size) {
            memcpy(code, (const uint8_t *)d->d_buf + at, eval->st_size);
            len = eval->st_size;
        }
    }
    struct {
        uint64_t lo, hi;
        unsigned hits;
    } cand[16];
    unsigned ncand = 0;
    for (size_t i = 0; i + 5 <= len; i++) {
        size_t disp; /* the displacement's offset; the instruction ends 4 bytes after it */
        if (code[i] == 0xe8 || code[i] == 0xe9)
            disp = i + 1;
        else if (code[i] == 0x0f && i + 6 <= len && (code[i + 1] & 0xf0) == 0x80)
            disp = i + 2;
        else
            continue;
        int32_t rel;
        memcpy(&rel, code + disp, 4);
        uint64_t target = eval->st_value + disp + 4 + (int64_t)rel;
        if (target >= eval->st_value && target < eval->st_value + eval->st_size)
            continue;
        uint64_t lo, hi;
        if (fde_range(&fdes, target, &lo, &hi) < 0 || hi - lo < EVAL_BODY_MIN)
            continue;
        unsigned c = 0;
        while (c < ncand && cand[c].lo != lo)
            c++;
        if (c == ncand) {
            if (ncand == sizeof cand / sizeof cand[0])
                continue;
            cand[ncand++] = (typeof(cand[0])){lo, hi, 0};
        }
        cand[c].hits++;
    }
    unsigned best = ncand;
    for (unsigned c = 0; c < ncand; c++)
        if (cand[c].hits >= 2 && (best == ncand || cand[c].hits > cand[best].hits))
            best = c;
    if (best == ncand)
        return;
    m->eval_lo = cand[best].lo + bias;
    m->eval_hi = cand[best].hi + bias;
}

/* Finds and opens the module's ELF file once; sets m->state. */
static void open_module(symbols *s, module *m)
{
    m->state = ELF_NONE;
    char path[4096];
    const char *found = path;
    int fd = -1;
    /* The recorded path under the root first (only an absolute one: "linux-vdso.so.1"
     * is nothing under it), then as recorded, then by build-id. */
    if (s->root && m->pub.path[0] == '/') {
        int n = snprintf(path, sizeof path, "%s%s", s->root, m->pub.path);
        if (n > 0 && (size_t)n < sizeof path)
            fd = open_recorded(m, path);
    }
    if (fd < 0 && (fd = open_recorded(m, m->pub.path)) >= 0)
        found = m->pub.path;
    if (fd < 0 && m->build_id_len && m->build_id_len <= MAX_BUILD_ID)
        fd = open_build_id_file(s, m->build_id, m->build_id_len, path, sizeof path);
    if (fd < 0)
        return;
    char *elf_path = strdup(found);
    Dwfl *dwfl = elf_path ? dwfl_begin(&dwfl_callbacks) : NULL;
    if (!dwfl) {
        free(elf_path);
        close(fd);
        return;
    }
    dwfl_report_begin(dwfl);
    /* add_p_vaddr: `base` is the load bias (runtime address = base + vaddr). */
    Dwfl_Module *mod = dwfl_report_elf(dwfl, m->basename, elf_path, fd, m->pub.base, true);
    if (!mod) {
        close(fd); /* not consumed on failure */
        dwfl_end(dwfl);
        free(elf_path);
        return;
    }
    dwfl_report_end(dwfl, NULL, NULL);
    void **user;
    dwfl_module_info(mod, &user, NULL, NULL, NULL, NULL, NULL, NULL);
    *user = s;
    m->dwfl = dwfl;
    m->mod = mod;
    m->pub.elf_path = elf_path;
    m->state = ELF_READY;
    GElf_Sym eval;
    if (holds_eval(mod, &eval)) {
        m->pub.flags |= SYM_INTERP;
        find_eval_body(m, &eval);
    }
}

/* ---- one address ------------------------------------------------------------------------- */

/* A sym_info with room for `n` frames (names NULL), or NULL. */
static sym_info *new_info(uint32_t n)
{
    sym_info *info = calloc(1, sizeof *info + n * sizeof(sym_frame));
    if (!info)
        return NULL;
    info->nframes = n;
    info->frames = (const sym_frame *)(info + 1);
    return info;
}

static sym_frame *frames_of(sym_info *info) { return (sym_frame *)(info + 1); }

/* What an address no symbol covers shows as: "basename+0xOFF" (OFF relative to the
 * module's load bias) or "0xADDRESS" outside every module. */
static sym_info *fallback_info(const module *m, uint64_t addr)
{
    sym_info *info = new_info(1);
    if (!info)
        return NULL;
    char buf[512];
    sym_frame *f = frames_of(info);
    if (m) {
        snprintf(buf, sizeof buf, "%.400s+0x%llx", m->basename[0] ? m->basename : "[module]",
                 (unsigned long long)(addr - m->pub.base));
        f->module = m->pub.path;
        info->flags = m->pub.flags;
    } else {
        snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)addr);
        f->module = "";
        info->flags = SYM_NO_MODULE;
    }
    f->name = strdup(buf);
    if (!f->name) {
        free(info);
        return NULL;
    }
    return info;
}

static int call_line(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    Dwarf_Word v;
    if (!dwarf_attr(die, DW_AT_call_line, &attr) || dwarf_formudata(&attr, &v) != 0 ||
        v > INT32_MAX)
        return 0;
    return (int)v;
}

/* Symbolizes `addr` in module `m`, whose ELF is open; NULL when out of memory, and a
 * fallback_info when no symbol covers it. */
static sym_info *symbolize(module *m, uint64_t addr)
{
    GElf_Off off = 0;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(m->mod, addr, &off, &sym, NULL, NULL, NULL);
    if (name && (!name[0] || (sym.st_size == 0 && off != 0) ||
                 (sym.st_size != 0 && off >= sym.st_size)))
        name = NULL;
    if (!name && addr >= m->eval_lo && addr < m->eval_hi)
        name = "_PyEval_EvalFrameDefault"; /* its unnamed body (find_eval_body) */
    if (!name)
        return fallback_info(m, addr);

    /* The innermost source line, and the inlined functions around the address. */
    int line = 0;
    Dwfl_Line *ln = dwfl_module_getsrc(m->mod, addr);
    if (ln && (!dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL) || line < 0))
        line = 0;
    Dwarf_Die inl[MAX_INLINE];
    uint32_t ninl = 0;
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(m->mod, addr, &bias);
    Dwarf_Die *scopes = NULL;
    int nscopes = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
    for (int i = 0; i < nscopes && ninl < MAX_INLINE; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag == DW_TAG_subprogram)
            break;
        if (tag == DW_TAG_inlined_subroutine)
            inl[ninl++] = scopes[i]; /* innermost first */
    }
    free(scopes);

    sym_info *info = new_info(ninl + 1);
    if (!info)
        return NULL;
    info->flags = m->pub.flags | SYM_RESOLVED | (symbols_is_eval_name(name) ? SYM_EVAL : 0);
    sym_frame *f = frames_of(info);
    /* Frame 0 is the function the symbol names; frame j (1..ninl) is inl[ninl - j].  A
     * frame's line is the call of the next one inward, the innermost's the address's. */
    for (uint32_t j = 0; j <= ninl; j++) {
        const char *n = name;
        if (j > 0) {
            n = dwarf_diename(&inl[ninl - j]);
            if (!n)
                n = "[inlined]";
        }
        f[j].name = strdup(n);
        f[j].module = m->pub.path;
        f[j].line = j < ninl ? call_line(&inl[ninl - j - 1]) : line;
        if (!f[j].name) {
            info->nframes = j;
            free_info(info);
            return NULL;
        }
    }
    return info;
}

/* ---- the cache --------------------------------------------------------------------------- */

static size_t slot_of(const symbols *s, uint32_t mod, uint64_t addr)
{
    return (size_t)mix64(addr ^ ((uint64_t)mod << 40) ^ mod) & (s->cache_cap - 1);
}

static sym_info *cache_get(const symbols *s, uint32_t mod, uint64_t addr)
{
    if (!s->cache_cap)
        return NULL;
    for (size_t i = slot_of(s, mod, addr);; i = (i + 1) & (s->cache_cap - 1)) {
        const cache_slot *c = &s->cache[i];
        if (!c->info)
            return NULL;
        if (c->addr == addr && c->module == mod)
            return c->info;
    }
}

/* Adds an entry (not there yet); 0, or -1 when out of memory. */
static int cache_put(symbols *s, uint32_t mod, uint64_t addr, sym_info *info)
{
    if (2 * (s->cache_n + 1) > s->cache_cap) {
        size_t ncap = s->cache_cap ? 2 * s->cache_cap : 256;
        cache_slot *old = s->cache;
        size_t ocap = s->cache_cap;
        s->cache = calloc(ncap, sizeof *s->cache);
        if (!s->cache) {
            s->cache = old;
            return -1;
        }
        s->cache_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].info) {
                size_t j = slot_of(s, old[i].module, old[i].addr);
                while (s->cache[j].info)
                    j = (j + 1) & (ncap - 1);
                s->cache[j] = old[i];
            }
        free(old);
    }
    size_t j = slot_of(s, mod, addr);
    while (s->cache[j].info)
        j = (j + 1) & (s->cache_cap - 1);
    s->cache[j] = (cache_slot){addr, mod, info};
    s->cache_n++;
    return 0;
}

const sym_info *symbols_lookup(symbols *s, uint64_t addr, uint64_t pos, int is_return)
{
    uint64_t a = is_return && addr ? addr - 1 : addr;
    uint32_t mi = find_module(s, a, pos);
    sym_info *info = cache_get(s, mi, a);
    if (info)
        return info;
    module *m = mi == NO_MODULE ? NULL : &s->mods[mi];
    if (m && m->state == ELF_UNTRIED)
        open_module(s, m);
    info = m && m->state == ELF_READY ? symbolize(m, a) : fallback_info(m, a);
    if (!info)
        return NULL;
    if (cache_put(s, mi, a, info) < 0) {
        free_info(info);
        return NULL;
    }
    if (!(info->flags & SYM_RESOLVED))
        s->unresolved++;
    return info;
}
