/* The fake driver's devices, contexts and memory: FAKE_CUDA_DEVICES devices, one primary
 * context each, current per thread on a stack (cuCtxSetCurrent replaces its top,
 * cuCtxPushCurrent and cuCtxPopCurrent push and pop); "device" memory is host memory. A
 * context is needed where the real driver needs one, cuInit (in this process: not in a forked
 * child, as with the driver) before anything but cuInit and cuDriverGetVersion. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda_state.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define EXPORT __attribute__((visibility("default")))

enum { STACK = 16 };

pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
atomic_int fake_init_pid;

static struct CUctx_st contexts[FAKE_CUDA_DEVICES];
static _Thread_local CUcontext stack[STACK];
static _Thread_local int depth;

_Noreturn void fake_die(const char *call, const char *what, const void *handle) {
  fprintf(stderr, "fake cuda: call %s with %s %p\n", call, what, handle);
  fflush(stderr);
  abort();
}

long long fake_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

void fake_sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (ms > 0 && nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

int fake_initialized(void) { return fake_init_pid == (int)getpid(); }

CUcontext fake_current(void) { return depth > 0 ? stack[depth - 1] : NULL; }

static int is_context(CUcontext ctx) {
  for (int i = 0; i < FAKE_CUDA_DEVICES; i++)
    if (ctx == &contexts[i]) return 1;
  return 0;
}

void fake_reset_contexts(void) {
  for (int i = 0; i < FAKE_CUDA_DEVICES; i++) contexts[i] = (struct CUctx_st){i, 0};
  depth = 0;
}

#define BAD_DEVICE(dev) ((dev) < 0 || (dev) >= FAKE_CUDA_DEVICES)
#define NEED_INIT()                    \
  do {                                 \
    if (!fake_initialized()) return 3; \
  } while (0)
/* The calling thread's current context in `ctx`, or the call answers 3 or 201. */
#define NEED_CTX(ctx)              \
  CUcontext ctx = fake_current();  \
  do {                             \
    NEED_INIT();                   \
    if ((ctx) == NULL) return 201; \
  } while (0)

/* The driver's own thread, which the real one starts at cuInit: it waits for nothing. With
 * it the program's libc knows the process is multi-threaded, as it does with the real
 * driver, so that its locks stay atomic when a thread it did not create (one started from
 * an LD_AUDIT library's own namespace) calls in. */
static void *driver_thread(void *unused) {
  (void)unused;
  for (;;) pause();
  return NULL;
}

ncclshim_cu_result fake_cuInit(unsigned int flags) {
  if (flags != 0) return 1;
  if (FAKE_INIT_RESULT != 0) return FAKE_INIT_RESULT;
  pthread_mutex_lock(&fake_lock);
  int forked = fake_init_pid != 0 && !fake_initialized();
  if (!forked) fake_init_pid = (int)getpid();
  pthread_mutex_unlock(&fake_lock);
  static atomic_int started;
  pthread_t thread;
  if (!forked && !atomic_exchange(&started, 1) &&
      pthread_create(&thread, NULL, driver_thread, NULL) == 0)
    pthread_detach(thread);
  return forked ? 3 : 0;
}

ncclshim_cu_result fake_cuDriverGetVersion(int *driverVersion) {
  if (driverVersion == NULL) return 1;
  *driverVersion = FAKE_DRIVER_VERSION;
  return 0;
}

ncclshim_cu_result fake_cuDeviceGetCount(int *count) {
  NEED_INIT();
  *count = FAKE_CUDA_DEVICES;
  return 0;
}

ncclshim_cu_result fake_cuDeviceGet(CUdevice *device, int ordinal) {
  NEED_INIT();
  if (BAD_DEVICE(ordinal)) return 101;
  *device = ordinal;
  return 0;
}

ncclshim_cu_result fake_cuDeviceGetName(char *name, int len, CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  snprintf(name, (size_t)len, "Fake GPU %d", dev);
  return 0;
}

ncclshim_cu_result fake_cuDeviceGetAttribute(int *pi, ncclshim_cu_device_attribute attrib,
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

ncclshim_cu_result fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  *bytes = (size_t)(80 + dev) << 30;
  return 0;
}

ncclshim_cu_result fake_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  for (int i = 0; i < 16; i++) uuid->bytes[i] = (char)(16 * dev + i);
  return 0;
}

ncclshim_cu_result fake_cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev) {
  NEED_INIT();
  if (BAD_DEVICE(dev) || BAD_DEVICE(peerDev)) return 101;
  *canAccessPeer = dev != peerDev;
  return 0;
}

ncclshim_cu_result fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  pthread_mutex_lock(&fake_lock);
  contexts[dev].retained++;
  pthread_mutex_unlock(&fake_lock);
  *pctx = &contexts[dev];
  return 0;
}

