/* Audit mode's other binding: a GOT slot. la_symbind sees the bindings of PLT slots and of
 * dlsym, but not a data relocation: a call compiled with -fno-plt, or a program that takes
 * &ncclAllReduce, reads NCCL's address from a slot that ld.so filled with a GLOB_DAT (or an
 * absolute data) relocation, and no audit hook runs for it. Once a load is complete
 * (la_activity, LA_ACT_CONSISTENT), each object mapped by it has those relocations read from
 * its dynamic section; a slot that holds an NCCL function's address is given the recorder's
 * wrapper instead (its page made writable for that one store when it is read-only: the
 * object's RELRO segment). */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "audit_got.h"

#if defined(__x86_64__)
#define GOT_RELOCATION(type) ((type) == R_X86_64_GLOB_DAT || (type) == R_X86_64_64)
#elif defined(__aarch64__)
#define GOT_RELOCATION(type) ((type) == R_AARCH64_GLOB_DAT || (type) == R_AARCH64_ABS64)
#endif

#if NCCLSHIM_AUDIT_SEES_GOT
/* The protection of the page holding `address`, from /proc/self/maps; -1 if not found. (At
 * start-up, before the program runs, dl_iterate_phdr does not list the objects yet.) */
static int protection_of(uintptr_t address) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096], line[512];
  size_t used = 0;
  int found = -1;
  for (ssize_t n; found < 0 && (n = read(fd, buf, sizeof(buf))) > 0;) {
    for (ssize_t i = 0; i < n && found < 0; i++) {
      if (buf[i] != '\n') {
        if (used < sizeof(line) - 1) line[used++] = buf[i];
        continue;
      }
      line[used] = '\0';
      used = 0;
      unsigned long low, high;
      char perms[5];
      if (sscanf(line, "%lx-%lx %4s", &low, &high, perms) == 3 && address >= low && address < high)
        found = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                (perms[2] == 'x' ? PROT_EXEC : 0);
    }
  }
  close(fd);
  return found;
}

/* One store into a slot, through a writable window if it is read-only (RELRO). */
static int store(uintptr_t *slot, uintptr_t value) {
  int was = protection_of((uintptr_t)slot);
  if (was < 0 || !(was & PROT_READ)) return 0;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  void *first = (void *)((uintptr_t)slot & ~(page - 1));
  if (!(was & PROT_WRITE) && mprotect(first, page, was | PROT_WRITE) != 0) return 0;
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  if (!(was & PROT_WRITE)) mprotect(first, page, was);
  return 1;
}

static uintptr_t dynamic_pointer(const ElfW(Dyn) * d, uintptr_t base) {
  /* glibc relocates these in place where the section is writable, not in a read-only one. */
  return d->d_un.d_ptr < base ? base + d->d_un.d_ptr : d->d_un.d_ptr;
}

size_t ncs_audit_patch_got(const struct link_map *map, got_redirect redirect) {
  const ElfW(Rela) *rela = NULL;
  size_t bytes = 0;
  const ElfW(Sym) *symbols = NULL;
  const char *strings = NULL;
  for (const ElfW(Dyn) *d = map->l_ld; d != NULL && d->d_tag != DT_NULL; d++) {
    if (d->d_tag == DT_RELA) rela = (const ElfW(Rela) *)dynamic_pointer(d, map->l_addr);
    if (d->d_tag == DT_RELASZ) bytes = d->d_un.d_val;
    if (d->d_tag == DT_SYMTAB) symbols = (const ElfW(Sym) *)dynamic_pointer(d, map->l_addr);
    if (d->d_tag == DT_STRTAB) strings = (const char *)dynamic_pointer(d, map->l_addr);
  }
  if (rela == NULL || symbols == NULL || strings == NULL) return 0;
  size_t patched = 0;
  for (size_t i = 0; i < bytes / sizeof(*rela); i++) {
    if (!GOT_RELOCATION(ELF64_R_TYPE(rela[i].r_info)) || ELF64_R_SYM(rela[i].r_info) == 0) continue;
    const ElfW(Sym) *sym = &symbols[ELF64_R_SYM(rela[i].r_info)];
    uintptr_t *slot = (uintptr_t *)(map->l_addr + rela[i].r_offset);
    uintptr_t wrapper = redirect(strings + sym->st_name, __atomic_load_n(slot, __ATOMIC_ACQUIRE));
    if (wrapper != 0) patched += (size_t)store(slot, wrapper);
  }
  return patched;
}
#else
size_t ncs_audit_patch_got(const struct link_map *map, got_redirect redirect) {
  (void)map, (void)redirect;
  return 0; /* the recorder's audit mode sees PLT and dlsym bindings only here */
}
#endif
