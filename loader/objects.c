#include "objects.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- Reads bounded by the object's own mapping ---------------------------------------- */

/* 1 when [at, at + length) lies inside one readable PT_LOAD segment of the object: the only
 * memory a table of it may be read from (a corrupt note, hash table or symbol table points
 * anywhere, and glibc itself never reads some of them). */
static int readable(const struct dl_phdr_info *info, uintptr_t at, size_t length) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R)) continue;
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (at >= start && at - start <= ph->p_memsz && length <= ph->p_memsz - (at - start)) return 1;
  }
  return 0;
}

/* `count` items of `item` bytes from `at`, without overflow. */
static int readable_array(const struct dl_phdr_info *info, uintptr_t at, size_t count,
                          size_t item) {
  return count <= SIZE_MAX / item && readable(info, at, count * item);
}

typedef struct dyn_tables {
  const struct dl_phdr_info *info;
  const ElfW(Sym) * symbols;
  const char *strings;
  size_t strings_size;
  const char *strtab; /* DT_STRTAB as glibc reads it: unchecked, unlike `strings` */
  const uint32_t *gnu_hash;
  const ElfW(Word) * sysv_hash;
  const ElfW(Half) * versym; /* DT_VERSYM, or NULL */
  size_t soname;             /* offset of DT_SONAME in the strings, or SIZE_MAX */
} dyn_tables;

/* The object's dynamic section, from its program headers: its entries and how many. */
static const ElfW(Dyn) * dynamic_of(const struct dl_phdr_info *info, size_t *count) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t at = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_DYNAMIC && readable(info, at, ph->p_memsz)) {
      *count = ph->p_memsz / sizeof(ElfW(Dyn));
      return (const ElfW(Dyn) *)at;
    }
  }
  return NULL;
}

static int find_tables(const struct dl_phdr_info *info, dyn_tables *t) {
  memset(t, 0, sizeof(*t));
  t->info = info;
  t->soname = SIZE_MAX;
  size_t count = 0;
  const ElfW(Dyn) *dynamic = dynamic_of(info, &count);
  uintptr_t base = info->dlpi_addr;
  for (size_t i = 0; dynamic != NULL && i < count && dynamic[i].d_tag != DT_NULL; i++) {
    const ElfW(Dyn) *dyn = &dynamic[i];
    /* glibc relocates these pointers in place where the section is writable, but not in a
     * read-only one (the vDSO's, some architectures'). */
    uintptr_t at = dyn->d_un.d_ptr < base ? base + dyn->d_un.d_ptr : dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_SYMTAB)
      t->symbols = (const ElfW(Sym) *)at;
    else if (dyn->d_tag == DT_STRTAB)
      t->strings = (const char *)at;
    else if (dyn->d_tag == DT_STRSZ)
      t->strings_size = dyn->d_un.d_val;
    else if (dyn->d_tag == DT_SONAME)
      t->soname = dyn->d_un.d_val;
    else if (dyn->d_tag == DT_GNU_HASH)
      t->gnu_hash = (const uint32_t *)at;
    else if (dyn->d_tag == DT_HASH)
      t->sysv_hash = (const ElfW(Word) *)at;
    else if (dyn->d_tag == DT_VERSYM)
      t->versym = (const ElfW(Half) *)at;
  }
  t->strtab = t->strings;
  if (t->strings == NULL || !readable(info, (uintptr_t)t->strings, t->strings_size))
    t->strings = NULL;
  return t->symbols && t->strings && (t->gnu_hash || t->sysv_hash);
}

/* 1 when the string at `offset` of the string table is `name`, read within the table. */
static int string_is(const dyn_tables *t, size_t offset, const char *name) {
  size_t length = strlen(name) + 1;
  return offset < t->strings_size && length <= t->strings_size - offset &&
         memcmp(t->strings + offset, name, length) == 0;
}

