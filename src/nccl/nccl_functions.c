/* Facts about the rows of the function list and the capabilities built on them. */
#include <stdio.h>
#include <string.h>

#include "ncclshim/diag.h"
#include "nccl_handle.h"
#include "ncclshim/pp.h"

#define NAME_(name, version, policy, role, returns, n, params) #name,
#define VERSION_(name, version, policy, role, returns, n, params) version,
#define REQUIRED_(name, version, policy, role, returns, n, params) NCCLSHIM_IS_##policy,
#define NCCLSHIM_IS_REQUIRED 1
#define NCCLSHIM_IS_OPTIONAL 0
#define NCCLSHIM_IS_DEVICE 0
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

enum { MAX_NEEDS = 6 };
typedef struct capability {
  const char *name;
  int version;
  int count;
  enum ncclshim_nccl_function needs[MAX_NEEDS];
} capability;

/* A row's functions as list indexes, and how many there are (1 to MAX_NEEDS). */
#define COUNT_(...) COUNT_N_(__VA_ARGS__, 6, 5, 4, 3, 2, 1, 0)
#define COUNT_N_(a, b, c, d, e, f, n, ...) n
#define NEEDS_(...) NCCLSHIM_PP_APPLY(NEEDS_N_, (COUNT_(__VA_ARGS__), __VA_ARGS__))
#define NEEDS_N_(n, ...) NEEDS_CAT_(NEEDS_, n)(__VA_ARGS__)
#define NEEDS_CAT_(a, n) a##n
#define NEEDS_1(a) NCCLSHIM_FN_##a
#define NEEDS_2(a, ...) NCCLSHIM_FN_##a, NEEDS_1(__VA_ARGS__)
#define NEEDS_3(a, ...) NCCLSHIM_FN_##a, NEEDS_2(__VA_ARGS__)
#define NEEDS_4(a, ...) NCCLSHIM_FN_##a, NEEDS_3(__VA_ARGS__)
#define NEEDS_5(a, ...) NCCLSHIM_FN_##a, NEEDS_4(__VA_ARGS__)
#define NEEDS_6(a, ...) NCCLSHIM_FN_##a, NEEDS_5(__VA_ARGS__)

#define CAPABILITY_(id, name, version, ...) \
  {name, version, COUNT_(__VA_ARGS__), {NEEDS_(__VA_ARGS__)}},
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

uint64_t ncs_compute_capabilities(const ncclshim_nccl *nccl) {
  uint64_t bits = 0;
  if (nccl->core.status != NCCLSHIM_OK) return 0;
  for (int i = 0; i < NCCLSHIM_CAPABILITY_COUNT; i++) {
    const capability *c = &capabilities[i];
    int present = nccl->version >= c->version;
    for (int j = 0; present && j < c->count; j++) present = nccl->present[c->needs[j]];
    if (present) bits |= NCCLSHIM_CAP_BIT(i);
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
  if (nccl == NULL || nccl->core.status != NCCLSHIM_OK) {
    snprintf(buf, size, "no NCCL is loaded");
  } else if (nccl->version < c->version) {
    snprintf(buf, size, "needs NCCL >= %s; loaded %s",
             ncclshim_format_version(c->version, need, sizeof(need)),
             ncclshim_format_version(nccl->version, have, sizeof(have)));
  } else {
    for (int i = 0; i < c->count; i++) {
      if (!nccl->present[c->needs[i]]) {
        snprintf(buf, size, "the library lacks %s", function_names[c->needs[i]]);
        break;
      }
    }
  }
  return buf;
}
