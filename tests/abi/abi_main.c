/* One release's ABI check: values in C11 and, where a C++ compiler built them, values in C++17
 * and every function's signature by ABI (abi_signatures.cc). */
#include <stdio.h>

#include "abi_values.h"

int main(void) {
  int failures = abi_check_values_c();
#ifdef ABI_WITH_CXX
  failures += abi_check_values_cxx();
  failures += abi_check_signatures();
#else
  printf("no C++ compiler: the C++17 value check and the signature check were not built\n");
#endif
  printf("%s: %d mismatches\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
