/*
 * asyncabi: where the asyncio layout comes from (asyncabi.h; docs/ASYNCIO.md,
 * ".AsyncioDebug (3.14+)" and "Finding the layouts").
 *
 * On 3.14+ each cron round asks the loader, with one step of dl_iterate_phdr, how many
 * objects it has loaded so far (dlpi_adds); only when that moved since the last look
 * does it look again: a second walk collects the objects that may hold the section (the
 * executable, listed first with an empty name; anything whose file name contains
 * "python" or "_asyncio") with their load bias and PT_LOAD ranges, and the files are read
 * after the walk, outside the loader's lock (gotpatch.c's head comment: the lock is the
 * loader's, taken by every dlopen of the program's threads).  Each file is mapped
 * read-only, its section headers searched for `.AsyncioDebug`, and the section checked:
 * SHT_PROGBITS, SHF_ALLOC, at least the 104 bytes of the table, in the file, at
 * bias + sh_addr inside one of the object's PT_LOAD ranges (the bias is 0 for a non-PIE
 * executable), the bytes in memory (read under the guard, safe_read.h) equal to the
 * file's, then asyncabi_check.  Absence is not remembered, as `_asyncio` is usually
 * loaded late; a section that failed a check is, and said once.
 *
 * Only the cron thread looks and writes; the state is published last (release), so a
 * reader that sees FOUND sees the words.
 */
#include "asyncabi.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "asyncscan.h"
#include "asynctask.h"
#include "diag.h"
#include "doorbell.h"
#include "libc_next.h"
#include "ownfd.h"
#include "pynames.h"
#include "safe_read.h"

_Static_assert(sizeof(asyncabi_words) == ASYNCABI_WORDS * 8, "the table is 13 words");

#define SECTION ".AsyncioDebug"
#define TABLE_BYTES (ASYNCABI_WORDS * 8)
#define OBJECT_HEAD 16    /* PyObject: a task's fields come after it */
#define TASK_MIN 64       /* a TaskObj holds at least the future's fields */
#define TASK_MAX 4096     /* and fits in a page */
#define MAX_CANDIDATES 16 /* objects looked at per walk */
#define MAX_LOADS 16      /* PT_LOAD ranges kept per object */
#define EXE_PATH "/proc/self/exe"
#define FUT_LOOP 16 /* FutureObj.fut_loop, every version: the first field after the head */

/* ---- the table's own checks (pure) ---------------------------------------------------- */

enum { IN_TASK, IN_INTERP, IN_TSTATE };

static const struct {
    const char *name;
    uint16_t word; /* offsetof(asyncabi_words, ...) */
    uint8_t width, in;
} FIELDS[] = {
    {"task_name", offsetof(asyncabi_words, task_name), 8, IN_TASK},
    {"task_awaited_by", offsetof(asyncabi_words, task_awaited_by), 8, IN_TASK},
    {"task_is_task", offsetof(asyncabi_words, task_is_task), 1, IN_TASK},
    {"task_awaited_by_is_set", offsetof(asyncabi_words, task_awaited_by_is_set), 1, IN_TASK},
    {"task_coro", offsetof(asyncabi_words, task_coro), 8, IN_TASK},
    {"task_node", offsetof(asyncabi_words, task_node), 16, IN_TASK},
    {"interp asyncio_tasks_head", offsetof(asyncabi_words, interp_tasks_head), 16, IN_INTERP},
    {"asyncio_running_loop", offsetof(asyncabi_words, running_loop), 8, IN_TSTATE},
    {"asyncio_running_task", offsetof(asyncabi_words, running_task), 8, IN_TSTATE},
    {"tstate asyncio_tasks_head", offsetof(asyncabi_words, tstate_tasks_head), 16, IN_TSTATE},
};

static uint64_t word_at(const asyncabi_words *w, uint16_t off)
{
    uint64_t v;
    memcpy(&v, (const char *)w + off, sizeof v);
    return v;
}

