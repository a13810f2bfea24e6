/* Loads every real libnccl.so.2 on the machine explicitly and checks what ncclshim makes of
 * it: version, mapped path, capabilities, every function of its release bound, and the
 * library's exported names against ncclshim's list. Exits 77 (skipped) when there is none of
 * this test's architecture.
 * Plain C: it runs on machines without cmocka. Extra paths: NCCLSHIM_REAL_NCCL=a:b. */
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"

static int failures;

#define CHECK(cond, ...)              \
  do {                                \
    if (!(cond)) {                    \
      printf("  FAIL: " __VA_ARGS__); \
      printf("\n");                   \
      failures++;                     \
    }                                 \
  } while (0)

/* The one nccl* export that no header declares, and so no row of the list: NCCL's internal
 * ncclResetDebugInitInternal. Every other export must be a row, the device API's host
 * functions included (all rows with the policy DEVICE: docs/nccl-abi.md, section 7). */
static int internal_export(const char *name) {
  return strcmp(name, "ncclResetDebugInitInternal") == 0;
}

static int in_list(const char *name) {
  for (int fn = 0; fn < NCCLSHIM_NCCL_FUNCTION_COUNT; fn++)
    if (strcmp(ncclshim_nccl_function_name(fn), name) == 0) return 1;
  return 0;
}

/* Every exported nccl* function of the file is in the list, or NCCL's internal one. */
static void check_exports(const char *path) {
  char command[PATH_MAX + 64];
  snprintf(command, sizeof(command), "nm -D --defined-only '%s' 2>/dev/null", path);
  FILE *nm = popen(command, "r");
  char line[512], address[64], type[8], name[256];
  int exported = 0;
  while (nm != NULL && fgets(line, sizeof(line), nm) != NULL) {
    if (sscanf(line, "%63s %7s %255s", address, type, name) != 3 || strncmp(name, "nccl", 4) != 0)
      continue;
    exported++;
    CHECK(in_list(name) || internal_export(name), "%s exports %s, which the list lacks", path,
          name);
  }
  if (nm != NULL) pclose(nm);
  printf("  exports: %d nccl* names checked against the list%s\n", exported,
         exported ? "" : " (nm unavailable: skipped)");
}

static void check_library(const char *file) {
  char resolved[PATH_MAX];
  if (realpath(file, resolved) == NULL) return;
  printf("%s\n", resolved);
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = file;
  ncclshim_nccl *nccl = NULL;
  ncclshim_status status = ncclshim_nccl_open(&options, &nccl);
  printf("  status: %s (%s)\n", ncclshim_status_name(status), ncclshim_nccl_message(nccl));
  CHECK(status == NCCLSHIM_OK, "open failed");
  if (status != NCCLSHIM_OK) return;
  char version[16];
  int packed = ncclshim_nccl_version(nccl);
  printf("  version: %s%s (code %d)\n", ncclshim_format_version(packed, version, sizeof(version)),
         ncclshim_nccl_build(nccl), ncclshim_nccl_version_code(nccl));
  CHECK(packed >= 21800 && packed < 30000, "version %d outside 2.18 .. 2.x", packed);
  CHECK(strcmp(ncclshim_nccl_path(nccl), resolved) == 0, "mapped %s", ncclshim_nccl_path(nccl));
  CHECK(strncmp(ncclshim_nccl_build(nccl), "+cuda", 5) == 0, "build tag '%s'",
        ncclshim_nccl_build(nccl));

  int bound = 0;
  for (int fn = 0; fn < NCCLSHIM_NCCL_FUNCTION_COUNT; fn++) {
    int expected = ncclshim_nccl_function_version(fn) <= packed;
    bound += ncclshim_nccl_has_function(nccl, fn);
    CHECK(ncclshim_nccl_has_function(nccl, fn) == expected, "%s: %s",
          ncclshim_nccl_function_name(fn),
          expected ? "missing although its version says it exists" : "present before its version");
  }
  printf("  functions bound: %d of %d in the list\n", bound, NCCLSHIM_NCCL_FUNCTION_COUNT);
  printf("  capabilities:");
  for (int c = 0; c < NCCLSHIM_CAPABILITY_COUNT; c++)
    if (ncclshim_nccl_has(nccl, c)) printf(" %s", ncclshim_capability_name(c));
  printf("\n");
  CHECK(ncclshim_nccl_has(nccl, NCCLSHIM_CAP_SYMMETRIC_MEMORY) == (packed >= 22800),
        "symmetric-memory does not follow the 2.28 gate");

  /* Calls that need no GPU reach the real library. */
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(nccl);
  int code = 0;
  CHECK(t->ncclGetVersion(&code) == ncclSuccess && code == ncclshim_nccl_version_code(nccl),
        "ncclGetVersion through the table");
  CHECK(strcmp(t->ncclGetErrorString(ncclInvalidArgument),
               ncclshim_nccl_result_string(ncclInvalidArgument)) == 0,
        "ncclGetErrorString(4) = '%s'", t->ncclGetErrorString(ncclInvalidArgument));
  CHECK(t->ncclGetVersion(NULL) == ncclInvalidArgument, "ncclGetVersion(NULL)");
  check_exports(resolved);
  ncclshim_nccl_close(nccl);
}

int main(void) {
  static const char *const patterns[] = {
      "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
      "/usr/lib/aarch64-linux-gnu/libnccl.so.2",
      "/usr/lib64/libnccl.so.2",
      "/usr/local/cuda*/lib*/libnccl.so.2",
      "/usr/local/cuda*/targets/*/lib/libnccl.so.2",
      "/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2"};
  char seen[16][PATH_MAX];
  int count = 0;
  glob_t g;
  for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
    if (glob(patterns[p], 0, NULL, &g) != 0) continue;
    for (size_t i = 0; i < g.gl_pathc && count < 16; i++) {
      char resolved[PATH_MAX];
      if (realpath(g.gl_pathv[i], resolved) == NULL) continue;
      int duplicate = 0;
      for (int s = 0; s < count; s++) duplicate |= strcmp(seen[s], resolved) == 0;
      if (!duplicate) strcpy(seen[count++], resolved);
    }
    globfree(&g);
  }
  const char *extra = getenv("NCCLSHIM_REAL_NCCL");
  char *list = extra ? strdup(extra) : NULL;
  for (char *item = list ? strtok(list, ":") : NULL; item && count < 16; item = strtok(NULL, ":"))
    if (realpath(item, seen[count]) != NULL) count++;
  free(list);
  if (count == 0) {
    printf("no real libnccl.so.2 on this machine: skipped\n");
    return 77;
  }
  /* A library of another architecture cannot be loaded here (the machine's x86-64 NCCL under
   * an aarch64 build run by qemu-user): named and left out. */
  int checked = 0;
  for (int i = 0; i < count; i++) {
    unsigned machine = elf_machine(seen[i]);
    if (machine != own_machine()) {
      printf("%s: for %s", seen[i],
             machine == 0 ? "no architecture (not ELF)" : machine_name(machine));
      printf(", this test for %s: skipped\n", machine_name(own_machine()));
      continue;
    }
    check_library(seen[i]);
    checked++;
  }
  if (checked == 0) {
    printf("no real libnccl.so.2 of this test's architecture on this machine: skipped\n");
    return 77;
  }
  printf("%s: %d libraries, %d failures\n", failures ? "FAIL" : "PASS", checked, failures);
  return failures ? 1 : 0;
}
