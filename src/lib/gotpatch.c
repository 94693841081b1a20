/*
 * gotpatch: GOT slots of the loaded modules pointed at the library's wrappers.  See
 * gotpatch.h.
 *
 * A scan (install or refresh, under `lock`) walks the loader's list once, and does all
 * of a module's work inside the dl_iterate_phdr callback: the loader's lock held there
 * keeps the module from being unloaded while its slots are read and written.  For each
 * module, a first pass over its relocations finds what is to be written and whether any
 * of it lies in the RELRO pages; only then are those pages opened (once), the second
 * pass writes, and the pages are closed again.  A relocation met twice (a DT_RELA range
 * that also covers DT_JMPREL) is written once: the second time its slot already holds
 * the replacement, and a slot that holds the replacement is never written.  So a scan
 * can be repeated over a module without harm; the set of patched modules only spares
 * the work.  It names a module by load address and name, which a module unloaded and
 * loaded again at the same address between two scans would share with the first: so a
 * scan that finds the loader's unload counter (dlpi_subs) moved since the last scan
 * looks at every module again.
 *
 * RELRO as the loader leaves it: glibc's _dl_protect_relro makes [start, end) read-only
 * with both ends rounded DOWN to pages, the partial last page staying writable with the
 * data that follows it; this opens and closes exactly that range, never the page after.
 * A module is listed by the loader from the moment it is mapped, before another thread's
 * dlopen has relocated it: its slots then hold what the loader is about to overwrite,
 * and its RELRO pages, still writable, can turn read-only under a write of ours (or
 * after we closed them, under the loader's).  The loader protects RELRO right after
 * relocating the module, so a module is taken only once /proc/self/maps (read once per
 * scan that meets a new module) shows its RELRO pages read-only; one that it shows
 * writable, or not at all, is left for the next scan, not remembered.  A module with no
 * whole page of RELRO cannot be told apart, and is taken as relocated: at worst the
 * loader overwrites a slot written too early (no fault: those pages stay writable).
 * Without /proc, every module is taken as relocated (true but for a concurrent dlopen).
 *
 * The original of a name: dlsym(RTLD_DEFAULT) looks symbols up with the class of a data
 * reference, so in a non-PIE program that takes a function's address it answers with the
 * program's canonical PLT entry (an undefined symbol with a value).  That entry jumps
 * through the program's JUMP_SLOT, which this patches: forwarding to it would call the
 * wrapper again.  So when the answer is a module's own undefined symbol of that name,
 * the original is the first definition in loading order (the order of the initial
 * global scope) of any other module but the loader and the vDSO, found through the
 * modules' hash tables (GNU or SysV, hidden versions skipped).  An IFUNC there is not
 * called: the name is then left unpatched.
 */
#include "gotpatch.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/growarray.h"
#include "libc_next.h"

#if UINTPTR_MAX > 0xffffffffu
#define GP_R_TYPE ELF64_R_TYPE
#define GP_R_SYM ELF64_R_SYM
#define GP_ST_BIND ELF64_ST_BIND
#define GP_ST_TYPE ELF64_ST_TYPE
#else
#define GP_R_TYPE ELF32_R_TYPE
#define GP_R_SYM ELF32_R_SYM
#define GP_ST_BIND ELF32_ST_BIND
#define GP_ST_TYPE ELF32_ST_TYPE
#endif

#if defined(__x86_64__)
#define GP_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define GP_R_GLOB_DAT R_X86_64_GLOB_DAT
#define GP_R_ABS64 R_X86_64_64
#elif defined(__aarch64__) /* the same scheme; not tested */
#define GP_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define GP_R_GLOB_DAT R_AARCH64_GLOB_DAT
#define GP_R_ABS64 R_AARCH64_ABS64
#else
#define GP_UNSUPPORTED 1
#define GP_R_JUMP_SLOT 0xffffffffu
#define GP_R_GLOB_DAT 0xffffffffu
#define GP_R_ABS64 0xffffffffu
#endif

