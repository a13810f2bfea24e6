/* The ABI layout ncclshim declares, checked at compile time on every architecture it is built
 * for (x86-64 and aarch64 in CI, the latter cross-compiled and run under qemu-user), without
 * any NCCL or CUDA header: sizes, offsets and values of NCCL's ABI as ncclshim states it, the
 * ncclConfig_t size of each NCCL generation, and ncclshim's own size-first structs. The suite
 * 'abi' compares the same declarations with a real nccl.h where one exists (x86-64 here);
 * this file carries the numbers themselves, so that a build for another LP64 machine that
 * changed any of them fails to compile. The run prints the layout and checks what
 * ncclshim_nccl_config_init writes. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ncclshim/cuda.h"
#include "ncclshim/ncclshim.h"

#define CHECK(cond) _Static_assert(cond, #cond)

/* Every machine ncclshim supports is LP64 and little- or big-endian with natural alignment. */
CHECK(sizeof(void *) == 8 && sizeof(size_t) == 8 && sizeof(long) == 8);
CHECK(sizeof(int) == 4 && sizeof(long long) == 8 && sizeof(float) == 4);

/* ---- NCCL: types ------------------------------------------------------------------------ */
CHECK(sizeof(ncclResult_t) == 4 && sizeof(ncclDataType_t) == 4 && sizeof(ncclRedOp_t) == 4);
CHECK(sizeof(ncclScalarResidence_t) == 4);
CHECK(sizeof(ncclUniqueId) == 128 && NCCL_UNIQUE_ID_BYTES == 128);
CHECK(sizeof(ncclComm_t) == 8 && sizeof(cudaStream_t) == 8 && sizeof(ncclWindow_t) == 8);
CHECK(sizeof(ncclSimInfo_t) == 24 && offsetof(ncclSimInfo_t, size) == 0 &&
      offsetof(ncclSimInfo_t, magic) == 8 && offsetof(ncclSimInfo_t, version) == 12 &&
      offsetof(ncclSimInfo_t, estimatedTime) == 16);
CHECK(sizeof(ncclWaitSignalDesc_t) == 16 && offsetof(ncclWaitSignalDesc_t, ctx) == 12);

/* ---- NCCL: values ----------------------------------------------------------------------- */
CHECK(ncclSuccess == 0 && ncclUnhandledCudaError == 1 && ncclSystemError == 2 &&
      ncclInternalError == 3 && ncclInvalidArgument == 4 && ncclInvalidUsage == 5 &&
      ncclRemoteError == 6 && ncclInProgress == 7 && ncclTimeout == 8);
CHECK(ncclInt8 == 0 && ncclUint8 == 1 && ncclInt32 == 2 && ncclUint32 == 3 && ncclInt64 == 4 &&
      ncclUint64 == 5 && ncclFloat16 == 6 && ncclFloat32 == 7 && ncclFloat64 == 8 &&
      ncclBfloat16 == 9 && ncclFloat8e4m3 == 10 && ncclFloat8e5m2 == 11);
CHECK(ncclSum == 0 && ncclProd == 1 && ncclMax == 2 && ncclMin == 3 && ncclAvg == 4 &&
      ncclNumOps == 5 && ncclMaxRedOp == 0x7fffffff);
CHECK(NCCL_CONFIG_UNDEF_INT == INT_MIN && NCCL_SPLIT_NOCOLOR == -1);
CHECK(NCCL_WIN_COLL_SYMMETRIC == 1 && NCCL_WIN_REQUIRED_ALIGNMENT == 4096);
CHECK(NCCL_WIN_GIN_ONLY == 4 && NCCL_WIN_CFT_COUNTED == 8);
CHECK(ncclHostCftDefault == INT_MIN && ncclHostCftEnable == 1 && ncclHostCftDisable == 2 &&
      ncclHostCftFallback == 3 && sizeof(ncclHostCftMode_t) == 4);
CHECK(ncclNvlsHostModeDefault == INT_MIN && ncclNvlsHostModeEnable == 0 &&
      ncclNvlsHostModeDisableTransport == 1 && ncclNvlsHostModeDisableSymmetricMultimem == 2 &&
      ncclNvlsHostModeDisable == INT_MAX && sizeof(ncclNvlsHostMode_t) == 4);
CHECK(NCCL_ENCRYPTION_MODE_NONE == 0 && NCCL_ENCRYPTION_MODE_PSK == 1);

/* ---- The 2.32.3 structs: per-collective config, its vendor options, encryption --------- */
#define CC_AT(field, offset) CHECK(offsetof(ncclCollConfig_t, field) == (offset))
CC_AT(size, 0);
CC_AT(magic, 8);
CC_AT(version, 12);
CC_AT(ext, 16);
CC_AT(minCTAs, 24);
CC_AT(maxCTAs, 28);
CC_AT(nvlsCTAs, 32);
CC_AT(cgaClusterSize, 36);
CC_AT(algSelection, 40);
CC_AT(forceAlgSelection, 48);
CC_AT(CTAPolicy, 52);
CC_AT(userProfilerTag, 56);
CC_AT(launchCompletionEvent, 64);
CHECK(sizeof(ncclCollConfig_t) == 72);
CHECK(sizeof(ncclConfigExt_t) == 24 && offsetof(ncclConfigExt_t, key.vendorId) == 8 &&
      offsetof(ncclConfigExt_t, key.optionId) == 12 && offsetof(ncclConfigExt_t, val) == 16);
CHECK(sizeof(ncclEncryptionConfig_t) == 32 && offsetof(ncclEncryptionConfig_t, mode) == 16 &&
      offsetof(ncclEncryptionConfig_t, psk) == 24);

