/* Corrupt NCCL libraries loaded by the probe and by ncclshim_init: mutants of a fake NCCL whose
 * hash tables, dynamic symbols, strings or versions are overwritten with random words (a fixed
 * seed, so that every run tries the same files). Each mutant is first loaded by a plain child
 * that does what a program linked to NCCL does: dlopen, dlsym of ncclGetVersion, the call. Where
 * that child survives, ncclshim must too: ncclshim_init (NCCLSHIM_NCCL_LIBRARY naming the
 * mutant) in a child, and every 4th mutant through the probe, must return within the limit,
 * neither killed by a signal nor hung. (glibc's own dlopen crashes on some mutants: those say
 * nothing of ncclshim and are only counted.) */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hardening.h"
#include "ncclshim/ncclshim.h"

enum { MUTANTS = 400, PROBE_EVERY = 4, LIMIT_MS = 20000 };

typedef struct region {
  size_t offset, size;
} region;

/* The sections a mutant overwrites, found through the section header table. */
static size_t find_regions(const unsigned char *bytes, size_t size, region *out) {
  static const char *const names[] = {".gnu.hash", ".hash", ".dynsym", ".dynstr", ".gnu.version"};
  ElfW(Ehdr) eh;
  memcpy(&eh, bytes, sizeof(eh));
  assert_true(eh.e_shoff + (size_t)eh.e_shnum * sizeof(ElfW(Shdr)) <= size);
  const ElfW(Shdr) *sections = (const ElfW(Shdr) *)(bytes + eh.e_shoff);
  const char *strings = (const char *)bytes + sections[eh.e_shstrndx].sh_offset;
  size_t count = 0;
  for (unsigned i = 0; i < eh.e_shnum; i++)
    for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++)
      if (strcmp(strings + sections[i].sh_name, names[n]) == 0 && sections[i].sh_size >= 8)
        out[count++] = (region){sections[i].sh_offset, sections[i].sh_size};
  return count;
}

static uint64_t next(uint64_t *state) { /* xorshift64 */
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

/* 1 to 4 words of one region replaced: random, small, all ones, or a large power of two. */
static void mutate(unsigned char *bytes, const region *regions, size_t count, uint64_t *state) {
  const region *r = &regions[next(state) % count];
  int words = 1 + (int)(next(state) % 4);
  for (int w = 0; w < words; w++) {
    size_t at = (r->offset + next(state) % (r->size - 4)) & ~(size_t)3;
    const uint32_t choices[] = {(uint32_t)next(state), (uint32_t)next(state) & 0xfff, UINT32_MAX,
                                1u << 28};
    uint32_t word = choices[next(state) % 4];
    memcpy(bytes + at, &word, sizeof(word));
  }
}

/* cmocka catches crash signals in the test and goes on: a child must die of them. */
static void default_signals(void) {
  const int crashes[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
  for (size_t i = 0; i < sizeof(crashes) / sizeof(crashes[0]); i++) signal(crashes[i], SIG_DFL);
}

static int plain_load(void *path) {
  default_signals();
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) return 3;
  void *symbol = dlsym(library, "ncclGetVersion");
  if (symbol == NULL) return 4;
  int (*get_version)(int *);
  memcpy(&get_version, &symbol, sizeof(symbol));
  int version = 0;
  return get_version(&version) == 0 ? 0 : 5;
}

static int ncclshim_load(void *path) {
  default_signals();
  setenv("NCCLSHIM_NCCL_LIBRARY", path, 1);
  ncclshim_status status = ncclshim_init();
  /* Whatever the outcome, the table answers. */
  int version = 0;
  ncclshim_table()->ncclGetVersion(&version);
  return status == NCCLSHIM_OK || ncclshim_nccl_message(ncclshim_nccl_default())[0] != '\0' ? 0 : 6;
}

static int probe_load(void *path) {
  setenv("NCCLSHIM_NCCL_LIBRARY", path, 1);
  int null = open("/dev/null", O_WRONLY);
  dup2(null, STDOUT_FILENO);
  dup2(null, STDERR_FILENO);
  const char *argv[12];
  int argc = test_wrapper_words(argv, 8);
  argv[argc++] = getenv("PROBE");
  argv[argc++] = "--json";
  argv[argc] = NULL;
  execv(argv[0], (char **)argv);
  return 127;
}

static void test_mutants(void **state) {
  (void)state;
  char why[256];
  if (!hs_helpers_run(getenv("HELPER"), why, sizeof(why))) skip(); /* qemu-user without binfmt */
  FILE *f = fopen(fake_path("2.28.9"), "rb");
  assert_non_null(f);
  static unsigned char base[1 << 20];
  size_t size = fread(base, 1, sizeof(base), f);
  fclose(f);
  assert_true(size > sizeof(ElfW(Ehdr)) && size < sizeof(base));
  region regions[8];
  size_t count = find_regions(base, size, regions);
  assert_true(count >= 3);
  char *dir = scratch_dir();
  static unsigned char mutant[1 << 20];
  uint64_t seed = 0x6e63636c7368696dULL;
  /* Under valgrind or qemu (ten times slower) the first tenth of the same mutants. */
  const int scale = test_time_scale(), mutants = MUTANTS / scale, limit_ms = LIMIT_MS * scale;
  int plain_died = 0, tried = 0, bad = 0;
  for (int m = 0; m < mutants; m++) {
    memcpy(mutant, base, size);
    mutate(mutant, regions, count, &seed);
    char name[64];
    snprintf(name, sizeof(name), "mutant-%03d/libnccl.so.2", m);
    char *path = join(dir, name);
    *strrchr(path, '/') = '\0';
    make_dirs(path);
    path[strlen(path)] = '/';
    hs_write(path, mutant, size);
    int plain = hs_in_child(plain_load, path, limit_ms);
    /* 127: ld.so's own "Inconsistency detected" assertion ended the plain program. */
    if (plain < 0 || plain >= 127) {
      plain_died++;
      continue;
    }
    tried++;
    int ours = hs_in_child(ncclshim_load, path, limit_ms);
    int probe = m % PROBE_EVERY == 0 ? hs_in_child(probe_load, path, limit_ms) : 0;
    if (ours != 0 || probe < 0 || probe >= 128) {
      print_error("%s: a plain program loads it (exit %d); ncclshim_init %s %d, the probe %s %d\n",
                  path, plain, ours < 0 ? "hung" : "ended", ours, probe < 0 ? "hung" : "ended",
                  probe);
      bad++;
    }
  }
  print_message("%d mutants: %d loaded by a plain program and tried, %d crash glibc's own load\n",
                mutants, tried, plain_died);
  assert_true(tried > mutants / 2);
  assert_int_equal(bad, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mutants),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
