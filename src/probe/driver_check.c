/* Driver against NCCL: NCCL is built with one CUDA toolkit (its banner says "+cuda13.0") and
 * needs a driver that supports that CUDA version. Loading such an NCCL on an older driver
 * looks fine; the failure ("CUDA driver version is insufficient for CUDA runtime version")
 * only comes at communicator init. From CUDA 11, NVIDIA's minor version compatibility lets a
 * build of X.Y run on any driver of major X (features needing the newer driver excepted);
 * across majors, and before 11, the driver must be at least the build's version. */
#include <stdio.h>
#include <string.h>

#include "ncclshim/diag.h"
#include "parse_version.h"
#include "probe.h"

const char *probe_driver_verdict_name(probe_driver_verdict verdict) {
  static const char *const names[] = {[PROBE_DRIVER_UNKNOWN] = "unknown",
                                      [PROBE_DRIVER_OK] = "ok",
                                      [PROBE_DRIVER_MINOR_OLDER] = "minor-older",
                                      [PROBE_DRIVER_TOO_OLD] = "too-old"};
  return (unsigned)verdict < sizeof(names) / sizeof(names[0]) ? names[verdict] : "unknown";
}

void probe_check_driver(probe *p) {
  probe_driver_check *d = &p->driver;
  char built[16], have[16];
  *d = (probe_driver_check){PROBE_DRIVER_UNKNOWN, 0, 0, ""};
  int nccl_found = ncclshim_nccl_status(p->nccl) == NCCLSHIM_OK;
  const char *tag = nccl_found ? ncclshim_nccl_build(p->nccl) : "";
  d->nccl_cuda = probe_parse_cuda_tag(tag);
  if (ncclshim_cuda_status(p->cuda) == NCCLSHIM_OK)
    d->driver_cuda = ncclshim_cuda_driver_version(p->cuda, NULL, NULL);
  ncclshim_cuda_format_version(d->nccl_cuda, built, sizeof(built));
  ncclshim_cuda_format_version(d->driver_cuda, have, sizeof(have));

  if (!nccl_found) {
    snprintf(d->reason, sizeof(d->reason), "cannot tell: no NCCL");
  } else if (d->nccl_cuda == 0) {
    snprintf(d->reason, sizeof(d->reason), "cannot tell: NCCL's banner carries no +cudaX.Y tag");
  } else if (d->driver_cuda <= 0) {
    snprintf(d->reason, sizeof(d->reason), "cannot tell: no usable CUDA driver");
  } else if (d->driver_cuda >= d->nccl_cuda) {
    d->verdict = PROBE_DRIVER_OK;
    snprintf(d->reason, sizeof(d->reason), "the driver supports CUDA %s; NCCL was built with %s",
             have, built);
  } else if (d->driver_cuda / 1000 == d->nccl_cuda / 1000 && d->nccl_cuda >= 11000) {
    d->verdict = PROBE_DRIVER_MINOR_OLDER;
    snprintf(d->reason, sizeof(d->reason),
             "the driver supports CUDA %s, older than NCCL's build (%s): it runs by minor "
             "version compatibility, but features that need a newer driver fail",
             have, built);
  } else {
    d->verdict = PROBE_DRIVER_TOO_OLD;
    snprintf(d->reason, sizeof(d->reason),
             "the driver supports CUDA %s, NCCL was built with %s: communicator init will fail "
             "(driver version is insufficient); update the driver or use an NCCL built for "
             "CUDA %d",
             have, built, d->driver_cuda / 1000);
  }
}