int asyncabi_check(const asyncabi_words *w, uint64_t interp_size, uint64_t tstate_size,
                   char *err, size_t errlen)
{
    static const char *const what[] = {"task", "interpreter state", "thread state"};
    if (w->task_size < TASK_MIN || w->task_size > TASK_MAX) {
        snprintf(err, errlen, "a task of %llu bytes is not plausible",
                 (unsigned long long)w->task_size);
        return -1;
    }
    if (!interp_size || w->interp_size != interp_size) {
        snprintf(err, errlen,
                 "the interpreter state is %llu bytes by it but %llu by _Py_DebugOffsets",
                 (unsigned long long)w->interp_size, (unsigned long long)interp_size);
        return -1;
    }
    if (!tstate_size || w->tstate_size < tstate_size) {
        snprintf(err, errlen,
                 "its thread state of %llu bytes is smaller than the public one "
                 "(%llu by _Py_DebugOffsets)",
                 (unsigned long long)w->tstate_size, (unsigned long long)tstate_size);
        return -1;
    }
    for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++) {
        uint64_t off = word_at(w, FIELDS[i].word), width = FIELDS[i].width;
        uint64_t size = FIELDS[i].in == IN_TASK     ? w->task_size
                        : FIELDS[i].in == IN_INTERP ? w->interp_size
                                                    : w->tstate_size;
        if (off > size || size - off < width) {
            snprintf(err, errlen, "%s at %llu + %llu is past the %s's %llu bytes",
                     FIELDS[i].name, (unsigned long long)off, (unsigned long long)width,
                     what[FIELDS[i].in], (unsigned long long)size);
            return -1;
        }
        if (FIELDS[i].in == IN_TASK && off < OBJECT_HEAD) {
            snprintf(err, errlen, "%s at %llu is inside the object header", FIELDS[i].name,
                     (unsigned long long)off);
            return -1;
        }
        /* The thread fields are _PyThreadStateImpl's, after the public PyThreadState. */
        if (FIELDS[i].in == IN_TSTATE && off < tstate_size) {
            snprintf(err, errlen,
                     "%s at %llu is inside the public thread state (%llu bytes by "
                     "_Py_DebugOffsets)",
                     FIELDS[i].name, (unsigned long long)off, (unsigned long long)tstate_size);
            return -1;
        }
    }
    return 0;
}

/* ---- the state ------------------------------------------------------------------------- */

static struct {
    pyabi abi; /* the interpreter's (3.7-3.13: _asyncio is looked for in its modules) */
    int minor; /* the interpreter's, 0 before asyncabi_configure */
    uint64_t interp_size, tstate_size;
    int looked;                   /* a walk has collected the objects once */
    unsigned long long seen_adds; /* the loader's dlpi_adds at that walk */
    int no_look;                  /* a fork child of a lookup not finished */
    asyncabi a;                   /* its own `state` unused: `state` is the published one */
    asynctask_layout layout;      /* 3.7-3.13: the one published, for the cron's scan */
    _Atomic int state;
    _Atomic int loaded; /* a dlopen that may have loaded the section returned: look again
                         * even if the count of objects is the one last looked at (a look
                         * made while that dlopen ran counted the object before it could
                         * be read) */
} g;

void asyncabi_configure(const pyabi *a)
{
    g.abi = *a;
    g.minor = a->major == 3 ? a->minor : 0;
    g.interp_size = a->is_size;
    g.tstate_size = a->ts_size;
}

int asyncabi_waiting(void)
{
    int st = atomic_load(&g.state);
    return g.minor >= 14 && !g.no_look && st != ASYNCABI_FOUND && st != ASYNCABI_REFUSED;
}

void asyncabi_after_dlopen(void)
{
    if (asyncabi_waiting()) {
        atomic_store(&g.loaded, 1);
        doorbell_ring();
    }
}

void asyncabi_get(asyncabi *out)
{
    int st = atomic_load_explicit(&g.state, memory_order_acquire);
    *out = g.a;
    out->state = st;
}

void asyncabi_after_fork_child(void)
{
    int st = atomic_load(&g.state);
    if (st != ASYNCABI_FOUND && st != ASYNCABI_REFUSED)
        g.no_look = 1;
}

/* ---- the loaded objects ---------------------------------------------------------------- */

typedef struct candidate {
    char name[ASYNCABI_PATH_MAX]; /* dlpi_name; "" for the executable */
    uintptr_t bias;
    int nload;
    uintptr_t load[MAX_LOADS][2]; /* [start, end) of each PT_LOAD in memory */
} candidate;

typedef struct walk {
    int count_only; /* stop at the first object: dlpi_adds only */
    int index;      /* objects seen */
    int adds_known;
    unsigned long long adds;
    int n;
    candidate c[MAX_CANDIDATES];
} walk;

