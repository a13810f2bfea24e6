/* A library's facts from its section headers, with every offset checked against the file:
 * the doctor reads files that may be truncated, foreign or hostile, and runs none of them. */
#include "elf_facts.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NATIVE_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define NATIVE_MACHINE EM_PPC64
#else
#error "ncclshim: add this machine's ELF e_machine value"
#endif
#define NATIVE_CLASS (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)

static int fail(elf_facts *f, const char *why) {
  snprintf(f->reason, sizeof(f->reason), "%s", why);
  f->ok = 0;
  return 0;
}

/* 1 when [offset, offset + length) lies inside the file. */
static int inside(const elf_facts *f, unsigned long long offset, unsigned long long length) {
  return offset <= f->size && length <= f->size - offset;
}

/* A NUL-terminated string at `offset` of a string table, or NULL. */
static const char *string_at(const char *table, size_t table_size, size_t offset) {
  if (table == NULL || offset >= table_size) return NULL;
  return memchr(table + offset, '\0', table_size - offset) ? table + offset : NULL;
}

/* major*1000 + minor of "GLIBC_2.34" (patch levels ignored); 0 when not such a name. */
static int glibc_packed(const char *name) {
  unsigned major = 0, minor = 0;
  if (strncmp(name, "GLIBC_", 6) != 0 || sscanf(name + 6, "%u.%u", &major, &minor) < 1) return 0;
  return major > 99 || minor > 999 ? 0 : (int)(major * 1000 + minor);
}

static void read_verneed(elf_facts *f, const ElfW(Shdr) * s, const char *strtab, size_t strsize) {
  unsigned long long at = s->sh_offset;
  for (unsigned n = 0; n < s->sh_info && n < 256; n++) {
    ElfW(Verneed) vn;
    if (!inside(f, at, sizeof(vn))) return;
    memcpy(&vn, f->map + at, sizeof(vn));
    unsigned long long aux_at = at + vn.vn_aux;
    for (unsigned a = 0; a < vn.vn_cnt && a < 256; a++) {
      ElfW(Vernaux) va;
      if (!inside(f, aux_at, sizeof(va))) return;
      memcpy(&va, f->map + aux_at, sizeof(va));
      const char *name = string_at(strtab, strsize, va.vna_name);
      int packed = name ? glibc_packed(name) : 0;
      if (packed > f->glibc_need_packed) {
        f->glibc_need_packed = packed;
        snprintf(f->glibc_need, sizeof(f->glibc_need), "%s", name);
      }
      if (va.vna_next == 0) break;
      aux_at += va.vna_next;
    }
    if (vn.vn_next == 0) return;
    at += vn.vn_next;
  }
}

static void read_soname(elf_facts *f, const ElfW(Shdr) * s, const char *strtab, size_t strsize) {
  for (unsigned long long at = s->sh_offset; at + sizeof(ElfW(Dyn)) <= s->sh_offset + s->sh_size;
       at += sizeof(ElfW(Dyn))) {
    ElfW(Dyn) d;
    memcpy(&d, f->map + at, sizeof(d));
    if (d.d_tag == DT_NULL) return;
    const char *name = d.d_tag == DT_SONAME ? string_at(strtab, strsize, d.d_un.d_val) : NULL;
    if (name) snprintf(f->soname, sizeof(f->soname), "%s", name);
  }
}

/* "NCCL version 2.28.9+cuda13.0" in the read-only data; format strings ("%s") are skipped. */
static void read_banner(elf_facts *f, const ElfW(Shdr) * s) {
  static const char key[] = "NCCL version ";
  const char *data = (const char *)f->map + s->sh_offset, *end = data + s->sh_size;
  for (const char *hit = data; (hit = memmem(hit, (size_t)(end - hit), key, sizeof(key) - 1));
       hit++) {
    const char *v = hit + sizeof(key) - 1;
    unsigned major, minor, patch;
    int used = 0;
    if (memchr(v, '\0', (size_t)(end - v)) == NULL) return;
    if (sscanf(v, "%u.%u.%u%n", &major, &minor, &patch, &used) != 3 || major > 9 || minor > 99 ||
        patch > 99)
      continue;
    f->banner_version = (int)(major * 10000 + minor * 100 + patch);
    if (v[used] == '+')
      snprintf(f->build, sizeof(f->build), "%.*s", (int)strcspn(v + used, " \n"), v + used);
    return;
  }
}

