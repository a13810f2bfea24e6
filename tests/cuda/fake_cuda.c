/* A fake libcuda.so.1 for the tests, built in several variants by -D macros:
 *   FAKE_DRIVER_VERSION  what cuDriverGetVersion answers (11020, 13000, ...)
 *   FAKE_BOOTSTRAP       0: no cuGetProcAddress at all (drivers < 11.3); 1: only the 11.3
 *                        4-argument cuGetProcAddress; 2: that and cuGetProcAddress_v2 (12.0+)
 *   FAKE_STUB            1: every function answers CUDA_ERROR_STUB_LIBRARY (34), as the
 *                        toolkit's stub does
 *   FAKE_INIT_RESULT     what cuInit answers when it does not succeed (100: no device)
 * The exports and cuGetProcAddress's table are generated from ncclshim's list
 * (NCCLSHIM_CUDA_FUNCTIONS, include/ncclshim/cuda_functions.h), as the fake NCCL is from its
 * list: a BASE row is exported under its name, a V2 row as NAME_v2 and, for the old ABI, as
 * NAME, which answers 999 ("wrong ABI": a correct binding never calls it) unless
 * NCCLSHIM_CUDA_OLDER_ABIS says its signature is the same. Each export logs its call by
 * exported name and calls the row's behaviour, fake_NAME, written below with the row's
 * parameters: a new row needs only its fake_NAME (the build names a missing one). Like the
 * real driver, cuGetProcAddress refuses a request above its own version and gives the newest
 * ABI at or before the version asked. Two devices; "device" memory is host memory; a context
 * is needed where the real driver needs one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "ncclshim/cuda_functions.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

enum { DEVICES = 2, STUB_LIBRARY = 34, WRONG_ABI = 999 };

fake_cuda_log fake_log;
fake_cuda_control fake_control;

static void record_call(const char *name) {
  if (fake_log.call_count < FAKE_CUDA_LOG_SIZE)
    snprintf(fake_log.calls[fake_log.call_count++], FAKE_CUDA_NAME_SIZE, "%s", name);
}

/* Each row's behaviour, declared from the list: a definition below with other parameter
 * types does not compile. */
#define DECLARE_(name, ask, policy, abi, n, params) \
  static ncclshim_cu_result fake_##name NCCLSHIM_PP_PARAMS(n, params);
NCCLSHIM_CUDA_FUNCTIONS(DECLARE_)

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

#define NEED_INIT()                          \
  do {                                       \
    if (init_pid != (int)getpid()) return 3; \
  } while (0)
#define NEED_CTX()                   \
  do {                               \
    NEED_INIT();                     \
    if (current == NULL) return 201; \
  } while (0)
#define BAD_DEVICE(dev) ((dev) < 0 || (dev) >= DEVICES)

static ncclshim_cu_result fake_cuInit(unsigned int flags) {
  if (flags != 0) return 1;
  if (FAKE_INIT_RESULT != 0) return FAKE_INIT_RESULT;
  if (init_pid != 0 && init_pid != (int)getpid()) return 3;
  init_pid = (int)getpid();
  return 0;
}

static ncclshim_cu_result fake_cuDriverGetVersion(int *driverVersion) {
  if (driverVersion == NULL) return 1;
  *driverVersion = FAKE_DRIVER_VERSION;
  return 0;
}

static ncclshim_cu_result fake_cuDeviceGetCount(int *count) {
  NEED_INIT();
  *count = DEVICES;
  return 0;
}

static ncclshim_cu_result fake_cuDeviceGet(CUdevice *device, int ordinal) {
  NEED_INIT();
  if (BAD_DEVICE(ordinal)) return 101;
  *device = ordinal;
  return 0;
}

static ncclshim_cu_result fake_cuDeviceGetName(char *name, int len, CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  snprintf(name, (size_t)len, "Fake GPU %d", dev);
  return 0;
}

static ncclshim_cu_result fake_cuDeviceGetAttribute(int *pi, ncclshim_cu_device_attribute attrib,
                                                    CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  if (attrib == fake_control.failing_attribute) return 999;
  /* {attribute, first driver that knows it, device 0's value, device 1's} */
  static const int known[][4] = {
      {75, 2000, 9, 8},       {76, 2000, 0, 6},   {16, 2000, 132, 84}, {50, 2000, 0, 1},
      {33, 2000, 0x1b, 0x2c}, {34, 2000, 0, 3},   {102, 10020, 1, 1},  {103, 10020, 1, 0},
      {116, 11030, 1, 0},     {128, 12030, 1, 0}, {132, 12010, 0, 1},
  };
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
    if (known[i][0] == attrib && known[i][1] <= FAKE_DRIVER_VERSION) {
      *pi = known[i][2 + dev];
      return 0;
    }
  }
  return 1; /* an attribute this driver does not know */
}

static ncclshim_cu_result fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  *bytes = (size_t)(80 + dev) << 30;
  return 0;
}

static ncclshim_cu_result fake_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  for (int i = 0; i < 16; i++) uuid->bytes[i] = (char)(16 * dev + i);
  return 0;
}

