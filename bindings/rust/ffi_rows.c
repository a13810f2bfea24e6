/* Read by build.rs through the C preprocessor (cc -E): one marked row per entry of ncclshim's
 * X-macro lists, and every public function's declaration, which build.rs turns into the
 * crate's Rust declarations (OUT_DIR/lists.rs).
 * Never compiled. */
/* NCCLSHIM_API then expands to the export attribute, which marks every public function's
 * declaration for gen_lists.rs. */
#define NCCLSHIM_BUILDING
#include "ncclshim/comm.h"
#include "ncclshim/comm_query.h"
#include "ncclshim/cuda.h"
#include "ncclshim/diag.h"
#include "ncclshim/nccl_plugins.h"
#include "ncclshim/ncclshim.h"
#include "ncclshim/status.h"
#include "ncclshim/symmem.h"
#include "ncclshim/watchdog.h"

#define RS_PARAM_(type, name) rs_param type rs_named name
#define RS_NCCL_(name, version, policy, role, returns, n, params) \
  rs_row nccl name version policy returns NCCLSHIM_PP_EACH(n, RS_PARAM_, params) rs_end
#define RS_CUDA_(name, ask, policy, abi, n, params) \
  rs_row cuda name ask policy CU_RESULT NCCLSHIM_PP_EACH(n, RS_PARAM_, params) rs_end
#define RS_CAPABILITY_(id, name, version, ...) rs_capability id name version rs_end
#define RS_COMM_CAPABILITY_(id, name) rs_comm_capability id name rs_end
#define RS_CONFIG_(id, field, kind, version) rs_config id field kind version rs_end
#define RS_STATUS_(id, value, text) rs_status id value text rs_end

NCCLSHIM_NCCL_FUNCTIONS(RS_NCCL_)
NCCLSHIM_CUDA_FUNCTIONS(RS_CUDA_)
NCCLSHIM_CAPABILITIES(RS_CAPABILITY_)
NCCLSHIM_COMM_CAPABILITIES(RS_COMM_CAPABILITY_)
NCCLSHIM_CONFIG_FIELDS(RS_CONFIG_)
NCCLSHIM_STATUSES(RS_STATUS_)