/* Symbol `index`, or NULL when it lies outside the mapping. */
static const ElfW(Sym) * symbol_at(const dyn_tables *t, size_t index) {
  uintptr_t at = (uintptr_t)t->symbols;
  if (index > (UINTPTR_MAX - at) / sizeof(ElfW(Sym))) return NULL;
  at += index * sizeof(ElfW(Sym));
  return readable(t->info, at, sizeof(ElfW(Sym))) ? (const ElfW(Sym) *)at : NULL;
}

/* ELF64_ST_* read st_info as ELF32_ST_* do: the same bits. */
static int defines(const dyn_tables *t, const ElfW(Sym) * sym, const char *name) {
  return sym != NULL && sym->st_shndx != SHN_UNDEF && string_is(t, sym->st_name, name) &&
         (ELF64_ST_BIND(sym->st_info) == STB_GLOBAL || ELF64_ST_BIND(sym->st_info) == STB_WEAK);
}

static uint32_t gnu_hash_of(const char *name) {
  uint32_t h = 5381;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = h * 33 + *c;
  return h;
}

static uint32_t sysv_hash_of(const char *name) {
  uint32_t h = 0;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
    h = (h << 4) + *c;
    uint32_t g = h & 0xf0000000u;
    h = (h ^ (g >> 24)) & ~g;
  }
  return h;
}

/* The lookup ld.so does, through the GNU hash table (DT_GNU_HASH). */
static const ElfW(Sym) * gnu_lookup(const dyn_tables *t, const char *name) {
  const uint32_t h = gnu_hash_of(name);
  uintptr_t header = (uintptr_t)t->gnu_hash;
  if (!readable(t->info, header, 4 * sizeof(uint32_t))) return NULL;
  const uint32_t nbuckets = t->gnu_hash[0], symoffset = t->gnu_hash[1];
  const uint32_t bloom_size = t->gnu_hash[2];
  uintptr_t bloom = header + 4 * sizeof(uint32_t);
  if (nbuckets == 0 || !readable_array(t->info, bloom, bloom_size, sizeof(ElfW(Addr)))) return NULL;
  uintptr_t buckets_at = bloom + (uintptr_t)bloom_size * sizeof(ElfW(Addr));
  if (!readable_array(t->info, buckets_at, nbuckets, sizeof(uint32_t))) return NULL;
  /* The Bloom filter first, as ld.so does: a name it rules out is never looked up, so buckets
   * that glibc never reads cannot mislead or crash the census. */
  const size_t word_bits = 8 * sizeof(ElfW(Addr));
  const uint32_t shift = t->gnu_hash[3];
  if (bloom_size == 0) return NULL;
  ElfW(Addr) word;
  memcpy(&word, (const void *)(bloom + ((h / word_bits) % bloom_size) * sizeof(word)),
         sizeof(word));
  ElfW(Addr) mask =
      ((ElfW(Addr))1 << (h % word_bits)) | ((ElfW(Addr))1 << ((h >> (shift % 32)) % word_bits));
  if ((word & mask) != mask) return NULL;
  const uint32_t *buckets = (const uint32_t *)buckets_at;
  const uint32_t *chain = buckets + nbuckets;
  uint32_t index = buckets[h % nbuckets];
  if (index < symoffset) return NULL;
  /* The chain ends at an entry with its low bit set, or where the mapping ends. */
  for (; index != UINT32_MAX; index++) {
    uintptr_t link_at = (uintptr_t)chain + (uintptr_t)(index - symoffset) * sizeof(uint32_t);
    if (!readable(t->info, link_at, sizeof(uint32_t))) return NULL;
    const uint32_t *link = (const uint32_t *)link_at;
    if ((h | 1) == (*link | 1) && defines(t, symbol_at(t, index), name)) return symbol_at(t, index);
    if (*link & 1) return NULL;
  }
  return NULL;
}

