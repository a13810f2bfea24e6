/* A program written against a real nccl.h of 2.32.3 or later, linked against the drop-in
 * alone: it calls ncclAllReduceConfig with a per-collective config and ncclSetEncryption.
 *   fake  (NCCLSHIM_NCCL_LIBRARY names a fake of that release, switched live): both calls
 *         succeed and the fake received each struct as the header's initializer made it
 *   older (whatever NCCL the search finds: the machine's, older than 2.32.3): both calls
 *         answer ncclInvalidArgument and ncclGetLastError says which release brought them;
 *         exit 77 when no NCCL is found or it is 2.32.3 or newer
 * Prints one line per check and PASS or FAIL. */
#include <nccl.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakes/fake_nccl.h"

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
  if (argc != 2 || (strcmp(argv[1], "fake") != 0 && strcmp(argv[1], "older") != 0)) {
    fprintf(stderr, "usage: %s fake|older\n", argv[0]);
    return 2;
  }
  int result = strcmp(argv[1], "fake") == 0 ? on_fake() : on_older();
  if (result != 77) printf("%s\n", result ? "FAIL" : "PASS");
  return result == 77 ? 77 : result ? 1 : 0;
}
