/* The real nccl.h first, then ncclshim's header: every value, size and offset the real
 * header defines must equal ncclshim's. Compiled as C (abi_check_values_c) and, through
 * abi_real_cxx.cc, as C++ (abi_check_values_cxx). Function signatures are compared by ABI in
 * abi_signatures.cc: a redeclaration here would also fail on a type that is only spelled
 * differently (ncclWindow_t's struct tag in 2.27, ncclCommMemStats' enum in 2.29). */
#include <nccl.h>

#include "ncclshim/ncclshim.h"

#include <stdio.h>
#include <string.h>

#include "abi_values.h"

#ifdef NCCLSHIM_PROVIDES_NCCL_H
#error "nccl.h came first: ncclshim must use its types"
#endif

#ifndef ABI_CHECK_VALUES
#define ABI_CHECK_VALUES abi_check_values_c
#define ABI_LANGUAGE "C11"
#endif

/* ncclBfloat16 is declared by nccl.h 2.18-2.23 only where cuda_bf16.h says bfloat16 exists
 * (C++, not C); later releases declare it always. */
#if defined(__CUDA_BF16_TYPES_EXIST__) || NCCL_VERSION_CODE >= 22403
#define ABI_BFLOAT16(X) X(ncclBfloat16)
#else
#define ABI_BFLOAT16(X)
#endif

/* The layout size of each nccl.h generation (facts §6.2). */
static long long expected_config_size(int v) {
  return v >= 23203   ? 120
         : v >= 23003 ? 96
         : v >= 22902 ? 88
         : v >= 22800 ? 80
         : v >= 22700 ? 72
                      : 48;
}

#define CONFIG_OFFSET(f) {"ncclConfig_t." #f, (long long)offsetof(ncclConfig_t, f)},
static const abi_value real[] = {
    ABI_COMMON(ABI_VALUE) ABI_BFLOAT16(ABI_VALUE) ABI_SIZE(ncclConfig_t) CONFIG_OFFSET(
        size) CONFIG_OFFSET(magic) CONFIG_OFFSET(version) CONFIG_OFFSET(blocking)
        CONFIG_OFFSET(cgaClusterSize) CONFIG_OFFSET(minCTAs) CONFIG_OFFSET(maxCTAs) CONFIG_OFFSET(
            netName) CONFIG_OFFSET(splitShare)
#if NCCL_VERSION_CODE >= 22600
            CONFIG_OFFSET(trafficClass)
#endif
#if NCCL_VERSION_CODE >= 22200
                ABI_SIZE(ncclSimInfo_t) ABI_OFFSET(ncclSimInfo_t, estimatedTime)
#endif
#if NCCL_VERSION_CODE >= 22403
                    ABI_VALUE(ncclFloat8e4m3) ABI_VALUE(ncclFloat8e5m2)
#endif
#if NCCL_VERSION_CODE >= 22700
                        CONFIG_OFFSET(commName) CONFIG_OFFSET(collnetEnable) CONFIG_OFFSET(
                            CTAPolicy) CONFIG_OFFSET(shrinkShare) CONFIG_OFFSET(nvlsCTAs)
                            ABI_VALUE(NCCL_CTA_POLICY_DEFAULT) ABI_VALUE(
                                NCCL_CTA_POLICY_EFFICIENCY) ABI_VALUE(NCCL_WIN_DEFAULT)
                                ABI_VALUE(NCCL_WIN_COLL_SYMMETRIC) ABI_VALUE(
                                    NCCL_SHRINK_DEFAULT) ABI_VALUE(NCCL_SHRINK_ABORT)
#endif
#if NCCL_VERSION_CODE >= 22800
                                    CONFIG_OFFSET(nChannelsPerNetPeer) CONFIG_OFFSET(
                                        nvlinkCentricSched) ABI_VALUE(NCCL_CTA_POLICY_ZERO)
                                        ABI_VALUE(NCCL_WIN_REQUIRED_ALIGNMENT)
#endif
#if NCCL_VERSION_CODE >= 22807
                                            ABI_VALUE(NCCL_REVOKE_DEFAULT)
#endif
#if NCCL_VERSION_CODE >= 22902
                                                CONFIG_OFFSET(graphUsageMode) CONFIG_OFFSET(
                                                    numRmaCtx)
#endif
#if NCCL_VERSION_CODE >= 22907
                                                    ABI_VALUE(NCCL_WIN_STRICT_ORDERING)
#endif
#if NCCL_VERSION_CODE >= 23003
                                                        ABI_VALUE(ncclTimeout) CONFIG_OFFSET(
                                                            maxP2pPeers)
#endif
#if NCCL_VERSION_CODE >= 23007
                                                            CONFIG_OFFSET(graphStreamOrdering)
#endif
#if NCCL_VERSION_CODE >= 23203
                                                                CONFIG_OFFSET(launchOrderImplicit)
                                                                    CONFIG_OFFSET(numRmaSig)
                                                                        CONFIG_OFFSET(rmaEagerInit)
                                                                            CONFIG_OFFSET(
                                                                                hostCftMode)
                                                                                CONFIG_OFFSET(
                                                                                    nvlsHostMode)
                                                                                    ABI_FROM_2_32_3(
                                                                                        ABI_VALUE,
                                                                                        ABI_SIZE,
                                                                                        ABI_OFFSET)
#endif
};

