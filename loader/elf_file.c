#include "elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_check.h"

int ncshl_elf_inside(const ncshl_elf_file *f, unsigned long long offset,
                     unsigned long long length) {
  return offset <= f->size && length <= f->size - offset;
}

/* ---- Sections of a file without section headers -------------------------------------- */

enum { MADE_NULL, MADE_DYNSYM, MADE_DYNSTR, MADE_DYNAMIC, MADE_VERNEED, MADE_RODATA, MADE_COUNT };
static const char *const made_names[MADE_COUNT] = {"",         ".dynsym",        ".dynstr",
                                                   ".dynamic", ".gnu.version_r", ".rodata"};

/* The program headers (checked by ncshl_elf_check_bytes to lie inside the file). */
static const ElfW(Phdr) *
    phdr_at(const ncshl_elf_file *f, const ElfW(Ehdr) * eh, unsigned i, ElfW(Phdr) * out) {
  memcpy(out, f->bytes + eh->e_phoff + (size_t)i * sizeof(*out), sizeof(*out));
  return out;
}

/* The file offset of a virtual address with `length` bytes after it in the file, or 0. */
static unsigned long long file_offset(const ncshl_elf_file *f, const ElfW(Ehdr) * eh,
                                      unsigned long long vaddr, unsigned long long length) {
  ElfW(Phdr) ph;
  for (unsigned i = 0; i < eh->e_phnum; i++) {
    phdr_at(f, eh, i, &ph);
    if (ph.p_type != PT_LOAD || vaddr < ph.p_vaddr || vaddr - ph.p_vaddr > ph.p_filesz ||
        length > ph.p_filesz - (vaddr - ph.p_vaddr))
      continue;
    unsigned long long at = ph.p_offset + (vaddr - ph.p_vaddr);
    return ncshl_elf_inside(f, at, length) ? at : 0;
  }
  return 0;
}

/* How many symbols .dynsym holds, from the hash table's end of chains (GNU) or its nchain
 * (System V); 0 when neither can be read. */
static size_t symbol_count(const ncshl_elf_file *f, const ElfW(Ehdr) * eh, unsigned long long gnu,
                           unsigned long long sysv) {
  uint32_t words[4];
  unsigned long long at;
  if (sysv && (at = file_offset(f, eh, sysv, 8))) {
    memcpy(words, f->bytes + at, 8);
    return words[1];
  }
  if (!gnu || !(at = file_offset(f, eh, gnu, 16))) return 0;
  memcpy(words, f->bytes + at, 16);
  uint32_t nbuckets = words[0], symoffset = words[1];
  unsigned long long buckets = at + 16 + (unsigned long long)words[2] * sizeof(ElfW(Addr));
  if (!ncshl_elf_inside(f, buckets, (unsigned long long)nbuckets * 4)) return 0;
  uint32_t last = 0;
  for (uint32_t b = 0; b < nbuckets; b++) {
    uint32_t index;
    memcpy(&index, f->bytes + buckets + 4ull * b, 4);
    if (index > last) last = index;
  }
  if (last < symoffset) return symoffset;
  unsigned long long chain = buckets + 4ull * nbuckets;
  for (;; last++) { /* the last chain ends at an entry with its low bit set */
    uint32_t entry;
    unsigned long long link = chain + 4ull * (last - symoffset);
    if (!ncshl_elf_inside(f, link, 4) || last == UINT32_MAX) return 0;
    memcpy(&entry, f->bytes + link, 4);
    if (entry & 1) return (size_t)last + 1;
  }
}

static void made(ncshl_elf_file *f, unsigned index, unsigned type, unsigned long long offset,
                 unsigned long long size, unsigned link, unsigned entsize) {
  f->made[index] = (ElfW(Shdr)){.sh_name = index,
                                .sh_type = type,
                                .sh_offset = offset,
                                .sh_size = size,
                                .sh_link = link,
                                .sh_entsize = entsize};
}

/* Sections made from PT_DYNAMIC's tags and the read-only segments, so that the readers of a
 * file's exports, SONAME, version needs and banner work on a stripped file as both loaders
 * do. Nothing is made when there is no readable dynamic section. */
