/* Built against one release's own headers (nccl.h, nccl_device.h) and linked against the
 * drop-in alone: takes the address of every function the release declares that ncclshim
 * lists (NCCLSHIM_DECLARED_H, with the pncclX aliases it declares), calls each with zeroed
 * arguments, and checks that the call reached the fake NCCL of that release
 * (NCCLSHIM_NCCL_LIBRARY), which records the name of every function it runs. */
#include <nccl.h>
#ifdef NCCLSHIM_CORPUS_DEVICE
#include <nccl_device.h>
#endif

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include NCCLSHIM_DECLARED_H
#include "tests/fakes/fake_nccl.h"

namespace {

template <class R, class... A>
void call_with_zeros(R (*function)(A...)) {
  (void)function(A{}...);
}

struct declared_function {
  const char *name;    /* as the program calls it */
  const char *reached; /* as the fake records it */
  void (*call)();
};

#define PLAIN_(name) {#name, #name, [] { call_with_zeros(static_cast<declared::name>(&::name)); }},
#define PROFILING_(name) \
  {"p" #name, #name, [] { call_with_zeros(static_cast<declared::name>(&::p##name)); }},
const declared_function functions[] = {DECLARED_LISTED(PLAIN_) DECLARED_PROFILING(PROFILING_)};

template <class T>
T fake_symbol(void *fake, const char *name) {
  void *symbol = dlsym(fake, name);
  if (symbol == nullptr) {
    std::printf("FAIL the fake lacks %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<T>(symbol);
}

}  // namespace

int main() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version != NCCL_VERSION_CODE) {
    std::printf("FAIL ncclGetVersion answered %d, not this release's %d\n", version,
                NCCL_VERSION_CODE);
    return 1;
  }
  const char *path = std::getenv("NCCLSHIM_NCCL_LIBRARY");
  void *fake = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  if (fake == nullptr) {
    std::printf("FAIL the fake NCCL (%s) is not loaded\n",
                path ? path : "NCCLSHIM_NCCL_LIBRARY unset");
    return 1;
  }
  auto last_call = fake_symbol<fake_nccl_last_call_fn>(fake, "fake_nccl_last_call");
  auto version_calls = fake_symbol<fake_nccl_count_fn>(fake, "fake_nccl_version_calls");
  int failures = 0, count = 0;
  for (const declared_function &f : functions) {
    int versions_before = version_calls();
    f.call();
    count++;
    /* ncclGetVersion is the fake's one hand-written function: it counts instead of recording. */
    bool reached = std::strcmp(f.reached, "ncclGetVersion") == 0
                       ? version_calls() == versions_before + 1
                       : std::strcmp(last_call()->function, f.reached) == 0;
    if (!reached) {
      std::printf("FAIL %s did not reach the fake's %s (last call: %s)\n", f.name, f.reached,
                  last_call()->function);
      failures++;
    }
  }
  std::printf(
      "nccl.h %d.%d.%d: %d functions called through the drop-in, %d did not reach the fake\n",
      NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, count, failures);
  return failures ? 1 : 0;
}