/* The same through the older System V table (DT_HASH). */
static const ElfW(Sym) * sysv_lookup(const dyn_tables *t, const char *name) {
  const uint32_t h = sysv_hash_of(name);
  uintptr_t header = (uintptr_t)t->sysv_hash;
  if (!readable(t->info, header, 2 * sizeof(ElfW(Word)))) return NULL;
  const ElfW(Word) nbucket = t->sysv_hash[0], nchain = t->sysv_hash[1];
  if (nbucket == 0 ||
      !readable_array(t->info, header, 2 + (size_t)nbucket + nchain, sizeof(ElfW(Word))))
    return NULL;
  const ElfW(Word) *bucket = t->sysv_hash + 2, *chain = bucket + nbucket;
  /* A chain visits each symbol at most once: a longer walk is a loop in a corrupt table. */
  ElfW(Word) i = bucket[h % nbucket];
  for (ElfW(Word) steps = 0; i != STN_UNDEF && i < nchain && steps < nchain; steps++, i = chain[i])
    if (defines(t, symbol_at(t, i), name)) return symbol_at(t, i);
  return NULL;
}

static const ElfW(Sym) * lookup(const struct dl_phdr_info *info, const char *name) {
  dyn_tables t;
  if (!find_tables(info, &t)) return NULL;
  return t.gnu_hash ? gnu_lookup(&t, name) : sysv_lookup(&t, name);
}

static char *object_path(const char *name, int is_program) {
  if (is_program) name = "/proc/self/exe";
  char *resolved = realpath(name, NULL);
  return resolved ? resolved : strdup(name);
}

/* ---- What glibc reads when it looks a name up ---------------------------------------- */

/* The segment of the object that holds `at` (any PT_LOAD, readable or not), or NULL. */
static const ElfW(Phdr) * segment_holding(const struct dl_phdr_info *info, uintptr_t at) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && at >= start && at - start < ph->p_memsz) return ph;
  }
  return NULL;
}

/* 1 when `count` items of `item` bytes at index `index` of the array at `base` lie inside the
 * mapping, the address computed as glibc computes it (wrapping). */
static int readable_item(const struct dl_phdr_info *info, uintptr_t base, uintptr_t index,
                         size_t item) {
  return readable(info, base + index * item, item);
}

/* check_match's reads of symbol `index` (dl-lookup.c): the entry, its name as strcmp compares
 * it with `name` (unbounded by DT_STRSZ), its version entry when the name matches. 0, or -1
 * when one of them lies outside the object's mapping. */
static int glibc_match(const dyn_tables *t, uintptr_t index, const char *name) {
  if (!readable_item(t->info, (uintptr_t)t->symbols, index, sizeof(ElfW(Sym)))) return -1;
  ElfW(Sym) sym;
  memcpy(&sym, (const void *)((uintptr_t)t->symbols + index * sizeof(ElfW(Sym))), sizeof(sym));
  unsigned type = ELF64_ST_TYPE(sym.st_info);
  const unsigned allowed = 1u << STT_NOTYPE | 1u << STT_OBJECT | 1u << STT_FUNC | 1u << STT_COMMON |
                           1u << STT_TLS | 1u << STT_GNU_IFUNC;
  if ((sym.st_value == 0 && sym.st_shndx != SHN_ABS && type != STT_TLS) ||
      !((1u << type) & allowed))
    return 0;
  uintptr_t at = (uintptr_t)t->strtab + sym.st_name;
  for (size_t i = 0;; i++) {
    if (!readable(t->info, at + i, 1)) return -1;
    char c = *(const char *)(at + i);
    if (c != name[i]) return 0;
    if (c == '\0') break;
  }
  return t->versym == NULL || readable_item(t->info, (uintptr_t)t->versym, index, 2) ? 0 : -1;
}