static int wanted(const char *name, int index)
{
    if (!name[0])
        return index == 0; /* the executable is listed first */
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    return strstr(base, "python") || strstr(base, "_asyncio");
}

/* Under the loader's lock: copies only. */
static int on_object(struct dl_phdr_info *info, size_t size, void *data)
{
    walk *s = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds) {
        s->adds = info->dlpi_adds;
        s->adds_known = 1;
    }
    if (s->count_only)
        return 1;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    int index = s->index++;
    if (!wanted(name, index) || s->n == MAX_CANDIDATES || strlen(name) >= ASYNCABI_PATH_MAX)
        return 0;
    candidate *c = &s->c[s->n++];
    strcpy(c->name, name);
    c->bias = (uintptr_t)info->dlpi_addr;
    c->nload = 0;
    for (int i = 0; i < info->dlpi_phnum && c->nload < MAX_LOADS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        c->load[c->nload][0] = c->bias + ph->p_vaddr;
        c->load[c->nload][1] = c->bias + ph->p_vaddr + ph->p_memsz;
        c->nload++;
    }
    return 0;
}

/* ---- one file -------------------------------------------------------------------------- */

/* The section named `want` of a mapped ELF file of `size` bytes; NULL when it is not a
 * 64-bit ELF file whose headers lie inside it, or has no such section. */
static const Elf64_Shdr *find_section(const unsigned char *p, size_t size, const char *want)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)p;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > size || (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum ||
        !eh->e_shnum)
        return NULL;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(const void *)(p + eh->e_shoff);
    size_t strndx = eh->e_shstrndx == SHN_XINDEX ? sh[0].sh_link : eh->e_shstrndx;
    if (strndx >= eh->e_shnum)
        return NULL;
    const Elf64_Shdr *str = &sh[strndx];
    if (str->sh_offset > size || size - str->sh_offset < str->sh_size)
        return NULL;
    const char *names = (const char *)p + str->sh_offset;
    size_t wlen = strlen(want);
    for (size_t i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_name < str->sh_size && str->sh_size - sh[i].sh_name > wlen &&
            !memcmp(names + sh[i].sh_name, want, wlen + 1))
            return &sh[i];
    return NULL;
}

/* Copies n bytes of this process's memory; -1 when a read faulted. */
static int copy_guarded(void *dst, uintptr_t src, size_t n)
{
    safe_jmpbuf jb;
    if (SAFE_GUARD_BEGIN(jb)) {
        safe_copy(dst, src, n);
        SAFE_GUARD_END();
        return 0;
    }
    return -1;
}

/* The section's table from the mapped file `p` of candidate `c`: 1 with the words in *w,
 * 0 when the file has no such section, -1 with a line in err when it fails a check. */
static int take_section(const unsigned char *p, size_t size, const candidate *c,
                        asyncabi_words *w, char *err, size_t errlen)
{
    const Elf64_Shdr *sh = find_section(p, size, SECTION);
    if (!sh)
        return 0;
    if (sh->sh_type != SHT_PROGBITS || !(sh->sh_flags & SHF_ALLOC)) {
        snprintf(err, errlen, "the section is not allocated data (type %u, flags %#llx)",
                 (unsigned)sh->sh_type, (unsigned long long)sh->sh_flags);
        return -1;
    }
    if (sh->sh_size < TABLE_BYTES || sh->sh_offset > size ||
        size - sh->sh_offset < TABLE_BYTES) {
        snprintf(err, errlen, "the section holds %llu bytes, not the %d of the table",
                 (unsigned long long)sh->sh_size, TABLE_BYTES);
        return -1;
    }
    uintptr_t addr = c->bias + sh->sh_addr;
    int inside = 0;
    for (int i = 0; i < c->nload && !inside; i++)
        inside = addr >= c->load[i][0] && addr <= c->load[i][1] &&
                 c->load[i][1] - addr >= TABLE_BYTES;
    if (!inside) {
        snprintf(err, errlen, "the section at %#lx is outside the object's loaded segments",
                 (unsigned long)addr);
        return -1;
    }
    if (copy_guarded(w, addr, TABLE_BYTES) < 0 || memcmp(w, p + sh->sh_offset, TABLE_BYTES)) {
        snprintf(err, errlen, "the section's bytes in memory differ from the file's");
        return -1;
    }
    return 1;
}

