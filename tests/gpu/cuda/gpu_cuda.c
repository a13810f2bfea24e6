/* On a GPU host: the CUDA binding against the real driver. On every device it creates
 * streams and events, records, waits, queries and synchronises, allocates and copies memory;
 * between devices it makes one device's stream wait on another's event; it checks each device
 * description against nvidia-smi (when present) and that a forked child is refused.
 * Exits 0 when every check passed, 1 on any failure, 77 (skipped) without a usable driver or
 * device. Run: meson test -C build --suite gpu --print-errorlogs (or
 * build/tests/gpu/cuda/gpu_cuda). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ncclshim/cuda.h"

static int failures;
static ncclshim_cuda *cuda;
static const ncclshim_cuda_table *t;

#define CHECK(cond, ...)  \
  do {                    \
    if (cond) {           \
      printf("  ok    "); \
    } else {              \
      printf("  FAIL  "); \
      failures++;         \
    }                     \
    printf(__VA_ARGS__);  \
    printf("\n");         \
  } while (0)
/* A helper call that must succeed. */
#define OK(call)                                                               \
  do {                                                                         \
    ncclshim_status st_ = (call);                                              \
    CHECK(st_ == NCCLSHIM_OK, "%s%s%s", #call, st_ == NCCLSHIM_OK ? "" : ": ", \
          st_ == NCCLSHIM_OK ? "" : ncclshim_last_error());                    \
  } while (0)
/* A driver call through the table that must succeed. */
#define CU(call)                                                              \
  do {                                                                        \
    int rc_ = (call);                                                         \
    CHECK(rc_ == 0, "%s -> %s", #call, ncclshim_cuda_result_name(cuda, rc_)); \
  } while (0)

/* ---- nvidia-smi ---------------------------------------------------------------------- */

typedef struct smi_gpu {
  char name[256], bus_id[64], compute_cap[16], uuid[128];
  long long memory_mib;
} smi_gpu;

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *end = s + strlen(s);
  while (end > s && isspace((unsigned char)end[-1])) *--end = '\0';
  return s;
}

/* Rows of nvidia-smi --query-gpu; -1 when nvidia-smi cannot be run. */
static int read_smi(smi_gpu *gpus, int max) {
  FILE *p = popen(
      "nvidia-smi --query-gpu=name,pci.bus_id,memory.total,compute_cap,uuid "
      "--format=csv,noheader 2>/dev/null",
      "r");
  if (p == NULL) return -1;
  char line[1024];
  int n = 0;
  while (n < max && fgets(line, sizeof(line), p) != NULL) {
    char *field[5], *rest = line;
    int f = 0;
    for (; f < 5 && rest != NULL; f++) field[f] = strsep(&rest, ",");
    if (f < 5) continue;
    smi_gpu *g = &gpus[n++];
    snprintf(g->name, sizeof(g->name), "%s", trim(field[0]));
    snprintf(g->bus_id, sizeof(g->bus_id), "%s", trim(field[1]));
    g->memory_mib = atoll(trim(field[2])); /* "143771 MiB" */
    snprintf(g->compute_cap, sizeof(g->compute_cap), "%s", trim(field[3]));
    snprintf(g->uuid, sizeof(g->uuid), "%s", trim(field[4]));
  }
  int status = pclose(p);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? n : -1;
}