/* do_lookup_x's walk of one object's GNU hash table for the name of hash `h`. */
static int glibc_gnu_walk(const dyn_tables *t, const char *name, uint32_t h) {
  uintptr_t header = (uintptr_t)t->gnu_hash;
  if (!readable(t->info, header, 4 * sizeof(uint32_t))) return -1;
  const uint32_t nbuckets = t->gnu_hash[0], symoffset = t->gnu_hash[1];
  const uint32_t bloom_size = t->gnu_hash[2], shift = t->gnu_hash[3];
  if (nbuckets == 0) return 0; /* glibc skips an object without buckets */
  const uintptr_t bloom = header + 4 * sizeof(uint32_t);
  const uint32_t word_bits = 8 * sizeof(ElfW(Addr));
  uintptr_t word_index = (h / word_bits) & (bloom_size - 1u);
  if (!readable_item(t->info, bloom, word_index, sizeof(ElfW(Addr)))) return -1;
  ElfW(Addr) word;
  memcpy(&word, (const void *)(bloom + word_index * sizeof(word)), sizeof(word));
  if (!((word >> (h % word_bits)) & (word >> ((h >> (shift % 32)) % word_bits)) & 1)) return 0;
  const uintptr_t buckets = bloom + (uintptr_t)bloom_size * sizeof(ElfW(Addr));
  if (!readable_item(t->info, buckets, h % nbuckets, sizeof(uint32_t))) return -1;
  uint32_t bucket;
  memcpy(&bucket, (const void *)(buckets + (uintptr_t)(h % nbuckets) * 4), 4);
  if (bucket == 0) return 0;
  const uintptr_t chain_zero = buckets + (uintptr_t)nbuckets * 4 - (uintptr_t)symoffset * 4;
  /* The walk ends at a link with its low bit set; without one it runs off the mapping. */
  for (uintptr_t index = bucket;; index++) {
    if (!readable_item(t->info, chain_zero, index, sizeof(uint32_t))) return -1;
    uint32_t link;
    memcpy(&link, (const void *)(chain_zero + index * 4), 4);
    if (((link ^ h) >> 1) == 0 && glibc_match(t, index, name) != 0) return -1;
    if (link & 1) return 0;
  }
}

/* Longest System V hash chain walked: glibc follows one forever when it loops. */
enum { MOST_CHAIN_STEPS = 1 << 20 };

/* The same for an object with only a System V hash table. */
static int glibc_sysv_walk(const dyn_tables *t, const char *name, uint32_t sysv_hash) {
  uintptr_t header = (uintptr_t)t->sysv_hash;
  if (!readable(t->info, header, 2 * sizeof(ElfW(Word)))) return -1;
  const ElfW(Word) nbucket = t->sysv_hash[0];
  if (nbucket == 0) return 0;
  const uintptr_t buckets = header + 2 * sizeof(ElfW(Word));
  const uintptr_t chain = buckets + (uintptr_t)nbucket * sizeof(ElfW(Word));
  uintptr_t slot = sysv_hash % nbucket;
  if (!readable_item(t->info, buckets, slot, sizeof(ElfW(Word)))) return -1;
  ElfW(Word) index = t->sysv_hash[2 + slot];
  for (int steps = 0; index != STN_UNDEF; steps++) {
    if (steps == MOST_CHAIN_STEPS || glibc_match(t, index, name) != 0 ||
        !readable_item(t->info, chain, index, sizeof(ElfW(Word))))
      return -1;
    memcpy(&index, (const void *)(chain + (uintptr_t)index * sizeof(ElfW(Word))), sizeof(index));
  }
  return 0;
}

typedef struct unsafe_search {
  const char *name;
  uint32_t gnu_hash, sysv_hash; /* the name's, computed once for every object */
  char *object;
  size_t size;
  int found;
  size_t index; /* of the object visited */
} unsafe_search;

/* Each object's tables as find_tables found them, for the next lookup's check: binding a
 * library checks some 150 names against the same objects (hundreds in a large program). Valid
 * while the loader's counts of objects added and removed stay those it was filled under (the
 * same objects in the same order), each entry also matched by its load address and headers.
 * Shared by the threads, under cache_lock, held around the whole dl_iterate_phdr walk. */
