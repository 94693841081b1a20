/*
 * elfsym: a loaded module's .symtab symbols (elfsym.h).
 */
#include "elfsym.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The section headers' view of a mapped file of `size` bytes; 0 when it is not a 64-bit
 * ELF file whose section headers lie inside it. */
static const Elf64_Shdr *sections(const unsigned char *p, size_t size, size_t *count)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)p;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > size || (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
        return NULL;
    *count = eh->e_shnum;
    return (const Elf64_Shdr *)(const void *)(p + eh->e_shoff);
}

/* Looks the names up in the mapped file's .symtab; the count found. */
static int lookup(const unsigned char *p, size_t size, uintptr_t bias, const char *const *names,
                  uintptr_t *addrs, size_t n)
{
    size_t nsec;
    const Elf64_Shdr *sh = sections(p, size, &nsec);
    if (!sh)
        return 0;
    int found = 0;
    for (size_t s = 0; s < nsec; s++) {
        if (sh[s].sh_type != SHT_SYMTAB || sh[s].sh_entsize != sizeof(Elf64_Sym) ||
            sh[s].sh_link >= nsec)
            continue;
        const Elf64_Shdr *str = &sh[sh[s].sh_link];
        if (sh[s].sh_offset > size || size - sh[s].sh_offset < sh[s].sh_size ||
            str->sh_offset > size || size - str->sh_offset < str->sh_size)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(const void *)(p + sh[s].sh_offset);
        const char *strtab = (const char *)p + str->sh_offset;
        size_t nsym = sh[s].sh_size / sizeof *sym;
        for (size_t i = 0; i < nsym; i++) {
            if (ELF64_ST_TYPE(sym[i].st_info) != STT_OBJECT || sym[i].st_shndx == SHN_UNDEF ||
                sym[i].st_name >= str->sh_size)
                continue;
            const char *name = strtab + sym[i].st_name;
            size_t room = str->sh_size - sym[i].st_name;
            for (size_t k = 0; k < n; k++)
                if (!addrs[k] && strnlen(name, room) < room && !strcmp(name, names[k])) {
                    addrs[k] = bias + sym[i].st_value;
                    found++;
                }
        }
    }
    return found;
}

int elfsym_find(const void *inside, const char *const *names, uintptr_t *addrs, size_t n)
{
    for (size_t k = 0; k < n; k++)
        addrs[k] = 0;
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(inside, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return -1;
    const char *path = lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > 0)
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    int found = lookup(p, (size_t)st.st_size, (uintptr_t)lm->l_addr, names, addrs, n);
    munmap(p, (size_t)st.st_size);
    return found;
}
