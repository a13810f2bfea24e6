/* The recorder's CUDA driver functions: whether an operation's stream is capturing a graph,
 * and the hang dump's events (record_hang.c). Only a driver the process has already loaded
 * is used (an NCCL operation on a stream means one is): through ncclshim's CUDA table under
 * LD_PRELOAD or a link. Audit mode cannot use that table: the drop-in runs in the auditor's
 * own namespace, where ncclshim's search would dlopen a second driver, with contexts and
 * streams of its own; so there each function is the program's own libcuda's export, read
 * from its link map (la_objopen) by name. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/objects.h"
#include "ncclshim/cuda.h"
#include "record_cuda.h"

static ncs_track_driver driver;
static _Atomic int have_driver;
static int audit_mode;

void ncs_rec_cuda_audit(void) { audit_mode = 1; }

/* A libcuda: it defines the driver's entry points the recorder needs. In audit mode each is
 * looked up by the exported name of the list's ABI: NAME_v2 (else NAME) for a V2 row, NAME
 * for a BASE one (whose NAME_v2, where a driver has one, takes other parameters). */
#define REC_SUFFIX_BASE 0
#define REC_SUFFIX_V2 1
#define REC_SUFFIX_(name, ask, policy, abi, n, params) REC_SUFFIX_##abi,
static const unsigned char is_v2[] = {NCCLSHIM_CUDA_FUNCTIONS(REC_SUFFIX_)};

static void *lookup(const struct link_map *map, const char *name, enum ncclshim_cuda_function fn) {
  const ElfW(Sym) *sym = NULL;
  if (is_v2[fn]) {
    char v2[64];
    snprintf(v2, sizeof(v2), "%s_v2", name);
    sym = ncshl_dynamic_lookup(map->l_ld, map->l_addr, v2);
  }
  if (sym == NULL || sym->st_value == 0) sym = ncshl_dynamic_lookup(map->l_ld, map->l_addr, name);
  return sym != NULL && sym->st_value != 0 ? (void *)(map->l_addr + sym->st_value) : NULL;
}

#define REC_DRIVER_FIND_(name) (NCCLSHIM_CUDA_PFN(name)) lookup(map, #name, NCCLSHIM_CUDA_FN_##name)
#define REC_DRIVER_LOOKUP_(name) \
  if ((found.name = REC_DRIVER_FIND_(name)) == NULL) return 0;
#define REC_DRIVER_LOOKUP_OPTIONAL_(name) found.name = REC_DRIVER_FIND_(name);
int ncs_rec_cuda_objopen(const struct link_map *map) {
  if (have_driver || ncshl_dynamic_lookup(map->l_ld, map->l_addr, "cuDriverGetVersion") == NULL)
    return 0;
  ncs_track_driver found;
  NCS_TRACK_DRIVER_FUNCTIONS(REC_DRIVER_LOOKUP_)
  NCS_TRACK_DRIVER_OPTIONAL(REC_DRIVER_LOOKUP_OPTIONAL_)
  if (found.cuStreamIsCapturing == NULL) return 0; /* older than CUDA 10.0 */
  driver = found;
  atomic_store_explicit(&have_driver, 1, memory_order_release);
  return 1;
}

/* Under LD_PRELOAD or a link: the default driver handle's table, once libcuda is mapped
 * (asked with RTLD_NOLOAD: the recorder never loads a driver the program has not). */
static void from_table(void) {
  const char *path = getenv("NCCLSHIM_CUDA_LIBRARY");
  void *mapped =
      dlopen(path != NULL && path[0] != '\0' ? path : "libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (mapped == NULL) return;
  dlclose(mapped);
  ncclshim_cuda *cuda = ncclshim_cuda_default();
  if (ncclshim_cuda_status(cuda) != NCCLSHIM_OK ||
      !ncclshim_cuda_has_function(cuda, NCCLSHIM_CUDA_FN_cuStreamIsCapturing))
    return;
  ncs_track_driver_of_table(ncclshim_cuda_functions(cuda), &driver);
  atomic_store_explicit(&have_driver, 1, memory_order_release);
}

/* Asked at the first operation (a call that takes a stream): by then NCCL has loaded the
 * driver, while a version query may come before it. */
const ncs_track_driver *ncs_rec_driver(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if (!audit_mode) pthread_once(&once, from_table);
  return atomic_load_explicit(&have_driver, memory_order_acquire) ? &driver : NULL;
}

int ncs_rec_capturing(const void *stream) {
  const ncs_track_driver *d = ncs_rec_driver();
  ncclshim_cu_result r = 0;
  return d != NULL && ncs_track_capturing(d, (CUstream)stream, &r) > 0;
}
