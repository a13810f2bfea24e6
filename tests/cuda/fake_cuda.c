/* A fake libcuda.so.1 for the tests, built in several variants by -D macros:
 *   FAKE_DRIVER_VERSION  what cuDriverGetVersion answers (11020, 13000, ...)
 *   FAKE_BOOTSTRAP       0: no cuGetProcAddress at all (drivers < 11.3); 1: only the 11.3
 *                        4-argument cuGetProcAddress; 2: that and cuGetProcAddress_v2 (12.0+)
 *   FAKE_STUB            1: every function answers CUDA_ERROR_STUB_LIBRARY (34), as the
 *                        toolkit's stub does
 *   FAKE_INIT_RESULT     what cuInit answers when it does not succeed (100: no device)
 * It exports both ABIs of versioned functions (cuMemAlloc and cuMemAlloc_v2, ...) under the
 * driver's names, logs each call by exported name and each cuGetProcAddress request with the
 * version asked, and, like the real driver, refuses a request above its own version. The old
 * ABIs that a correct binding never calls answer 999 ("wrong ABI"). Two devices; "device"
 * memory is host memory; a context is needed where the real driver needs one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "ncclshim/cuda_abi.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

enum { DEVICES = 2, WRONG_ABI = 999 };

fake_cuda_log fake_log;
fake_cuda_control fake_control;

static void record_call(const char *name) {
  if (fake_log.call_count < FAKE_CUDA_LOG_SIZE)
    snprintf(fake_log.calls[fake_log.call_count++], FAKE_CUDA_NAME_SIZE, "%s", name);
}

static int init_pid; /* like the driver: state from cuInit is not valid in a forked child */
struct CUctx_st {
  int device;
  int retained;
};
static struct CUctx_st contexts[DEVICES] = {{0, 0}, {1, 0}};
static CUcontext current;
struct CUstream_st {
  int unused;
};
struct CUevent_st {
  int recorded;
};

#define ENTER()               \
  do {                        \
    record_call(__func__);    \
    if (FAKE_STUB) return 34; \
  } while (0)
#define ENTER_INIT()                         \
  do {                                       \
    ENTER();                                 \
    if (init_pid != (int)getpid()) return 3; \
  } while (0)
#define ENTER_CTX()                  \
  do {                               \
    ENTER_INIT();                    \
    if (current == NULL) return 201; \
  } while (0)
#define WRONG()            \
  do {                     \
    record_call(__func__); \
    return WRONG_ABI;      \
  } while (0)
#define BAD_DEVICE(dev) ((dev) < 0 || (dev) >= DEVICES)

int cuInit(unsigned int flags) {
  ENTER();
  if (flags != 0) return 1;
  if (FAKE_INIT_RESULT != 0) return FAKE_INIT_RESULT;
  if (init_pid != 0 && init_pid != (int)getpid()) return 3;
  init_pid = (int)getpid();
  return 0;
}

int cuDriverGetVersion(int *version) {
  ENTER();
  if (version == NULL) return 1;
  *version = FAKE_DRIVER_VERSION;
  return 0;
}

int cuDeviceGetCount(int *count) {
  ENTER_INIT();
  *count = DEVICES;
  return 0;
}

int cuDeviceGet(CUdevice *device, int ordinal) {
  ENTER_INIT();
  if (BAD_DEVICE(ordinal)) return 101;
  *device = ordinal;
  return 0;
}

int cuDeviceGetName(char *name, int len, CUdevice dev) {
  ENTER_INIT();
  if (BAD_DEVICE(dev)) return 101;
  snprintf(name, (size_t)len, "Fake GPU %d", dev);
  return 0;
}

