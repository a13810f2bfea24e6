/* Prints the parts of ncclshim's ABI that are not symbol names, one "key value" line each:
 * the offset of every field of the public structs and tables, and the value of every public
 * enumerator and ABI constant. abi/check_layout.py compares them with abi/layout.txt, so
 * that inserting a table row or a struct field in the middle, renumbering an enum, or
 * changing a frozen type fails the build. Offsets are those of LP64 (x86_64, aarch64). */
#include <stddef.h>
#include <stdio.h>

#include "ncclshim/comm.h"
#include "ncclshim/comm_query.h"
#include "ncclshim/cuda.h"
#include "ncclshim/nccl_plugins.h"
#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"
#include "ncclshim/status.h"
#include "ncclshim/symmem.h"

#define FIELD(type, field) printf("%s.%s %zu\n", #type, #field, offsetof(type, field))
#define SIZE(type) printf("sizeof(%s) %zu\n", #type, sizeof(type))
#define VALUE(name) printf("%s %lld\n", #name, (long long)(name))

#define NCCL_ROW_(name, version, policy, role, returns, n, params) \
  FIELD(ncclshim_nccl_table, name);                                \
  VALUE(NCCLSHIM_FN_##name);
#define CUDA_ROW_(name, ask, policy, abi, n, params) \
  FIELD(ncclshim_cuda_table, name);                  \
  VALUE(NCCLSHIM_CUDA_FN_##name);
#define CAPABILITY_(id, name, version, ...) VALUE(NCCLSHIM_CAP_##id);
#define CONFIG_FIELD_(id, field, kind, version) VALUE(NCCLSHIM_CONFIG_##id);

static void lists(void) {
  NCCLSHIM_NCCL_FUNCTIONS(NCCL_ROW_)
  NCCLSHIM_CUDA_FUNCTIONS(CUDA_ROW_)
  NCCLSHIM_CAPABILITIES(CAPABILITY_)
  NCCLSHIM_CONFIG_FIELDS(CONFIG_FIELD_)
}

/* Structs the caller fills: `size` first, fields only appended. */
static void caller_structs(void) {
  FIELD(ncclshim_nccl_options, size);
  FIELD(ncclshim_nccl_options, path);
  FIELD(ncclshim_nccl_options, min_version);
  FIELD(ncclshim_nccl_options, refuse_second_copy);
  FIELD(ncclshim_cuda_options, size);
  FIELD(ncclshim_cuda_options, path);
  FIELD(ncclshim_comm_options, size);
  FIELD(ncclshim_comm_options, blocking);
  FIELD(ncclshim_watchdog_options, size);
  FIELD(ncclshim_watchdog_options, interval_ms);
  FIELD(ncclshim_watchdog_options, cuda);
  FIELD(ncclshim_watchdog_options, on_failure);
  FIELD(ncclshim_watchdog_options, user);
  FIELD(ncclshim_cuda_device_info, size);
  FIELD(ncclshim_cuda_device_info, ordinal);
  FIELD(ncclshim_cuda_device_info, name);
  FIELD(ncclshim_cuda_device_info, cc_major);
  FIELD(ncclshim_cuda_device_info, cc_minor);
  FIELD(ncclshim_cuda_device_info, multiprocessors);
  FIELD(ncclshim_cuda_device_info, total_memory);
  FIELD(ncclshim_cuda_device_info, pci_domain);
  FIELD(ncclshim_cuda_device_info, pci_bus);
  FIELD(ncclshim_cuda_device_info, pci_device);
  FIELD(ncclshim_cuda_device_info, uuid_query);
  FIELD(ncclshim_cuda_device_info, uuid);
  FIELD(ncclshim_cuda_device_info, vmm);
  FIELD(ncclshim_cuda_device_info, posix_fd_handle);
  FIELD(ncclshim_cuda_device_info, fabric_handle);
  FIELD(ncclshim_cuda_device_info, multicast);
  FIELD(ncclshim_cuda_device_info, gpu_direct_rdma);
  FIELD(ncclshim_cuda_device_info, peer_count);
  FIELD(ncclshim_cuda_device_info, peer_access);
  FIELD(ncclshim_cuda_device_info, supported);
  FIELD(ncclshim_cuda_device_info, failed);
}

/* Structs the library owns (fields only appended), and frozen ones (embedded in others). */
static void other_structs(void) {
  FIELD(ncclshim_attempt, candidate);
  FIELD(ncclshim_attempt, how);
  FIELD(ncclshim_attempt, result);
  FIELD(ncclshim_attempt, reason);
  FIELD(ncclshim_nccl_entry, path);
  FIELD(ncclshim_nccl_entry, version);
  FIELD(ncclshim_nccl_entry, how);
  FIELD(ncclshim_nccl_entry, mapped);
  FIELD(ncclshim_nccl_entry, in_program);
  FIELD(ncclshim_nccl_entry, chosen);
  FIELD(ncclshim_cuda_fact, support);
  FIELD(ncclshim_cuda_fact, result);
  SIZE(ncclshim_cuda_fact);
  SIZE(CUuuid);
  VALUE(NCCLSHIM_CUDA_MAX_PEERS);
  /* NCCL's by-value device-API structs, as ncclshim declares them: frozen. */
  FIELD(ncclshim_team_t, nRanks);
  FIELD(ncclshim_team_t, rank);
  FIELD(ncclshim_team_t, stride);
  SIZE(ncclshim_team_t);
  FIELD(ncclshim_multimem_handle_t, mcBasePtr);
  SIZE(ncclshim_multimem_handle_t);
}

static void enums(void) {
  VALUE(NCCLSHIM_OK);
  VALUE(NCCLSHIM_NOT_FOUND);
  VALUE(NCCLSHIM_LOAD_FAILED);
  VALUE(NCCLSHIM_NOT_NCCL);
  VALUE(NCCLSHIM_MISSING_SYMBOLS);
  VALUE(NCCLSHIM_VERSION_TOO_OLD);
  VALUE(NCCLSHIM_WRONG_MAJOR);
  VALUE(NCCLSHIM_BAD_VERSION);
  VALUE(NCCLSHIM_INVALID_ARGUMENT);
  VALUE(NCCLSHIM_OUT_OF_MEMORY);
  VALUE(NCCLSHIM_UNAVAILABLE);
  VALUE(NCCLSHIM_DRIVER_UNAVAILABLE);
  VALUE(NCCLSHIM_NO_DEVICE);
  VALUE(NCCLSHIM_CUDA_ERROR);
  VALUE(NCCLSHIM_NCCL_ERROR);
  VALUE(NCCLSHIM_TIMEOUT);
  VALUE(NCCLSHIM_FORKED);
  VALUE(NCCLSHIM_SECOND_COPY);
  VALUE(NCCLSHIM_VIA_NONE);
  VALUE(NCCLSHIM_VIA_EXPLICIT);
  VALUE(NCCLSHIM_VIA_ENVIRONMENT);
  VALUE(NCCLSHIM_VIA_PRELOADED);
  VALUE(NCCLSHIM_VIA_SYSTEM);
  VALUE(NCCLSHIM_VIA_WELL_KNOWN);
  VALUE(NCCLSHIM_VIA_LIBRARY_PATH);
  VALUE(NCCLSHIM_VIA_ACTIVE_ENV);
  VALUE(NCCLSHIM_VIA_LD_CACHE);
  VALUE(NCCLSHIM_CUDA_BOOTSTRAP_NONE);
  VALUE(NCCLSHIM_CUDA_BOOTSTRAP_DLSYM);
  VALUE(NCCLSHIM_CUDA_BOOTSTRAP_PROC_ADDRESS);
  VALUE(NCCLSHIM_CUDA_BOOTSTRAP_PROC_ADDRESS_V2);
  VALUE(NCCLSHIM_CUDA_QUERY_FAILED);
  VALUE(NCCLSHIM_CUDA_UNSUPPORTED);
  VALUE(NCCLSHIM_CUDA_SUPPORTED);
  VALUE(NCCLSHIM_CUDA_FACT_VMM);
  VALUE(NCCLSHIM_CUDA_FACT_POSIX_FD_HANDLE);
  VALUE(NCCLSHIM_CUDA_FACT_FABRIC_HANDLE);
  VALUE(NCCLSHIM_CUDA_FACT_MULTICAST);
  VALUE(NCCLSHIM_CUDA_FACT_GPU_DIRECT_RDMA);
  VALUE(NCCLSHIM_COMM_NONBLOCKING);
  VALUE(NCCLSHIM_COMM_BLOCKING);
  VALUE(NCCLSHIM_COMM_SPLIT_BLOCKING);
  VALUE(NCCLSHIM_COMM_INITIALIZING);
  VALUE(NCCLSHIM_COMM_READY);
  VALUE(NCCLSHIM_COMM_FINALIZING);
  VALUE(NCCLSHIM_COMM_FAILED);
  VALUE(NCCLSHIM_COMM_DESTROYED);
  VALUE(NCCLSHIM_COMM_ABORTING);
  VALUE(NCCLSHIM_COMM_ABORTED);
}

/* Per-communicator capabilities and plugins (comm_query.h, nccl_plugins.h). */
#define COMM_CAP_(id, name) VALUE(NCCLSHIM_COMM_CAP_##id);
#define PLUGIN_KIND_(id, name, variable, library) VALUE(NCCLSHIM_PLUGIN_##id);
static void queries(void) {
  NCCLSHIM_COMM_CAPABILITIES(COMM_CAP_)
  NCCLSHIM_PLUGIN_KINDS(PLUGIN_KIND_)
  VALUE(NCCLSHIM_ANSWER_NO);
  VALUE(NCCLSHIM_ANSWER_YES);
  VALUE(NCCLSHIM_ANSWER_UNKNOWN);
  VALUE(NCCLSHIM_AGREE_RECORD);
  VALUE(NCCLSHIM_PLUGIN_ABSENT);
  VALUE(NCCLSHIM_PLUGIN_DISABLED);
  VALUE(NCCLSHIM_PLUGIN_ACCEPTED);
  VALUE(NCCLSHIM_PLUGIN_REFUSED);
  VALUE(NCCLSHIM_PLUGIN_NO_ABI);
  VALUE(NCCLSHIM_PLUGIN_NOT_FOUND);
  VALUE(NCCLSHIM_PLUGIN_UNREADABLE);
  VALUE(NCCLSHIM_PLUGIN_UNKNOWN);
  FIELD(ncclshim_comm_facts, size);
  FIELD(ncclshim_comm_facts, rank);
  FIELD(ncclshim_comm_facts, nranks);
  FIELD(ncclshim_comm_facts, cuda_device);
  FIELD(ncclshim_comm_facts, nvml_device);
  FIELD(ncclshim_comm_facts, device_api);
  FIELD(ncclshim_comm_facts, multimem);
  FIELD(ncclshim_comm_facts, gin_type);
  FIELD(ncclshim_comm_facts, railed_gin_type);
  FIELD(ncclshim_comm_facts, lsa_teams);
  FIELD(ncclshim_comm_facts, host_rma);
  FIELD(ncclshim_plugin, kind);
  FIELD(ncclshim_plugin, variable);
  FIELD(ncclshim_plugin, requested);
  FIELD(ncclshim_plugin, path);
  FIELD(ncclshim_plugin, exports);
  FIELD(ncclshim_plugin, chosen);
  FIELD(ncclshim_plugin, verdict);
  FIELD(ncclshim_plugin, reason);
  FIELD(ncclshim_watch_counts, size);
  FIELD(ncclshim_watch_counts, recorded);
  FIELD(ncclshim_watch_counts, captured);
  FIELD(ncclshim_watch_counts, replays);
  FIELD(ncclshim_watch_counts, events);
  FIELD(ncclshim_watch_counts, catch_ups);
  FIELD(ncclshim_watch_counts, outstanding);
  VALUE(NCCLSHIM_WATCH_LABEL_MAX);
}

int main(void) {
  if (sizeof(void *) != 8 || sizeof(long) != 8) {
    printf("SKIP: the committed layout is LP64's\n");
    return 77;
  }
  lists();
  caller_structs();
  other_structs();
  enums();
  queries();
  return 0;
}