static int read_sections(elf_facts *f) {
  ElfW(Ehdr) eh;
  if (f->size < sizeof(eh) || memcmp(f->map, ELFMAG, SELFMAG) != 0)
    return fail(f, "not an ELF file");
  memcpy(&eh, f->map, sizeof(eh));
  if (eh.e_ident[EI_CLASS] != NATIVE_CLASS || eh.e_machine != NATIVE_MACHINE)
    return fail(f, "an ELF file for another machine");
  if (eh.e_type != ET_DYN) return fail(f, "not a shared object");
  if (eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 ||
      !inside(f, eh.e_shoff, (unsigned long long)eh.e_shnum * sizeof(ElfW(Shdr))))
    return fail(f, "no readable section headers (truncated or stripped of them)");
  const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(const void *)(f->map + eh.e_shoff);
  if ((eh.e_shoff % sizeof(void *)) != 0) return fail(f, "misaligned section headers");
  const char *names = NULL;
  size_t names_size = 0;
  if (eh.e_shstrndx < eh.e_shnum &&
      inside(f, sh[eh.e_shstrndx].sh_offset, sh[eh.e_shstrndx].sh_size)) {
    names = (const char *)f->map + sh[eh.e_shstrndx].sh_offset;
    names_size = sh[eh.e_shstrndx].sh_size;
  }
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    const ElfW(Shdr) *s = &sh[i];
    if (s->sh_type == SHT_NOBITS || !inside(f, s->sh_offset, s->sh_size)) continue;
    const ElfW(Shdr) *link = s->sh_link < eh.e_shnum ? &sh[s->sh_link] : NULL;
    const char *strtab = NULL;
    size_t strsize = 0;
    if (link && link->sh_type == SHT_STRTAB && inside(f, link->sh_offset, link->sh_size)) {
      strtab = (const char *)f->map + link->sh_offset;
      strsize = link->sh_size;
    }
    const char *name = string_at(names, names_size, s->sh_name);
    if (s->sh_type == SHT_DYNSYM && s->sh_entsize == sizeof(ElfW(Sym)) && strtab &&
        s->sh_offset % sizeof(void *) == 0) {
      f->dynsym = f->map + s->sh_offset;
      f->dynsym_count = s->sh_size / sizeof(ElfW(Sym));
      f->dynstr = strtab;
      f->dynstr_size = strsize;
    } else if (s->sh_type == SHT_GNU_verneed && strtab) {
      read_verneed(f, s, strtab, strsize);
    } else if (s->sh_type == SHT_DYNAMIC && strtab) {
      read_soname(f, s, strtab, strsize);
    } else if (name && strcmp(name, ".rodata") == 0 && s->sh_type == SHT_PROGBITS) {
      read_banner(f, s);
    }
  }
  if (f->dynsym == NULL) return fail(f, "no dynamic symbol table");
  f->ok = 1;
  return 1;
}

int elf_facts_read(const char *path, elf_facts *f) {
  *f = (elf_facts){0};
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(f->reason, sizeof(f->reason), "cannot open: %s", strerror(errno));
    return 0;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return fail(f, "not a regular file");
  }
  if (st.st_size == 0) {
    close(fd);
    return fail(f, "empty file");
  }
  void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return fail(f, "cannot map the file");
  f->map = map;
  f->size = (size_t)st.st_size;
  return read_sections(f);
}

void elf_facts_close(elf_facts *f) {
  if (f->map) munmap((void *)f->map, f->size);
  f->map = NULL;
  f->dynsym = NULL;
}

int elf_facts_defines(const elf_facts *f, const char *name) {
  const ElfW(Sym) *syms = f->dynsym;
  for (size_t i = 0; f->ok && i < f->dynsym_count; i++) {
    int type = ELF64_ST_TYPE(syms[i].st_info);
    if (syms[i].st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC)) continue;
    const char *s = string_at(f->dynstr, f->dynstr_size, syms[i].st_name);
    if (s && strcmp(s, name) == 0) return 1;
  }
  return 0;
}

int elf_facts_host_glibc(void) {
  char name[32];
  snprintf(name, sizeof(name), "GLIBC_%s", gnu_get_libc_version());
  return glibc_packed(name);
}
