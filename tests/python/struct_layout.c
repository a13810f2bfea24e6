/* Prints the C layout of the structs the Python package passes to C, for test_comm.py to
 * compare with the generated ctypes module: "TYPE SIZE" and "TYPE.FIELD OFFSET" lines.
 * ncclUniqueId and ncclConfig_t go to NCCL by value or as NCCL reads them; the options structs
 * and the device API's by-value structs to ncclshim. */
#include <stddef.h>
#include <stdio.h>

#include "ncclshim/comm.h"

#define SIZE(type) printf("%s %zu\n", #type, sizeof(type));
#define FIELD(type, field) printf("%s.%s %zu\n", #type, #field, offsetof(type, field));
#define CONFIG_FIELD_(id, field, kind, version) FIELD(ncclConfig_t, field)

int main(void) {
  SIZE(ncclUniqueId)
  FIELD(ncclUniqueId, internal)
  SIZE(ncclConfig_t)
  FIELD(ncclConfig_t, size)
  FIELD(ncclConfig_t, magic)
  FIELD(ncclConfig_t, version)
  NCCLSHIM_CONFIG_FIELDS(CONFIG_FIELD_)
  SIZE(ncclshim_comm_options)
  FIELD(ncclshim_comm_options, size)
  FIELD(ncclshim_comm_options, blocking)
  SIZE(ncclshim_watchdog_options)
  FIELD(ncclshim_watchdog_options, size)
  FIELD(ncclshim_watchdog_options, interval_ms)
  FIELD(ncclshim_watchdog_options, cuda)
  FIELD(ncclshim_watchdog_options, on_failure)
  FIELD(ncclshim_watchdog_options, user)
  SIZE(ncclshim_team_t)
  FIELD(ncclshim_team_t, nRanks)
  FIELD(ncclshim_team_t, rank)
  FIELD(ncclshim_team_t, stride)
  SIZE(ncclshim_multimem_handle_t)
  FIELD(ncclshim_multimem_handle_t, mcBasePtr)
  return 0;
}