/* Looks in the file of candidate `c`, named `path`: as take_section; 0 too when the file
 * cannot be read. */
static int look_in(const candidate *c, const char *path, asyncabi_words *w, char *err,
                   size_t errlen)
{
    int fd = ownfd_move(open(path, O_RDONLY | O_CLOEXEC));
    if (fd < 0)
        return 0;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > 0)
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return 0;
    int r = take_section(p, (size_t)st.st_size, c, w, err, errlen);
    munmap(p, (size_t)st.st_size);
    return r;
}

/* ---- the cron's look ------------------------------------------------------------------- */

/* What the section does not say, per minor (docs/ASYNCIO.md, "The coroutine object and
 * its frame" and "What a suspended coroutine awaits"; every value checked on the live
 * objects by tests/probes/asyncio_layout.py): where a coroutine embeds its frame and
 * keeps its frame state, the frame's stack pointer, the state at an `await`, and how far
 * below the stack pointer the awaited object sits. */
static const struct {
    int minor;
    int64_t gen_iframe, gen_frame_state, fr_stackpointer;
    int8_t state_first, state_last, state_yield_from;
    uint8_t awaited_slot;
} CORO[] = {{14, 72, 67, 64, -3, -1, -1, 1}, {15, 72, 67, 64, 0, 3, 2, 2}};

/* Hands the layout found to the signal handler (asynctask.c). */
static void publish(const asyncabi_words *w)
{
    for (size_t i = 0; i < sizeof CORO / sizeof CORO[0]; i++) {
        if (CORO[i].minor != g.minor)
            continue;
        asynctask_layout l = {
            .current_tasks = 0,
            .gen_frame = -1,
            .ts_running_loop = (int64_t)w->running_loop,
            .ts_running_task = (int64_t)w->running_task,
            .ts_tasks_head = (int64_t)w->tstate_tasks_head,
            .task_node = (int64_t)w->task_node,
            .coro_type = (uintptr_t)pyabi_dlsym_python("PyCoro_Type"),
            .task_size = (int64_t)w->task_size,
            .task_coro = (int64_t)w->task_coro,
            .task_name = (int64_t)w->task_name,
            .task_awaited_by = (int64_t)w->task_awaited_by,
            .task_is_task = (int64_t)w->task_is_task,
            .task_awaited_by_is_set = (int64_t)w->task_awaited_by_is_set,
            .task_loop = FUT_LOOP,
            .gen_iframe = CORO[i].gen_iframe,
            .gen_frame_state = CORO[i].gen_frame_state,
            .state_first = CORO[i].state_first,
            .state_last = CORO[i].state_last,
            .state_yield_from = CORO[i].state_yield_from,
            .stack_kind = ASYNCTASK_STACK_POINTER,
            .fr_stack = CORO[i].fr_stackpointer,
            .awaited_slot = CORO[i].awaited_slot,
        };
        asynctask_publish(&l);
    }
}

static walk objects; /* the cron's only: too large for its stack */

static void settle(int state, const char *path, const asyncabi_words *w, const char *reason)
{
    snprintf(g.a.path, sizeof g.a.path, "%s", path);
    if (w)
        g.a.w = *w;
    snprintf(g.a.reason, sizeof g.a.reason, "%s", reason ? reason : "");
    atomic_store_explicit(&g.state, state, memory_order_release);
}

/* 3.7-3.13: TaskObj and the coroutine's frame per minor (docs/ASYNCIO.md, "TaskObj", "The
 * coroutine object and its frame" and "What a suspended coroutine awaits"; every value
 * checked on the live objects by tests/probes/asyncio_layout.py): the task's size (its
 * type's tp_basicsize, checked), its coroutine and name (-1: 3.7 has none), where the
 * coroutine keeps its frame (embedded at gen_iframe on 3.11+, a pointer at gen_frame
 * before) and its state (3.11+: the states while created or suspended, and at an
 * `await`), and where the frame's value stack ends (stack_kind, fr_stack, fr_base). */