/* ElfW(...) under names clang-format lays out as types. */
typedef ElfW(Addr) elf_addr;
typedef ElfW(Dyn) elf_dyn;
typedef ElfW(Half) elf_half;
typedef ElfW(Phdr) elf_phdr;
typedef ElfW(Rela) elf_rela;
typedef ElfW(Sxword) elf_sxword;
typedef ElfW(Sym) elf_sym;
typedef ElfW(Word) elf_word;

/* A symbol as installed: original NULL when the name is left alone. */
typedef struct gp_sym {
    const char *name;
    void *replacement;
    void *original;
} gp_sym;

/* A module already scanned (patched, or with nothing to patch, or failed). */
typedef struct gp_module {
    uintptr_t addr;
    char *name;
    int seen; /* by the scan in progress */
} gp_module;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int installed;
static int rescan_all; /* names were added: the next scan looks at every module again */
static gp_sym *syms_g;
static size_t nsyms_g;
static gp_module *mods;
static size_t nmods, capmods;
static unsigned stat_modules, stat_slots;
static unsigned stat_failed; /* modules skipped because mprotect failed (or did not undo) */

/* ---- one module's dynamic section ------------------------------------------------ */

typedef struct dynview {
    uintptr_t base; /* dlpi_addr */
    const elf_sym *symtab;
    const char *strtab;
    size_t strsz; /* 0: unknown */
    const elf_rela *jmprel, *rela;
    size_t jmprelsz, relasz, relaent;
    const uint32_t *gnu_hash, *sysv_hash;
    const elf_half *versym;
    int symbolic; /* DT_SYMBOLIC: its own definitions come first for it */
} dynview;

/* A d_ptr: glibc relocates those of a loaded module in place, but not the vDSO's (nor
 * one a concurrent dlopen has not got to yet); smaller than the load address, it is
 * taken as relative. */
static uintptr_t dyn_ptr(uintptr_t base, elf_addr p) { return p < base ? base + p : p; }

static int in_load(const struct dl_phdr_info *info, uintptr_t a, size_t len, int need_write)
{
    for (elf_half i = 0; i < info->dlpi_phnum; i++) {
        const elf_phdr *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (need_write && !(ph->p_flags & PF_W)))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (a >= lo && a - lo < ph->p_memsz && ph->p_memsz - (a - lo) >= len)
            return 1;
    }
    return 0;
}

static int contains(const struct dl_phdr_info *info, uintptr_t a)
{
    return in_load(info, a, 1, 0);
}

