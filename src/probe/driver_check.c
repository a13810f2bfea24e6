/* Driver against NCCL: NCCL is built with one CUDA toolkit (its banner says "+cuda13.0") and
 * needs a driver that supports that CUDA version. Loading such an NCCL on an older driver
 * looks fine; the failure ("CUDA driver version is insufficient for CUDA runtime version")
 * only comes at communicator init. From CUDA 11, NVIDIA's minor version compatibility lets a
 * build of X.Y run on any driver of major X (features needing the newer driver excepted);
 * across majors, and before 11, the driver must be at least the build's version. */
#include <stdio.h>
#include <string.h>

#include "probe.h"

/* 13000 for "+cuda13.0" (the driver's encoding: 1000*major + 10*minor); 0 if none. */
static int build_cuda_version(const char *tag) {
  static const char prefix[] = "+cuda";
  if (strncmp(tag, prefix, sizeof(prefix) - 1) != 0) return 0;
  const char *s = tag + sizeof(prefix) - 1;
  int major = 0, minor = 0, digits = 0;
  for (; *s >= '0' && *s <= '9' && digits < 3; s++, digits++) major = major * 10 + (*s - '0');
  if (digits == 0 || *s++ != '.') return 0;
  for (digits = 0; *s >= '0' && *s <= '9' && digits < 2; s++, digits++)
    minor = minor * 10 + (*s - '0');
  if (digits == 0 || major == 0) return 0;
  return major * 1000 + minor * 10;
}

const char *probe_driver_verdict_name(probe_driver_verdict verdict) {
  switch (verdict) {
  case PROBE_DRIVER_OK:
    return "ok";
  case PROBE_DRIVER_MINOR_OLDER:
    return "minor-older";
  case PROBE_DRIVER_TOO_OLD:
    return "too-old";
  default:
    return "unknown";
  }
}

void probe_check_driver(probe *p) {
  probe_driver_check *d = &p->driver;
  char built[16], have[16];
  *d = (probe_driver_check){PROBE_DRIVER_UNKNOWN, 0, 0, ""};
  int nccl_found = ncclshim_nccl_status(p->nccl) == NCCLSHIM_OK;
  const char *tag = nccl_found ? ncclshim_nccl_build(p->nccl) : "";
  d->nccl_cuda = build_cuda_version(tag);
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