int cuDeviceGetAttribute(int *value, int attribute, CUdevice dev) {
  ENTER_INIT();
  if (BAD_DEVICE(dev)) return 101;
  if (attribute == fake_control.failing_attribute) return 999;
  /* {attribute, first driver that knows it, device 0's value, device 1's} */
  static const int known[][4] = {
      {75, 2000, 9, 8},       {76, 2000, 0, 6},   {16, 2000, 132, 84}, {50, 2000, 0, 1},
      {33, 2000, 0x1b, 0x2c}, {34, 2000, 0, 3},   {102, 10020, 1, 1},  {103, 10020, 1, 0},
      {116, 11030, 1, 0},     {128, 12030, 1, 0}, {132, 12010, 0, 1},
  };
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
    if (known[i][0] == attribute && known[i][1] <= FAKE_DRIVER_VERSION) {
      *value = known[i][2 + dev];
      return 0;
    }
  }
  return 1; /* an attribute this driver does not know */
}

int cuDeviceTotalMem(unsigned int *bytes, CUdevice dev) { WRONG(); }
int cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  ENTER_INIT();
  if (BAD_DEVICE(dev)) return 101;
  *bytes = (size_t)(80 + dev) << 30;
  return 0;
}

int cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { WRONG(); }
int cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  ENTER_INIT();
  if (BAD_DEVICE(dev)) return 101;
  for (int i = 0; i < 16; i++) uuid->bytes[i] = (char)(16 * dev + i);
  return 0;
}

int cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  ENTER_INIT();
  if (BAD_DEVICE(dev)) return 101;
  contexts[dev].retained++;
  *ctx = &contexts[dev];
  return 0;
}

int cuDevicePrimaryCtxRelease(CUdevice dev) { WRONG(); }
int cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  ENTER_INIT();
  if (BAD_DEVICE(dev)) return 101;
  if (contexts[dev].retained == 0) return 201;
  contexts[dev].retained--;
  return 0;
}

int cuCtxSetCurrent(CUcontext ctx) {
  ENTER_INIT();
  current = ctx;
  return 0;
}

int cuCtxGetCurrent(CUcontext *ctx) {
  ENTER_INIT();
  *ctx = current;
  return 0;
}

int cuCtxGetDevice(CUdevice *device) {
  ENTER_CTX();
  *device = current->device;
  return 0;
}
int cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) { WRONG(); }

int cuCtxSynchronize(void) {
  ENTER_CTX();
  return 0;
}
int cuCtxSynchronize_v2(CUcontext ctx) { WRONG(); }

int cuStreamCreate(CUstream *stream, unsigned int flags) {
  ENTER_CTX();
  if (flags > NCCLSHIM_CU_STREAM_NON_BLOCKING) return 1;
  if ((*stream = calloc(1, sizeof(**stream))) == NULL) return 2;
  return 0;
}

int cuStreamDestroy(CUstream stream) { WRONG(); }
int cuStreamDestroy_v2(CUstream stream) {
  ENTER_CTX();
  if (stream == NULL) return 400;
  free(stream);
  return 0;
}

int cuStreamSynchronize(CUstream stream) {
  ENTER_CTX();
  fake_control.not_ready = 0;
  return 0;
}

int cuStreamQuery(CUstream stream) {
  ENTER_CTX();
  if (fake_control.not_ready > 0) {
    fake_control.not_ready--;
    return 600;
  }
  return 0;
}

int cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  ENTER_CTX();
  if (flags != 0) return 1;
  return event != NULL ? 0 : 400;
}

int cuStreamIsCapturing(CUstream stream, int *status) {
  ENTER_CTX();
  *status = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE;
  return 0;
}

int cuEventCreate(CUevent *event, unsigned int flags) {
  ENTER_CTX();
  if ((*event = calloc(1, sizeof(**event))) == NULL) return 2;
  return 0;
}

int cuEventDestroy(CUevent event) { WRONG(); }
int cuEventDestroy_v2(CUevent event) {
  ENTER_CTX();
  if (event == NULL) return 400;
  free(event);
  return 0;
}

int cuEventRecord(CUevent event, CUstream stream) {
  ENTER_CTX();
  if (event == NULL) return 400;
  event->recorded = 1;
  return 0;
}