static void format_uuid(const CUuuid *u, char *out, size_t size) {
  const unsigned char *b = (const unsigned char *)u->bytes;
  snprintf(out, size, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

/* CUDA's device order may differ from nvidia-smi's (and CUDA_VISIBLE_DEVICES may hide some):
 * match by PCI bus id. */
static void compare_with_smi(const ncclshim_cuda_device_info *info, const smi_gpu *gpus, int n) {
  char bus_id[64], uuid[64], cc[16];
  snprintf(bus_id, sizeof(bus_id), "%08X:%02X:%02X.0", (unsigned)info->pci_domain,
           (unsigned)info->pci_bus, (unsigned)info->pci_device);
  const smi_gpu *g = NULL;
  for (int i = 0; i < n && g == NULL; i++)
    if (strcasecmp(gpus[i].bus_id, bus_id) == 0) g = &gpus[i];
  CHECK(g != NULL, "nvidia-smi lists a GPU at %s", bus_id);
  if (g == NULL) return;
  CHECK(strcmp(g->name, info->name) == 0, "name: ncclshim \"%s\", nvidia-smi \"%s\"", info->name,
        g->name);
  snprintf(cc, sizeof(cc), "%d.%d", info->cc_major, info->cc_minor);
  CHECK(strcmp(g->compute_cap, cc) == 0, "compute capability: ncclshim %s, nvidia-smi %s", cc,
        g->compute_cap);
  /* cuDeviceTotalMem leaves out what the driver reserves, so it is a little below. */
  long long mib = (long long)(info->total_memory >> 20);
  CHECK(mib <= g->memory_mib && mib >= g->memory_mib * 9 / 10,
        "memory: ncclshim %lld MiB, nvidia-smi %lld MiB (within 10%%, not above)", mib,
        g->memory_mib);
  if (info->uuid_query.support == NCCLSHIM_CUDA_SUPPORTED) {
    format_uuid(&info->uuid, uuid, sizeof(uuid));
    CHECK(strcasecmp(g->uuid, uuid) == 0, "uuid: ncclshim %s, nvidia-smi %s", uuid, g->uuid);
  } else {
    CHECK(0, "uuid query: %s (%s)", ncclshim_cuda_support_name(info->uuid_query.support),
          ncclshim_cuda_result_name(cuda, info->uuid_query.result));
  }
}

/* ---- Per device ------------------------------------------------------------------------ */

static void print_fact(const char *what, ncclshim_cuda_fact f) {
  printf("    %-16s %s", what, ncclshim_cuda_support_name(f.support));
  if (f.result != 0) printf(" (%s)", ncclshim_cuda_result_name(cuda, f.result));
  printf("\n");
}

static void describe(int d, const smi_gpu *gpus, int n) {
  ncclshim_cuda_device_info info = NCCLSHIM_CUDA_DEVICE_INFO_INIT;
  OK(ncclshim_cuda_describe_device(cuda, d, &info));
  printf("    %s, sm_%d%d, %d SMs, %zu MiB, PCI %04x:%02x:%02x\n", info.name, info.cc_major,
         info.cc_minor, info.multiprocessors, info.total_memory >> 20, (unsigned)info.pci_domain,
         (unsigned)info.pci_bus, (unsigned)info.pci_device);
  print_fact("vmm", info.vmm);
  print_fact("posix-fd", info.posix_fd_handle);
  print_fact("fabric", info.fabric_handle);
  print_fact("multicast", info.multicast);
  print_fact("gdr", info.gpu_direct_rdma);
  for (int p = 0; p < info.peer_count; p++) {
    char what[32];
    snprintf(what, sizeof(what), "peer %d", p);
    print_fact(what, info.peer_access[p]);
  }
  CHECK(info.failed == 0, "no yes/no query failed (failed mask 0x%x)", info.failed);
  CHECK(
      info.vmm.support == NCCLSHIM_CUDA_SUPPORTED || info.vmm.support == NCCLSHIM_CUDA_UNSUPPORTED,
      "vmm answered");
  if (n >= 0) compare_with_smi(&info, gpus, n);
}

static void exercise(int d) {
  CUcontext ctx = NULL;
  OK(ncclshim_cuda_device_activate(cuda, d, &ctx));
  CUdevice current = -1;
  CU(t->cuCtxGetDevice(&current)); /* the 2000 ABI: one argument */
  CHECK(current == d, "cuCtxGetDevice: %d", current);

  CUstream s1 = NULL, s2 = NULL;
  CUevent start = NULL, done = NULL;
  OK(ncclshim_cuda_stream_create(cuda, NCCLSHIM_CU_STREAM_NON_BLOCKING, &s1));
  OK(ncclshim_cuda_stream_create(cuda, NCCLSHIM_CU_STREAM_DEFAULT, &s2));
  OK(ncclshim_cuda_event_create(cuda, NCCLSHIM_CU_EVENT_DEFAULT, &start));
  OK(ncclshim_cuda_event_create(cuda, NCCLSHIM_CU_EVENT_DISABLE_TIMING, &done));

  enum { BYTES = 1 << 20 };
  CUdeviceptr buffer = 0;
  unsigned char *in = malloc(BYTES), *out = malloc(BYTES);
  for (int i = 0; i < BYTES; i++) in[i] = (unsigned char)(i * 7 + d);
  CU(t->cuMemAlloc(&buffer, BYTES));
  CU(t->cuMemsetD8(buffer, 0xee, BYTES));
  CU(t->cuMemcpyHtoD(buffer, in, BYTES / 2));
  CU(t->cuMemcpyDtoH(out, buffer, BYTES));
  CHECK(memcmp(out, in, BYTES / 2) == 0 && out[BYTES / 2] == 0xee && out[BYTES - 1] == 0xee,
        "1 MiB written, set and read back");
  int ordinal = -1;
  CU(t->cuPointerGetAttribute(&ordinal, NCCLSHIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                              buffer + 100));
  CHECK(ordinal == d, "the buffer lives on device %d", ordinal);
  size_t free_bytes = 0, total_bytes = 0;
  CU(t->cuMemGetInfo(&free_bytes, &total_bytes));
  CHECK(free_bytes > 0 && free_bytes <= total_bytes, "cuMemGetInfo: %zu of %zu MiB free",
        free_bytes >> 20, total_bytes >> 20);

  OK(ncclshim_cuda_event_record(cuda, start, s1));
  OK(ncclshim_cuda_event_record(cuda, done, s1));
  OK(ncclshim_cuda_stream_wait_event(cuda, s2, done));
  int ready = -1;
  OK(ncclshim_cuda_stream_query(cuda, s2, &ready));
  printf("    stream query before synchronising: %s\n", ready ? "ready" : "not ready");
  OK(ncclshim_cuda_stream_synchronize(cuda, s2));
  OK(ncclshim_cuda_stream_synchronize(cuda, s1));
  OK(ncclshim_cuda_stream_query(cuda, s1, &ready));
  CHECK(ready == 1, "stream ready after synchronising");
  CU(t->cuEventQuery(done));
  float ms = -1;
  CUevent end = NULL;
  OK(ncclshim_cuda_event_create(cuda, NCCLSHIM_CU_EVENT_DEFAULT, &end));
  OK(ncclshim_cuda_event_record(cuda, end, s1));
  CU(t->cuEventSynchronize(end));
  CU(t->cuEventElapsedTime(&ms, start, end));
  CHECK(ms >= 0, "cuEventElapsedTime (ABI %d): %.3f ms",
        ncclshim_cuda_function_abi(cuda, NCCLSHIM_CUDA_FN_cuEventElapsedTime), ms);
  ncclshim_cu_stream_capture_status capture = -1;
  CU(t->cuStreamIsCapturing(s1, &capture));
  CHECK(capture == NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE, "not capturing");

  CU(t->cuMemFree(buffer));
  OK(ncclshim_cuda_event_destroy(cuda, end));
  OK(ncclshim_cuda_event_destroy(cuda, done));
  OK(ncclshim_cuda_event_destroy(cuda, start));
  OK(ncclshim_cuda_stream_destroy(cuda, s2));
  OK(ncclshim_cuda_stream_destroy(cuda, s1));
  CU(t->cuCtxSynchronize());
  OK(ncclshim_cuda_device_release(cuda, d));
  free(in);
  free(out);
}

/* Device b's stream waits on an event recorded on device a's stream. */
static void across(int a, int b) {
  CUstream sa = NULL, sb = NULL;
  CUevent ea = NULL;
  OK(ncclshim_cuda_device_activate(cuda, a, NULL));
  OK(ncclshim_cuda_stream_create(cuda, NCCLSHIM_CU_STREAM_NON_BLOCKING, &sa));
  OK(ncclshim_cuda_event_create(cuda, NCCLSHIM_CU_EVENT_DISABLE_TIMING, &ea));
  OK(ncclshim_cuda_event_record(cuda, ea, sa));
  OK(ncclshim_cuda_device_activate(cuda, b, NULL));
  OK(ncclshim_cuda_stream_create(cuda, NCCLSHIM_CU_STREAM_NON_BLOCKING, &sb));
  OK(ncclshim_cuda_stream_wait_event(cuda, sb, ea));
  OK(ncclshim_cuda_stream_synchronize(cuda, sb));
  OK(ncclshim_cuda_stream_destroy(cuda, sb));
  OK(ncclshim_cuda_device_release(cuda, b));
  OK(ncclshim_cuda_device_activate(cuda, a, NULL)); /* back to a's context for a's objects */
  OK(ncclshim_cuda_event_destroy(cuda, ea));
  OK(ncclshim_cuda_stream_destroy(cuda, sa));
  OK(ncclshim_cuda_device_release(cuda, a));
  OK(ncclshim_cuda_device_release(cuda, a));
}

/* A child forked after cuInit is told so, instead of getting the driver's error 3. */
static void forked_child(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    CUstream s = NULL;
    _exit(ncclshim_cuda_stream_create(cuda, 0, &s) == NCCLSHIM_FORKED ? 0 : 1);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a forked child gets FORKED");
}

int main(void) {
  cuda = ncclshim_cuda_default();
  t = ncclshim_cuda_functions(cuda);
  printf("%s\n", ncclshim_cuda_message(cuda));
  if (ncclshim_cuda_status(cuda) != NCCLSHIM_OK) {
    printf("skipped: no usable CUDA driver\n");
    return 77;
  }
  ncclshim_status status = ncclshim_cuda_init(cuda);
  if (status == NCCLSHIM_NO_DEVICE || status == NCCLSHIM_DRIVER_UNAVAILABLE) {
    printf("skipped: %s\n", ncclshim_last_error());
    return 77;
  }
  if (status != NCCLSHIM_OK) {
    printf("FAIL  ncclshim_cuda_init: %s\n", ncclshim_last_error());
    return 1;
  }
  int count = 0;
  OK(ncclshim_cuda_device_count(cuda, &count));
  if (count == 0) {
    printf("skipped: no CUDA device\n");
    return 77;
  }
  printf("%d device(s), entry points via %s\n", count,
         ncclshim_cuda_bootstrap_name(ncclshim_cuda_bootstrap_used(cuda)));
  CHECK(strcmp(ncclshim_cuda_result_name(cuda, 600), "CUDA_ERROR_NOT_READY") == 0,
        "the driver names 600: %s", ncclshim_cuda_result_name(cuda, 600));
  CHECK(ncclshim_cuda_function_abi(cuda, NCCLSHIM_CUDA_FN_cuMemAlloc) == 3020,
        "cuMemAlloc bound at ABI 3020 (_v2)");

  smi_gpu gpus[64];
  int n = read_smi(gpus, 64);
  if (n < 0) printf("nvidia-smi not available: descriptions not compared\n");
  for (int d = 0; d < count; d++) {
    printf("device %d\n", d);
    describe(d, gpus, n);
    exercise(d);
  }
  for (int d = 1; d < count; d++) {
    printf("device %d waits on device 0, and 0 on %d\n", d, d);
    across(0, d);
    across(d, 0);
  }
  forked_child();
  printf("%s: %d failure(s)\n", failures ? "FAILED" : "passed", failures);
  return failures ? 1 : 0;
}