static const struct {
    int minor;
    int64_t task_size, task_fut_waiter, task_coro, task_name, gen_iframe, gen_frame,
        gen_frame_state;
    int8_t state_first, state_last, state_yield_from;
    int stack_kind;
    int64_t fr_stack, fr_base;
} TASKS[] = {
    {7, 136, 104, 112, -1, -1, 16, -1, 0, 0, 0, ASYNCTASK_STACK_TOP, 72, 64},
    {8, 144, 104, 112, 120, -1, 16, -1, 0, 0, 0, ASYNCTASK_STACK_TOP, 72, 64},
    {9, 184, 144, 152, 160, -1, 16, -1, 0, 0, 0, ASYNCTASK_STACK_TOP, 72, 64},
    {10, 192, 152, 160, 168, -1, 16, -1, 0, 0, 0, ASYNCTASK_STACK_DEPTH, 80, 64},
    {11, 176, 128, 136, 144, 80, -1, 75, -2, -1, -1, ASYNCTASK_STACK_INDEX, 64, 72},
    {12, 176, 128, 136, 144, 72, -1, 67, -2, -1, -1, ASYNCTASK_STACK_INDEX, 64, 72},
    {13, 144, 112, 120, 128, 72, -1, 67, -3, -1, -1, ASYNCTASK_STACK_INDEX, 64, 72},
};

#define TP_NAME 24 /* PyTypeObject.tp_name */

static uintptr_t all_tasks_set(void);

/* 3.7-3.13, once _asyncio is imported: its Task type and its {loop: task} dict of the
 * tasks running, checked (the type's name and size against the row; the dict's type),
 * then handed to the handler.  Until the import, nothing: looked for again next round. */
static void look_in_module(void)
{
    size_t row = 0;
    while (row < sizeof TASKS / sizeof TASKS[0] && TASKS[row].minor != g.minor)
        row++;
    if (row == sizeof TASKS / sizeof TASKS[0])
        return;
    uintptr_t type = pynames_module_attr(&g.abi, "_asyncio", "Task");
    uintptr_t current = pynames_module_attr(&g.abi, "_asyncio", "_current_tasks");
    if (!type || !current)
        return;
    uintptr_t dict_type = (uintptr_t)pyabi_dlsym_python("PyDict_Type");
    uintptr_t name_ptr = 0, basicsize = 0, current_type = 0;
    char name[16] = "";
    if (copy_guarded(&name_ptr, type + TP_NAME, 8) < 0 ||
        copy_guarded(&basicsize, type + PYABI_TP_BASICSIZE, 8) < 0 ||
        copy_guarded(&current_type, current + PYABI_OB_TYPE, 8) < 0 || !name_ptr ||
        copy_guarded(name, name_ptr, sizeof name - 1) < 0)
        return;
    char reason[256] = "";
    if (strcmp(name, "_asyncio.Task") != 0)
        snprintf(reason, sizeof reason, "_asyncio.Task is not the type its name says");
    else if ((int64_t)basicsize != TASKS[row].task_size)
        snprintf(reason, sizeof reason,
                 "_asyncio.Task is %llu bytes, this version's table says %lld",
                 (unsigned long long)basicsize, (long long)TASKS[row].task_size);
    else if (!dict_type || current_type != dict_type)
        snprintf(reason, sizeof reason, "_asyncio._current_tasks is not a dict");
    if (reason[0]) {
        settle(ASYNCABI_REFUSED, "_asyncio", NULL, reason);
        diag_error("pyprof: asyncio: %s; asyncio tasks will not be sampled", reason);
        return;
    }
    uintptr_t all = all_tasks_set();
    asynctask_layout l = {
        .current_tasks = current,
        .task_type = type,
        .all_tasks = all,
        .weakref_type = (uintptr_t)pyabi_dlsym_python("_PyWeakref_RefType"),
        .coro_type = (uintptr_t)pyabi_dlsym_python("PyCoro_Type"),
        .dict_layout = g.abi.dict_layout,
        .task_size = TASKS[row].task_size,
        .task_loop = FUT_LOOP,
        .task_fut_waiter = TASKS[row].task_fut_waiter,
        .task_coro = TASKS[row].task_coro,
        .task_name = TASKS[row].task_name,
        .task_awaited_by = -1,
        .task_is_task = -1,
        .task_awaited_by_is_set = -1,
        .gen_iframe = TASKS[row].gen_iframe,
        .gen_frame = TASKS[row].gen_frame,
        .gen_frame_state = TASKS[row].gen_frame_state,
        .state_first = TASKS[row].state_first,
        .state_last = TASKS[row].state_last,
        .state_yield_from = TASKS[row].state_yield_from,
        .stack_kind = TASKS[row].stack_kind,
        .fr_stack = TASKS[row].fr_stack,
        .fr_base = TASKS[row].fr_base,
        .awaited_slot = 1,
    };
    if (!l.weakref_type)
        l.all_tasks = 0;
    g.layout = l;
    settle(ASYNCABI_FOUND, "_asyncio", NULL, NULL);
    asynctask_publish(&l);
    diag_verbose("pyprof: asyncio: layout from the table for 3.%d (task %lld bytes, "
                 "running tasks from _asyncio._current_tasks, %s)",
                 g.minor, (long long)TASKS[row].task_size,
                 l.all_tasks ? "suspended ones from its set of tasks"
                             : "its set of tasks not found: no suspended ones");
}

