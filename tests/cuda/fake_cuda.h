/* What the fake libcuda.so.1 (fake_cuda.c) exports for the tests to read, through the fake's
 * own handle (dlopen(path, RTLD_NOLOAD) + dlsym). */
#ifndef NCCLSHIM_TEST_FAKE_CUDA_H
#define NCCLSHIM_TEST_FAKE_CUDA_H

enum { FAKE_CUDA_LOG_SIZE = 256, FAKE_CUDA_NAME_SIZE = 48 };

/* One cuGetProcAddress request, as asked. */
typedef struct fake_cuda_request {
  char symbol[FAKE_CUDA_NAME_SIZE];
  int version;
  unsigned long long flags;
  int result; /* what the fake answered */
} fake_cuda_request;

typedef struct fake_cuda_log {
  fake_cuda_request requests[FAKE_CUDA_LOG_SIZE];
  int request_count;
  char calls[FAKE_CUDA_LOG_SIZE][FAKE_CUDA_NAME_SIZE]; /* exported name of each call */
  int call_count;
} fake_cuda_log;

typedef struct fake_cuda_control {
  int not_ready;         /* cuStreamQuery answers NOT_READY (600) this many more times */
  int failing_attribute; /* cuDeviceGetAttribute answers UNKNOWN (999) for this one */
} fake_cuda_control;

/* Exported objects: "fake_cuda_log" (fake_cuda_log) and "fake_cuda_control". */

#endif