ncclshim_cu_result fake_cuDevicePrimaryCtxRelease(CUdevice dev) {
  NEED_INIT();
  if (BAD_DEVICE(dev)) return 101;
  pthread_mutex_lock(&fake_lock);
  int rc = contexts[dev].retained == 0 ? 201 : 0;
  if (rc == 0) contexts[dev].retained--;
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

ncclshim_cu_result fake_cuCtxSetCurrent(CUcontext ctx) {
  NEED_INIT();
  if (ctx != NULL && !is_context(ctx)) return 201;
  if (depth == 0 && ctx != NULL)
    stack[depth++] = ctx;
  else if (depth > 0 && ctx != NULL)
    stack[depth - 1] = ctx;
  else if (depth > 0)
    depth--; /* NULL pops, as the driver documents */
  return 0;
}

ncclshim_cu_result fake_cuCtxGetCurrent(CUcontext *pctx) {
  NEED_INIT();
  if (pctx == NULL) return 1;
  *pctx = fake_current();
  return 0;
}

ncclshim_cu_result fake_cuCtxPushCurrent(CUcontext ctx) {
  NEED_INIT();
  if (ctx == NULL || !is_context(ctx)) return 201;
  if (depth == STACK) return 2;
  stack[depth++] = ctx;
  return 0;
}

ncclshim_cu_result fake_cuCtxPopCurrent(CUcontext *pctx) {
  NEED_INIT();
  if (depth == 0) return 201;
  CUcontext top = stack[--depth];
  if (pctx != NULL) *pctx = top;
  return 0;
}

ncclshim_cu_result fake_cuCtxGetDevice(CUdevice *device) {
  NEED_CTX(ctx);
  *device = ctx->device;
  return 0;
}

ncclshim_cu_result fake_cuCtxSynchronize(void) {
  NEED_CTX(ctx);
  return 0;
}

/* ---- Memory: host memory, each block remembered so that frees are checked -------------- */

static void **blocks;
static int block_count, block_room;

static int block_index(void *p) { /* under the lock */
  for (int i = 0; i < block_count; i++)
    if (blocks[i] == p) return i;
  return -1;
}

void fake_reset_memory(void) {
  for (int i = 0; i < block_count; i++) free(blocks[i]);
  block_count = 0;
}

#define HOST(dptr) ((void *)(uintptr_t)(dptr))

ncclshim_cu_result fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
  NEED_CTX(ctx);
  if (bytesize == 0) return 1;
  void *memory = malloc(bytesize);
  if (memory == NULL) return 2;
  pthread_mutex_lock(&fake_lock);
  if (block_count == block_room) {
    int room = block_room ? 2 * block_room : 64;
    void **grown = realloc(blocks, (size_t)room * sizeof(*grown));
    if (grown == NULL) {
      pthread_mutex_unlock(&fake_lock);
      free(memory);
      return 2;
    }
    blocks = grown;
    block_room = room;
  }
  blocks[block_count++] = memory;
  pthread_mutex_unlock(&fake_lock);
  *dptr = (CUdeviceptr)(uintptr_t)memory;
  return 0;
}

ncclshim_cu_result fake_cuMemFree(CUdeviceptr dptr) {
  NEED_CTX(ctx);
  pthread_mutex_lock(&fake_lock);
  int i = block_index(HOST(dptr));
  if (i >= 0) blocks[i] = blocks[--block_count];
  pthread_mutex_unlock(&fake_lock);
  if (i < 0) return 1; /* not an allocation of this driver */
  free(HOST(dptr));
  return 0;
}

EXPORT int fake_cuda_live_allocations(void) {
  pthread_mutex_lock(&fake_lock);
  int n = block_count;
  pthread_mutex_unlock(&fake_lock);
  return n;
}

EXPORT void fake_cuda_free_all(void) {
  pthread_mutex_lock(&fake_lock);
  fake_reset_memory();
  pthread_mutex_unlock(&fake_lock);
}

ncclshim_cu_result fake_cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t byteCount) {
  NEED_CTX(ctx);
  memcpy(HOST(dstDevice), srcHost, byteCount);
  return 0;
}

ncclshim_cu_result fake_cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t byteCount) {
  NEED_CTX(ctx);
  memcpy(dstHost, HOST(srcDevice), byteCount);
  return 0;
}

ncclshim_cu_result fake_cuMemsetD8(CUdeviceptr dstDevice, unsigned char value, size_t count) {
  NEED_CTX(ctx);
  memset(HOST(dstDevice), value, count);
  return 0;
}

ncclshim_cu_result fake_cuMemGetInfo(size_t *freeBytes, size_t *totalBytes) {
  NEED_CTX(ctx);
  *freeBytes = (size_t)70 << 30;
  *totalBytes = (size_t)80 << 30;
  return 0;
}

ncclshim_cu_result fake_cuPointerGetAttribute(void *data, ncclshim_cu_pointer_attribute attribute,
                                              CUdeviceptr ptr) {
  NEED_CTX(ctx);
  if (attribute != NCCLSHIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return 1;
  *(int *)data = ctx->device;
  return 0;
}

/* ---- Error texts: differ from ncclshim's table, so the tests can tell whose they got ---- */

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
ncclshim_cu_result fake_cuGetErrorName(ncclshim_cu_result error, const char **pStr) {
  return error_text(error, pStr, 1);
}
ncclshim_cu_result fake_cuGetErrorString(ncclshim_cu_result error, const char **pStr) {
  return error_text(error, pStr, 0);
}

/* ---- Controls ---------------------------------------------------------------------------- */

EXPORT CUcontext fake_cuda_context(int device) {
  return BAD_DEVICE(device) ? NULL : &contexts[device];
}

EXPORT int fake_cuda_use_device(int device) {
  CUcontext ctx = NULL;
  ncclshim_cu_result rc = fake_cuInit(0);
  if (rc == 0) rc = fake_cuDevicePrimaryCtxRetain(&ctx, device);
  if (rc == 0) rc = fake_cuCtxSetCurrent(ctx);
  return rc;
}
