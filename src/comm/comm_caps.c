/* What one communicator can really do: a trial window registration, cached, and what
 * ncclCommQueryProperties reports; and which versions meet in a failed device-API call. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "comm_internal.h"
#include "ncclshim/comm_query.h"
#include "ncclshim/symmem.h"

#define API_MAGIC 0xcafebeefu /* NCCL_API_MAGIC, which 2.29+ structs carry after their size */
#define PROPS_NEWEST 22907    /* the newest ncclCommProperties layout written below */

/* ncclCommProperties_t of 2.29.4+ (2.30.7 has the same); 2.29.2 and 2.29.3 stop at ginType
 * and NCCL picks the layout by `version`. */
struct comm_properties {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int rank, nRanks, cudaDev, nvmlDev;
  bool deviceApiSupport, multimemSupport;
  int ginType;
  int nLsaTeams;
  bool hostRmaSupport;
  int railedGinType;
};

#define CAP_NAME_(id, name) name,
static const char *const cap_names[] = {NCCLSHIM_COMM_CAPABILITIES(CAP_NAME_)};

const char *ncclshim_comm_capability_name(ncclshim_comm_capability cap) {
  return (unsigned)cap < NCCLSHIM_COMM_CAPABILITY_COUNT ? cap_names[cap] : NULL;
}

int ncclshim_comm_capability_from_name(const char *name) {
  for (int i = 0; name != NULL && i < NCCLSHIM_COMM_CAPABILITY_COUNT; i++)
    if (strcmp(cap_names[i], name) == 0) return i;
  return -1;
}

const char *ncclshim_gin_type_name(int gin_type) {
  switch (gin_type) {
  case 0:
    return "none";
  case 2:
    return "proxy";
  case 3:
    return "gdaki";
  default:
    return "unknown";
  }
}

void ncclshim_comm_note_windows(ncclshim_comm *comm, int registered) {
  atomic_store(&comm->windows, registered ? 1 : 2);
}

ncclshim_status ncclshim_comm_query_facts(ncclshim_comm *comm, ncclshim_comm_facts *facts) {
  static const char who[] = "ncclshim_comm_query_facts";
  if (comm == NULL || facts == NULL || facts->size < sizeof(*facts))
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: %s", who,
                         comm == NULL    ? "comm is NULL"
                         : facts == NULL ? "facts is NULL"
                                         : "facts->size is too small (NCCLSHIM_COMM_FACTS_INIT)");
  ncclComm_t raw = ncclshim_comm_raw(comm);
  if (raw == NULL)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: the communicator is %s, not ready", who,
                         ncclshim_comm_state_name(ncclshim_comm_state_of(comm)));
  int loaded = ncclshim_nccl_version(comm->nccl);
  if (!ncclshim_nccl_has_function(comm->nccl, NCCLSHIM_FN_ncclCommQueryProperties)) {
    char have[16];
    return ncclshim_fail(NCCLSHIM_UNAVAILABLE,
                         "%s: ncclCommQueryProperties needs NCCL >= 2.29.2; the loaded NCCL is %s",
                         who, ncclshim_format_version(loaded, have, sizeof(have)));
  }
  /* The version NCCL reads the struct by: never newer than the library (it refuses that),
   * never newer than the layout written here. */
  struct comm_properties p = {.size = sizeof(p),
                              .magic = API_MAGIC,
                              .version = (unsigned)(loaded < PROPS_NEWEST ? loaded : PROPS_NEWEST)};
  int old_layout = loaded < 22904;
  ncclResult_t r = ncclshim_nccl_functions(comm->nccl)
                       ->ncclCommQueryProperties(raw, (ncclshim_comm_properties_t *)(void *)&p);
  ncclshim_status status = ncclshim_comm_check(comm, r, "ncclCommQueryProperties", 0);
  if (status != NCCLSHIM_OK) return status;
  *facts = (ncclshim_comm_facts){
      .size = sizeof(*facts),
      .rank = p.rank,
      .nranks = p.nRanks,
      .cuda_device = p.cudaDev,
      .nvml_device = p.nvmlDev,
      .device_api = p.deviceApiSupport,
      .multimem = p.multimemSupport,
      .gin_type = p.ginType,
      .railed_gin_type = old_layout ? -1 : p.railedGinType,
      .lsa_teams = old_layout ? -1 : p.nLsaTeams,
      .host_rma = old_layout ? -1 : p.hostRmaSupport,
  };
  return NCCLSHIM_OK;
}

static void say(char *reason, size_t size, const char *text) {
  if (reason != NULL && size > 0) snprintf(reason, size, "%s", text);
}

/* The trial registration, or the cached outcome of any registration on the communicator. */
static ncclshim_status windows(ncclshim_comm *comm, int timeout_ms, ncclshim_answer *answer,
                               char *reason, size_t size) {
  if (!ncclshim_nccl_has(comm->nccl, NCCLSHIM_CAP_SYMMETRIC_MEMORY)) {
    char why[256], text[320];
    ncclshim_nccl_capability_reason(comm->nccl, NCCLSHIM_CAP_SYMMETRIC_MEMORY, why, sizeof(why));
    snprintf(text, sizeof(text), "the library cannot register symmetric windows: %s", why);
    say(reason, size, text);
    *answer = NCCLSHIM_ANSWER_NO;
    return NCCLSHIM_OK;
  }
  if (atomic_load(&comm->windows) == 0) {
    ncclshim_symmem *mem = NULL;
    ncclshim_status status = ncclshim_symmem_alloc(comm, 4096, NULL, timeout_ms, &mem);
    if (status == NCCLSHIM_OK) status = ncclshim_symmem_free(mem, timeout_ms);
    if (status != NCCLSHIM_OK && status != NCCLSHIM_UNAVAILABLE) return status;
  }
  int registered = atomic_load(&comm->windows) == 1;
  *answer = registered ? NCCLSHIM_ANSWER_YES : NCCLSHIM_ANSWER_NO;
  say(reason, size,
      registered ? "a window registered on this communicator"
                 : "NCCL returned success but no window: symmetric windows do not register on "
                   "this communicator (registration disabled, CUMEM off, or a transport without "
                   "it; NCCL_DEBUG=WARN says which)");
  return NCCLSHIM_OK;
}