typedef struct cached_object {
  uintptr_t base;
  const ElfW(Phdr) * phdr;
  dyn_tables tables;
} cached_object;
static struct {
  unsigned long long adds, subs;
  size_t count, capacity;
  cached_object *entry;
} cache;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* Unloaded (dlclose): the cache goes with the library, or each load and unload leaks it. */
__attribute__((destructor)) static void free_cache(void) {
  free(cache.entry);
  cache.entry = NULL;
  cache.count = cache.capacity = 0;
}

static int tables_of(struct dl_phdr_info *info, size_t size, size_t index, dyn_tables *t) {
  /* dlpi_adds and dlpi_subs exist when `size` covers them (glibc 2.4 and later). */
  int counted = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs);
  if (counted && (cache.adds != info->dlpi_adds || cache.subs != info->dlpi_subs)) {
    cache.adds = info->dlpi_adds;
    cache.subs = info->dlpi_subs;
    cache.count = 0;
  }
  if (counted && index < cache.count && cache.entry[index].base == info->dlpi_addr &&
      cache.entry[index].phdr == info->dlpi_phdr) {
    *t = cache.entry[index].tables;
    t->info = info;
    return t->symbols && t->strings && (t->gnu_hash || t->sysv_hash);
  }
  int usable = find_tables(info, t);
  if (counted && index == cache.count && index == cache.capacity) {
    size_t capacity = cache.capacity ? 2 * cache.capacity : 32;
    cached_object *grown = realloc(cache.entry, capacity * sizeof(*grown));
    if (grown != NULL) {
      cache.entry = grown;
      cache.capacity = capacity;
    }
  }
  if (counted && index == cache.count && index < cache.capacity) {
    cache.entry[index] = (cached_object){info->dlpi_addr, info->dlpi_phdr, *t};
    cache.count++;
  }
  return usable;
}

static int check_lookup(struct dl_phdr_info *info, size_t size, void *context) {
  unsafe_search *s = context;
  dyn_tables t;
  tables_of(info, size, s->index++, &t);
  /* glibc walks the GNU table when there is one, else the System V one, else nothing. */
  int walk = t.gnu_hash    ? glibc_gnu_walk(&t, s->name, s->gnu_hash)
             : t.sysv_hash ? glibc_sysv_walk(&t, s->name, s->sysv_hash)
                           : 0;
  if (walk == 0) return 0;
  s->found = 1;
  if (s->size > 0) {
    char *path = object_path(info->dlpi_name, info->dlpi_name[0] == '\0');
    snprintf(s->object, s->size, "%s", path ? path : info->dlpi_name);
    free(path);
  }
  return 1;
}

int ncshl_lookup_unsafe(const char *name, char *object, size_t size) {
  unsafe_search s = {name, gnu_hash_of(name), sysv_hash_of(name), object, size, 0, 0};
  pthread_mutex_lock(&cache_lock);
  dl_iterate_phdr(check_lookup, &s);
  pthread_mutex_unlock(&cache_lock);
  return s.found;
}

/* ---- The object holding an address ---------------------------------------------------- */

typedef struct holder_search {
  uintptr_t address;
  const char *name;
  ncshl_held *held;
  int index, found;
} holder_search;

