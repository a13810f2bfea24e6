/* The variables ncclshim reads and the search's handling of the paths in them. The input is
 * up to seven lines: an override path, NCCL_HOME, CONDA_PREFIX, CUDA_HOME, VIRTUAL_ENV,
 * NCCLSHIM_DEBUG, and an explicit path (a missing line leaves the variable unset). To stay
 * fast and free of side effects every absolute path is moved under a scratch directory of
 * hostile files (no ELF file among them, so nothing is ever dlopen'ed) and ".." is
 * neutralised; relative values are kept as they are (the current directory is that scratch
 * directory). Checked: the well-known places (absolute, distinct, bounded), the debug switch,
 * and the search's outcome (an override is used alone; relative ones are refused). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader/search.h"
#include "fuzz.h"

void ncs_nccl_places(ncshl_list *dirs);
int ncs_debug_enabled(void);

static char scratch[64];
static const char *const names[] = {"FUZZ_NCCL_LIBRARY", "NCCL_HOME",   "CONDA_PREFIX",
                                    "CUDA_HOME",         "VIRTUAL_ENV", "NCCLSHIM_DEBUG"};
enum { FIELDS = 7 };
#define SONAME "libncclshim-fuzz.so.0"

static void make(const char *sub, const char *kind) {
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", scratch, sub);
  char *slash = strrchr(path, '/');
  *slash = '\0';
  for (char *p = path + strlen(scratch) + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  mkdir(path, 0755);
  *slash = '/';
  FILE *f;
  if (strcmp(kind, "text") == 0 && (f = fopen(path, "w")) != NULL) {
    fputs("INPUT(" SONAME ")\n", f);
    fclose(f);
  } else if (strcmp(kind, "empty") == 0 && (f = fopen(path, "w")) != NULL) {
    fclose(f);
  } else if (strcmp(kind, "dir") == 0) {
    mkdir(path, 0755);
  } else if (strcmp(kind, "loop") == 0) {
    if (symlink(path, path) != 0) perror(path);
  } else if (strcmp(kind, "fifo") == 0) {
    mkfifo(path, 0644);
  }
}

/* This harness works in its scratch directory: paths it was given relative to the directory
 * it started in (corpus directories, -artifact_prefix=, -dict=) are made absolute first
 * (libFuzzer reads its arguments after this function). */
static void absolute_arguments(int argc, char **argv) {
  static const char *const flags[] = {"-artifact_prefix=", "-dict=", "-exact_artifact_path="};
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == NULL) abort();
  for (int i = 1; i < argc; i++) {
    size_t skip = 0;
    for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++)
      if (strncmp(argv[i], flags[f], strlen(flags[f])) == 0) skip = strlen(flags[f]);
    if ((argv[i][0] == '-' && skip == 0) || argv[i][skip] == '/' || argv[i][skip] == '\0') continue;
    size_t length = strlen(argv[i]) + strlen(cwd) + 2;
    char *path = malloc(length);
    if (path == NULL) abort();
    snprintf(path, length, "%.*s%s/%s", (int)skip, argv[i], cwd, argv[i] + skip);
    argv[i] = path;
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  absolute_arguments(*argc, *argv);
  snprintf(scratch, sizeof(scratch), "/tmp/ncclshim-fuzz-env-XXXXXX");
  if (mkdtemp(scratch) == NULL || chdir(scratch) != 0) abort();
  make("lib/" SONAME, "text");
  make("lib64/" SONAME, "empty");
  make("a/lib/" SONAME, "dir");
  make("b/lib/" SONAME, "loop");
  make("c/lib/" SONAME, "fifo");
  make("v/lib/python3.12/site-packages/nvidia/nccl/lib/" SONAME, "text");
  make("v/lib/python3.9/site-packages/nvidia/nccl/lib/" SONAME, "fifo");
  make(SONAME, "text");
  return 0;
}

/* The value with an absolute path moved under the scratch directory and every ".." made
 * harmless (relative values are relative to the scratch directory). malloc'd. */