#if NCCL_VERSION_CODE >= 23203
static ABI_DEFINE_INITIALIZERS(initializers_real)

    /* Each of the real header's initializer values against ncclshim's, by name. */
    static int check_initializers(void) {
  abi_value real_init[ABI_MAX_INITIALIZER_VALUES], ours_init[ABI_MAX_INITIALIZER_VALUES];
  int n = initializers_real(real_init), m = abi_initializers_ours(ours_init), failures = 0;
  for (int i = 0; i < n; i++) {
    const abi_value *match = NULL;
    for (int j = 0; j < m; j++)
      if (strcmp(ours_init[j].name, real_init[i].name) == 0) match = &ours_init[j];
    if (match == NULL || match->value != real_init[i].value) {
      printf("MISMATCH %s: real %lld, ncclshim %lld%s\n", real_init[i].name, real_init[i].value,
             match ? match->value : 0, match ? "" : " (missing)");
      failures++;
    }
  }
  printf("%d initializer values compared\n", n);
  return failures;
}
#else
static int check_initializers(void) { return 0; }
#endif

int ABI_CHECK_VALUES(void) {
  int failures = 0;
  size_t count = sizeof(real) / sizeof(real[0]);
  printf("real nccl.h %d.%d.%d (NCCL_VERSION_CODE %d), %s: %zu values\n", NCCL_MAJOR, NCCL_MINOR,
         NCCL_PATCH, NCCL_VERSION_CODE, ABI_LANGUAGE, count);
  for (size_t i = 0; i < count; i++) {
    const abi_value *match = NULL;
    for (const abi_value *o = ours; o->name != NULL; o++)
      if (strcmp(o->name, real[i].name) == 0) match = o;
    if (strcmp(real[i].name, "sizeof(ncclConfig_t)") == 0) {
      /* The real struct is the layout of its own release; ncclshim's is the newest. */
      if (real[i].value != expected_config_size(NCCL_VERSION_CODE)) {
        printf("MISMATCH sizeof(ncclConfig_t): real %lld, facts say %lld for this release\n",
               real[i].value, expected_config_size(NCCL_VERSION_CODE));
        failures++;
      }
    } else if (match == NULL || match->value != real[i].value) {
      printf("MISMATCH %s: real %lld, ncclshim %lld%s\n", real[i].name, real[i].value,
             match ? match->value : 0, match ? "" : " (missing)");
      failures++;
    }
  }
  failures += check_initializers();
  /* In this translation unit the real types are in force: ncclshim's private layout must
   * agree with them on every shared offset. */
  if (sizeof(ncclConfig_t) > sizeof(struct ncclshim_nccl_config) ||
      offsetof(ncclConfig_t, splitShare) != offsetof(struct ncclshim_nccl_config, splitShare)) {
    printf("MISMATCH ncclshim_nccl_config layout\n");
    failures++;
  }
  return failures;
}
