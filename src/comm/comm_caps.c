/* What one communicator can really do: a trial window registration, cached, and what
 * ncclCommQueryProperties reports. */
#include <stdio.h>
#include <string.h>

#include "ncclshim/diag.h"
#include "comm_internal.h"
#include "ncclshim/comm_query.h"
#include "ncclshim/symmem.h"

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

ncclshim_status ncclshim_comm_query_facts(ncclshim_comm *comm, ncclshim_comm_facts *facts) {
  static const char who[] = "ncclshim_comm_query_facts";
  if (comm == NULL || facts == NULL || facts->size < sizeof(*facts))
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: %s", who,
                    comm == NULL    ? "comm is NULL"
                    : facts == NULL ? "facts is NULL"
                                    : "facts->size is too small (NCCLSHIM_COMM_FACTS_INIT)");
  ncclComm_t raw = ncclshim_comm_raw(comm);
  if (raw == NULL)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: the communicator is %s, not ready", who,
                    ncclshim_comm_state_name(ncclshim_comm_state_of(comm)));
  int loaded = ncclshim_nccl_version(comm->nccl);
  if (!ncclshim_nccl_has_function(comm->nccl, NCCLSHIM_FN_ncclCommQueryProperties)) {
    char need[16], have[16];
    return ncs_fail(
        NCCLSHIM_UNAVAILABLE, "%s: ncclCommQueryProperties needs NCCL >= %s; the loaded NCCL is %s",
        who,
        ncclshim_format_version(ncclshim_nccl_function_version(NCCLSHIM_FN_ncclCommQueryProperties),
                                need, sizeof(need)),
        ncclshim_format_version(loaded, have, sizeof(have)));
  }
  /* The version NCCL reads the struct by: never newer than the library (it refuses that),
   * never newer than the layout written here. */
  ncclshim_comm_properties_t p = {
      .size = sizeof(p),
      .magic = NCCL_API_MAGIC,
      .version = (unsigned)(loaded < NCCLSHIM_COMM_PROPERTIES_LAYOUT_VERSION
                                ? loaded
                                : NCCLSHIM_COMM_PROPERTIES_LAYOUT_VERSION)};
  int old_layout = loaded < NCCLSHIM_COMM_PROPERTIES_FULL_VERSION;
  ncclResult_t r = ncclshim_nccl_functions(comm->nccl)->ncclCommQueryProperties(raw, &p);
  ncclshim_status status = ncclshim_comm_check(comm, r, "ncclCommQueryProperties", 0);
  if (status != NCCLSHIM_OK) return status;
  int gin_type = p.ginType;
  if (old_layout) { /* there ginType is one byte, right after the two bools */
    ncclshim_comm_properties_v22902_t old;
    memcpy(&old, &p, sizeof(old));
    gin_type = old.ginType;
  }
  *facts = (ncclshim_comm_facts){
      .size = sizeof(*facts),
      .rank = p.rank,
      .nranks = p.nRanks,
      .cuda_device = p.cudaDev,
      .nvml_device = p.nvmlDev,
      .device_api = p.deviceApiSupport,
      .multimem = p.multimemSupport,
      .gin_type = gin_type,
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
    char need[16];
    snprintf(
        text, sizeof(text),
        "NCCL %s cannot say per communicator (ncclCommQueryProperties is %s+); "
        "symmetric-windows tells whether windows register",
        have,
        ncclshim_format_version(ncclshim_nccl_function_version(NCCLSHIM_FN_ncclCommQueryProperties),
                                need, sizeof(need)));
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
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: %s is NULL", who, comm ? "answer" : "comm");
  if ((unsigned)cap >= NCCLSHIM_COMM_CAPABILITY_COUNT)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: unknown capability %d", who, (int)cap);
  if (timeout_ms < 0) return ncs_negative_timeout(who, timeout_ms);
  ncclshim_comm_state state = ncclshim_comm_state_of(comm);
  if (state != NCCLSHIM_COMM_READY)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: the communicator is %s, not ready", who,
                    ncclshim_comm_state_name(state));
  if (cap == NCCLSHIM_COMM_CAP_SYMMETRIC_WINDOWS)
    return windows(comm, timeout_ms, answer, reason, size);
  return property(comm, cap, answer, reason, size);
}