int cuEventQuery(CUevent event) {
  ENTER_CTX();
  return event != NULL ? 0 : 400;
}

int cuEventSynchronize(CUevent event) {
  ENTER_CTX();
  return event != NULL ? 0 : 400;
}

/* Both ABIs are real: the old one is what drivers before 12.8 offer. */
static int elapsed(float *ms, CUevent start, CUevent end) {
  if (start == NULL || end == NULL || !start->recorded || !end->recorded) return 400;
  *ms = 0.5f;
  return 0;
}
int cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  ENTER_CTX();
  return elapsed(ms, start, end);
}
int cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) {
  ENTER_CTX();
  return elapsed(ms, start, end);
}

#define HOST(dptr) ((void *)(uintptr_t)(dptr))

int cuMemAlloc(unsigned int *dptr, unsigned int bytes) { WRONG(); }
int cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
  ENTER_CTX();
  void *memory = malloc(bytes);
  if (memory == NULL) return 2;
  *dptr = (CUdeviceptr)(uintptr_t)memory;
  return 0;
}

int cuMemFree(unsigned int dptr) { WRONG(); }
int cuMemFree_v2(CUdeviceptr dptr) {
  ENTER_CTX();
  free(HOST(dptr));
  return 0;
}

int cuMemcpyHtoD(unsigned int dst, const void *src, unsigned int bytes) { WRONG(); }
int cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  ENTER_CTX();
  memcpy(HOST(dst), src, bytes);
  return 0;
}

int cuMemcpyDtoH(void *dst, unsigned int src, unsigned int bytes) { WRONG(); }
int cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  ENTER_CTX();
  memcpy(dst, HOST(src), bytes);
  return 0;
}

int cuMemsetD8(unsigned int dst, unsigned char value, unsigned int count) { WRONG(); }
int cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t count) {
  ENTER_CTX();
  memset(HOST(dst), value, count);
  return 0;
}

int cuMemGetInfo(unsigned int *free_bytes, unsigned int *total_bytes) { WRONG(); }
int cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  ENTER_CTX();
  *free_bytes = (size_t)70 << 30;
  *total_bytes = (size_t)80 << 30;
  return 0;
}

int cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr) {
  ENTER_CTX();
  if (attribute != NCCLSHIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return 1;
  *(int *)data = current->device;
  return 0;
}

int cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
  ENTER_INIT();
  if (BAD_DEVICE(dev) || BAD_DEVICE(peer)) return 101;
  *can = dev != peer;
  return 0;
}

/* Texts that differ from ncclshim's table, so the tests can tell whose text they got. */
static const struct {
  int result;
  const char *name, *text;
} errors[] = {
    {0, "CUDA_SUCCESS", "fake driver: no error"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "fake driver: initialization error"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "fake driver: invalid device context"},
    {600, "CUDA_ERROR_NOT_READY", "fake driver: device not ready"},
};

static int error_text(int result, const char **out, int want_name) {
  if (out == NULL) return 1;
  *out = NULL;
  for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
    if (errors[i].result == result) *out = want_name ? errors[i].name : errors[i].text;
  return *out != NULL ? 0 : 1;
}
int cuGetErrorName(int result, const char **name) {
  ENTER();
  return error_text(result, name, 1);
}
int cuGetErrorString(int result, const char **text) {
  ENTER();
  return error_text(result, text, 0);
}

#if FAKE_BOOTSTRAP > 0
typedef void (*any_fn)(void);
/* Every ABI of every function: base name, the version that introduced it, the export. */
#define V(name, since, fn) \
  { name, since, (any_fn)fn }
