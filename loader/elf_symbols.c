#include "elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_check.h"

/* 1 when [offset, offset + length) lies inside a file of `file_size` bytes. */
static int inside(unsigned long long offset, unsigned long long length,
                  unsigned long long file_size) {
  return offset <= file_size && length <= file_size - offset;
}

static ncshl_outcome walk(const unsigned char *file, size_t file_size, ncshl_symbol_fn each,
                          void *context, char *reason, size_t size) {
  ElfW(Ehdr) eh;
  memcpy(&eh, file, sizeof(eh));
  if (eh.e_shoff == 0 || eh.e_shnum == 0) return NCSHL_OK; /* no sections: nothing to list */
  if (eh.e_shentsize != sizeof(ElfW(Shdr)) ||
      !inside(eh.e_shoff, (unsigned long long)eh.e_shnum * sizeof(ElfW(Shdr)), file_size)) {
    snprintf(reason, size, "malformed ELF section header table");
    return NCSHL_UNLOADABLE;
  }
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    ElfW(Shdr) sym, str;
    memcpy(&sym, file + eh.e_shoff + i * sizeof(ElfW(Shdr)), sizeof(sym));
    if (sym.sh_type != SHT_DYNSYM) continue;
    if (sym.sh_link >= eh.e_shnum || sym.sh_entsize != sizeof(ElfW(Sym)) ||
        !inside(sym.sh_offset, sym.sh_size, file_size)) {
      snprintf(reason, size, "malformed .dynsym section");
      return NCSHL_UNLOADABLE;
    }
    memcpy(&str, file + eh.e_shoff + sym.sh_link * sizeof(ElfW(Shdr)), sizeof(str));
    if (!inside(str.sh_offset, str.sh_size, file_size) || str.sh_size == 0 ||
        file[str.sh_offset + str.sh_size - 1] != '\0') {
      snprintf(reason, size, "malformed .dynstr section");
      return NCSHL_UNLOADABLE;
    }
    const char *names = (const char *)file + str.sh_offset;
    for (size_t k = 1; k < sym.sh_size / sizeof(ElfW(Sym)); k++) {
      ElfW(Sym) s;
      memcpy(&s, file + sym.sh_offset + k * sizeof(ElfW(Sym)), sizeof(s));
      int bind = ELF64_ST_BIND(s.st_info);
      if (s.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
          s.st_name >= str.sh_size)
        continue;
      if (each(context, names + s.st_name)) return NCSHL_OK;
    }
    return NCSHL_OK;
  }
  return NCSHL_OK;
}

ncshl_outcome ncshl_elf_exports(const char *path, ncshl_symbol_fn each, void *context, char *reason,
                                size_t size) {
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
  void *file = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (file == MAP_FAILED) {
    snprintf(reason, size, "cannot map the file to read it");
    return NCSHL_UNLOADABLE;
  }
  status = walk(file, (size_t)st.st_size, each, context, reason, size);
  munmap(file, (size_t)st.st_size);
  return status;
}