static char *contain(const char *value) {
  size_t length = strlen(scratch) + strlen(value) + 1;
  char *path = malloc(length);
  if (path == NULL) abort();
  snprintf(path, length, "%s%s", value[0] == '/' ? scratch : "", value);
  for (char *p = strstr(path, ".."); p != NULL; p = strstr(p, "..")) p[0] = p[1] = '_';
  return path;
}

static ncshl_decision refuse(void *context, void *handle, const char *path, char *reason,
                             size_t size) {
  (void)context;
  (void)handle;
  (void)path;
  snprintf(reason, size, "refused by the harness");
  return (ncshl_decision){1, NULL};
}

static int count_attempt(void *context, const ncshl_attempt *attempt) {
  (void)attempt;
  ++*(size_t *)context;
  return 0;
}

static void check_places(void) {
  ncshl_list places = {0};
  ncs_nccl_places(&places);
  FUZZ_CHECK(!places.out_of_memory, "no list");
  size_t count = places.count;
  for (size_t i = 0; i < count; i++) {
    FUZZ_CHECK(places.items[i].path[0] == '/', "relative place %s", places.items[i].path);
    for (size_t j = 0; j < i; j++)
      FUZZ_CHECK(strcmp(places.items[j].path, places.items[i].path) != 0, "twice: %s",
                 places.items[i].path);
  }
  FUZZ_CHECK(count < 32, "%zu places", count);
  ncshl_list_free(&places);
}

static void check_search(const char *explicit_path, const char *override) {
  static const ncshl_step_spec steps[] = {{NCSHL_STEP_EXPLICIT, NULL},
                                          {NCSHL_STEP_ENVIRONMENT, NULL},
                                          {NCSHL_STEP_PRELOADED, NULL},
                                          {NCSHL_STEP_SYSTEM, NULL},
                                          {NCSHL_STEP_WELL_KNOWN, ncs_nccl_places}};
  size_t attempts = 0;
  ncshl_search search = {.steps = steps,
                         .step_count = sizeof(steps) / sizeof(steps[0]),
                         .explicit_path = explicit_path,
                         .env_var = names[0],
                         .soname = SONAME,
                         .accept = refuse,
                         .note = count_attempt,
                         .context = &attempts};
  ncshl_found found;
  char summary[512];
  memset(summary, 'x', sizeof(summary));
  ncshl_outcome outcome = ncshl_search_run(&search, &found, summary, sizeof(summary)).outcome;
  FUZZ_CHECK(outcome != NCSHL_OK && found.handle == NULL, "something was accepted");
  FUZZ_CHECK(memchr(summary, '\0', sizeof(summary)) != NULL, "summary not terminated");
  const char *used = explicit_path ? explicit_path : override && override[0] ? override : NULL;
  if (used != NULL) {
    FUZZ_CHECK(attempts == 1, "an override was not used alone (%zu attempts)", attempts);
    if (explicit_path == NULL && used[0] != '/')
      FUZZ_CHECK(outcome == NCSHL_BAD_REQUEST, "relative override: outcome %d", outcome);
    if (explicit_path != NULL && used[0] == '\0')
      FUZZ_CHECK(outcome == NCSHL_BAD_REQUEST, "empty path: outcome %d", outcome);
  } else {
    FUZZ_CHECK(attempts >= 2, "the plain search tried %zu places", attempts);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_string(data, size);
  char *field[FIELDS] = {0};
  char *line = text;
  for (int i = 0; i < FIELDS && line != NULL; i++) {
    char *end = strchr(line, '\n');
    if (end) *end = '\0';
    field[i] = contain(line);
    line = end ? end + 1 : NULL;
  }
  for (int i = 0; i < 6; i++) {
    if (field[i] != NULL)
      setenv(names[i], field[i], 1);
    else
      unsetenv(names[i]);
  }
  check_places();
  const char *debug = field[5];
  FUZZ_CHECK(ncs_debug_enabled() == (debug && debug[0] && strcmp(debug, "0") != 0), "debug switch");
  check_search(NULL, field[0]);
  if (field[6] != NULL) check_search(field[6], NULL);
  for (int i = 0; i < FIELDS; i++) free(field[i]);
  free(text);
  return 0;
}
