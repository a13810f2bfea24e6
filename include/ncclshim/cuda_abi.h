/* The CUDA driver types and numbers ncclshim needs, written from the driver's ABI (see
 * docs/cuda.md) so that nothing here needs cuda.h.
 *
 * cuda.h may be included before or after this header. The result type, enums and constants
 * carry ncclshim names (cuda.h owns CUresult and the CU_* enumerators); the handle types use
 * CUDA's own names, because C11 lets two headers repeat an identical typedef. */
#ifndef NCCLSHIM_CUDA_ABI_H
#define NCCLSHIM_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

#if !defined(__LP64__)
#error "ncclshim's CUDA binding assumes LP64 (CUdeviceptr is 64 bits)"
#endif

/* ---- Handles: identical to cuda.h's typedefs ------------------------------------------ */

typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef int CUdevice;                   /* an ordinal-like handle, not a pointer */
typedef unsigned long long CUdeviceptr; /* the _v2 ABI's 64-bit device address */
#ifndef CU_UUID_HAS_BEEN_DEFINED
#define CU_UUID_HAS_BEEN_DEFINED
typedef struct CUuuid_st {
  char bytes[16]; /* raw octets */
} CUuuid;
#endif

/* ---- CUresult ------------------------------------------------------------------------ */

typedef int ncclshim_cu_result; /* CUresult, an int-sized enum */

#define NCCLSHIM_CUDA_SUCCESS 0
#define NCCLSHIM_CUDA_ERROR_INVALID_VALUE 1
#define NCCLSHIM_CUDA_ERROR_OUT_OF_MEMORY 2
#define NCCLSHIM_CUDA_ERROR_NOT_INITIALIZED 3
#define NCCLSHIM_CUDA_ERROR_DEINITIALIZED 4
#define NCCLSHIM_CUDA_ERROR_STUB_LIBRARY 34 /* the toolkit's link-time stub, not a driver */
#define NCCLSHIM_CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER 36
#define NCCLSHIM_CUDA_ERROR_DEVICE_UNAVAILABLE 46
#define NCCLSHIM_CUDA_ERROR_NO_DEVICE 100
#define NCCLSHIM_CUDA_ERROR_INVALID_DEVICE 101
#define NCCLSHIM_CUDA_ERROR_INVALID_CONTEXT 201
#define NCCLSHIM_CUDA_ERROR_INVALID_HANDLE 400
#define NCCLSHIM_CUDA_ERROR_NOT_FOUND 500
#define NCCLSHIM_CUDA_ERROR_NOT_READY 600 /* work still pending: not an error */
#define NCCLSHIM_CUDA_ERROR_ILLEGAL_ADDRESS 700
#define NCCLSHIM_CUDA_ERROR_CONTEXT_IS_DESTROYED 709 /* also: a destroyed event, used */
#define NCCLSHIM_CUDA_ERROR_NOT_SUPPORTED 801
#define NCCLSHIM_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH 803
#define NCCLSHIM_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE 804
/* Stream capture (CUDA graphs): what a call that a capture forbids, or an event recorded in
 * one, answers. 900 .. 908 are all capture-related. */
#define NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
#define NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901
#define NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_IMPLICIT 906 /* the legacy stream, during a capture */
#define NCCLSHIM_CUDA_ERROR_CAPTURED_EVENT 907          /* an event last recorded in a capture */
#define NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD 908
#define NCCLSHIM_CUDA_ERROR_UNKNOWN 999

/* ---- Enums, as ints -------------------------------------------------------------------- */

typedef int ncclshim_cu_device_attribute; /* CUdevice_attribute */
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID 33
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID 34 /* the slot on the bus */
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING 41
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID 50
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED 102
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED 103
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED 115
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED 116
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED 128
#define NCCLSHIM_CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED 132

typedef int ncclshim_cu_pointer_attribute;                /* CUpointer_attribute */
#define NCCLSHIM_CU_POINTER_ATTRIBUTE_CONTEXT 1           /* writes a CUcontext */
#define NCCLSHIM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2       /* writes an unsigned int */
#define NCCLSHIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9    /* writes an int */
#define NCCLSHIM_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11 /* writes a CUdeviceptr */
#define NCCLSHIM_CU_POINTER_ATTRIBUTE_RANGE_SIZE 12       /* writes a size_t */

#define NCCLSHIM_CU_MEMORYTYPE_HOST 1
#define NCCLSHIM_CU_MEMORYTYPE_DEVICE 2
#define NCCLSHIM_CU_MEMORYTYPE_ARRAY 3
#define NCCLSHIM_CU_MEMORYTYPE_UNIFIED 4

typedef int ncclshim_cu_stream_capture_status; /* CUstreamCaptureStatus */
#define NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE 0
#define NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE 1
#define NCCLSHIM_CU_STREAM_CAPTURE_STATUS_INVALIDATED 2

/* CUstreamCaptureMode (an int-sized enum; cuThreadExchangeStreamCaptureMode takes an int *):
 * which of the calling thread's calls a capture in progress forbids. */
#define NCCLSHIM_CU_STREAM_CAPTURE_MODE_GLOBAL 0 /* the default: any thread's global capture */
#define NCCLSHIM_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1 /* only this thread's own capture */
#define NCCLSHIM_CU_STREAM_CAPTURE_MODE_RELAXED 2

/* ---- Flags ------------------------------------------------------------------------------ */

#define NCCLSHIM_CU_STREAM_DEFAULT 0x0u
#define NCCLSHIM_CU_STREAM_NON_BLOCKING 0x1u /* no implicit sync with the legacy NULL stream */
#define NCCLSHIM_CU_STREAM_LEGACY ((CUstream)0x1)
#define NCCLSHIM_CU_STREAM_PER_THREAD ((CUstream)0x2)

#define NCCLSHIM_CU_EVENT_DEFAULT 0x0u
#define NCCLSHIM_CU_EVENT_BLOCKING_SYNC 0x1u
#define NCCLSHIM_CU_EVENT_DISABLE_TIMING 0x2u
#define NCCLSHIM_CU_EVENT_INTERPROCESS 0x4u /* only together with DISABLE_TIMING */

#define NCCLSHIM_CU_EVENT_WAIT_DEFAULT 0x0u

/* cuGetProcAddress: flags and the _v2 entry's symbolStatus. */
#define NCCLSHIM_CU_GET_PROC_ADDRESS_DEFAULT 0x0u /* legacy-default-stream variants */
#define NCCLSHIM_CU_GET_PROC_ADDRESS_LEGACY_STREAM 0x1u
#define NCCLSHIM_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 0x2u
#define NCCLSHIM_CU_GET_PROC_ADDRESS_SUCCESS 0
#define NCCLSHIM_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND 1
#define NCCLSHIM_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT 2

#endif /* NCCLSHIM_CUDA_ABI_H */