/* The set behind _asyncio's WeakSet of every task (3.7-3.11 _all_tasks, 3.12-3.13
 * _scheduled_tasks): its `data`, a set of weak references.  0 when it is not one. */
static uintptr_t all_tasks_set(void)
{
    uintptr_t weakset = pynames_module_attr(&g.abi, "_asyncio",
                                            g.minor <= 11 ? "_all_tasks" : "_scheduled_tasks");
    uintptr_t data = pynames_attr(&g.abi, weakset, "data"), type = 0;
    uintptr_t set_type = (uintptr_t)pyabi_dlsym_python("PySet_Type");
    if (!data || !set_type || copy_guarded(&type, data + PYABI_OB_TYPE, 8) < 0)
        return 0;
    return type == set_type ? data : 0;
}

uint64_t asyncabi_tick(void)
{
    int st = atomic_load(&g.state);
    if (st == ASYNCABI_FOUND && g.minor >= 7 && g.minor <= 13)
        return asyncscan_round(&g.abi, &g.layout, g.minor);
    if (g.no_look || st == ASYNCABI_FOUND || st == ASYNCABI_REFUSED)
        return 0;
    if (g.minor >= 7 && g.minor <= 13) {
        look_in_module();
        return 0;
    }
    if (g.minor < 14)
        return 0;
    walk *s = &objects;
    if (g.looked && !atomic_exchange(&g.loaded, 0)) {
        s->count_only = 1;
        s->adds_known = 0;
        libc_next_dl_iterate_phdr(on_object, s);
        if (!s->adds_known || s->adds == g.seen_adds)
            return 0;
    }
    memset(s, 0, sizeof *s);
    if (libc_next_dl_iterate_phdr(on_object, s) < 0 && !s->index)
        return 0;
    g.looked = 1;
    g.seen_adds = s->adds;

    char refused[256] = "", refused_path[ASYNCABI_PATH_MAX] = "", err[256];
    for (int i = 0; i < s->n; i++) {
        const candidate *c = &s->c[i];
        char path[ASYNCABI_PATH_MAX];
        if (c->name[0]) {
            snprintf(path, sizeof path, "%s", c->name);
        } else {
            ssize_t len = readlink(EXE_PATH, path, sizeof path - 1);
            if (len <= 0)
                snprintf(path, sizeof path, "%s", EXE_PATH);
            else
                path[len] = 0;
        }
        asyncabi_words w;
        err[0] = 0;
        int r = look_in(c, c->name[0] ? c->name : EXE_PATH, &w, err, sizeof err);
        if (r > 0 && asyncabi_check(&w, g.interp_size, g.tstate_size, err, sizeof err) == 0) {
            settle(ASYNCABI_FOUND, path, &w, NULL);
            publish(&w);
            diag_verbose("pyprof: asyncio: layout from " SECTION " in %s (task %llu bytes, "
                         "running task at thread state +%llu)",
                         path, (unsigned long long)w.task_size,
                         (unsigned long long)w.running_task);
            return 0;
        }
        if (r != 0 && !refused[0]) {
            snprintf(refused, sizeof refused, "%s", err);
            snprintf(refused_path, sizeof refused_path, "%s", path);
        }
    }
    if (refused[0]) {
        settle(ASYNCABI_REFUSED, refused_path, NULL, refused);
        diag_error("pyprof: asyncio: " SECTION " in %s refused: %s; asyncio tasks will not "
                   "be sampled",
                   refused_path, refused);
    } else {
        atomic_store(&g.state, ASYNCABI_ABSENT);
    }
    return 0;
}