/* 0 with the tables found, -1 for a module without a usable dynamic section. */
static int dyn_view(const struct dl_phdr_info *info, dynview *d)
{
    memset(d, 0, sizeof *d);
    d->base = info->dlpi_addr;
    const elf_dyn *dyn = NULL;
    size_t ndyn = 0;
    for (elf_half i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
            dyn = (const elf_dyn *)(d->base + info->dlpi_phdr[i].p_vaddr);
            ndyn = info->dlpi_phdr[i].p_memsz / sizeof *dyn;
        }
    if (!dyn)
        return -1;
    elf_addr symtab = 0, strtab = 0, jmprel = 0, rela = 0, gnu = 0, sysv = 0, versym = 0;
    elf_sxword pltrel = 0;
    for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
        const elf_dyn *e = &dyn[i];
        switch (e->d_tag) {
        case DT_SYMTAB:
            symtab = e->d_un.d_ptr;
            break;
        case DT_STRTAB:
            strtab = e->d_un.d_ptr;
            break;
        case DT_STRSZ:
            d->strsz = e->d_un.d_val;
            break;
        case DT_JMPREL:
            jmprel = e->d_un.d_ptr;
            break;
        case DT_PLTRELSZ:
            d->jmprelsz = e->d_un.d_val;
            break;
        case DT_PLTREL:
            pltrel = (elf_sxword)e->d_un.d_val;
            break;
        case DT_RELA:
            rela = e->d_un.d_ptr;
            break;
        case DT_RELASZ:
            d->relasz = e->d_un.d_val;
            break;
        case DT_RELAENT:
            d->relaent = e->d_un.d_val;
            break;
        case DT_GNU_HASH:
            gnu = e->d_un.d_ptr;
            break;
        case DT_HASH:
            sysv = e->d_un.d_ptr;
            break;
        case DT_VERSYM:
            versym = e->d_un.d_ptr;
            break;
        case DT_SYMBOLIC:
            d->symbolic = 1;
            break;
        case DT_FLAGS:
            if (e->d_un.d_val & DF_SYMBOLIC)
                d->symbolic = 1;
            break;
        default:
            break;
        }
    }
    if (!symtab || !strtab)
        return -1;
    d->symtab = (const elf_sym *)dyn_ptr(d->base, symtab);
    d->strtab = (const char *)dyn_ptr(d->base, strtab);
    if (jmprel && pltrel == DT_RELA)
        d->jmprel = (const elf_rela *)dyn_ptr(d->base, jmprel);
    else
        d->jmprelsz = 0;
    if (d->relaent == 0)
        d->relaent = sizeof(elf_rela);
    if (rela && d->relaent >= sizeof(elf_rela))
        d->rela = (const elf_rela *)dyn_ptr(d->base, rela);
    else
        d->relasz = 0;
    if (gnu)
        d->gnu_hash = (const uint32_t *)dyn_ptr(d->base, gnu);
    if (sysv)
        d->sysv_hash = (const uint32_t *)dyn_ptr(d->base, sysv);
    if (versym)
        d->versym = (const elf_half *)dyn_ptr(d->base, versym);
    return 0;
}

/* The name of symbol `idx`, or NULL when its string lies outside the table. */
static const char *sym_name(const dynview *d, size_t idx)
{
    elf_word off = d->symtab[idx].st_name;
    if (d->strsz && off >= d->strsz)
        return NULL;
    return d->strtab + off;
}

static int sym_is(const dynview *d, size_t idx, const char *name)
{
    const char *s = sym_name(d, idx);
    if (!s || strcmp(s, name) != 0)
        return 0;
    return !(d->versym && (d->versym[idx] & 0x8000)); /* a hidden (non-default) version */
}

