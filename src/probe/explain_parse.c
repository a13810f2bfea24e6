/* Which NCCL trouble an error text names. The texts come from the dynamic loader
 * ("undefined symbol: ncclX", "version `GLIBC_2.34' not found (required by F)", "libnccl.so.2:
 * cannot open shared object file") and from NCCL itself (init.cc: "Mismatched NCCL version
 * detected : rank %d version %d rank %d version %d"). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "explain.h"
#include "ncclshim/ncclshim.h"

#define KIND_NAME_(id, name, explainer) name,
static const char *const kind_names[] = {EXPLAIN_KINDS(KIND_NAME_)};
#undef KIND_NAME_

const char *explain_kind_name(explain_kind kind) {
  return (unsigned)kind < EXPLAIN_KIND_COUNT ? kind_names[kind] : "unknown";
}

static int contains(const char *text, const char *what) { return strstr(text, what) != NULL; }

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The first identifier ncclX or pncclX (X an upper-case letter) standing alone in text. */
static int find_nccl_identifier(const char *text, char *out, size_t size) {
  for (const char *s = text; *s; s++) {
    if (s != text && ident_char(s[-1])) continue;
    const char *name = s[0] == 'p' ? s + 1 : s;
    if (strncmp(name, "nccl", 4) != 0 || !isupper((unsigned char)name[4])) continue;
    size_t n = 0;
    while (ident_char(name[n])) n++;
    if (n >= size) continue;
    snprintf(out, size, "%.*s", (int)n, name);
    return 1;
  }
  return 0;
}

/* "required by FILE)" into out->required_by. */
static void read_required_by(const char *text, explain_parse *out) {
  const char *by = strstr(text, "required by ");
  if (by == NULL) return;
  by += strlen("required by ");
  snprintf(out->required_by, sizeof(out->required_by), "%.*s", (int)strcspn(by, ")\n"), by);
}

/* A version of the C++ runtime (GLIBCXX_3.4.32, CXXABI_1.3.15) that was not found. */
static int cxx_runtime(const char *text, explain_parse *out) {
  const char *v = strstr(text, "GLIBCXX_");
  if (v == NULL) v = strstr(text, "CXXABI_");
  if (v == NULL || !contains(text, "not found")) return 0;
  size_t n = strcspn(v, "' \n)");
  snprintf(out->glibc, sizeof(out->glibc), "%.*s", (int)n, v);
  read_required_by(text, out);
  return 1;
}

/* 1 when text contains one of `words` (NULL-terminated). */
static int contains_any(const char *text, const char *const *words) {
  for (; *words != NULL; words++)
    if (contains(text, *words)) return 1;
  return 0;
}

/* CUDA's own words: its error names, NCCL's "Cuda failure" and "unhandled cuda error" lines.
 * "named symbol not found" is CUDA's text for a missing kernel image or symbol in a module,
 * never a missing NCCL function. */
static const char *const cuda_words[] = {"Cuda failure",
                                         "CUDA error",
                                         "cudaError",
                                         "CUDA_ERROR_",
                                         "unhandled cuda error",
                                         "named symbol not found",
                                         "CUDA driver version is insufficient",
                                         NULL};
/* A name that was not found: the dynamic loader's, dlsym's and other loaders' words. */
static const char *const symbol_words[] = {
    "undefined symbol", "symbol lookup error", "not defined", "could not find symbol",
    "symbol not found", "Symbol not found",    NULL};
/* A library that could not be opened (beside "libnccl" in the text). */
static const char *const open_words[] = {"cannot open shared object",
                                         "No such file",
                                         "not found",
                                         "Unable to load",
                                         "Failed to load",
                                         NULL};

static int in_function_list(const char *name) {
  for (int fn = 0; fn < NCCLSHIM_NCCL_FUNCTION_COUNT; fn++)
    if (strcmp(ncclshim_nccl_function_name(fn), name) == 0) return 1;
  return 0;
}

void explain_classify(const char *text, explain_parse *out) {
  *out = (explain_parse){.kind = EXPLAIN_UNKNOWN};
  if (contains(text, "GLIBC_PRIVATE") && contains(text, "not found")) {
    out->kind = EXPLAIN_GLIBC_PRIVATE;
    snprintf(out->glibc, sizeof(out->glibc), "GLIBC_PRIVATE");
    read_required_by(text, out);
    return;
  }
  if (cxx_runtime(text, out)) {
    out->kind = EXPLAIN_CXX_RUNTIME;
    return;
  }
  const char *g = strstr(text, "GLIBC_");
  if (g && contains(text, "not found")) {
    size_t n = strspn(g + 6, "0123456789.");
    if (n > 0 && n < sizeof(out->glibc) - 7) {
      out->kind = EXPLAIN_GLIBC;
      snprintf(out->glibc, sizeof(out->glibc), "GLIBC_%.*s", (int)n, g + 6);
      read_required_by(text, out);
      return;
    }
  }
  const char *m = strstr(text, "Mismatched NCCL version");
  if (m && sscanf(m, "Mismatched NCCL version detected : rank %d version %d rank %d version %d",
                  &out->ranks[0], &out->versions[0], &out->ranks[1], &out->versions[1]) == 4) {
    out->kind = EXPLAIN_VERSION_MISMATCH;
    for (int i = 0; i < 2; i++)
      out->versions[i] = ncclshim_decode_version(out->versions[i], 0, 0, 0);
    return;
  }
  if (m) {
    out->kind = EXPLAIN_VERSION_MISMATCH;
    return;
  }
  if (contains_any(text, cuda_words)) {
    out->kind = EXPLAIN_CUDA;
    return;
  }
  if (contains_any(text, symbol_words) &&
      find_nccl_identifier(text, out->symbol, sizeof(out->symbol))) {
    out->kind = in_function_list(out->symbol) ? EXPLAIN_UNDEFINED_SYMBOL : EXPLAIN_INTERNAL_SYMBOL;
    return;
  }
  /* NCCL's plugins are libnccl-net.so, libnccl-tuner.so, libnccl-profiler.so, ...: a plugin
   * not found is NCCL's routine INFO line, not NCCL missing. */
  if (contains(text, "libnccl-") && contains_any(text, open_words) &&
      !contains(text, "libnccl.so")) {
    out->kind = EXPLAIN_PLUGIN_ABSENT;
    return;
  }
  if (contains(text, "libnccl.so") && contains_any(text, open_words)) out->kind = EXPLAIN_NOT_FOUND;
}
