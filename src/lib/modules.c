/*
 * modules: the loaded ELF modules and the set the log announced.  See modules.h.
 *
 * A scan copies what it needs of every object inside the dl_iterate_phdr callback (the
 * loader's lock is held there, so no object can go away while its notes are read) and
 * does the slow part, stat() and the caller's records, after it: the program's own
 * dlopen waits for our callback, never for our file system calls or our log.
 *
 * The build-id is read from the PT_NOTE segments in memory, only where a readable
 * PT_LOAD covers the note (so the memory is mapped), each note's sizes checked against
 * what is left of the segment.
 */
#include "modules.h"

#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pyprof/format.h>

#include "common/growarray.h"
#include "native.h"

/* One object as a scan saw it. */
typedef struct scan_obj {
    char *path;
    uint64_t base;
    logenc_segment *segs;
    size_t nseg;
    uint8_t build_id[PYPROF_BUILD_ID_MAX];
    size_t build_id_len;
    int has_file;
    long match; /* index of the announced module it is, or -1 */
} scan_obj;

typedef struct scan {
    scan_obj *o;
    size_t n, cap;
    unsigned long long adds, subs;
    int failed;
} scan;

static int has_counters(size_t size)
{
    return size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(unsigned long long);
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *c = arg;
    if (has_counters(size)) {
        c[0] = info->dlpi_adds;
        c[1] = info->dlpi_subs;
    }
    return 1; /* the first object is enough */
}

int modules_changed(const modules *m)
{
    if (!m->synced)
        return 1;
    unsigned long long c[2] = {m->adds, m->subs};
    native_iterate_loaded(counters_cb, c);
    return c[0] != m->adds || c[1] != m->subs;
}

static size_t align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

/* The GNU build-id among the notes p[0..len), copied to out; its length, or 0. */
static size_t note_build_id(const uint8_t *p, size_t len, size_t align, uint8_t *out)
{
    size_t off = 0;
    while (len - off >= 12) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, p + off, 4);
        memcpy(&descsz, p + off + 4, 4);
        memcpy(&type, p + off + 8, 4);
        off += 12;
        size_t name_off = off;
        if (align_up(namesz, align) > len - off)
            return 0;
        off += align_up(namesz, align);
        if (descsz > len - off)
            return 0;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + name_off, "GNU", 4) &&
            descsz > 0 && descsz <= PYPROF_BUILD_ID_MAX) {
            memcpy(out, p + off, descsz);
            return descsz;
        }
        size_t skip = align_up(descsz, align);
        off += skip < len - off ? skip : len - off;
    }
    return 0;
}

/* 1 when [vaddr, vaddr + len) lies in a readable PT_LOAD of the object. */
static int in_readable_load(const struct dl_phdr_info *info, uint64_t vaddr, uint64_t len)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && vaddr >= ph->p_vaddr &&
            len <= ph->p_memsz && vaddr - ph->p_vaddr <= ph->p_memsz - len)
            return 1;
    }
    return 0;
}

static size_t read_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE || !in_readable_load(info, ph->p_vaddr, ph->p_memsz))
            continue;
        const uint8_t *p = (const uint8_t *)(uintptr_t)(info->dlpi_addr + ph->p_vaddr);
        size_t n = note_build_id(p, ph->p_memsz, ph->p_align == 8 ? 8 : 4, out);
        if (n)
            return n;
    }
    return 0;
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    scan *s = arg;
    if (s->n == 0 && has_counters(size)) {
        s->adds = info->dlpi_adds;
        s->subs = info->dlpi_subs;
    }
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    char exe[4096];
    int has_file = 1;
    if (!name[0]) {
        /* The main program is the first object and has no name; any other nameless one
         * is nothing a sample can be attributed to. */
        if (s->n != 0)
            return 0;
        ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (l <= 0)
            return 0;
        exe[l] = 0;
        name = exe;
    } else if (!strchr(name, '/')) {
        has_file = 0;
    }
    if (grow_array((void **)&s->o, &s->cap, s->n + 1, sizeof *s->o, 64) < 0) {
        s->failed = 1;
        return 1;
    }
    scan_obj *o = &s->o[s->n];
    memset(o, 0, sizeof *o);
    size_t nload = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        nload += info->dlpi_phdr[i].p_type == PT_LOAD;
    if (nload > PYPROF_MODULE_SEG_MAX)
        nload = PYPROF_MODULE_SEG_MAX; /* never seen in practice; the reader's bound */
    o->path = strdup(name);
    o->segs = malloc((nload ? nload : 1) * sizeof *o->segs);
    if (!o->path || !o->segs) {
        free(o->path);
        free(o->segs);
        s->failed = 1;
        return 1;
    }
    for (int i = 0; i < info->dlpi_phnum && o->nseg < nload; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        o->segs[o->nseg++] = (logenc_segment){
            .vaddr = ph->p_vaddr,
            .memsz = ph->p_memsz,
            .file_offset = ph->p_offset,
            .flags = ph->p_flags & (PF_X | PF_W | PF_R),
        };
    }
    o->base = info->dlpi_addr;
    o->build_id_len = read_build_id(info, o->build_id);
    o->has_file = has_file;
    o->match = -1;
    s->n++;
    return 0;
}

