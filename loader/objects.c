#include "objects.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct dyn_tables {
  const ElfW(Sym) * symbols;
  const char *strings;
  const uint32_t *gnu_hash;
  const ElfW(Word) * sysv_hash;
} dyn_tables;

static int find_tables(const ElfW(Dyn) * dynamic, uintptr_t base, dyn_tables *t) {
  memset(t, 0, sizeof(*t));
  for (const ElfW(Dyn) *dyn = dynamic; dyn != NULL && dyn->d_tag != DT_NULL; dyn++) {
    /* glibc relocates these pointers in place where the section is writable, but not in a
     * read-only one (the vDSO's, some architectures'). */
    uintptr_t at = dyn->d_un.d_ptr < base ? base + dyn->d_un.d_ptr : dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_SYMTAB)
      t->symbols = (const ElfW(Sym) *)at;
    else if (dyn->d_tag == DT_STRTAB)
      t->strings = (const char *)at;
    else if (dyn->d_tag == DT_GNU_HASH)
      t->gnu_hash = (const uint32_t *)at;
    else if (dyn->d_tag == DT_HASH)
      t->sysv_hash = (const ElfW(Word) *)at;
  }
  return t->symbols && t->strings && (t->gnu_hash || t->sysv_hash);
}

/* ELF64_ST_* read st_info as ELF32_ST_* do: the same bits. */
static int defines(const dyn_tables *t, const ElfW(Sym) * sym, const char *name) {
  return sym->st_shndx != SHN_UNDEF && strcmp(t->strings + sym->st_name, name) == 0 &&
         (ELF64_ST_BIND(sym->st_info) == STB_GLOBAL || ELF64_ST_BIND(sym->st_info) == STB_WEAK);
}

/* The lookup ld.so does, through the GNU hash table (DT_GNU_HASH). */
static const ElfW(Sym) * gnu_lookup(const dyn_tables *t, const char *name) {
  uint32_t h = 5381;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = h * 33 + *c;
  const uint32_t nbuckets = t->gnu_hash[0], symoffset = t->gnu_hash[1];
  const uint32_t bloom_size = t->gnu_hash[2];
  if (nbuckets == 0) return NULL;
  const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(t->gnu_hash + 4) + bloom_size);
  const uint32_t *chain = buckets + nbuckets;
  uint32_t index = buckets[h % nbuckets];
  if (index < symoffset) return NULL;
  for (;; index++) {
    uint32_t other = chain[index - symoffset];
    if ((h | 1) == (other | 1) && defines(t, &t->symbols[index], name)) return &t->symbols[index];
    if (other & 1) return NULL;
  }
}

/* The same through the older System V table (DT_HASH). */
static const ElfW(Sym) * sysv_lookup(const dyn_tables *t, const char *name) {
  uint32_t h = 0;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
    h = (h << 4) + *c;
    uint32_t g = h & 0xf0000000u;
    h = (h ^ (g >> 24)) & ~g;
  }
  const ElfW(Word) nbucket = t->sysv_hash[0];
  if (nbucket == 0) return NULL;
  const ElfW(Word) *bucket = t->sysv_hash + 2, *chain = bucket + nbucket;
  for (ElfW(Word) i = bucket[h % nbucket]; i != STN_UNDEF; i = chain[i])
    if (defines(t, &t->symbols[i], name)) return &t->symbols[i];
  return NULL;
}

const ElfW(Sym) *
    ncshl_dynamic_lookup(const ElfW(Dyn) * dynamic, uintptr_t base, const char *name) {
  dyn_tables t;
  if (!find_tables(dynamic, base, &t)) return NULL;
  return t.gnu_hash ? gnu_lookup(&t, name) : sysv_lookup(&t, name);
}

/* The object's dynamic section, from its program headers. */
static const ElfW(Dyn) * dynamic_of(const struct dl_phdr_info *info) {
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  return NULL;
}

typedef struct census {
  const char *symbol;
  ncshl_mapped *items;
  size_t count, capacity;
  int out_of_memory;
} census;

