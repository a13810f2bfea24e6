#include "elf_check.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
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

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_DATA ELFDATA2LSB
#else
#define NATIVE_DATA ELFDATA2MSB
#endif

#define NATIVE_CLASS (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)

/* Largest program-header table read from a file (real libraries have about a dozen). */
#define MAX_PHDR_BYTES (64 * 1024)

static ncshl_outcome refuse(char *reason, size_t size, const char *fmt, unsigned long long a,
                            unsigned long long b) {
  snprintf(reason, size, fmt, a, b);
  return NCSHL_UNLOADABLE;
}

static ncshl_outcome check_header(const ElfW(Ehdr) * eh, unsigned long long file_size, char *reason,
                                  size_t size) {
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
    return refuse(reason, size, "not an ELF file", 0, 0);
  if (eh->e_ident[EI_CLASS] != NATIVE_CLASS)
    return refuse(reason, size, "ELF class %llu, this process needs class %llu",
                  eh->e_ident[EI_CLASS], NATIVE_CLASS);
  if (eh->e_ident[EI_DATA] != NATIVE_DATA)
    return refuse(reason, size, "ELF byte order does not match this machine", 0, 0);
  if (eh->e_machine != NATIVE_MACHINE)
    return refuse(reason, size, "ELF for machine type %llu, this machine is type %llu",
                  eh->e_machine, NATIVE_MACHINE);
  if (eh->e_type != ET_DYN)
    return refuse(reason, size, "ELF type %llu is not a shared object", eh->e_type, 0);
  if (eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phnum == 0)
    return refuse(reason, size, "malformed ELF program header table (entry size %llu, count %llu)",
                  eh->e_phentsize, eh->e_phnum);
  unsigned long long table_bytes = (unsigned long long)eh->e_phnum * eh->e_phentsize;
  /* e_phoff + table_bytes can wrap past 2^64: compare without computing it. */
  if (eh->e_phoff > file_size || table_bytes > file_size - eh->e_phoff) {
    unsigned long long table_end =
        table_bytes > ~0ULL - eh->e_phoff ? ~0ULL : eh->e_phoff + table_bytes;
    return refuse(reason, size, "truncated: program headers end at byte %llu of a %llu-byte file",
                  table_end, file_size);
  }
  if (table_bytes > MAX_PHDR_BYTES)
    return refuse(reason, size, "program header table too large (%llu entries)", eh->e_phnum, 0);
  return NCSHL_OK;
}

static ncshl_outcome check_segments(const ElfW(Phdr) * ph, size_t count,
                                    unsigned long long file_size, char *reason, size_t size) {
  for (size_t i = 0; i < count; i++) {
    if (ph[i].p_type != PT_LOAD) continue;
    unsigned long long end = (unsigned long long)ph[i].p_offset + ph[i].p_filesz;
    if (end < ph[i].p_offset || end > file_size)
      return refuse(reason, size,
                    "truncated: a loadable segment ends at byte %llu of a %llu-byte file", end,
                    file_size);
  }
  return NCSHL_OK;
}

ncshl_outcome ncshl_elf_check_bytes(const unsigned char *bytes, size_t length,
                                    unsigned long long file_size, char *reason, size_t size) {
  ElfW(Ehdr) eh;
  if (length < sizeof(eh)) {
    if (length >= SELFMAG && memcmp(bytes, ELFMAG, SELFMAG) == 0)
      return refuse(reason, size, "truncated: %llu bytes, shorter than an ELF header", length, 0);
    return refuse(reason, size, length ? "not an ELF file" : "empty file", 0, 0);
  }
  memcpy(&eh, bytes, sizeof(eh));
  ncshl_outcome status = check_header(&eh, file_size, reason, size);
  if (status != NCSHL_OK) return status;
  size_t table_bytes = (size_t)eh.e_phnum * eh.e_phentsize;
  if (eh.e_phoff > length || table_bytes > length - eh.e_phoff)
    return refuse(reason, size, "truncated: program headers lie past the %llu bytes given", length,
                  0);
  ElfW(Phdr) ph[MAX_PHDR_BYTES / sizeof(ElfW(Phdr))];
  memcpy(ph, bytes + eh.e_phoff, table_bytes);
  return check_segments(ph, eh.e_phnum, file_size, reason, size);
}

/* Header and program headers of an open file, checked against its size. */
static ncshl_outcome check_file(int fd, unsigned long long file_size, char *reason, size_t size) {
  unsigned char header[sizeof(ElfW(Ehdr))];
  ssize_t got = pread(fd, header, sizeof(header), 0);
  if (got < 0) return refuse(reason, size, "cannot read the file", 0, 0);
  if (got < (ssize_t)sizeof(header))
    return ncshl_elf_check_bytes(header, (size_t)got, file_size, reason, size);
  ElfW(Ehdr) eh;
  memcpy(&eh, header, sizeof(eh));
  ncshl_outcome status = check_header(&eh, file_size, reason, size);
  if (status != NCSHL_OK) return status;
  ElfW(Phdr) ph[MAX_PHDR_BYTES / sizeof(ElfW(Phdr))];
  size_t table_bytes = (size_t)eh.e_phnum * eh.e_phentsize;
  if (pread(fd, ph, table_bytes, (off_t)eh.e_phoff) != (ssize_t)table_bytes)
    return refuse(reason, size, "cannot read the program headers", 0, 0);
  return check_segments(ph, eh.e_phnum, file_size, reason, size);
}

unsigned ncshl_elf_native_machine(void) { return NATIVE_MACHINE; }

ncshl_outcome ncshl_elf_check(const char *path, char *reason, size_t size) {
  /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever; the
   * fstat below refuses it. Reads of a regular file ignore the flag. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    if (err == ENAMETOOLONG) { /* no file can have that name: an absence, not a broken file */
      snprintf(reason, size, "cannot open: the path is too long to name a file (%zu characters)",
               strlen(path));
      return NCSHL_ABSENT;
    }
    snprintf(reason, size, "cannot open: %s", strerror(err));
    return err == ENOENT || err == ENOTDIR ? NCSHL_ABSENT : NCSHL_UNLOADABLE;
  }
  ncshl_outcome status = NCSHL_UNLOADABLE;
  struct stat st;
  if (fstat(fd, &st) != 0)
    snprintf(reason, size, "cannot stat: %s", strerror(errno));
  else if (!S_ISREG(st.st_mode))
    snprintf(reason, size, S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file");
  else
    status = check_file(fd, (unsigned long long)st.st_size, reason, size);
  close(fd);
  if (status == NCSHL_OK && size) reason[0] = '\0';
  return status;
}