static ncclshim_cu_result fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  contexts[dev].retained++;
  *pctx = &contexts[dev];
  return 0;
}

static ncclshim_cu_result fake_cuDevicePrimaryCtxRelease(CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  if (contexts[dev].retained == 0) return 201;
  contexts[dev].retained--;
  return 0;
}

static ncclshim_cu_result fake_cuCtxSetCurrent(CUcontext ctx) {
  NEED_INIT();
  current = ctx;
  return 0;
}

static ncclshim_cu_result fake_cuCtxGetCurrent(CUcontext *pctx) {
  NEED_INIT();
  *pctx = current;
  return 0;
}

static ncclshim_cu_result fake_cuCtxGetDevice(CUdevice *device) {
  NEED_CTX();
  *device = current->device;
  return 0;
}

static ncclshim_cu_result fake_cuCtxSynchronize(void) {
  NEED_CTX();
  return 0;
}

/* A stream's or event's zeroed object in *handle: 0, or 2 (CUDA_ERROR_OUT_OF_MEMORY). */
#define NEW_HANDLE(handle) ((*(handle) = calloc(1, sizeof(**(handle)))) == NULL ? 2 : 0)

/* The object of a stream or event freed: 0, or 400 (CUDA_ERROR_INVALID_HANDLE) for none. */
static ncclshim_cu_result free_handle(void *object) {
  if (object == NULL) return 400;
  free(object);
  return 0;
}

static ncclshim_cu_result fake_cuStreamCreate(CUstream *phStream, unsigned int flags) {
  NEED_CTX();
  if (flags > NCCLSHIM_CU_STREAM_NON_BLOCKING) return 1;
  return NEW_HANDLE(phStream);
}

static ncclshim_cu_result fake_cuStreamDestroy(CUstream hStream) {
  NEED_CTX();
  return free_handle(hStream);
}

static ncclshim_cu_result fake_cuStreamSynchronize(CUstream hStream) {
  NEED_CTX();
  fake_control.not_ready = 0;
  return 0;
}

static ncclshim_cu_result fake_cuStreamQuery(CUstream hStream) {
  NEED_CTX();
  if (fake_control.not_ready > 0) {
    fake_control.not_ready--;
    return 600;
  }
  return 0;
}

static ncclshim_cu_result fake_cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                                                 unsigned int flags) {
  NEED_CTX();
  if (flags != 0) return 1;
  return hEvent != NULL ? 0 : 400;
}

static ncclshim_cu_result fake_cuStreamIsCapturing(
    CUstream hStream, ncclshim_cu_stream_capture_status *captureStatus) {
  NEED_CTX();
  *captureStatus = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE;
  return 0;
}

static ncclshim_cu_result fake_cuThreadExchangeStreamCaptureMode(int *mode) {
  static _Thread_local int thread_mode; /* the driver's is per thread too */
  if (mode == NULL || *mode < 0 || *mode > NCCLSHIM_CU_STREAM_CAPTURE_MODE_RELAXED) return 1;
  int previous = thread_mode;
  thread_mode = *mode;
  *mode = previous;
  return 0;
}

static ncclshim_cu_result fake_cuEventCreate(CUevent *phEvent, unsigned int flags) {
  NEED_CTX();
  return NEW_HANDLE(phEvent);
}

static ncclshim_cu_result fake_cuEventDestroy(CUevent hEvent) {
  NEED_CTX();
  return free_handle(hEvent);
}

static ncclshim_cu_result fake_cuEventRecord(CUevent hEvent, CUstream hStream) {
  NEED_CTX();
  if (hEvent == NULL) return 400;
  hEvent->recorded = 1;
  return 0;
}

static ncclshim_cu_result fake_cuEventQuery(CUevent hEvent) {
  NEED_CTX();
  return hEvent != NULL ? 0 : 400;
}

static ncclshim_cu_result fake_cuEventSynchronize(CUevent hEvent) {
  NEED_CTX();
  return hEvent != NULL ? 0 : 400;
}

/* Both ABIs are real (NCCLSHIM_CUDA_OLDER_ABIS): the old one is what drivers before 12.8
 * offer. */
static ncclshim_cu_result fake_cuEventElapsedTime(float *pMilliseconds, CUevent hStart,
                                                  CUevent hEnd) {
  NEED_CTX();
  if (hStart == NULL || hEnd == NULL || !hStart->recorded || !hEnd->recorded) return 400;
  *pMilliseconds = 0.5f;
  return 0;
}

#define HOST(dptr) ((void *)(uintptr_t)(dptr))

static ncclshim_cu_result fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
  NEED_CTX();
  void *memory = malloc(bytesize);
  if (memory == NULL) return 2;
  *dptr = (CUdeviceptr)(uintptr_t)memory;
  return 0;
}

static ncclshim_cu_result fake_cuMemFree(CUdeviceptr dptr) {
  NEED_CTX();
  free(HOST(dptr));
  return 0;
}

static ncclshim_cu_result fake_cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost,
                                            size_t byteCount) {
  NEED_CTX();
  memcpy(HOST(dstDevice), srcHost, byteCount);
  return 0;
}