static char *object_path(const struct dl_phdr_info *info, int is_program) {
  const char *name = is_program ? "/proc/self/exe" : info->dlpi_name;
  char *resolved = realpath(name, NULL);
  return resolved ? resolved : strdup(name);
}

static int visit(struct dl_phdr_info *info, size_t size, void *context) {
  (void)size;
  census *c = context;
  const ElfW(Sym) *sym = ncshl_dynamic_lookup(dynamic_of(info), info->dlpi_addr, c->symbol);
  if (sym == NULL) return 0;
  if (c->count == c->capacity) {
    size_t capacity = c->capacity ? 2 * c->capacity : 4;
    ncshl_mapped *items = realloc(c->items, capacity * sizeof(*items));
    if (items == NULL) {
      c->out_of_memory = 1;
      return 1;
    }
    c->items = items;
    c->capacity = capacity;
  }
  /* The program is the first object and the only one without a name. */
  int is_program = c->count == 0 && info->dlpi_name[0] == '\0';
  int type = ELF64_ST_TYPE(sym->st_info);
  ncshl_mapped *o = &c->items[c->count];
  o->kind = type == STT_FUNC || type == STT_GNU_IFUNC ? NCSHL_SYMBOL_FUNCTION
            : type == STT_TLS                         ? NCSHL_SYMBOL_TLS
                                                      : NCSHL_SYMBOL_DATA;
  o->address = o->kind == NCSHL_SYMBOL_TLS ? NULL : (void *)(info->dlpi_addr + sym->st_value);
  o->is_program = is_program;
  o->path = object_path(info, is_program);
  if (o->path == NULL) {
    c->out_of_memory = 1;
    return 1;
  }
  c->count++;
  return 0;
}

int ncshl_objects_defining(const char *symbol, ncshl_mapped **objects, size_t *count) {
  census c = {.symbol = symbol};
  dl_iterate_phdr(visit, &c);
  if (c.out_of_memory) {
    ncshl_objects_free(c.items, c.count);
    *objects = NULL;
    *count = 0;
    return -1;
  }
  *objects = c.items;
  *count = c.count;
  return 0;
}

void ncshl_objects_free(ncshl_mapped *objects, size_t count) {
  for (size_t i = 0; i < count; i++) free(objects[i].path);
  free(objects);
}

typedef struct id_search {
  uintptr_t address;
  unsigned char *id;
  size_t size, length;
} id_search;

static int holds(const struct dl_phdr_info *info, uintptr_t address) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && address >= start && address - start < ph->p_memsz) return 1;
  }
  return 0;
}

/* Notes are 4-byte aligned records: namesz, descsz, type, name, descriptor. */
static size_t note_build_id(const unsigned char *p, size_t length, unsigned char *id, size_t size) {
  while (length >= 12) {
    uint32_t namesz, descsz, type;
    memcpy(&namesz, p, 4);
    memcpy(&descsz, p + 4, 4);
    memcpy(&type, p + 8, 4);
    size_t name_span = (namesz + 3u) & ~3u, desc_span = (descsz + 3u) & ~3u;
    if (name_span > length - 12 || desc_span > length - 12 - name_span) return 0;
    if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(p + 12, "GNU", 4) == 0 && descsz > 0) {
      memcpy(id, p + 12 + name_span, descsz < size ? descsz : size);
      return descsz;
    }
    p += 12 + name_span + desc_span;
    length -= 12 + name_span + desc_span;
  }
  return 0;
}

static int find_build_id(struct dl_phdr_info *info, size_t size, void *context) {
  (void)size;
  id_search *s = context;
  if (!holds(info, s->address)) return 0;
  for (int i = 0; i < info->dlpi_phnum && s->length == 0; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_NOTE)
      s->length = note_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz,
                                s->id, s->size);
  }
  return 1;
}

size_t ncshl_build_id(const void *address, unsigned char *id, size_t size) {
  id_search s = {(uintptr_t)address, id, size, 0};
  dl_iterate_phdr(find_build_id, &s);
  return s.length;
}