static void make_sections(ncshl_elf_file *f, const ElfW(Ehdr) * eh) {
  ElfW(Phdr) ph, rodata = {0};
  unsigned long long dynamic = 0, dynamic_size = 0;
  for (unsigned i = 0; i < eh->e_phnum; i++) {
    phdr_at(f, eh, i, &ph);
    if (ph.p_type == PT_DYNAMIC && ncshl_elf_inside(f, ph.p_offset, ph.p_filesz))
      dynamic = ph.p_offset, dynamic_size = ph.p_filesz;
    if (ph.p_type == PT_LOAD && ph.p_flags == PF_R && ph.p_filesz > rodata.p_filesz) rodata = ph;
  }
  if (dynamic_size < sizeof(ElfW(Dyn))) return;
  unsigned long long symtab = 0, strtab = 0, strsz = 0, gnu = 0, sysv = 0, verneed = 0;
  unsigned verneed_count = 0;
  for (unsigned long long at = dynamic; at + sizeof(ElfW(Dyn)) <= dynamic + dynamic_size;
       at += sizeof(ElfW(Dyn))) {
    ElfW(Dyn) d;
    memcpy(&d, f->bytes + at, sizeof(d));
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_SYMTAB) symtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
    if (d.d_tag == DT_GNU_HASH) gnu = d.d_un.d_ptr;
    if (d.d_tag == DT_HASH) sysv = d.d_un.d_ptr;
    if (d.d_tag == DT_VERNEED) verneed = d.d_un.d_ptr;
    if (d.d_tag == DT_VERNEEDNUM) verneed_count = (unsigned)d.d_un.d_val;
  }
  unsigned long long strings = strtab ? file_offset(f, eh, strtab, strsz) : 0;
  size_t count = symbol_count(f, eh, gnu, sysv);
  unsigned long long symbols =
      symtab && count ? file_offset(f, eh, symtab, count * sizeof(ElfW(Sym))) : 0;
  if (!strings || !symbols) return;
  made(f, MADE_DYNSYM, SHT_DYNSYM, symbols, count * sizeof(ElfW(Sym)), MADE_DYNSTR,
       sizeof(ElfW(Sym)));
  made(f, MADE_DYNSTR, SHT_STRTAB, strings, strsz, 0, 0);
  made(f, MADE_DYNAMIC, SHT_DYNAMIC, dynamic, dynamic_size, MADE_DYNSTR, sizeof(ElfW(Dyn)));
  unsigned long long needs = verneed ? file_offset(f, eh, verneed, 0) : 0;
  /* .gnu.version_r's size is not in the dynamic section: up to the end of the file, which the
   * reader of its records checks each against */
  made(f, MADE_VERNEED, needs ? SHT_GNU_verneed : SHT_NULL, needs, needs ? f->size - needs : 0,
       MADE_DYNSTR, 0);
  f->made[MADE_VERNEED].sh_info = verneed_count;
  made(f, MADE_RODATA, SHT_PROGBITS, rodata.p_offset, rodata.p_filesz, 0, 0);
  f->synthetic = 1;
  f->shnum = MADE_COUNT;
}

ncshl_outcome ncshl_elf_open_bytes(const unsigned char *bytes, size_t length, ncshl_elf_file *f,
                                   char *reason, size_t size) {
  *f = (ncshl_elf_file){.bytes = bytes, .size = length};
  ncshl_outcome status = ncshl_elf_check_bytes(bytes, length, length, reason, size);
  if (status != NCSHL_OK) return status;
  ElfW(Ehdr) eh;
  memcpy(&eh, bytes, sizeof(eh));
  if (eh.e_shoff == 0 || eh.e_shnum == 0) { /* stripped: what the dynamic section names */
    make_sections(f, &eh);
    return NCSHL_OK;
  }
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
  if (f->synthetic) {
    *out = f->made[index];
    return 1;
  }
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
  if (f->synthetic) return s->sh_name < MADE_COUNT ? made_names[s->sh_name] : NULL;
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

/* ---- The dynamic section as the loader reads it ---------------------------------------- */

enum { MOST_READ_PHDRS = 256, MOST_DYNAMIC_ENTRIES = 4096, STRING_READ = 4096 };
#define MOST_STRING ((size_t)1 << 20)

typedef struct read_file {
  int fd;
  ElfW(Phdr) * ph;
  unsigned phnum;
  /* The last bytes read for a string: a file's few strings usually share one such window. */
  unsigned long long window_at;
  size_t window_length;
  char window[STRING_READ];
} read_file;

/* The file offset of virtual address `vaddr` inside a PT_LOAD segment's bytes from the file,
 * with the bytes of that segment left from there in *room; 0 when no segment holds it. */
static int loaded_at(const read_file *r, unsigned long long vaddr, unsigned long long *offset,
                     unsigned long long *room) {
  for (unsigned i = 0; i < r->phnum; i++) {
    const ElfW(Phdr) *ph = &r->ph[i];
    if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr || vaddr - ph->p_vaddr >= ph->p_filesz ||
        ph->p_offset > ULLONG_MAX - ph->p_filesz)
      continue;
    *offset = ph->p_offset + (vaddr - ph->p_vaddr);
    *room = ph->p_filesz - (vaddr - ph->p_vaddr);
    return 1;
  }
  return 0;
}