static const struct {
  const char *name;
  int since;
  any_fn fn;
} variants[] = {
    V("cuInit", 2000, cuInit),
    V("cuDriverGetVersion", 2020, cuDriverGetVersion),
    V("cuDeviceGetCount", 2000, cuDeviceGetCount),
    V("cuDeviceGet", 2000, cuDeviceGet),
    V("cuDeviceGetName", 2000, cuDeviceGetName),
    V("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    V("cuDeviceTotalMem", 2000, cuDeviceTotalMem),
    V("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    V("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
    V("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
    V("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    V("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    V("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    V("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    V("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    V("cuCtxGetDevice", 2000, cuCtxGetDevice),
    V("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    V("cuCtxSynchronize", 2000, cuCtxSynchronize),
    V("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    V("cuStreamCreate", 2000, cuStreamCreate),
    V("cuStreamDestroy", 2000, cuStreamDestroy),
    V("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    V("cuStreamSynchronize", 2000, cuStreamSynchronize),
    V("cuStreamQuery", 2000, cuStreamQuery),
    V("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    V("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
    V("cuEventCreate", 2000, cuEventCreate),
    V("cuEventDestroy", 2000, cuEventDestroy),
    V("cuEventDestroy", 4000, cuEventDestroy_v2),
    V("cuEventRecord", 2000, cuEventRecord),
    V("cuEventQuery", 2000, cuEventQuery),
    V("cuEventSynchronize", 2000, cuEventSynchronize),
    V("cuEventElapsedTime", 2000, cuEventElapsedTime),
    V("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    V("cuMemAlloc", 2000, cuMemAlloc),
    V("cuMemAlloc", 3020, cuMemAlloc_v2),
    V("cuMemFree", 2000, cuMemFree),
    V("cuMemFree", 3020, cuMemFree_v2),
    V("cuMemcpyHtoD", 2000, cuMemcpyHtoD),
    V("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    V("cuMemcpyDtoH", 2000, cuMemcpyDtoH),
    V("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    V("cuMemsetD8", 2000, cuMemsetD8),
    V("cuMemsetD8", 3020, cuMemsetD8_v2),
    V("cuMemGetInfo", 2000, cuMemGetInfo),
    V("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    V("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    V("cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer),
    V("cuGetErrorName", 6000, cuGetErrorName),
    V("cuGetErrorString", 6000, cuGetErrorString),
};

/* The driver's rules (docs/cuda.md): a version above the driver's is INVALID_VALUE; else the
 * newest ABI introduced at or before the version asked. Not found: the _v2 entry answers 0
 * with NULL and a symbol status, the 11.3 entry answers NOT_FOUND. */
static int proc_address(const char *symbol, void **pfn, int version, unsigned long long flags,
                        int *symbol_status, int is_v2) {
  int rc = 0;
  if (FAKE_STUB) {
    rc = 34;
  } else if (symbol == NULL || pfn == NULL || version > FAKE_DRIVER_VERSION || flags > 2) {
    rc = 1;
  } else {
    int best = -1, known = 0;
    for (int i = 0; i < (int)(sizeof(variants) / sizeof(variants[0])); i++) {
      if (strcmp(variants[i].name, symbol) != 0) continue;
      known = 1;
      if (variants[i].since <= version && (best < 0 || variants[i].since > variants[best].since))
        best = i;
    }
    if (best >= 0) {
      memcpy(pfn, &variants[best].fn, sizeof(*pfn));
      if (symbol_status) *symbol_status = 0;
    } else if (is_v2) {
      *pfn = NULL;
      if (symbol_status) *symbol_status = known ? 2 : 1;
    } else {
      rc = 500;
    }
  }
  if (fake_log.request_count < FAKE_CUDA_LOG_SIZE) {
    fake_cuda_request *r = &fake_log.requests[fake_log.request_count++];
    snprintf(r->symbol, sizeof(r->symbol), "%s", symbol ? symbol : "(null)");
    r->version = version;
    r->flags = flags;
    r->result = rc;
  }
  return rc;
}

int cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags) {
  return proc_address(symbol, pfn, version, flags, NULL, 0);
}
#endif

#if FAKE_BOOTSTRAP > 1
int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                        int *symbol_status) {
  return proc_address(symbol, pfn, version, flags, symbol_status, 1);
}
#endif