static int find_holder(struct dl_phdr_info *info, size_t size, void *context) {
  holder_search *s = context;
  size_t index = s->index++;
  const ElfW(Phdr) *segment = segment_holding(info, s->address);
  if (segment == NULL) return 0;
  s->found = 1;
  /* The name's own entry in this object says what it is; else the segment does. */
  dyn_tables t;
  const ElfW(Sym) *sym = !tables_of(info, size, index, &t) ? NULL
                         : t.gnu_hash                      ? gnu_lookup(&t, s->name)
                                                           : sysv_lookup(&t, s->name);
  int type = sym ? ELF64_ST_TYPE(sym->st_info) : -1;
  int code = sym ? type == STT_FUNC || type == STT_GNU_IFUNC : (segment->p_flags & PF_X) != 0;
  s->held->kind = type == STT_TLS ? NCSHL_SYMBOL_TLS
                  : code          ? NCSHL_SYMBOL_FUNCTION
                                  : NCSHL_SYMBOL_DATA;
  s->held->base = info->dlpi_addr;
  s->held->name = info->dlpi_name;
  s->held->is_program = index == 0 && info->dlpi_name[0] == '\0';
  return 1;
}

int ncshl_object_holding(const void *address, const char *name, ncshl_held *held) {
  holder_search s = {(uintptr_t)address, name, held, 0, 0};
  pthread_mutex_lock(&cache_lock);
  dl_iterate_phdr(find_holder, &s);
  pthread_mutex_unlock(&cache_lock);
  return s.found;
}

char *ncshl_held_path(const ncshl_held *held) { return object_path(held->name, held->is_program); }

/* The same through a pipe, where process_vm_readv is refused (a seccomp filter) or missing
 * (qemu-user): write(2) answers EFAULT for bytes not mapped readable, rather than faulting. */
static int copy_through_pipe(uintptr_t at, void *out, size_t size) {
  int p[2];
  if (size > 4096 || pipe2(p, O_CLOEXEC) != 0) return 0; /* within one pipe's buffer */
  int ok = write(p[1], (const void *)at, size) == (ssize_t)size &&
           read(p[0], out, size) == (ssize_t)size;
  close(p[0]);
  close(p[1]);
  return ok;
}

/* Copies `size` bytes at `at` without faulting: 0 when any of them is not mapped readable. */
static int copy_mapped(uintptr_t at, void *out, size_t size) {
  struct iovec local = {out, size}, remote = {(void *)at, size};
  ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (n == (ssize_t)size) return 1;
  int refused = n < 0 && (errno == ENOSYS || errno == EPERM);
  return refused && copy_through_pipe(at, out, size);
}

enum { MOST_PHDRS = 64 };

/* The program headers of the object loaded at `base`, copied into phdr: the program's from
 * the auxiliary vector, another object's through the ELF header its first segment maps at
 * `base` (a shared object's first PT_LOAD starts at address and offset 0). The count, 0 when
 * they cannot be known. */
static int phdrs_at(uintptr_t base, ElfW(Phdr) phdr[MOST_PHDRS]) {
  const ElfW(Phdr) *program = (const ElfW(Phdr) *)getauxval(AT_PHDR);
  size_t program_count = getauxval(AT_PHNUM);
  for (size_t i = 0; program != NULL && i < program_count && program_count <= MOST_PHDRS; i++)
    if (program[i].p_type == PT_PHDR && (uintptr_t)program - program[i].p_vaddr == base) {
      memcpy(phdr, program, program_count * sizeof(*phdr));
      return (int)program_count;
    }
  ElfW(Ehdr) header;
  if (!copy_mapped(base, &header, sizeof(header)) || memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_phentsize != sizeof(*phdr) || header.e_phnum == 0 || header.e_phnum > MOST_PHDRS ||
      header.e_phoff > UINTPTR_MAX - base ||
      !copy_mapped(base + header.e_phoff, phdr, header.e_phnum * sizeof(*phdr)))
    return 0;
  return header.e_phnum;
}

const ElfW(Sym) *
    ncshl_dynamic_lookup(const ElfW(Dyn) * dynamic, uintptr_t base, const char *name) {
  /* An auditor is handed a link map (l_addr, l_ld) without program headers, and
   * dl_iterate_phdr shows it only its own namespace: the object's headers are read from its
   * mapping, without faulting, and must name `dynamic` as its PT_DYNAMIC. Then every read is
   * bounded by its PT_LOAD segments, as the census's are. */
  ElfW(Phdr) phdr[MOST_PHDRS];
  int count = dynamic != NULL ? phdrs_at(base, phdr) : 0;
  struct dl_phdr_info info = {
      .dlpi_addr = base, .dlpi_name = "", .dlpi_phdr = phdr, .dlpi_phnum = (ElfW(Half))count};
  size_t entries = 0;
  if (count == 0 || dynamic_of(&info, &entries) != dynamic) return NULL;
  return lookup(&info, name);
}

