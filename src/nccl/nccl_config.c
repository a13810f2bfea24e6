/* Filling an ncclConfig_t for whichever NCCL is loaded, within the caller's struct size. */
#include <string.h>

#include "../internal.h"
#include "nccl_handle.h"

#define FIELD_KIND_INT 0
#define FIELD_KIND_PTR 1

typedef struct field {
  const char *name;
  size_t offset;
  size_t width;
  int kind;
  int version;
} field;

#define FIELD_(id, member, kind, version)                  \
  {#member, offsetof(struct ncclshim_nccl_config, member), \
   sizeof(((struct ncclshim_nccl_config *)0)->member), FIELD_KIND_##kind, version},
static const field fields[] = {NCCLSHIM_CONFIG_FIELDS(FIELD_)};

/* The header every layout shares: size, magic, version. */
#define HEADER_SIZE offsetof(struct ncclshim_nccl_config, blocking)

const char *ncclshim_config_field_name(ncclshim_config_field f) {
  return (unsigned)f < NCCLSHIM_CONFIG_FIELD_COUNT ? fields[f].name : NULL;
}

ncclshim_status ncclshim_nccl_config_init(void *config, size_t config_size) {
  if (config == NULL || config_size < HEADER_SIZE)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "ncclConfig_t: %s (size %zu; at least %zu bytes are needed)",
                    config ? "too small" : "NULL pointer", config_size, (size_t)HEADER_SIZE);
  struct ncclshim_nccl_config full = NCCL_CONFIG_INITIALIZER;
  size_t size = config_size < sizeof(full) ? config_size : sizeof(full);
  full.size = size;
  memcpy(config, &full, size);
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_nccl_config_check(const ncclshim_nccl *nccl, size_t config_size,
                                           ncclshim_config_field f) {
  if ((unsigned)f >= NCCLSHIM_CONFIG_FIELD_COUNT)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclConfig_t: unknown field %d", (int)f);
  const field *d = &fields[f];
  char need[16], have[16];
  if (d->offset + d->width > config_size)
    return ncs_fail(NCCLSHIM_UNAVAILABLE,
                    "ncclConfig_t field %s lies past the end of this ncclConfig_t (%zu "
                    "bytes): the nccl.h it was compiled with predates it",
                    d->name, config_size);
  if (ncclshim_nccl_status(nccl) != NCCLSHIM_OK)
    return ncs_fail(NCCLSHIM_UNAVAILABLE, "ncclConfig_t field %s: no NCCL is loaded", d->name);
  if (nccl->version < d->version)
    return ncs_fail(NCCLSHIM_UNAVAILABLE,
                    "ncclConfig_t field %s needs NCCL >= %s; loaded %s would ignore it", d->name,
                    ncclshim_format_version(d->version, need, sizeof(need)),
                    ncclshim_format_version(nccl->version, have, sizeof(have)));
  return NCCLSHIM_OK;
}

static ncclshim_status set_field(const ncclshim_nccl *nccl, void *config, size_t config_size,
                                 ncclshim_config_field f, int kind, const void *value) {
  if (config == NULL || config_size < HEADER_SIZE)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclConfig_t: NULL or too small (%zu bytes)",
                    config_size);
  unsigned int magic;
  memcpy(&magic, (const char *)config + offsetof(struct ncclshim_nccl_config, magic),
         sizeof(magic));
  if (magic != NCCLSHIM_NCCL_CONFIG_MAGIC)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "ncclConfig_t was not initialised (use ncclshim_nccl_config_init)");
  ncclshim_status status = ncclshim_nccl_config_check(nccl, config_size, f);
  if (status != NCCLSHIM_OK) return status;
  if (fields[f].kind != kind)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclConfig_t field %s holds %s", fields[f].name,
                    fields[f].kind == FIELD_KIND_INT ? "an int" : "a string");
  memcpy((char *)config + fields[f].offset, value, fields[f].width);
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_nccl_config_set_int(const ncclshim_nccl *nccl, void *config,
                                             size_t config_size, ncclshim_config_field f,
                                             int value) {
  return set_field(nccl, config, config_size, f, FIELD_KIND_INT, &value);
}

ncclshim_status ncclshim_nccl_config_set_str(const ncclshim_nccl *nccl, void *config,
                                             size_t config_size, ncclshim_config_field f,
                                             const char *value) {
  return set_field(nccl, config, config_size, f, FIELD_KIND_PTR, &value);
}
