/* CUresult names and texts: the driver's own when it can give them, else ncclshim's table
 * (which is all there is without a driver, and for the stub's 34, whose text the stub itself
 * cannot give: its cuGetErrorName answers 34 too). */
#include <stddef.h>

#include "cuda_handle.h"

/* X(value, name, the driver's text) */
#define CUDA_RESULTS(X)                                                                     \
  X(0, CUDA_SUCCESS, "no error")                                                            \
  X(1, CUDA_ERROR_INVALID_VALUE, "invalid argument")                                        \
  X(2, CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                           \
  X(3, CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                  \
  X(4, CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                    \
  X(34, CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library")                           \
  X(36, CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "API call requires a newer CUDA driver")     \
  X(46, CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable") \
  X(100, CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                        \
  X(101, CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                               \
  X(201, CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                              \
  X(400, CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                              \
  X(500, CUDA_ERROR_NOT_FOUND, "named symbol not found")                                    \
  X(600, CUDA_ERROR_NOT_READY, "device not ready")                                          \
  X(700, CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")            \
  X(801, CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                               \
  X(803, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,                                                 \
    "system has unsupported display driver / cuda driver combination")                      \
  X(804, CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,                                         \
    "forward compatibility was attempted on non supported HW")                              \
  X(900, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,                                             \
    "operation not permitted when stream is capturing")                                     \
  X(901, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,                                             \
    "operation failed due to a previous error during capture")                              \
  X(906, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,                                                \
    "operation would make the legacy stream depend on a capturing blocking stream")         \
  X(907, CUDA_ERROR_CAPTURED_EVENT,                                                         \
    "operation not permitted on an event last recorded in a capturing stream")              \
  X(908, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,                                            \
    "attempt to terminate a thread-local capture sequence from another thread")             \
  X(999, CUDA_ERROR_UNKNOWN, "unknown error")

typedef struct known_result {
  int value;
  const char *name;
  const char *text;
} known_result;

#define KNOWN_(value, name, text) {value, #name, text},
static const known_result known[] = {CUDA_RESULTS(KNOWN_)};

static const known_result *lookup(int result) {
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
    if (known[i].value == result) return &known[i];
  return NULL;
}

const char *ncs_cuda_builtin_name(int result) {
  const known_result *k = lookup(result);
  return k ? k->name : NULL;
}

const char *ncs_cuda_builtin_string(int result) {
  const known_result *k = lookup(result);
  return k ? k->text : NULL;
}

/* The driver's answer through `fn` (cuGetErrorName or cuGetErrorString), else NULL. */
static const char *from_driver(const ncclshim_cuda *cuda, enum ncclshim_cuda_function fn,
                               int result) {
  if (cuda == NULL || cuda->core.status != NCCLSHIM_OK || cuda->abi[fn] == 0) return NULL;
  const char *text = NULL;
  ncclshim_cu_result rc = fn == NCCLSHIM_CUDA_FN_cuGetErrorName
                              ? cuda->table.cuGetErrorName(result, &text)
                              : cuda->table.cuGetErrorString(result, &text);
  return rc == NCCLSHIM_CUDA_SUCCESS ? text : NULL;
}

const char *ncclshim_cuda_result_name(const ncclshim_cuda *cuda, int result) {
  const char *name = from_driver(cuda, NCCLSHIM_CUDA_FN_cuGetErrorName, result);
  if (name == NULL) name = ncs_cuda_builtin_name(result);
  return name ? name : "CUDA_ERROR_UNRECOGNIZED";
}

const char *ncclshim_cuda_result_string(const ncclshim_cuda *cuda, int result) {
  const char *text = from_driver(cuda, NCCLSHIM_CUDA_FN_cuGetErrorString, result);
  if (text == NULL) text = ncs_cuda_builtin_string(result);
  return text ? text : "unrecognized CUDA error code";
}
