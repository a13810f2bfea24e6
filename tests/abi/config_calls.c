/* A program written against a real nccl.h of 2.32.3 or later, linked against the drop-in
 * alone: it calls ncclAllReduceConfig with a per-collective config and ncclSetEncryption.
 *   fake  (NCCLSHIM_NCCL_LIBRARY names a fake of that release, switched live): both calls
 *         succeed and the fake received each struct as the header's initializer made it
 *   recorded (the fake, with the drop-in's recorder on: NCCLSHIM_RECORD, NCCLSHIM_RECORD_DIR
 *         an empty directory): a ...Config collective is numbered among the plain ones on
 *         its communicator, its dump line carries the config's algorithm and profiler tag
 *   older (whatever NCCL the search finds: the machine's, older than 2.32.3): both calls
 *         answer ncclInvalidArgument and ncclGetLastError says which release brought them;
 *         exit 77 when no NCCL is found or it is 2.32.3 or newer
 * Prints one line per check and PASS or FAIL. */
#include <nccl.h>

#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakes/fake_nccl.h"

static int failures;

static void expect(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  failures += !ok;
}

static void *fake_symbol(void *fake, const char *name) {
  void *symbol = fake ? dlsym(fake, name) : NULL;
  if (symbol == NULL) {
    printf("FAIL the fake lacks %s\n", name);
    exit(1);
  }
  return symbol;
}
#define FAKE_FN(fake, name, type) ((type)(uintptr_t)fake_symbol((fake), (name)))

static int on_fake(void) {
  const char *path = getenv("NCCLSHIM_NCCL_LIBRARY");
  int version = 0;
  expect(ncclGetVersion(&version) == ncclSuccess && version == NCCL_VERSION_CODE,
         "the fake answers this header's version");
  void *fake = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  FAKE_FN(fake, "fake_nccl_set_live", fake_nccl_int_fn)(1);

  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.algSelection = "ring";
  config.userProfilerTag = 0xfeedULL;
  float buf[4] = {0};
  expect(ncclAllReduceConfig(buf, buf, 4, ncclFloat, ncclSum, NULL, NULL, &config) == ncclSuccess,
         "ncclAllReduceConfig succeeds");
  const fake_nccl_coll_config *seen =
      FAKE_FN(fake, "fake_nccl_last_coll_config", fake_nccl_coll_config_fn)();
  expect(seen->given && seen->size == sizeof(ncclCollConfig_t) && seen->size == 72,
         "the config arrived with the header's size, 72");
  expect(seen->magic == NCCL_API_MAGIC && seen->version == NCCL_VERSION_CODE,
         "with NCCL_API_MAGIC and the header's version");
  expect(strcmp(seen->alg, "ring") == 0 && seen->tag == 0xfeedULL,
         "with its algorithm and profiler tag");

  ncclEncryptionConfig_t encryption = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  encryption.mode = NCCL_ENCRYPTION_MODE_PSK;
  encryption.psk = "key";
  expect(ncclSetEncryption(&encryption) == ncclSuccess, "ncclSetEncryption succeeds");
  const fake_nccl_encryption *enc =
      FAKE_FN(fake, "fake_nccl_last_encryption", fake_nccl_encryption_fn)();
  expect(enc->size == sizeof(ncclEncryptionConfig_t) && enc->magic == NCCL_API_MAGIC &&
             enc->version == NCCL_VERSION_CODE && enc->mode == NCCL_ENCRYPTION_MODE_PSK &&
             strcmp(enc->psk, "key") == 0,
         "the encryption config arrived as made");
  return failures;
}

/* The dump's line for `function`, in the one dump file of `dir` (static storage; "" if none). */
static const char *dump_line(const char *dir, const char *function) {
  static char text[1 << 16], line[4096];
  DIR *d = opendir(dir);
  struct dirent *entry;
  char path[4096] = "";
  while (d != NULL && (entry = readdir(d)) != NULL)
    if (strstr(entry->d_name, ".jsonl") != NULL)
      snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name);
  if (d != NULL) closedir(d);
  FILE *f = path[0] ? fopen(path, "r") : NULL;
  size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
  if (f) fclose(f);
  text[n] = '\0';
  char needle[128];
  snprintf(needle, sizeof(needle), "\"function\":\"%s\"", function);
  const char *at = strstr(text, needle);
  line[0] = '\0';
  if (at != NULL) {
    const char *start = at, *end = strchr(at, '\n');
    while (start > text && start[-1] != '\n') start--;
    size_t len = end ? (size_t)(end - start) : strlen(start);
    snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) - 1 ? len : sizeof(line) - 1),
             start);
  }
  return line;
}

