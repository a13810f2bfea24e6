#include "hwcaps.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__powerpc64__)
#include <sys/auxv.h>
#endif

#if defined(__x86_64__)
/* The x86-64 micro-architecture levels as glibc defines them (sysdeps/x86/get-isa-level.h):
 * 0 baseline, 2, 3 or 4. */
static int x86_level(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  const unsigned c1 = c;
  unsigned c81 = 0, b7 = 0;
  if (__get_cpuid(0x80000001, &a, &b, &c, &d)) c81 = c;
  if (__get_cpuid_max(0, NULL) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    b7 = b;
  }
  /* SSE3, SSSE3, CMPXCHG16B, SSE4.1, SSE4.2, POPCNT; LAHF/SAHF */
  const unsigned v2_ecx = 1u << 0 | 1u << 9 | 1u << 13 | 1u << 19 | 1u << 20 | 1u << 23;
  if ((c1 & v2_ecx) != v2_ecx || !(c81 & 1u)) return 0;
  /* FMA, MOVBE, OSXSAVE, AVX, F16C; BMI1, AVX2, BMI2; LZCNT. AVX needs the kernel to save
   * the YMM registers (XCR0 bits 1 and 2), AVX-512 the ZMM ones (bits 5 to 7). */
  const unsigned v3_ecx = 1u << 12 | 1u << 22 | 1u << 27 | 1u << 28 | 1u << 29;
  const unsigned v3_ebx7 = 1u << 3 | 1u << 5 | 1u << 8;
  if ((c1 & v3_ecx) != v3_ecx || (b7 & v3_ebx7) != v3_ebx7 || !(c81 & 1u << 5)) return 2;
  unsigned xcr0_lo, xcr0_hi;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0x6) != 0x6) return 2;
  /* AVX512F, DQ, CD, BW, VL */
  const unsigned v4_ebx7 = 1u << 16 | 1u << 17 | 1u << 28 | 1u << 30 | 1u << 31;
  if ((b7 & v4_ebx7) != v4_ebx7 || (xcr0_lo & 0xe6) != 0xe6) return 3;
  return 4;
}
#endif

size_t ncshl_hwcaps_levels(const char **levels, size_t max) {
  size_t count = 0;
#if defined(__x86_64__)
  static const char *const names[] = {"x86-64-v4", "x86-64-v3", "x86-64-v2"};
  int level = x86_level();
  for (int l = 4; l >= 2 && count < max; l--)
    if (level >= l) levels[count++] = names[4 - l];
#elif defined(__powerpc64__)
  unsigned long hwcap2 = getauxval(AT_HWCAP2);
  if (count < max && (hwcap2 & 0x00040000UL)) levels[count++] = "power10"; /* ARCH_3_1 */
  if (count < max && (hwcap2 & 0x00800000UL)) levels[count++] = "power9";  /* ARCH_3_00 */
#else
  (void)levels;
  (void)max;
#endif
  return count;
}
