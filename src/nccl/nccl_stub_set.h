/* Sets of "unavailable" entries for the NCCL table, generated from the function list and
 * parametrised by what they answer. A set named S is made of, for every function ncclX:
 *   S_ncclX(...)   calls S_note(NCCLSHIM_FN_ncclX), which leaves a message, and answers as
 *                  NCCLSHIM_NCCL_UNAVAILABLE (nccl_functions.h) says for its return kind, with
 *                  S_result for RESULT and S_text() for STRING;
 *   S_table        a table of them.
 * The caller defines S_note, S_result and S_text, then expands, for S = absent:
 *   #define ABSENT_(...) NCCLSHIM_NCCL_STUB(absent, __VA_ARGS__)
 *   NCCLSHIM_NCCL_FUNCTIONS(ABSENT_)
 * and builds the table with NCCLSHIM_NCCL_STUB_ENTRY the same way. Used by libncclshim (no
 * NCCL; a function the loaded NCCL lacks) and by the drop-in (no NCCL). */
#ifndef NCCLSHIM_NCCL_STUB_SET_H
#define NCCLSHIM_NCCL_STUB_SET_H

#include "ncclshim/ncclshim.h"

#define NCCLSHIM_NCCL_STUB(set, name, version, policy, role, returns, n, params) \
  static NCCLSHIM_RETURNS(returns) set##_##name NCCLSHIM_PP_PARAMS(n, params) {  \
    NCCLSHIM_PP_EACH(n, NCCLSHIM_NCCL_STUB_IGNORE, params)                       \
    set##_note(NCCLSHIM_FN_##name);                                              \
    NCCLSHIM_NCCL_UNAVAILABLE(returns, set##_result, set##_text())               \
  }
#define NCCLSHIM_NCCL_STUB_IGNORE(type, name) (void)name;

#define NCCLSHIM_NCCL_STUB_ENTRY(set, name, version, policy, role, returns, n, params) \
  .name = set##_##name,

#endif
