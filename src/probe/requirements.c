/* --require: a version, a capability or "driver-compatible", each with its result and why. */
#include <stdio.h>
#include <string.h>

#include "ncclshim/diag.h"
#include "parse_version.h"
#include "probe.h"

int probe_parse_requirement(const char *text, probe_requirement *r) {
  *r = (probe_requirement){.text = text, .capability = -1};
  if (strcmp(text, "driver-compatible") == 0) {
    r->kind = PROBE_REQUIRE_DRIVER;
  } else if (strcmp(text, "plugins-compatible") == 0) {
    r->kind = PROBE_REQUIRE_PLUGINS;
  } else if ((r->version = probe_parse_version(text)) != 0) {
    r->kind = PROBE_REQUIRE_VERSION;
  } else if ((r->capability = ncclshim_capability_from_name(text)) >= 0) {
    r->kind = PROBE_REQUIRE_CAPABILITY;
  } else {
    return 0;
  }
  return 1;
}

static void check_version(const probe *p, probe_requirement *r) {
  char have[16], need[16];
  ncclshim_format_version(r->version, need, sizeof(need));
  if (ncclshim_nccl_status(p->nccl) != NCCLSHIM_OK) {
    snprintf(r->reason, sizeof(r->reason), "needs NCCL >= %s; no NCCL: %s", need,
             ncclshim_nccl_message(p->nccl));
    return;
  }
  int loaded = ncclshim_nccl_version(p->nccl);
  r->met = loaded >= r->version;
  snprintf(r->reason, sizeof(r->reason), "needs NCCL >= %s; loaded %s", need,
           ncclshim_format_version(loaded, have, sizeof(have)));
}

static void check_capability(const probe *p, probe_requirement *r) {
  r->met = ncclshim_nccl_has(p->nccl, r->capability);
  if (r->met) {
    char have[16];
    snprintf(r->reason, sizeof(r->reason), "NCCL %s has it",
             ncclshim_format_version(ncclshim_nccl_version(p->nccl), have, sizeof(have)));
  } else {
    ncclshim_nccl_capability_reason(p->nccl, r->capability, r->reason, sizeof(r->reason));
  }
}

void probe_check_requirements(probe *p) {
  p->unmet = 0;
  for (int i = 0; i < p->requirement_count; i++) {
    probe_requirement *r = &p->requirements[i];
    if (r->kind == PROBE_REQUIRE_VERSION) {
      check_version(p, r);
    } else if (r->kind == PROBE_REQUIRE_CAPABILITY) {
      check_capability(p, r);
    } else if (r->kind == PROBE_REQUIRE_PLUGINS) {
      probe_check_plugins(p, r);
    } else {
      /* Minor version compatibility runs the NCCL: met, with the caveat in the reason. */
      r->met =
          p->driver.verdict == PROBE_DRIVER_OK || p->driver.verdict == PROBE_DRIVER_MINOR_OLDER;
      snprintf(r->reason, sizeof(r->reason), "%s", p->driver.reason);
    }
    p->unmet += !r->met;
  }
}
