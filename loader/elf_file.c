#include "elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_check.h"

int ncshl_elf_inside(const ncshl_elf_file *f, unsigned long long offset,
                     unsigned long long length) {
  return offset <= f->size && length <= f->size - offset;
}

ncshl_outcome ncshl_elf_open_bytes(const unsigned char *bytes, size_t length, ncshl_elf_file *f,
                                   char *reason, size_t size) {
  *f = (ncshl_elf_file){.bytes = bytes, .size = length};
  ncshl_outcome status = ncshl_elf_check_bytes(bytes, length, length, reason, size);
  if (status != NCSHL_OK) return status;
  ElfW(Ehdr) eh;
  memcpy(&eh, bytes, sizeof(eh));
  if (eh.e_shoff == 0 || eh.e_shnum == 0) return NCSHL_OK; /* no sections: nothing to read */
  if (eh.e_shentsize != sizeof(ElfW(Shdr)) ||
      !ncshl_elf_inside(f, eh.e_shoff, (unsigned long long)eh.e_shnum * sizeof(ElfW(Shdr)))) {
    snprintf(reason, size, "malformed ELF section header table");
    return NCSHL_UNLOADABLE;
  }
  f->shoff = eh.e_shoff;
  f->shnum = eh.e_shnum;
  f->shstrndx = eh.e_shstrndx;
  return NCSHL_OK;
}

ncshl_outcome ncshl_elf_open(const char *path, ncshl_elf_file *f, char *reason, size_t size) {
  *f = (ncshl_elf_file){0};
  ncshl_outcome status = ncshl_elf_check(path, reason, size);
  if (status != NCSHL_OK) return status;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(ElfW(Ehdr))) {
    if (fd >= 0) close(fd);
    snprintf(reason, size, "cannot read the file");
    return NCSHL_UNLOADABLE;
  }
  /* A private read-only mapping of the bytes, not of a library: nothing in it runs. */
  void *bytes = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (bytes == MAP_FAILED) {
    snprintf(reason, size, "cannot map the file to read it");
    return NCSHL_UNLOADABLE;
  }
  status = ncshl_elf_open_bytes(bytes, (size_t)st.st_size, f, reason, size);
  if (status != NCSHL_OK) munmap(bytes, (size_t)st.st_size);
  if (status != NCSHL_OK) *f = (ncshl_elf_file){0};
  return status;
}

void ncshl_elf_close(ncshl_elf_file *f) {
  if (f->bytes != NULL) munmap((void *)f->bytes, f->size);
  *f = (ncshl_elf_file){0};
}

int ncshl_elf_section(const ncshl_elf_file *f, unsigned index, ElfW(Shdr) * out) {
  if (index >= f->shnum) return 0;
  memcpy(out, f->bytes + f->shoff + (unsigned long long)index * sizeof(ElfW(Shdr)), sizeof(*out));
  return 1;
}

const char *ncshl_elf_string(const ncshl_elf_file *f, const ElfW(Shdr) * strtab, size_t offset) {
  if (!ncshl_elf_inside(f, strtab->sh_offset, strtab->sh_size) || offset >= strtab->sh_size)
    return NULL;
  const char *start = (const char *)f->bytes + strtab->sh_offset + offset;
  return memchr(start, '\0', strtab->sh_size - offset) ? start : NULL;
}

const char *ncshl_elf_section_name(const ncshl_elf_file *f, const ElfW(Shdr) * s) {
  ElfW(Shdr) names;
  return ncshl_elf_section(f, f->shstrndx, &names) ? ncshl_elf_string(f, &names, s->sh_name) : NULL;
}

ncshl_outcome ncshl_elf_each_export(const ncshl_elf_file *f, ncshl_symbol_fn each, void *context,
                                    char *reason, size_t size) {
  for (unsigned i = 0; i < f->shnum; i++) {
    ElfW(Shdr) sym, str;
    ncshl_elf_section(f, i, &sym);
    if (sym.sh_type != SHT_DYNSYM) continue;
    if (!ncshl_elf_section(f, sym.sh_link, &str) || sym.sh_entsize != sizeof(ElfW(Sym)) ||
        !ncshl_elf_inside(f, sym.sh_offset, sym.sh_size)) {
      snprintf(reason, size, "malformed .dynsym section");
      return NCSHL_UNLOADABLE;
    }
    if (!ncshl_elf_inside(f, str.sh_offset, str.sh_size) || str.sh_size == 0 ||
        f->bytes[str.sh_offset + str.sh_size - 1] != '\0') {
      snprintf(reason, size, "malformed .dynstr section");
      return NCSHL_UNLOADABLE;
    }
    const char *names = (const char *)f->bytes + str.sh_offset;
    for (size_t k = 1; k < sym.sh_size / sizeof(ElfW(Sym)); k++) {
      ElfW(Sym) s;
      memcpy(&s, f->bytes + sym.sh_offset + k * sizeof(ElfW(Sym)), sizeof(s));
      int bind = ELF64_ST_BIND(s.st_info), type = ELF64_ST_TYPE(s.st_info);
      if (s.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
          s.st_name >= str.sh_size)
        continue;
      if (each(context, names + s.st_name, type == STT_FUNC || type == STT_GNU_IFUNC))
        return NCSHL_OK;
    }
    return NCSHL_OK;
  }
  return NCSHL_OK;
}

ncshl_outcome ncshl_elf_exports(const char *path, ncshl_symbol_fn each, void *context, char *reason,
                                size_t size) {
  ncshl_elf_file f;
  ncshl_outcome status = ncshl_elf_open(path, &f, reason, size);
  if (status == NCSHL_OK) status = ncshl_elf_each_export(&f, each, context, reason, size);
  ncshl_elf_close(&f);
  return status;
}
