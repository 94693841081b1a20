/*
 * gotpatch: calls that the loaded ELF modules make through their GOT, redirected to the
 * library's wrappers without the library exporting the symbols itself (the "inject" way
 * of memray and heaptrack: the program's modules call malloc through a slot of theirs,
 * and that slot is pointed at our wrapper).  Owns the originals the wrappers forward to
 * (resolved once, at install), the set of modules already patched (load address and
 * name, pruned of those gone at each scan), the slot writes themselves, and their lock.
 *
 * Which modules: every one the loader lists (libc_next_dl_iterate_phdr: the library's
 * namespace) except the module holding gotpatch's own code (so the library's own calls,
 * its wrappers' included, go straight to the originals), the dynamic loader and the
 * vDSO.  The main program ("") is patched.
 *
 * Which slots: the relocations of DT_JMPREL and DT_RELA whose symbol has one of the
 * names (by name only: no version compared) and whose type is JUMP_SLOT, GLOB_DAT or
 * the plain 64-bit absolute one (only with addend 0), written only when the slot holds
 * what the name resolves to today: the original, or for a JUMP_SLOT not bound yet (lazy
 * binding) the module's own PLT stub.  A slot bound to something else (another
 * definition, the main program's canonical PLT entry) is left as it is: forwarding it to
 * the original would change which function it calls.  A slot in the module's RELRO
 * pages is written between mprotect(PROT_READ | PROT_WRITE) and mprotect(PROT_READ).  A
 * module is taken only once /proc/self/maps shows its RELRO read-only, which the loader
 * does right after relocating it: one that another thread's dlopen is still loading is
 * left for the next refresh.  Every write is one atomic 8-byte store: other threads
 * call through the slots meanwhile.
 *
 * The original of a name is dlsym(RTLD_DEFAULT, name), except when that is the main
 * program's canonical PLT entry (a non-PIE program that takes the function's address,
 * such as Debian's python3.11 for malloc): that entry jumps through the program's own
 * JUMP_SLOT, which gets patched, so the original is then the first definition in
 * loading order among the other modules.
 *
 * Not undone: the slots stay patched for the life of the process (a fork child inherits
 * them), so the replacements must stay callable.  [not sigsafe] throughout.
 */
#ifndef PYPROF_GOTPATCH_H
#define PYPROF_GOTPATCH_H

#include <stddef.h>

/* `name` and `replacement` must stay valid for the life of the process. */
typedef struct gotpatch_sym {
    const char *name;  /* "malloc" */
    void *replacement; /* our wrapper */
} gotpatch_sym;

/* [not sigsafe] Resolves the original of each symbol (dlsym(RTLD_DEFAULT, name): what the
 * program's modules call today; NULL if none) into originals[i], then points every GOT
 * slot that names one of them, in every loaded module except the library holding
 * gotpatch's own code, the dynamic loader (ld-linux*) and the vDSO, at its replacement.
 * originals[] is filled before the first slot is written (a replacement may run from
 * then on), and must stay valid as long as the replacements read it; a name without an
 * original is left unpatched.  Remembers the modules it has patched (by load address +
 * dlpi_name).  Returns the number of slots written, or -1 with one line in err (bad
 * arguments, a name patched already, no loader listing, gotpatch's own module not found,
 * a name that resolves to its replacement, memory).  Each user calls it once with its own
 * names (allocation sampling, GIL waits): a later call adds its names and patches them
 * in every module, those patched before included.  The first call registers the fork
 * handlers below with pthread_atfork. */
int gotpatch_install(const gotpatch_sym *syms, size_t n, void **originals, char *err,
                     size_t errlen);

/* [not sigsafe] Patches the modules loaded since the last call (after a dlopen); a module
 * already patched is left alone.  Returns slots written (0 if nothing new), -1 if not
 * installed. */
int gotpatch_refresh(void);

/* [not sigsafe] Counts of modules and slots patched so far (for a diag line / tests): a
 * module counts once it had at least one slot written.  Either pointer may be NULL. */
void gotpatch_stats(unsigned *modules, unsigned *slots);

/* [not sigsafe] fork's prepare and parent handlers (registered by the first install): the fork
 * waits for a scan in progress (which holds the loader's lock inside dl_iterate_phdr, a lock
 * glibc does not reset in the child) and holds new ones off until it returns. */
void gotpatch_fork_prepare(void);
void gotpatch_fork_parent(void);

/* [not sigsafe] fork's child handler (registered by the first install): nothing to redo (the
 * child inherits the patched GOTs), but the lock is reinitialised. */
void gotpatch_after_fork_child(void);

#endif