static ncclshim_cu_result fake_cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice,
                                            size_t byteCount) {
  NEED_CTX();
  memcpy(dstHost, HOST(srcDevice), byteCount);
  return 0;
}

/* The fake runs no work: a copy on a stream happens at once. */
static ncclshim_cu_result fake_cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost,
                                                 size_t byteCount, CUstream hStream) {
  NEED_CTX();
  memcpy(HOST(dstDevice), srcHost, byteCount);
  return 0;
}

static ncclshim_cu_result fake_cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice,
                                                 size_t byteCount, CUstream hStream) {
  NEED_CTX();
  memcpy(dstHost, HOST(srcDevice), byteCount);
  return 0;
}

static ncclshim_cu_result fake_cuMemsetD8(CUdeviceptr dstDevice, unsigned char value,
                                          size_t count) {
  NEED_CTX();
  memset(HOST(dstDevice), value, count);
  return 0;
}

static ncclshim_cu_result fake_cuMemGetInfo(size_t *freeBytes, size_t *totalBytes) {
  NEED_CTX();
  *freeBytes = (size_t)70 << 30;
  *totalBytes = (size_t)80 << 30;
  return 0;
}

static ncclshim_cu_result fake_cuPointerGetAttribute(void *data,
                                                     ncclshim_cu_pointer_attribute attribute,
                                                     CUdeviceptr ptr) {
  NEED_CTX();
  if (attribute != NCCLSHIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return 1;
  *(int *)data = current->device;
  return 0;
}

static ncclshim_cu_result fake_cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev,
                                                     CUdevice peerDev) {
  NEED_INIT();
  if (BAD_DEVICE(dev) || BAD_DEVICE(peerDev)) return 101;
  *canAccessPeer = dev != peerDev;
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
static ncclshim_cu_result fake_cuGetErrorName(ncclshim_cu_result error, const char **pStr) {
  return error_text(error, pStr, 1);
}
static ncclshim_cu_result fake_cuGetErrorString(ncclshim_cu_result error, const char **pStr) {
  return error_text(error, pStr, 0);
}

/* ---- Generated from the list: the exports ------------------------------------------------ */

#define OLDER_(name, ask, abi) #name,
static const char *const same_signature_older[] = {NCCLSHIM_CUDA_OLDER_ABIS(OLDER_)};

/* Whether `name`'s old ABI has the row's signature (then it is real, not "wrong ABI"). */
static int older_is_real(const char *name) {
  for (size_t i = 0; i < sizeof(same_signature_older) / sizeof(same_signature_older[0]); i++)
    if (strcmp(same_signature_older[i], name) == 0) return 1;
  return 0;
}

#define CALL_(name, n, params) (FAKE_STUB ? STUB_LIBRARY : fake_##name NCCLSHIM_PP_ARGS(n, params))
#define EXPORT_BASE_(name, n, params)                     \
  ncclshim_cu_result name NCCLSHIM_PP_PARAMS(n, params) { \
    record_call(#name);                                   \
    return CALL_(name, n, params);                        \
  }
/* The old ABI's export takes the new parameters: when they differ it reads none of them. */
#define EXPORT_V2_(name, n, params)                                   \
  ncclshim_cu_result name##_v2 NCCLSHIM_PP_PARAMS(n, params) {        \
    record_call(#name "_v2");                                         \
    return CALL_(name, n, params);                                    \
  }                                                                   \
  ncclshim_cu_result name NCCLSHIM_PP_PARAMS(n, params) {             \
    record_call(#name);                                               \
    return older_is_real(#name) ? CALL_(name, n, params) : WRONG_ABI; \
  }
#define EXPORT_(name, ask, policy, abi, n, params) EXPORT_##abi##_(name, n, params)
NCCLSHIM_CUDA_FUNCTIONS(EXPORT_)

/* ABIs newer than the ones the list asks for (CUDA 13.0's): a correct binding never gets
 * them. */
ncclshim_cu_result cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  record_call(__func__);
  return WRONG_ABI;
}
ncclshim_cu_result cuCtxSynchronize_v2(CUcontext ctx) {
  record_call(__func__);
  return WRONG_ABI;
}

#if FAKE_BOOTSTRAP > 0
typedef void (*any_fn)(void);
/* Every ABI of every function: base name, the version that introduced it, the export. A V2
 * row's old ABI is given the first driver API's version, 2.0: the binding asks for a row's
 * version or an older ABI's (NCCLSHIM_CUDA_OLDER_ABIS), never one in between. */
#define VARIANT_BASE_(name, ask) {#name, ask, (any_fn)name},
#define VARIANT_V2_(name, ask) {#name, 2000, (any_fn)name}, {#name, ask, (any_fn)name##_v2},
#define VARIANT_(name, ask, policy, abi, n, params) VARIANT_##abi##_(name, ask)
static const struct {
  const char *name;
  int since;
  any_fn fn;
} variants[] = {
    NCCLSHIM_CUDA_FUNCTIONS(VARIANT_){"cuCtxGetDevice", 13000, (any_fn)cuCtxGetDevice_v2},
    {"cuCtxSynchronize", 13000, (any_fn)cuCtxSynchronize_v2},
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
