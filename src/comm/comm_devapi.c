/* Which versions meet in a failed device-API call: the loaded NCCL's, and the headers the
 * caller's structs come from (they carry NCCL_API_MAGIC and a version from 2.29). */
#include <stdio.h>
#include <string.h>

#include "comm_internal.h"
#include "ncclshim/comm_query.h"
#include "ncclshim/nccl_functions.h"

const char *ncclshim_devapi_explain(const ncclshim_nccl *nccl, const void *reqs, char *buf,
                                    size_t size) {
  if (buf == NULL || size == 0) return buf;
  char have[16], built[16];
  int loaded = ncclshim_nccl_version(nccl);
  ncclshim_format_version(loaded, have, sizeof(have));
  int n = snprintf(buf, size, "the loaded NCCL is %s", have);
  if (n < 0 || (size_t)n >= size) return buf;
  char *rest = buf + n;
  size_t left = size - (size_t)n;
  if (reqs == NULL) {
    snprintf(rest, left,
             "; device-API structs must come from the loaded release's headers "
             "(2.28.x releases changed them without a version field; 2.29+ structs carry one)");
    return buf;
  }
  struct {
    size_t size;
    unsigned int magic, version;
  } head;
  memcpy(&head, reqs, sizeof(head));
  if (head.magic != NCCL_API_MAGIC) {
    snprintf(rest, left,
             "; the caller's ncclDevCommRequirements carries no size or version (a 2.28 "
             "layout: 2.28.3 and 2.28.7+ differ, so it works only with the 2.28 release whose "
             "headers built it%s)",
             loaded >= NCCLSHIM_NCCL_API_HEADER_VERSION
                 ? "; this release needs NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER "
                   "from 2.29+ headers"
                 : "");
    return buf;
  }
  int version = ncclshim_decode_version((int)head.version, NULL, NULL, NULL);
  ncclshim_format_version(version, built, sizeof(built));
  snprintf(rest, left, "; the caller's ncclDevCommRequirements is %zu bytes from NCCL %s headers%s",
           head.size, version ? built : "(bad version)",
           version > loaded ? ": newer than the library, which NCCL refuses (run with NCCL >= "
                              "the headers' release, or rebuild against the loaded one)"
                            : "");
  return buf;
}

/* The device API's host functions: the rows of the NCCL list with policy DEVICE. */
#define DEVICE_CALL_REQUIRED(name)
#define DEVICE_CALL_OPTIONAL(name)
#define DEVICE_CALL_DEVICE(name) #name,
#define DEVICE_CALL_(name, version, policy, role, returns, n, params) DEVICE_CALL_##policy(name)
static const char *const device_calls[] = {NCCLSHIM_NCCL_FUNCTIONS(DEVICE_CALL_)};

/* 1 when `call` names one of them: the whole name, then nothing or a non-identifier
 * ("ncclDevCommCreate (rank 0)"). */
static int device_api_call(const char *call) {
  size_t length = strspn(call, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
  for (size_t i = 0; i < sizeof(device_calls) / sizeof(device_calls[0]); i++)
    if (strlen(device_calls[i]) == length && strncmp(call, device_calls[i], length) == 0) return 1;
  return 0;
}

void ncs_devapi_hint(ncclshim_nccl *nccl, ncclResult_t result, const char *call, char *buf,
                     size_t size) {
  buf[0] = '\0';
  if (result != ncclInvalidUsage || call == NULL || !device_api_call(call)) return;
  char text[384];
  snprintf(buf, size, "; device API: %s", ncclshim_devapi_explain(nccl, NULL, text, sizeof(text)));
}