/* ---- The census ------------------------------------------------------------------------ */

typedef struct census {
  const char *symbol;
  ncshl_mapped *items;
  size_t count, capacity;
  int out_of_memory;
} census;

static int visit(struct dl_phdr_info *info, size_t size, void *context) {
  (void)size;
  census *c = context;
  const ElfW(Sym) *sym = lookup(info, c->symbol);
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
  o->path = object_path(info->dlpi_name, is_program);
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

/* ---- A mapped object by name or by file ---------------------------------------------- */

typedef struct name_search {
  const char *soname; /* a bare name: the object with that DT_SONAME or file name */
  struct stat file;   /* else the object whose file this is (device and inode) */
  char *found;        /* its link-map name, malloc'd */
  int out_of_memory;
} name_search;

static int named(const struct dl_phdr_info *info, const char *soname) {
  const char *slash = strrchr(info->dlpi_name, '/');
  if (strcmp(slash ? slash + 1 : info->dlpi_name, soname) == 0) return 1;
  dyn_tables t;
  find_tables(info, &t);
  return t.strings != NULL && t.soname != SIZE_MAX && string_is(&t, t.soname, soname);
}

static int match_name(struct dl_phdr_info *info, size_t size, void *context) {
  (void)size;
  name_search *s = context;
  if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0') return 0; /* the program */
  struct stat st;
  int match = s->soname ? named(info, s->soname)
                        : stat(info->dlpi_name, &st) == 0 && st.st_dev == s->file.st_dev &&
                              st.st_ino == s->file.st_ino;
  if (!match) return 0;
  s->found = strdup(info->dlpi_name);
  s->out_of_memory = s->found == NULL;
  return 1;
}

char *ncshl_mapped_name(const char *name) {
  name_search s = {0};
  if (strchr(name, '/') == NULL)
    s.soname = name;
  else if (stat(name, &s.file) != 0)
    return NULL;
  dl_iterate_phdr(match_name, &s);
  return s.found;
}

/* ---- The build-id ---------------------------------------------------------------------- */

typedef struct id_search {
  uintptr_t address;
  unsigned char *id;
  size_t size, length;
} id_search;

/* Notes are 4-byte aligned records: namesz, descsz, type, name, descriptor. */
static size_t note_build_id(const unsigned char *p, size_t length, unsigned char *id, size_t size) {
  while (length >= 12) {
    uint32_t namesz, descsz, type;
    memcpy(&namesz, p, 4);
    memcpy(&descsz, p + 4, 4);
    memcpy(&type, p + 8, 4);
    size_t name_span = ((size_t)namesz + 3u) & ~(size_t)3u;
    size_t desc_span = ((size_t)descsz + 3u) & ~(size_t)3u;
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
  if (!readable(info, s->address, 1)) return 0;
  for (int i = 0; i < info->dlpi_phnum && s->length == 0; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t at = info->dlpi_addr + ph->p_vaddr;
    /* A note outside the mapping (a bad p_vaddr, which glibc never reads) has no build-id. */
    if (ph->p_type == PT_NOTE && readable(info, at, ph->p_memsz))
      s->length = note_build_id((const unsigned char *)at, ph->p_memsz, s->id, s->size);
  }
  return 1;
}

size_t ncshl_build_id(const void *address, unsigned char *id, size_t size) {
  id_search s = {(uintptr_t)address, id, size, 0};
  dl_iterate_phdr(find_build_id, &s);
  return s.length;
}