static int read_at(const read_file *r, void *out, size_t length, unsigned long long offset) {
  return offset <= (unsigned long long)INT64_MAX &&
         pread(r->fd, out, length, (off_t)offset) == (ssize_t)length;
}

/* The NUL-terminated string at `vaddr` (DT_STRTAB plus an entry's value): in the window, read
 * there when it is not (up to STRING_READ bytes of the segment), or, when longer, read into a
 * malloc'd buffer that *grown takes; NULL when it lies outside the segments or runs past
 * MOST_STRING bytes. */
static const char *loaded_string(read_file *r, unsigned long long vaddr, char **grown) {
  unsigned long long offset, room;
  *grown = NULL;
  if (!loaded_at(r, vaddr, &offset, &room)) return NULL;
  if (offset < r->window_at || offset - r->window_at >= r->window_length ||
      memchr(r->window + (offset - r->window_at), '\0',
             r->window_length - (offset - r->window_at)) == NULL) {
    size_t length = room < STRING_READ ? (size_t)room : STRING_READ;
    r->window_length = 0;
    if (!read_at(r, r->window, length, offset)) return NULL;
    r->window_at = offset;
    r->window_length = length;
  }
  const char *start = r->window + (offset - r->window_at);
  size_t left = r->window_length - (size_t)(offset - r->window_at);
  if (memchr(start, '\0', left) != NULL) return start;
  if (room <= STRING_READ) return NULL;
  size_t length = room < MOST_STRING ? (size_t)room : MOST_STRING;
  *grown = malloc(length);
  if (*grown != NULL && read_at(r, *grown, length, offset) && memchr(*grown, '\0', length))
    return *grown;
  free(*grown);
  *grown = NULL;
  return NULL;
}

static void each_loaded_string(read_file *r, const ElfW(Dyn) * dyn, size_t count,
                               ncshl_dynamic_fn each, void *context) {
  unsigned long long strtab = 0;
  int has_strtab = 0;
  for (size_t i = 0; i < count && dyn[i].d_tag != DT_NULL; i++)
    if (dyn[i].d_tag == DT_STRTAB) {
      strtab = dyn[i].d_un.d_ptr;
      has_strtab = 1;
    }
  for (size_t i = 0; has_strtab && i < count && dyn[i].d_tag != DT_NULL; i++) {
    long long tag = dyn[i].d_tag;
    if (tag != DT_NEEDED && tag != DT_SONAME && tag != DT_RPATH && tag != DT_RUNPATH) continue;
    unsigned long long value = dyn[i].d_un.d_val;
    char *grown = NULL;
    const char *string =
        value <= ULLONG_MAX - strtab ? loaded_string(r, strtab + value, &grown) : NULL;
    int stop = string != NULL && each(context, tag, string);
    free(grown);
    if (stop) return;
  }
}

void ncshl_elf_read_dynamic(const char *path, ncshl_dynamic_fn each, void *context) {
  read_file r = {.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (r.fd < 0) return;
  struct stat st;
  ElfW(Ehdr) eh;
  const unsigned char own_class = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
  const unsigned char own_data =
      __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  if (fstat(r.fd, &st) == 0 && S_ISREG(st.st_mode) && read_at(&r, &eh, sizeof(eh), 0) &&
      memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == own_class &&
      eh.e_ident[EI_DATA] == own_data && eh.e_machine == ncshl_elf_native_machine() &&
      eh.e_phentsize == sizeof(ElfW(Phdr)) && eh.e_phnum > 0 && eh.e_phnum <= MOST_READ_PHDRS &&
      (r.ph = malloc(eh.e_phnum * sizeof(ElfW(Phdr)))) != NULL &&
      read_at(&r, r.ph, eh.e_phnum * sizeof(ElfW(Phdr)), eh.e_phoff)) {
    r.phnum = eh.e_phnum;
    /* The loader reads the dynamic section where PT_DYNAMIC puts it in memory: the bytes of the
     * PT_LOAD segment there (past them, zeros: the end). */
    for (unsigned i = 0; i < r.phnum; i++) {
      unsigned long long offset, room;
      if (r.ph[i].p_type != PT_DYNAMIC || !loaded_at(&r, r.ph[i].p_vaddr, &offset, &room)) continue;
      unsigned long long count = r.ph[i].p_memsz < room ? r.ph[i].p_memsz : room;
      count /= sizeof(ElfW(Dyn));
      if (count > MOST_DYNAMIC_ENTRIES) count = MOST_DYNAMIC_ENTRIES;
      ElfW(Dyn) *dyn = count > 0 ? malloc(count * sizeof(*dyn)) : NULL;
      if (dyn != NULL && read_at(&r, dyn, count * sizeof(*dyn), offset))
        each_loaded_string(&r, dyn, count, each, context);
      free(dyn);
      break;
    }
  }
  free(r.ph);
  close(r.fd);
}
