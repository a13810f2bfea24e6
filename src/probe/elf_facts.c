/* A library's facts from its section headers, read through the loader's one ELF reader
 * (loader/elf_file.c: every offset checked against the file): the doctor reads files that may
 * be truncated, foreign or hostile, and runs none of them. */
#include "ncclshim/diag.h"
#include "elf_facts.h"

#include "loader/elf_banner.h"

#include "parse_version.h"

#include "ncclshim/dropin_marker.h"

#include <elf.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(elf_facts *f, const char *why) {
  snprintf(f->reason, sizeof(f->reason), "%s", why);
  f->ok = 0;
  return 0;
}

static void read_verneed(elf_facts *f, const ElfW(Shdr) * s, const ElfW(Shdr) * strtab) {
  const ncshl_elf_file *file = &f->file;
  unsigned long long at = s->sh_offset;
  for (unsigned n = 0; n < s->sh_info && n < 256; n++) {
    ElfW(Verneed) vn;
    if (!ncshl_elf_inside(file, at, sizeof(vn))) return;
    memcpy(&vn, file->bytes + at, sizeof(vn));
    unsigned long long aux_at = at + vn.vn_aux;
    for (unsigned a = 0; a < vn.vn_cnt && a < 256; a++) {
      ElfW(Vernaux) va;
      if (!ncshl_elf_inside(file, aux_at, sizeof(va))) return;
      memcpy(&va, file->bytes + aux_at, sizeof(va));
      const char *name = ncshl_elf_string(file, strtab, va.vna_name);
      int packed = name ? probe_parse_glibc(name) : 0;
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

static void read_soname(elf_facts *f, const ElfW(Shdr) * s, const ElfW(Shdr) * strtab) {
  for (unsigned long long at = s->sh_offset; at + sizeof(ElfW(Dyn)) <= s->sh_offset + s->sh_size;
       at += sizeof(ElfW(Dyn))) {
    ElfW(Dyn) d;
    memcpy(&d, f->file.bytes + at, sizeof(d));
    if (d.d_tag == DT_NULL) return;
    const char *name =
        d.d_tag == DT_SONAME ? ncshl_elf_string(&f->file, strtab, d.d_un.d_val) : NULL;
    if (name) snprintf(f->soname, sizeof(f->soname), "%s", name);
  }
}

/* Keeps each function's name; notes the drop-in's marker, a variable. */
static int keep_function(void *context, const char *name, int is_function) {
  elf_facts *f = context;
  if (strcmp(name, NCCLSHIM_DROPIN_MARKER_NAME) == 0) f->is_dropin = 1;
  if (!is_function) return 0;
  const char **grown = realloc(f->functions, (f->function_count + 1) * sizeof(*grown));
  if (grown == NULL) { /* a short list would answer "lacks" wrongly: the read fails */
    snprintf(f->reason, sizeof(f->reason), "out of memory");
    return 1;
  }
  f->functions = grown;
  f->functions[f->function_count++] = name;
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int read_sections(elf_facts *f) {
  int has_dynsym = 0;
  for (unsigned i = 0; i < f->file.shnum; i++) {
    ElfW(Shdr) s, strtab;
    ncshl_elf_section(&f->file, i, &s);
    if (s.sh_type == SHT_NOBITS || !ncshl_elf_inside(&f->file, s.sh_offset, s.sh_size)) continue;
    int linked = ncshl_elf_section(&f->file, s.sh_link, &strtab) && strtab.sh_type == SHT_STRTAB;
    if (s.sh_type == SHT_DYNSYM) {
      has_dynsym = 1;
    } else if (s.sh_type == SHT_GNU_verneed && linked) {
      read_verneed(f, &s, &strtab);
    } else if (s.sh_type == SHT_DYNAMIC && linked) {
      read_soname(f, &s, &strtab);
    }
  }
  if (f->file.shnum == 0) return fail(f, "no readable section headers (stripped of them)");
  /* "NCCL version 2.28.9+cuda13.0", as the library's ncclshim_nccl_build reads it */
  f->banner_version = ncshl_elf_banner(&f->file, "NCCL version ", f->build, sizeof(f->build));
  if (!has_dynsym) return fail(f, "no dynamic symbol table");
  if (ncshl_elf_each_export(&f->file, keep_function, f, f->reason, sizeof(f->reason)) != NCSHL_OK)
    return 0;
  if (f->reason[0] != '\0') return 0;
  if (f->function_count > 1) /* qsort of a NULL array is undefined even when empty */
    qsort(f->functions, f->function_count, sizeof(f->functions[0]), by_name);
  f->ok = 1;
  return 1;
}

int elf_facts_read(const char *path, elf_facts *f) {
  *f = (elf_facts){0};
  if (ncshl_elf_open(path, &f->file, f->reason, sizeof(f->reason)) != NCSHL_OK) return 0;
  return read_sections(f);
}

void elf_facts_close(elf_facts *f) {
  ncshl_elf_close(&f->file);
  free(f->functions);
  f->functions = NULL;
  f->function_count = 0;
}

int elf_facts_defines(const elf_facts *f, const char *name) {
  return f->ok && f->function_count > 0 &&
         bsearch(&name, f->functions, f->function_count, sizeof(f->functions[0]), by_name) != NULL;
}

int elf_facts_host_glibc(void) {
  char name[32];
  snprintf(name, sizeof(name), "GLIBC_%s", gnu_get_libc_version());
  return probe_parse_glibc(name);
}