static int on_fake_recorded(void) {
  const char *path = getenv("NCCLSHIM_NCCL_LIBRARY"), *dir = getenv("NCCLSHIM_RECORD_DIR");
  void *fake = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  int version = 0;
  ncclGetVersion(&version); /* loads the fake */
  fake = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  FAKE_FN(fake, "fake_nccl_set_live", fake_nccl_int_fn)(1);
  ncclUniqueId id;
  memset(&id, 7, sizeof(id));
  ncclComm_t comm = NULL;
  expect(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess && comm != NULL, "a communicator");
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.algSelection = "allreduce=ring,allgather=nvls"; /* longer than the record keeps */
  config.userProfilerTag = 4242;
  expect(ncclAllReduce(NULL, NULL, 1, ncclFloat, ncclSum, comm, NULL) == ncclSuccess, "seq 1");
  expect(ncclAllReduceConfig(NULL, NULL, 2, ncclFloat, ncclSum, comm, NULL, &config) == ncclSuccess,
         "seq 2, with a config");
  expect(ncclBroadcastConfig(NULL, NULL, 3, ncclFloat, 0, comm, NULL, NULL) == ncclSuccess,
         "seq 3, config NULL");
  /* A failing call dumps the ring. */
  FAKE_FN(fake, "fake_nccl_inject", fake_nccl_inject_fn)("ncclAllReduce", ncclSystemError, 1);
  expect(ncclAllReduce(NULL, NULL, 4, ncclFloat, ncclSum, comm, NULL) == ncclSystemError,
         "seq 4 fails: a dump");
  const char *line = dump_line(dir, "ncclAllReduceConfig");
  printf("     %s\n", line);
  expect(strstr(line, "\"seq\":2,") != NULL && strstr(line, "\"coll\":2,") != NULL,
         "the ...Config call is numbered among the plain ones");
  expect(strstr(line, "\"count\":2,") != NULL && strstr(line, "\"op_name\":\"ncclSum\"") != NULL,
         "with the plain call's fields");
  expect(strstr(line, "\"alg\":\"allreduce=ring,\",\"profiler_tag\":4242") != NULL,
         "and the config's algorithm (its first 15 bytes) and profiler tag");
  line = dump_line(dir, "ncclBroadcastConfig");
  expect(strstr(line, "\"seq\":3,") != NULL && strstr(line, "\"alg\"") == NULL,
         "a NULL config: numbered, no config fields");
  return failures;
}

static int on_older(void) {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) {
    printf("no NCCL found: %s\n", ncclGetLastError(NULL));
    return 77;
  }
  printf("NCCL %d found\n", version);
  if (version >= 23203) return 77;
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  expect(ncclAllReduceConfig(NULL, NULL, 4, ncclFloat, ncclSum, NULL, NULL, &config) ==
             ncclInvalidArgument,
         "ncclAllReduceConfig answers ncclInvalidArgument");
  const char *why = ncclGetLastError(NULL);
  printf("     %s\n", why);
  expect(strstr(why, "ncclAllReduceConfig needs NCCL >= 2.32.3") != NULL,
         "ncclGetLastError names the release that brought it");
  ncclEncryptionConfig_t encryption = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  expect(ncclSetEncryption(&encryption) == ncclInvalidArgument,
         "ncclSetEncryption answers ncclInvalidArgument");
  expect(strstr(ncclGetLastError(NULL), "ncclSetEncryption needs NCCL >= 2.32.3") != NULL,
         "and says why");
  return failures;
}

int main(int argc, char **argv) {
  const char *mode = argc == 2 ? argv[1] : "";
  int result = strcmp(mode, "fake") == 0       ? on_fake()
               : strcmp(mode, "recorded") == 0 ? on_fake_recorded()
               : strcmp(mode, "older") == 0    ? on_older()
                                               : -1;
  if (result < 0) {
    fprintf(stderr, "usage: %s fake|recorded|older\n", argv[0]);
    return 2;
  }
  if (result != 77) printf("%s\n", result ? "FAIL" : "PASS");
  return result == 77 ? 77 : result ? 1 : 0;
}
