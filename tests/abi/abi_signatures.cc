/* Every function the release declares that ncclshim's list has: its declared type (from
 * the generated NCCLSHIM_DECLARED_H) must agree with the row's by ABI, parameter by parameter
 * and for the return: the same class (integer or enum, floating point, pointer, struct), size
 * and alignment. Spelling is no difference (a struct pointer of another tag, an enum for an
 * int); a size, a pointer for a value or a struct's layout is. The structs ncclshim passes by
 * value are compared field by field. */
#include <nccl.h>
#ifdef NCCLSHIM_CORPUS_DEVICE
#include <nccl_device.h>
#endif

#include "ncclshim/ncclshim.h"

#include <cstddef>
#include <cstdio>
#include <type_traits>

#include NCCLSHIM_DECLARED_H
#include "abi_values.h"

namespace {

enum abi_class { ABI_VOID, ABI_INTEGER, ABI_FLOAT, ABI_POINTER, ABI_STRUCT };
const char *const class_names[] = {"void", "integer", "floating", "pointer", "struct"};

struct abi_type {
  abi_class kind;
  std::size_t size, align;
};

template <class T>
constexpr abi_type describe() {
  if constexpr (std::is_void_v<T>) {
    return {ABI_VOID, 0, 0};
  } else {
    abi_class kind = std::is_pointer_v<T>                         ? ABI_POINTER
                     : std::is_integral_v<T> || std::is_enum_v<T> ? ABI_INTEGER
                     : std::is_floating_point_v<T>                ? ABI_FLOAT
                                                                  : ABI_STRUCT;
    return {kind, sizeof(T), alignof(T)};
  }
}

enum { MAX_PARAMS = 16 };
struct signature {
  abi_type returns;
  int count;
  abi_type params[MAX_PARAMS + 1];
};

template <class R, class... A>
constexpr signature signature_of(R (*)(A...)) {
  static_assert(sizeof...(A) <= MAX_PARAMS, "more parameters than MAX_PARAMS");
  return {describe<R>(), int(sizeof...(A)), {describe<A>()..., abi_type{}}};
}

bool same(const abi_type &a, const abi_type &b) {
  return a.kind == b.kind && a.size == b.size && a.align == b.align;
}

int differ(const char *function, const char *what, const abi_type &real, const abi_type &ours) {
  if (same(real, ours)) return 0;
  std::printf(
      "MISMATCH %s %s: real %s of %zu bytes (align %zu), ncclshim %s of %zu bytes (align "
      "%zu)\n",
      function, what, class_names[real.kind], real.size, real.align, class_names[ours.kind],
      ours.size, ours.align);
  return 1;
}

int compare(const char *function, const signature &real, const signature &ours) {
  if (real.count != ours.count) {
    std::printf("MISMATCH %s: real takes %d parameters, ncclshim %d\n", function, real.count,
                ours.count);
    return 1;
  }
  int failures = differ(function, "return", real.returns, ours.returns);
  for (int i = 0; i < real.count; i++) {
    char what[32];
    std::snprintf(what, sizeof(what), "parameter %d", i + 1);
    failures += differ(function, what, real.params[i], ours.params[i]);
  }
  return failures;
}

/* A field of a struct passed by value: the same offset, size and class on both sides. */
#define SAME_FIELD(real_type, our_type, field)                                                    \
  failures += differ(#real_type "." #field, "field", describe<decltype(real_type::field)>(),      \
                     describe<decltype(our_type::field)>()) +                                     \
              (offsetof(real_type, field) != offsetof(our_type, field)                            \
                   ? (std::printf("MISMATCH %s.%s: offset %zu, ncclshim %zu\n", #real_type,       \
                                  #field, offsetof(real_type, field), offsetof(our_type, field)), \
                      1)                                                                          \
                   : 0);
#define SAME_SIZE(real_type, our_type) \
  failures += differ(#real_type, "size", describe<real_type>(), describe<our_type>());

int by_value_structs() {
  int failures = 0;
#ifdef NCCLSHIM_CORPUS_DEVICE
  SAME_SIZE(ncclTeam_t, ncclshim_team_t)
  SAME_FIELD(ncclTeam_t, ncclshim_team_t, nRanks)
  SAME_FIELD(ncclTeam_t, ncclshim_team_t, rank)
  SAME_FIELD(ncclTeam_t, ncclshim_team_t, stride)
#if NCCL_VERSION_CODE >= 22902
  using multimem_handle = struct ncclMultimemHandle;
  SAME_SIZE(multimem_handle, ncclshim_multimem_handle_t)
  SAME_FIELD(multimem_handle, ncclshim_multimem_handle_t, mcBasePtr)
#endif
#endif
  return failures;
}

/* ncclCommProperties, which ncclshim reads (nccl_abi.h): each release's layout against the
 * one ncclshim reads it by for that release's version. */
#define SAME_PROPERTIES(ours)                              \
  SAME_SIZE(ncclCommProperties_t, ours)                    \
  SAME_FIELD(ncclCommProperties_t, ours, size)             \
  SAME_FIELD(ncclCommProperties_t, ours, magic)            \
  SAME_FIELD(ncclCommProperties_t, ours, version)          \
  SAME_FIELD(ncclCommProperties_t, ours, rank)             \
  SAME_FIELD(ncclCommProperties_t, ours, nRanks)           \
  SAME_FIELD(ncclCommProperties_t, ours, cudaDev)          \
  SAME_FIELD(ncclCommProperties_t, ours, nvmlDev)          \
  SAME_FIELD(ncclCommProperties_t, ours, deviceApiSupport) \
  SAME_FIELD(ncclCommProperties_t, ours, multimemSupport)  \
  SAME_FIELD(ncclCommProperties_t, ours, ginType)
int read_structs() {
  int failures = 0;
#if defined(NCCLSHIM_CORPUS_DEVICE) && NCCL_VERSION_CODE >= NCCLSHIM_NCCL_API_HEADER_VERSION
#if NCCL_VERSION_CODE < NCCLSHIM_COMM_PROPERTIES_FULL_VERSION
  SAME_PROPERTIES(ncclshim_comm_properties_v22902_t)
#else
  SAME_PROPERTIES(ncclshim_comm_properties_t)
  SAME_FIELD(ncclCommProperties_t, ncclshim_comm_properties_t, nLsaTeams)
  SAME_FIELD(ncclCommProperties_t, ncclshim_comm_properties_t, hostRmaSupport)
  SAME_FIELD(ncclCommProperties_t, ncclshim_comm_properties_t, railedGinType)
#endif
#endif
  return failures;
}

}  // namespace

#define COMPARE_(name)                                                              \
  failures += compare(#name, signature_of(static_cast<declared::name>(&::name)),    \
                      signature_of(static_cast<NCCLSHIM_NCCL_PFN(name)>(nullptr))); \
  compared++;

extern "C" int abi_check_signatures(void) {
  int failures = 0, compared = 0;
  DECLARED_LISTED(COMPARE_)
  failures += by_value_structs();
  failures += read_structs();
  std::printf("signatures: %d functions compared by ABI\n", compared);
  return failures;
}
