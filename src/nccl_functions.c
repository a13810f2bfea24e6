/* Facts about the rows of the function list and the capabilities built on them. */
#include <stdio.h>
#include <string.h>

#include "nccl_handle.h"

#define NAME_(name, version, policy, returns, n, params) #name,
#define VERSION_(name, version, policy, returns, n, params) version,
#define REQUIRED_(name, version, policy, returns, n, params) NCCLSHIM_IS_##policy,
#define NCCLSHIM_IS_REQUIRED 1
#define NCCLSHIM_IS_OPTIONAL 0
static const char *const function_names[] = {NCCLSHIM_NCCL_FUNCTIONS(NAME_)};
static const int function_versions[] = {NCCLSHIM_NCCL_FUNCTIONS(VERSION_)};
static const unsigned char function_required[] = {NCCLSHIM_NCCL_FUNCTIONS(REQUIRED_)};

const char *ncclshim_nccl_function_name(enum ncclshim_nccl_function fn) {
  return (unsigned)fn < NCCLSHIM_NCCL_FUNCTION_COUNT ? function_names[fn] : "(unknown function)";
}

int ncclshim_nccl_function_version(enum ncclshim_nccl_function fn) {
  return (unsigned)fn < NCCLSHIM_NCCL_FUNCTION_COUNT ? function_versions[fn] : 0;
}

int ncclshim_nccl_function_required(enum ncclshim_nccl_function fn) {
  return (unsigned)fn < NCCLSHIM_NCCL_FUNCTION_COUNT ? function_required[fn] : 0;
}

typedef struct capability {
  const char *name;
  int version;
  enum ncclshim_nccl_function needs[3];
} capability;

#define CAPABILITY_(id, name, version, f1, f2, f3) \
  {name, version, {NCCLSHIM_FN_##f1, NCCLSHIM_FN_##f2, NCCLSHIM_FN_##f3}},
static const capability capabilities[] = {NCCLSHIM_CAPABILITIES(CAPABILITY_)};

const char *ncclshim_capability_name(ncclshim_capability cap) {
  return (unsigned)cap < NCCLSHIM_CAPABILITY_COUNT ? capabilities[cap].name : NULL;
}

int ncclshim_capability_version(ncclshim_capability cap) {
  return (unsigned)cap < NCCLSHIM_CAPABILITY_COUNT ? capabilities[cap].version : 0;
}

int ncclshim_capability_from_name(const char *name) {
  for (int i = 0; name != NULL && i < NCCLSHIM_CAPABILITY_COUNT; i++)
    if (strcmp(capabilities[i].name, name) == 0) return i;
  return -1;
}

uint64_t ncclshim_compute_capabilities(const ncclshim_nccl *nccl) {
  uint64_t bits = 0;
  if (nccl->status != NCCLSHIM_OK) return 0;
  for (int i = 0; i < NCCLSHIM_CAPABILITY_COUNT; i++) {
    const capability *c = &capabilities[i];
    if (nccl->version >= c->version && nccl->present[c->needs[0]] && nccl->present[c->needs[1]] &&
        nccl->present[c->needs[2]])
      bits |= NCCLSHIM_CAP_BIT(i);
  }
  return bits;
}

const char *ncclshim_nccl_capability_reason(const ncclshim_nccl *nccl, ncclshim_capability cap,
                                            char *buf, size_t size) {
  if (size == 0) return buf;
  buf[0] = '\0';
  if ((unsigned)cap >= NCCLSHIM_CAPABILITY_COUNT) {
    snprintf(buf, size, "unknown capability %d", (int)cap);
    return buf;
  }
  const capability *c = &capabilities[cap];
  char need[16], have[16];
  if (nccl == NULL || nccl->status != NCCLSHIM_OK) {
    snprintf(buf, size, "no NCCL is loaded");
  } else if (nccl->version < c->version) {
    snprintf(buf, size, "needs NCCL >= %s; loaded %s",
             ncclshim_format_version(c->version, need, sizeof(need)),
             ncclshim_format_version(nccl->version, have, sizeof(have)));
  } else {
    for (int i = 0; i < 3; i++) {
      if (!nccl->present[c->needs[i]]) {
        snprintf(buf, size, "the library lacks %s", function_names[c->needs[i]]);
        break;
      }
    }
  }
  return buf;
}