static void scan_free(scan *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->o[i].path);
        free(s->o[i].segs);
    }
    free(s->o);
}

static uint64_t seg0_vaddr(const scan_obj *o) { return o->nseg ? o->segs[0].vaddr : 0; }
static uint64_t seg0_memsz(const scan_obj *o) { return o->nseg ? o->segs[0].memsz : 0; }

static void announce(const scan_obj *o, uint32_t id, modules_new_fn on_new, void *ctx)
{
    logenc_module_fields f = {
        .module_id = id,
        .path = o->path,
        .base = o->base,
        .build_id = o->build_id,
        .build_id_len = o->build_id_len,
        .segs = o->segs,
        .nseg = o->nseg,
    };
    struct stat st;
    if (o->has_file && stat(o->path, &st) == 0) {
        f.dev = st.st_dev;
        f.ino = st.st_ino;
        f.size = (uint64_t)st.st_size;
        f.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
    }
    on_new(&f, ctx);
}

int modules_sync(modules *m, modules_new_fn on_new, modules_gone_fn on_gone, void *ctx)
{
    scan s = {0};
    native_iterate_loaded(scan_cb, &s);
    if (s.failed || grow_array((void **)&m->e, &m->cap, m->n + s.n, sizeof *m->e, 64) < 0) {
        scan_free(&s);
        return -1;
    }
    for (size_t j = 0; j < m->n; j++)
        m->e[j].seen = 0;
    for (size_t i = 0; i < s.n; i++) {
        scan_obj *o = &s.o[i];
        for (size_t j = 0; j < m->n; j++) {
            modules_entry *e = &m->e[j];
            if (!e->seen && e->base == o->base && e->seg0_vaddr == seg0_vaddr(o) &&
                e->seg0_memsz == seg0_memsz(o) && !strcmp(e->path, o->path)) {
                e->seen = 1;
                o->match = (long)j;
                break;
            }
        }
    }
    /* What went first, so a reader never holds two modules over the same addresses. */
    size_t keep = 0;
    for (size_t j = 0; j < m->n; j++) {
        if (m->e[j].seen) {
            m->e[keep++] = m->e[j];
        } else {
            on_gone(m->e[j].id, ctx);
            free(m->e[j].path);
        }
    }
    m->n = keep;
    for (size_t i = 0; i < s.n; i++) {
        scan_obj *o = &s.o[i];
        if (o->match >= 0)
            continue;
        modules_entry *e = &m->e[m->n++];
        *e = (modules_entry){.id = ++m->last_id,
                             .path = o->path,
                             .base = o->base,
                             .seg0_vaddr = seg0_vaddr(o),
                             .seg0_memsz = seg0_memsz(o),
                             .seen = 1};
        announce(o, e->id, on_new, ctx);
        o->path = NULL; /* the entry owns it now */
    }
    m->adds = s.adds;
    m->subs = s.subs;
    m->synced = 1;
    scan_free(&s);
    return 0;
}

void modules_free(modules *m)
{
    for (size_t j = 0; j < m->n; j++)
        free(m->e[j].path);
    free(m->e);
    memset(m, 0, sizeof *m);
}