/* An answer from ncclCommQueryProperties. */
static ncclshim_status property(ncclshim_comm *comm, ncclshim_comm_capability cap,
                                ncclshim_answer *answer, char *reason, size_t size) {
  char text[320], have[16];
  ncclshim_format_version(ncclshim_nccl_version(comm->nccl), have, sizeof(have));
  if (!ncclshim_nccl_has(comm->nccl, NCCLSHIM_CAP_DEVICE_API)) {
    char why[256];
    ncclshim_nccl_capability_reason(comm->nccl, NCCLSHIM_CAP_DEVICE_API, why, sizeof(why));
    snprintf(text, sizeof(text), "the library has no device API: %s", why);
    say(reason, size, text);
    *answer = NCCLSHIM_ANSWER_NO;
    return NCCLSHIM_OK;
  }
  ncclshim_comm_facts f = NCCLSHIM_COMM_FACTS_INIT;
  ncclshim_status status = ncclshim_comm_query_facts(comm, &f);
  if (status == NCCLSHIM_UNAVAILABLE) {
    snprintf(text, sizeof(text),
             "NCCL %s cannot say per communicator (ncclCommQueryProperties is 2.29.2+); "
             "symmetric-windows tells whether windows register",
             have);
    say(reason, size, text);
    *answer = NCCLSHIM_ANSWER_UNKNOWN;
    return NCCLSHIM_OK;
  }
  if (status != NCCLSHIM_OK) return status;
  int value = cap == NCCLSHIM_COMM_CAP_DEVICE_API ? f.device_api
              : cap == NCCLSHIM_COMM_CAP_MULTIMEM ? f.multimem
              : cap == NCCLSHIM_COMM_CAP_GIN      ? (f.gin_type != 0)
                                                  : f.host_rma;
  *answer = value < 0 ? NCCLSHIM_ANSWER_UNKNOWN : value ? NCCLSHIM_ANSWER_YES : NCCLSHIM_ANSWER_NO;
  if (cap == NCCLSHIM_COMM_CAP_GIN)
    snprintf(text, sizeof(text), "ncclCommQueryProperties (NCCL %s): GIN type %s", have,
             ncclshim_gin_type_name(f.gin_type));
  else if (value < 0)
    snprintf(text, sizeof(text), "NCCL %s's ncclCommProperties has no such field", have);
  else
    snprintf(text, sizeof(text), "ncclCommQueryProperties (NCCL %s) says %s", have,
             value ? "yes" : "no");
  say(reason, size, text);
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_comm_has(ncclshim_comm *comm, ncclshim_comm_capability cap, int timeout_ms,
                                  ncclshim_answer *answer, char *reason, size_t size) {
  static const char who[] = "ncclshim_comm_has";
  if (comm == NULL || answer == NULL)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: %s is NULL", who,
                         comm ? "answer" : "comm");
  if ((unsigned)cap >= NCCLSHIM_COMM_CAPABILITY_COUNT)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: unknown capability %d", who, (int)cap);
  if (timeout_ms < 0)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT,
                         "%s: timeout %d ms is negative (no wait is unbounded)", who, timeout_ms);
  ncclshim_comm_state state = ncclshim_comm_state_of(comm);
  if (state != NCCLSHIM_COMM_READY)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: the communicator is %s, not ready", who,
                         ncclshim_comm_state_name(state));
  if (cap == NCCLSHIM_COMM_CAP_SYMMETRIC_WINDOWS)
    return windows(comm, timeout_ms, answer, reason, size);
  return property(comm, cap, answer, reason, size);
}

/* ---- Device-API mismatches --------------------------------------------------------------- */

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
  if (head.magic != API_MAGIC) {
    snprintf(rest, left,
             "; the caller's ncclDevCommRequirements carries no size or version (a 2.28 "
             "layout: 2.28.3 and 2.28.7+ differ, so it works only with the 2.28 release whose "
             "headers built it%s)",
             loaded >= 22902 ? "; this release needs NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER "
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

/* The host functions of nccl_device.h, by their names' shapes. */
static int device_api_call(const char *call) {
  static const char *const prefixes[] = {"ncclDevComm", "ncclTeam",    "ncclCommQueryProperties",
                                         "ncclGetLsa",  "ncclGetPeer", "ncclGetMultimem"};
  for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
    if (strncmp(call, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return strstr(call, "CreateRequirement") != NULL;
}

void ncclshim_devapi_hint(ncclshim_nccl *nccl, ncclResult_t result, const char *call, char *buf,
                          size_t size) {
  buf[0] = '\0';
  if (result != ncclInvalidUsage || call == NULL || !device_api_call(call)) return;
  char text[384];
  snprintf(buf, size, "; device API: %s", ncclshim_devapi_explain(nccl, NULL, text, sizeof(text)));
}
