/* Read by gen_functions.py through the C preprocessor (cc -E -P -DNCCLSHIM_BUILDING): the
 * public headers, whose declarations it parses (NCCLSHIM_API then reads
 * __attribute__((visibility("default"))), which marks each of ncclshim's functions), and one
 * marked row per entry of the X-macro lists, which it turns into the package's ctypes module
 * (_functions.py). Never compiled. */
#include "ncclshim/comm.h"
#include "ncclshim/diag.h"
#include "ncclshim/symmem.h"

#define PY_PARAM_(type, name) py_param type py_named name
#define PY_NCCL_(name, version, policy, role, returns, n, params) \
  py_row name version policy role returns NCCLSHIM_PP_EACH(n, PY_PARAM_, params) py_end
#define PY_CAPABILITY_(id, name, version, ...) py_capability id name version py_end
#define PY_CONFIG_(id, field, kind, version) py_config id field kind version py_end

NCCLSHIM_NCCL_FUNCTIONS(PY_NCCL_)
NCCLSHIM_CAPABILITIES(PY_CAPABILITY_)
NCCLSHIM_CONFIG_FIELDS(PY_CONFIG_)

/* Constants the package needs that the headers give as macros, read as an enum's values. */
enum py_macros {
  PY_NCCL_API_MAGIC = NCCL_API_MAGIC,
  PY_NCCL_CONFIG_UNDEF_INT = NCCL_CONFIG_UNDEF_INT,
  PY_COLL_CONFIG_LAYOUT_VERSION = NCCLSHIM_COLL_CONFIG_LAYOUT_VERSION,
  PY_NCCL_HEADER_VERSION = NCCL_VERSION_CODE
};