static uint32_t hash_gnu(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

static uint32_t hash_sysv(const char *s)
{
    uint32_t h = 0;
    for (; *s; s++) {
        h = (h << 4) + (unsigned char)*s;
        uint32_t g = h & 0xf0000000u;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

/* The module's dynamic symbol `name` (defined or not, default version), or NULL. */
static const elf_sym *dyn_lookup(const dynview *d, const char *name)
{
    if (d->gnu_hash) {
        const uint32_t *h = d->gnu_hash;
        uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
        if (nbuckets == 0)
            return NULL;
        const elf_addr *bloom = (const elf_addr *)(h + 4);
        const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t hash = hash_gnu(name);
        uint32_t i = buckets[hash % nbuckets];
        if (i == 0 || i < symoffset)
            return NULL;
        for (;; i++) {
            uint32_t ch = chain[i - symoffset];
            if ((ch | 1) == (hash | 1) && sym_is(d, i, name))
                return &d->symtab[i];
            if (ch & 1)
                return NULL;
        }
    }
    if (d->sysv_hash) {
        const uint32_t *h = d->sysv_hash;
        uint32_t nbucket = h[0], nchain = h[1];
        if (nbucket == 0)
            return NULL;
        const uint32_t *bucket = h + 2, *chain = bucket + nbucket;
        uint32_t steps = 0;
        for (uint32_t i = bucket[hash_sysv(name) % nbucket]; i != STN_UNDEF && i < nchain;
             i = chain[i]) {
            if (sym_is(d, i, name))
                return &d->symtab[i];
            if (++steps > nchain) /* a cycle: not a table the loader would use */
                return NULL;
        }
    }
    return NULL;
}

/* ---- which modules ---------------------------------------------------------------- */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int is_vdso(const struct dl_phdr_info *info)
{
    const char *b = base_name(info->dlpi_name ? info->dlpi_name : "");
    if (!strncmp(b, "linux-vdso", 10) || !strncmp(b, "linux-gate", 10))
        return 1;
    uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
    return vdso && (info->dlpi_addr == vdso || contains(info, vdso));
}

static int is_loader(const struct dl_phdr_info *info)
{
    const char *b = base_name(info->dlpi_name ? info->dlpi_name : "");
    if (!strncmp(b, "ld-linux", 8) || !strncmp(b, "ld64.so", 7))
        return 1;
    uintptr_t interp = getauxval(AT_BASE);
    return interp && contains(info, interp);
}

static int is_own(const struct dl_phdr_info *info)
{
    return contains(info, (uintptr_t)&gotpatch_install);
}

/* ---- /proc/self/maps ---------------------------------------------------------------- */

typedef struct maps_buf {
    char *p;
    size_t len;
    int state; /* 0 not read yet, 1 read, -1 unavailable */
} maps_buf;

static void maps_load(maps_buf *m)
{
    m->state = -1;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char *p = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (grow_array((void **)&p, &cap, len + 4096 + 1, 1, 65536) < 0)
            goto fail;
        ssize_t r = read(fd, p + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto fail;
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    p[len] = '\0';
    m->p = p;
    m->len = len;
    m->state = 1;
    return;
fail:
    close(fd);
    free(p);
}

/* 1 when the mapping holding `a` is writable, 0 when it is not, -1 when none holds it. */
static int maps_writable(const maps_buf *m, uintptr_t a)
{
    const char *s = m->p, *end = m->p + m->len;
    while (s < end) {
        char *q;
        unsigned long lo = strtoul(s, &q, 16);
        if (*q == '-') {
            unsigned long hi = strtoul(q + 1, &q, 16);
            if (*q == ' ' && a >= lo && a < hi)
                return q[1] != '\0' && q[2] == 'w';
        }
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl)
            break;
        s = nl + 1;
    }
    return -1;
}

/* ---- one module's slots ------------------------------------------------------------- */

typedef struct modctx {
    const struct dl_phdr_info *info;
    dynview d;
    uintptr_t relro_lo, relro_hi; /* the pages the loader made read-only; lo == hi: none */
    const maps_buf *maps;         /* to check pages outside RELRO; NULL: trust PF_W */
} modctx;

static const gp_sym *find_sym(const char *name)
{
    for (size_t i = 0; i < nsyms_g; i++)
        if (syms_g[i].original && !strcmp(syms_g[i].name, name))
            return &syms_g[i];
    return NULL;
}

static int in_relro(const modctx *m, uintptr_t slot)
{
    return slot >= m->relro_lo && slot < m->relro_hi;
}

/* The replacement the slot of relocation `r` is to hold now (its address in *slotp), or
 * NULL to leave it. */
static void *slot_plan(const modctx *m, const elf_rela *r, uintptr_t *slotp)
{
    unsigned type = (unsigned)GP_R_TYPE(r->r_info);
    size_t si = GP_R_SYM(r->r_info);
    if (si == 0 || (type != GP_R_JUMP_SLOT && type != GP_R_GLOB_DAT && type != GP_R_ABS64))
        return NULL;
    if (type == GP_R_ABS64 && r->r_addend != 0)
        return NULL;
    const char *name = sym_name(&m->d, si);
    if (!name || !*name)
        return NULL;
    const gp_sym *g = find_sym(name);
    if (!g)
        return NULL;
    uintptr_t slot = m->d.base + r->r_offset;
    if ((slot & (sizeof(void *) - 1)) || !in_load(m->info, slot, sizeof(void *), 1))
        return NULL;
    if (m->maps && !in_relro(m, slot) && maps_writable(m->maps, slot) != 1)
        return NULL;
    void *v = __atomic_load_n((void **)slot, __ATOMIC_RELAXED);
    if (v == g->replacement)
        return NULL;
    int ok = v == g->original;
    if (!ok && type == GP_R_JUMP_SLOT && contains(m->info, (uintptr_t)v)) {
        /* Not bound yet (lazy binding): the module's own PLT stub, which would bind it to
         * the original; unless the module defines the name and binds to itself first. */
        const elf_sym *s = &m->d.symtab[si];
        uintptr_t own = 0;
        if (s->st_shndx != SHN_UNDEF && s->st_shndx != SHN_ABS && s->st_value)
            own = m->d.base + s->st_value;
        ok = (uintptr_t)v != own && !(m->d.symbolic && own && own != (uintptr_t)g->original);
    }
    if (!ok)
        return NULL;
    *slotp = slot;
    return g->replacement;
}

/* Plans (write 0) or writes (write 1) the module's slots; returns how many, and counts
 * in *relro those in the RELRO pages. */
static unsigned module_walk(const modctx *m, int write, unsigned *relro)
{
    const elf_rela *tab[2] = {m->d.jmprel, m->d.rela};
    size_t size[2] = {m->d.jmprelsz, m->d.relasz};
    size_t step[2] = {sizeof(elf_rela), m->d.relaent};
    unsigned n = 0;
    for (int t = 0; t < 2; t++) {
        if (!tab[t])
            continue;
        for (size_t off = 0; off + sizeof(elf_rela) <= size[t]; off += step[t]) {
            const elf_rela *r = (const elf_rela *)((const char *)tab[t] + off);
            uintptr_t slot;
            void *repl = slot_plan(m, r, &slot);
            if (!repl)
                continue;
            if (in_relro(m, slot))
                (*relro)++;
            if (write)
                __atomic_store_n((void **)slot, repl, __ATOMIC_RELEASE);
            n++;
        }
    }
    return n;
}

enum { MOD_DONE, MOD_RETRY, MOD_FAILED };

typedef struct scan_ctx {
    maps_buf maps;
    unsigned written, modules;
    int counted; /* the loader's unload counter read (its first module) */
    int again;   /* modules were unloaded since the last scan: no module is known */
} scan_ctx;

/* The loader's unload counter (dlpi_subs) at the last scan. */
static unsigned long long last_subs;

static int patch_module(scan_ctx *c, const struct dl_phdr_info *info)
{
    modctx m = {.info = info};
    if (dyn_view(info, &m.d) < 0)
        return MOD_DONE;
    uintptr_t page = (uintptr_t)getpagesize();
    for (elf_half i = 0; i < info->dlpi_phnum; i++) {
        const elf_phdr *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_GNU_RELRO)
            continue;
        m.relro_lo = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
        m.relro_hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(page - 1);
    }
    /* Relocated yet?  The loader protects a module's RELRO last, right after relocating
     * it: before that, its slots hold what the loader is about to overwrite (and its
     * RELRO may become read-only under a write).  Taken again at the next scan. */
    if (m.relro_lo < m.relro_hi) {
        if (c->maps.state == 0)
            maps_load(&c->maps);
        if (c->maps.state == 1 && maps_writable(&c->maps, m.relro_lo) != 0)
            return MOD_RETRY;
    }
    unsigned relro = 0;
    if (module_walk(&m, 0, &relro) == 0)
        return MOD_DONE;
    if (c->maps.state == 0)
        maps_load(&c->maps);
    m.maps = c->maps.state == 1 ? &c->maps : NULL;
    int opened = 0;
    if (relro) {
        if (mprotect((void *)m.relro_lo, m.relro_hi - m.relro_lo, PROT_READ | PROT_WRITE))
            return MOD_FAILED;
        opened = 1;
    }
    relro = 0;
    unsigned n = module_walk(&m, 1, &relro);
    if (opened && mprotect((void *)m.relro_lo, m.relro_hi - m.relro_lo, PROT_READ))
        stat_failed++; /* written, but its RELRO stays writable */
    c->written += n;
    if (n)
        c->modules++;
    return MOD_DONE;
}

static gp_module *find_module(uintptr_t addr, const char *name)
{
    for (size_t i = 0; i < nmods; i++)
        if (mods[i].addr == addr && !strcmp(mods[i].name, name))
            return &mods[i];
    return NULL;
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    scan_ctx *c = arg;
    if (is_vdso(info) || is_loader(info) || is_own(info))
        return 0;
    if (!c->counted) {
        c->counted = 1;
        unsigned long long subs = size >= offsetof(struct dl_phdr_info, dlpi_subs) +
                                              sizeof info->dlpi_subs
                                      ? info->dlpi_subs
                                      : last_subs + 1; /* no counter: never trust the list */
        c->again = subs != last_subs || rescan_all;
        last_subs = subs;
        rescan_all = 0;
    }
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    gp_module *known = find_module(info->dlpi_addr, name);
    if (known && !c->again) {
        known->seen = 1;
        return 0;
    }
    int outcome = patch_module(c, info);
    if (outcome == MOD_FAILED)
        stat_failed++;
    if (known) {
        /* Looked at again; one still being loaded is forgotten, to be taken as new. */
        known->seen = outcome != MOD_RETRY;
        return 0;
    }
    if (outcome == MOD_RETRY)
        return 0;
    /* Short of memory, the module is not remembered: the next scan looks at it again and
     * finds its slots written already. */
    char *copy = strdup(name);
    if (!copy || GROW_ARRAY(mods, capmods, nmods + 1) < 0) {
        free(copy);
        return 0;
    }
    mods[nmods++] = (gp_module){info->dlpi_addr, copy, 1};
    return 0;
}

/* Under `lock`: patches what is new, forgets the modules gone; slots written. */
static int scan(void)
{
    scan_ctx c = {0};
    size_t before = nmods;
    for (size_t i = 0; i < nmods; i++)
        mods[i].seen = 0;
    int rc = libc_next_dl_iterate_phdr(scan_cb, &c);
    free(c.maps.p);
    if (rc >= 0) {
        size_t k = 0;
        for (size_t i = 0; i < nmods; i++) {
            if (mods[i].seen || i >= before)
                mods[k++] = mods[i];
            else
                free(mods[i].name);
        }
        nmods = k;
    }
    stat_slots += c.written;
    stat_modules += c.modules;
    return (int)c.written;
}

/* ---- originals -------------------------------------------------------------------- */

typedef struct resolve_ctx {
    const char *name;
    uintptr_t found;     /* dlsym's answer */
    int canonical;       /* it is a module's own undefined symbol (a canonical PLT entry) */
    uintptr_t first_def; /* the first definition in loading order */
    int first_ifunc;
    int own_seen;
} resolve_ctx;

static int resolve_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    resolve_ctx *r = arg;
    (void)size;
    if (is_own(info))
        r->own_seen = 1;
    if (is_vdso(info) || is_loader(info))
        return 0;
    dynview d;
    if (dyn_view(info, &d) < 0)
        return 0;
    const elf_sym *s = dyn_lookup(&d, r->name);
    if (!s || !s->st_value)
        return 0;
    if (s->st_shndx == SHN_UNDEF) {
        if (d.base + s->st_value == r->found)
            r->canonical = 1;
        return 0;
    }
    unsigned bind = GP_ST_BIND(s->st_info), type = GP_ST_TYPE(s->st_info);
    if (r->first_def || s->st_shndx == SHN_ABS ||
        (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) ||
        (type != STT_FUNC && type != STT_NOTYPE && type != STT_OBJECT && type != STT_GNU_IFUNC))
        return 0;
    r->first_def = d.base + s->st_value;
    r->first_ifunc = type == STT_GNU_IFUNC;
    return 0;
}

/* ---- interface -------------------------------------------------------------------- */

int gotpatch_install(const gotpatch_sym *syms, size_t n, void **originals, char *err,
                     size_t errlen)
{
#ifdef GP_UNSUPPORTED
    (void)syms, (void)n, (void)originals;
    snprintf(err, errlen, "pyprof: GOT patching is not supported on this architecture");
    return -1;
#else
    if (!syms || n == 0 || !originals) {
        snprintf(err, errlen, "pyprof: GOT patching: no symbols given");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (!syms[i].name || !*syms[i].name || !syms[i].replacement) {
            snprintf(err, errlen, "pyprof: GOT patching: symbol %zu has no name or replacement",
                     i);
            return -1;
        }
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < nsyms_g; j++)
            if (!strcmp(syms[i].name, syms_g[j].name)) {
                snprintf(err, errlen, "pyprof: GOT patching: %.64s is patched already",
                         syms[i].name);
                pthread_mutex_unlock(&lock);
                return -1;
            }
    /* The names patched so far, then these. */
    gp_sym *g = calloc(nsyms_g + n, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "pyprof: GOT patching: out of memory");
        goto fail;
    }
    if (nsyms_g)
        memcpy(g, syms_g, nsyms_g * sizeof *g);
    gp_sym *added = g + nsyms_g;
    for (size_t i = 0; i < n; i++) {
        gp_sym *gi = &added[i];
        gi->name = syms[i].name;
        gi->replacement = syms[i].replacement;
        void *o = dlsym(RTLD_DEFAULT, syms[i].name);
        if (!o)
            dlerror(); /* the program's next dlerror() is not about our lookup */
        resolve_ctx r = {.name = syms[i].name, .found = (uintptr_t)o};
        if (libc_next_dl_iterate_phdr(resolve_cb, &r) < 0) {
            snprintf(err, errlen, "pyprof: GOT patching: the C library has no dl_iterate_phdr");
            goto fail;
        }
        if (!r.own_seen) {
            snprintf(err, errlen,
                     "pyprof: GOT patching: the library's own module is not listed");
            goto fail;
        }
        if (o && r.canonical)
            o = r.first_ifunc ? NULL : (void *)r.first_def;
        if (o && o == syms[i].replacement) {
            snprintf(err, errlen, "pyprof: GOT patching: %.64s resolves to its replacement",
                     syms[i].name);
            goto fail;
        }
        gi->original = o;
    }
    for (size_t i = 0; i < n; i++)
        originals[i] = added[i].original;
    if (!installed)
        pthread_atfork(gotpatch_fork_prepare, gotpatch_fork_parent, gotpatch_after_fork_child);
    free(syms_g);
    syms_g = g;
    nsyms_g += n;
    /* The modules patched before know nothing of the new names: every one is looked at
     * again (a slot that holds its replacement already is left). */
    rescan_all = installed;
    installed = 1;
    int written = scan();
    pthread_mutex_unlock(&lock);
    return written;
fail:
    free(g);
    pthread_mutex_unlock(&lock);
    return -1;
#endif
}

int gotpatch_refresh(void)
{
    pthread_mutex_lock(&lock);
    int rc = installed ? scan() : -1;
    pthread_mutex_unlock(&lock);
    return rc;
}

void gotpatch_stats(unsigned *modules, unsigned *slots)
{
    pthread_mutex_lock(&lock);
    if (modules)
        *modules = stat_modules;
    if (slots)
        *slots = stat_slots;
    pthread_mutex_unlock(&lock);
}

void gotpatch_fork_prepare(void) { pthread_mutex_lock(&lock); }

void gotpatch_fork_parent(void) { pthread_mutex_unlock(&lock); }

void gotpatch_after_fork_child(void) { pthread_mutex_init(&lock, NULL); }
