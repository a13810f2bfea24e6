/* The census on mapped objects (loader/objects.c): mutants of a small library
 * (fuzz_mapped_base.c, named by FUZZ_MAPPED_BASE) are loaded with dlopen, then the census,
 * the SONAME lookup, the build-id read and the binding's symbol lookup (ncshl_define) run
 * over the process. The input overwrites, in
 * order, the library's notes, GNU and System V hash tables, dynamic symbols and strings: the
 * tables glibc does not read when it loads an object without relocations (it reads a hash
 * table's header only), but which ncclshim reads from memory. The first 16 bytes are XORed
 * into the PT_NOTE header's p_vaddr and p_memsz. The GNU hash table's Bloom size is made a
 * power of two, the one thing of it glibc's load asserts. Nothing may crash or hang, whatever
 * the tables say; glibc loads every mutant. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "loader/dl.h"
#include "loader/elf_file.h"
#include "loader/objects.h"
#include "fuzz.h"

static unsigned char *base;
static size_t base_size;
static struct region { size_t offset, size; } regions[8];
static size_t region_count;
static size_t note_phdr; /* file offset of the PT_NOTE program header, 0 when none */
static size_t gnu_hash;  /* file offset of .gnu.hash, 0 when none */

static void find_regions(const char *path) {
  static const char *const names[] = {".note.gnu.build-id", ".gnu.hash", ".hash", ".dynsym",
                                      ".dynstr"};
  char reason[256];
  ncshl_elf_file f;
  if (ncshl_elf_open(path, &f, reason, sizeof(reason)) != NCSHL_OK) {
    fprintf(stderr, "fuzz-mapped: %s: %s\n", path, reason);
    abort();
  }
  base_size = f.size;
  base = malloc(base_size);
  memcpy(base, f.bytes, base_size);
  for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
    for (unsigned i = 0; i < f.shnum; i++) {
      ElfW(Shdr) s;
      const char *name;
      if (ncshl_elf_section(&f, i, &s) && (name = ncshl_elf_section_name(&f, &s)) &&
          strcmp(name, names[n]) == 0 && ncshl_elf_inside(&f, s.sh_offset, s.sh_size)) {
        regions[region_count++] = (struct region){s.sh_offset, s.sh_size};
        if (strcmp(name, ".gnu.hash") == 0 && s.sh_size >= 16) gnu_hash = s.sh_offset;
      }
    }
  }
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
  for (unsigned i = 0; i < eh->e_phnum; i++) {
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff) + i;
    if (ph->p_type == PT_NOTE) note_phdr = eh->e_phoff + i * sizeof(*ph);
  }
  ncshl_elf_close(&f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *path = getenv("FUZZ_MAPPED_BASE");
  if (path == NULL) {
    fprintf(stderr, "fuzz-mapped: set FUZZ_MAPPED_BASE to the base library\n");
    abort();
  }
  find_regions(path);
  return 0;
}

static void check_census(const char *symbol) {
  ncshl_mapped *objects = NULL;
  size_t count = 0;
  FUZZ_CHECK(ncshl_objects_defining(symbol, &objects, &count) == 0, "census out of memory");
  for (size_t i = 0; i < count; i++) {
    FUZZ_CHECK(objects[i].path != NULL, "object %zu without a path", i);
    FUZZ_CHECK(objects[i].kind <= NCSHL_SYMBOL_TLS, "kind %d", (int)objects[i].kind);
  }
  ncshl_objects_free(objects, count);
}

/* What the NCCL binding asks of a library it opened: the name's lookup checked first
 * (ncshl_lookup_unsafe), then dlsym, then the object holding the address. A check that
 * passes a table glibc's lookup crashes on is a crash here. */
static void check_define(void *handle, const char *symbol) {
  void *address = NULL;
  char *definer = NULL;
  ncshl_definition kind = ncshl_define(handle, symbol, &address, &definer);
  FUZZ_CHECK(kind <= NCSHL_DEFINED_CORRUPT, "definition %d", (int)kind);
  if (kind == NCSHL_DEFINED_CORRUPT)
    FUZZ_CHECK(definer != NULL && address == NULL, "%s: corrupt, yet no object named", symbol);
  free(definer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *mutant = malloc(base_size);
  memcpy(mutant, base, base_size);
  size_t used = 0;
  if (note_phdr && size >= 16) {
    for (size_t i = 0; i < 16; i++)
      mutant[note_phdr + offsetof(ElfW(Phdr), p_vaddr) + i] ^= data[i];
    used = 16;
  }
  for (size_t r = 0; r < region_count && used < size; r++) {
    size_t n = size - used < regions[r].size ? size - used : regions[r].size;
    memcpy(mutant + regions[r].offset, data + used, n);
    used += n;
  }
  if (gnu_hash) { /* glibc asserts a power-of-two Bloom size: the one field it checks */
    uint32_t words;
    memcpy(&words, mutant + gnu_hash + 8, 4);
    words &= ~words + 1;
    memcpy(mutant + gnu_hash + 8, &words, 4);
  }
  int fd = memfd_create("ncclshim-fuzz-mapped", MFD_CLOEXEC); /* a new inode for each */
  FUZZ_CHECK(fd >= 0, "memfd_create");
  FUZZ_CHECK(write(fd, mutant, base_size) == (ssize_t)base_size, "memfd write");
  free(mutant);
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle != NULL) {
    check_census("ncclGetVersion");
    check_census("fuzz_mapped_variable");
    check_define(handle, "ncclGetVersion");
    check_define(handle, "fuzz_mapped_variable");
    check_define(handle, "ncclCommInitAll"); /* absent: a walk of a whole chain */
    free(ncshl_mapped_name("libfuzz-mapped.so"));
    free(ncshl_mapped_name(path));
    struct link_map *map = NULL;
    unsigned char id[20];
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL)
      FUZZ_CHECK(ncshl_build_id((const void *)map->l_addr, id, sizeof(id)) < (1u << 30),
                 "build-id length");
    dlclose(handle);
  }
  dlerror();
  close(fd);
  return 0;
}