/* ---- ncclConfig_t: the 2.32.3 layout, and where each generation ends -------------------- */
#define AT(field, offset) CHECK(offsetof(ncclConfig_t, field) == (offset))
AT(size, 0);
AT(magic, 8);
AT(version, 12);
AT(blocking, 16);
AT(cgaClusterSize, 20);
AT(minCTAs, 24);
AT(maxCTAs, 28);
AT(netName, 32);
AT(splitShare, 40);
AT(trafficClass, 44);
AT(commName, 48);
AT(collnetEnable, 56);
AT(CTAPolicy, 60);
AT(shrinkShare, 64);
AT(nvlsCTAs, 68);
AT(nChannelsPerNetPeer, 72);
AT(nvlinkCentricSched, 76);
AT(graphUsageMode, 80);
AT(numRmaCtx, 84);
AT(maxP2pPeers, 88);
AT(graphStreamOrdering, 92);
AT(launchOrderImplicit, 96);
AT(numRmaSig, 100);
AT(rmaEagerInit, 104);
AT(hostCftMode, 108);
AT(nvlsHostMode, 112);
CHECK(sizeof(ncclConfig_t) == 120);
/* sizeof(ncclConfig_t) in each nccl.h: the end of its last field, rounded to 8. */
#define END(field) ((offsetof(ncclConfig_t, field) + 4 + 7) / 8 * 8)
CHECK(END(trafficClass) == 48);        /* 2.18 .. 2.26 */
CHECK(END(nvlsCTAs) == 72);            /* 2.27 */
CHECK(END(nvlinkCentricSched) == 80);  /* 2.28 */
CHECK(END(numRmaCtx) == 88);           /* 2.29.2 */
CHECK(END(graphStreamOrdering) == 96); /* 2.30.3 .. 2.30.7 */
CHECK(END(nvlsHostMode) == 120);       /* 2.32.3 */

/* ---- The CUDA driver ABI ncclshim uses -------------------------------------------------- */
CHECK(sizeof(CUdevice) == 4 && sizeof(CUdeviceptr) == 8 && sizeof(CUuuid) == 16);
CHECK(sizeof(CUcontext) == 8 && sizeof(CUstream) == 8 && sizeof(CUevent) == 8);
CHECK(sizeof(ncclshim_cu_result) == 4 && NCCLSHIM_CUDA_ERROR_STUB_LIBRARY == 34 &&
      NCCLSHIM_CUDA_ERROR_NO_DEVICE == 100 && NCCLSHIM_CUDA_ERROR_NOT_READY == 600);

/* ---- ncclshim's own structs: size first, so they can grow ------------------------------ */
CHECK(offsetof(ncclshim_nccl_options, size) == 0 && offsetof(ncclshim_nccl_options, path) == 8 &&
      offsetof(ncclshim_nccl_options, min_version) == 16 && sizeof(ncclshim_nccl_options) == 24);
CHECK(offsetof(ncclshim_cuda_options, size) == 0 && offsetof(ncclshim_cuda_options, path) == 8 &&
      sizeof(ncclshim_cuda_options) == 16);
CHECK(offsetof(ncclshim_attempt, candidate) == 0 && offsetof(ncclshim_attempt, how) == 8 &&
      offsetof(ncclshim_attempt, result) == 12 && offsetof(ncclshim_attempt, reason) == 16 &&
      sizeof(ncclshim_attempt) == 24);
CHECK(offsetof(ncclshim_cuda_device_info, size) == 0 && sizeof(ncclshim_cuda_fact) == 8);

static int failures;

static void expect(int ok, const char *what) {
  if (!ok) {
    printf("FAIL: %s\n", what);
    failures++;
  }
}

/* What config_init writes into a caller's struct of `size` bytes. */
static void check_config_init(size_t size) {
  unsigned char buf[160];
  memset(buf, 0xa5, sizeof(buf));
  expect(ncclshim_nccl_config_init(buf, size) == NCCLSHIM_OK, "config_init accepts the size");
  size_t written = size < 120 ? size : 120;
  ncclConfig_t c;
  memcpy(&c, buf, sizeof(c));
  expect(c.size == written, "config.size is min(size, 120)");
  expect(c.magic == NCCL_API_MAGIC && c.version == 23203, "magic and layout version");
  expect(c.blocking == NCCL_CONFIG_UNDEF_INT, "blocking is UNDEF");
  for (size_t i = written; i < sizeof(buf); i++)
    if (buf[i] != 0xa5) {
      printf("FAIL: config_init(%zu) wrote byte %zu\n", size, i);
      failures++;
      break;
    }
}

int main(void) {
  printf("machine: %s, LP64, %s-endian\n",
#if defined(__x86_64__)
         "x86-64",
#elif defined(__aarch64__)
         "aarch64",
#else
         "other",
#endif
         __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "little" : "big");
  printf("sizeof ncclConfig_t %zu, ncclUniqueId %zu, ncclSimInfo_t %zu, device_info %zu\n",
         sizeof(ncclConfig_t), sizeof(ncclUniqueId), sizeof(ncclSimInfo_t),
         sizeof(ncclshim_cuda_device_info));
  check_config_init(48);
  check_config_init(72);
  check_config_init(80);
  check_config_init(88);
  check_config_init(96);
  check_config_init(120);
  check_config_init(152); /* a newer nccl.h's bigger struct: 120 written, the rest untouched */
  printf("%s\n", failures ? "FAIL" : "layout: all compile-time checks hold; config_init OK");
  return failures ? 1 : 0;
}
