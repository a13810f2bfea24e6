/* A device's description: identity facts that must all be read, and yes/no facts each kept
 * as supported / unsupported / query failed. */
#include <stdio.h>
#include <string.h>

#include "cuda_helper.h"

static ncclshim_cuda_fact fact(ncclshim_cu_result rc, int value) {
  if (rc == NCCLSHIM_CUDA_SUCCESS)
    return (ncclshim_cuda_fact){value ? NCCLSHIM_CUDA_SUPPORTED : NCCLSHIM_CUDA_UNSUPPORTED, rc};
  return (ncclshim_cuda_fact){NCCLSHIM_CUDA_QUERY_FAILED, rc};
}

static ncclshim_cuda_fact attribute_fact(const ncclshim_cuda *cuda, int attribute,
                                         CUdevice device) {
  int value = 0;
  ncclshim_cu_result rc = cuda->table.cuDeviceGetAttribute(&value, attribute, device);
  /* INVALID_VALUE for an attribute number: a driver older than the attribute, which therefore
   * cannot support it. Every other failure stays a failure. */
  if (rc == NCCLSHIM_CUDA_ERROR_INVALID_VALUE)
    return (ncclshim_cuda_fact){NCCLSHIM_CUDA_UNSUPPORTED, rc};
  return fact(rc, value);
}

/* The identity attributes, each into its field of the description. */
static ncclshim_status read_identity(const ncclshim_cuda *cuda, CUdevice device,
                                     ncclshim_cuda_device_info *d) {
  const struct {
    int attribute;
    int *value;
  } wanted[] = {
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &d->cc_major},
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &d->cc_minor},
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &d->multiprocessors},
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &d->pci_domain},
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &d->pci_bus},
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &d->pci_device},
  };
  for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
    ncclshim_cu_result rc =
        cuda->table.cuDeviceGetAttribute(wanted[i].value, wanted[i].attribute, device);
    if (rc != NCCLSHIM_CUDA_SUCCESS) {
      char what[96];
      snprintf(what, sizeof(what), "ncclshim_cuda_describe_device(%d), attribute %d", d->ordinal,
               wanted[i].attribute);
      return ncs_cuda_call_failed(cuda, what, NCCLSHIM_CUDA_FN_cuDeviceGetAttribute, rc);
    }
  }
  return NCCLSHIM_OK;
}

/* Can `device` access each visible device's memory? */
static ncclshim_status read_peers(const ncclshim_cuda *cuda, CUdevice device,
                                  ncclshim_cuda_device_info *d) {
  int count = 0;
  ncclshim_cu_result rc = cuda->table.cuDeviceGetCount(&count);
  if (rc != NCCLSHIM_CUDA_SUCCESS)
    return ncs_cuda_call_failed(cuda, "ncclshim_cuda_describe_device",
                                NCCLSHIM_CUDA_FN_cuDeviceGetCount, rc);
  d->peer_count = count < NCCLSHIM_CUDA_MAX_PEERS ? count : NCCLSHIM_CUDA_MAX_PEERS;
  for (int p = 0; p < d->peer_count; p++) {
    CUdevice peer;
    int can = 0;
    rc = cuda->table.cuDeviceGet(&peer, p);
    if (rc == NCCLSHIM_CUDA_SUCCESS) rc = cuda->table.cuDeviceCanAccessPeer(&can, device, peer);
    d->peer_access[p] = fact(rc, can);
  }
  return NCCLSHIM_OK;
}

/* The yes/no facts, each read from its attribute into its field, and summed up in the two
 * masks. */
static void read_facts(const ncclshim_cuda *cuda, CUdevice device, ncclshim_cuda_device_info *d) {
  const struct {
    int attribute;
    ncclshim_cuda_fact *fact;
    uint32_t bit;
  } facts[] = {
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, &d->vmm,
       NCCLSHIM_CUDA_FACT_VMM},
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
       &d->posix_fd_handle, NCCLSHIM_CUDA_FACT_POSIX_FD_HANDLE},
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, &d->fabric_handle,
       NCCLSHIM_CUDA_FACT_FABRIC_HANDLE},
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, &d->multicast,
       NCCLSHIM_CUDA_FACT_MULTICAST},
      {NCCLSHIM_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, &d->gpu_direct_rdma,
       NCCLSHIM_CUDA_FACT_GPU_DIRECT_RDMA},
  };
  for (size_t i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
    *facts[i].fact = attribute_fact(cuda, facts[i].attribute, device);
    if (facts[i].fact->support == NCCLSHIM_CUDA_SUPPORTED) d->supported |= facts[i].bit;
    if (facts[i].fact->support == NCCLSHIM_CUDA_QUERY_FAILED) d->failed |= facts[i].bit;
  }
}

ncclshim_status ncclshim_cuda_describe_device(const ncclshim_cuda *cuda, int ordinal,
                                              ncclshim_cuda_device_info *info) {
  BEGIN(cuda);
  NOT_NULL(info);
  VALID_ORDINAL(ordinal);
  if (info->size < offsetof(ncclshim_cuda_device_info, uuid_query))
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "%s: info->size %zu is too small (set it to "
                    "sizeof(ncclshim_cuda_device_info))",
                    __func__, info->size);
  ncclshim_cuda_device_info d;
  memset(&d, 0, sizeof(d));
  d.ordinal = ordinal;
  CUdevice device;
  CALL(cuda, cuDeviceGet, (&device, ordinal));
  CALL(cuda, cuDeviceGetName, (d.name, (int)sizeof(d.name), device));
  d.name[sizeof(d.name) - 1] = '\0';
  ncclshim_status status = read_identity(cuda, device, &d);
  if (status != NCCLSHIM_OK) return status;
  CALL(cuda, cuDeviceTotalMem, (&d.total_memory, device));

  /* With no cuDeviceGetUuid (driver < 11.4) the table's entry answers NOT_SUPPORTED. */
  d.uuid_query = fact(cuda->table.cuDeviceGetUuid(&d.uuid, device), 1);
  read_facts(cuda, device, &d);
  status = read_peers(cuda, device, &d);
  if (status != NCCLSHIM_OK) return status;

  /* Fill only the caller's part of the struct; its `size` keeps its value. */
  d.size = info->size;
  memcpy(info, &d, info->size < sizeof(d) ? info->size : sizeof(d));
  return NCCLSHIM_OK;
}

const char *ncclshim_cuda_support_name(ncclshim_cuda_support support) {
  static const char *const names[] = {"query-failed", "unsupported", "supported"};
  return (unsigned)support < sizeof(names) / sizeof(names[0]) ? names[support] : "unknown";
}
