/* Filling NCCL's versioned config structs for whichever NCCL is loaded, within the caller's
 * struct size: ncclConfig_t (communicators) and ncclCollConfig_t (one collective call). Both
 * start with size, magic and version; each field has the first release that honours it. */
#include <string.h>

#include "src/internal.h"
#include "nccl_handle.h"

#define FIELD_KIND_INT 0
#define FIELD_KIND_PTR 1 /* a string */
#define FIELD_KIND_U64 2
#define FIELD_KIND_HANDLE 3

typedef struct field {
  const char *name;
  size_t offset;
  size_t width;
  int kind;
  int version;
} field;

/* One struct: its NCCL name, its fields, and where its header ends. */
typedef struct layout {
  const char *name;
  const field *fields;
  int count;
  size_t header;
} layout;

#define FIELD_OF_(type, member, kind, version) \
  {#member, offsetof(type, member), sizeof(((type *)0)->member), FIELD_KIND_##kind, version},
#define CONFIG_FIELD_(id, member, kind, version) \
  FIELD_OF_(struct ncclshim_nccl_config, member, kind, version)
#define COLL_FIELD_(id, member, kind, version) \
  FIELD_OF_(ncclshim_coll_config_t, member, kind, version)
static const field config_fields[] = {NCCLSHIM_CONFIG_FIELDS(CONFIG_FIELD_)};
static const field coll_fields[] = {NCCLSHIM_COLL_CONFIG_FIELDS(COLL_FIELD_)};

static const layout config_layout = {"ncclConfig_t", config_fields, NCCLSHIM_CONFIG_FIELD_COUNT,
                                     offsetof(struct ncclshim_nccl_config, blocking)};
static const layout coll_layout = {"ncclCollConfig_t", coll_fields,
                                   NCCLSHIM_COLL_CONFIG_FIELD_COUNT,
                                   offsetof(ncclshim_coll_config_t, ext)};

static const char *kind_text[] = {"an int", "a string", "a uint64_t", "a pointer"};

/* Both structs' header: size at 0, magic at 8, version at 12. */
#define MAGIC_OFFSET offsetof(struct ncclshim_nccl_config, magic)

static const char *field_name(const layout *l, int f) {
  return (unsigned)f < (unsigned)l->count ? l->fields[f].name : NULL;
}

/* Copy the first min(config_size, sizeof full) bytes of `full` (a struct whose first member
 * is its size) into config, the size set to what was copied. */
static ncclshim_status init(const layout *l, void *config, size_t config_size, void *full,
                            size_t full_size) {
  if (config == NULL || config_size < l->header)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: %s (size %zu; at least %zu bytes are needed)",
                    l->name, config ? "too small" : "NULL pointer", config_size, l->header);
  size_t size = config_size < full_size ? config_size : full_size;
  memcpy(full, &size, sizeof(size));
  memcpy(config, full, size);
  return NCCLSHIM_OK;
}

static ncclshim_status check(const layout *l, const ncclshim_nccl *nccl, size_t config_size,
                             int f) {
  if ((unsigned)f >= (unsigned)l->count)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: unknown field %d", l->name, f);
  const field *d = &l->fields[f];
  char need[16], have[16];
  if (d->offset + d->width > config_size)
    return ncs_fail(NCCLSHIM_UNAVAILABLE,
                    "%s field %s lies past the end of this %s (%zu bytes): the nccl.h it was "
                    "compiled with predates it",
                    l->name, d->name, l->name, config_size);
  if (ncclshim_nccl_status(nccl) != NCCLSHIM_OK)
    return ncs_fail(NCCLSHIM_UNAVAILABLE, "%s field %s: no NCCL is loaded", l->name, d->name);
  if (nccl->version < d->version)
    return ncs_fail(NCCLSHIM_UNAVAILABLE, "%s field %s needs NCCL >= %s; loaded %s would ignore it",
                    l->name, d->name, ncclshim_format_version(d->version, need, sizeof(need)),
                    ncclshim_format_version(nccl->version, have, sizeof(have)));
  return NCCLSHIM_OK;
}

static ncclshim_status set_field(const layout *l, const ncclshim_nccl *nccl, void *config,
                                 size_t config_size, int f, int kind, const void *value) {
  if (config == NULL || config_size < l->header)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: NULL or too small (%zu bytes)", l->name,
                    config_size);
  unsigned int magic;
  memcpy(&magic, (const char *)config + MAGIC_OFFSET, sizeof(magic));
  if (magic != NCCLSHIM_NCCL_CONFIG_MAGIC)
    return ncs_fail(
        NCCLSHIM_INVALID_ARGUMENT, "%s was not initialised (use %s)", l->name,
        l == &config_layout ? "ncclshim_nccl_config_init" : "ncclshim_coll_config_init");
  ncclshim_status status = check(l, nccl, config_size, f);
  if (status != NCCLSHIM_OK) return status;
  if (l->fields[f].kind != kind)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s field %s holds %s", l->name, l->fields[f].name,
                    kind_text[l->fields[f].kind]);
  memcpy((char *)config + l->fields[f].offset, value, l->fields[f].width);
  return NCCLSHIM_OK;
}

/* ---- ncclConfig_t ---------------------------------------------------------------------- */

const char *ncclshim_config_field_name(ncclshim_config_field f) {
  return field_name(&config_layout, f);
}

ncclshim_status ncclshim_nccl_config_init(void *config, size_t config_size) {
  struct ncclshim_nccl_config full = NCCL_CONFIG_INITIALIZER;
  return init(&config_layout, config, config_size, &full, sizeof(full));
}

ncclshim_status ncclshim_nccl_config_check(const ncclshim_nccl *nccl, size_t config_size,
                                           ncclshim_config_field f) {
  return check(&config_layout, nccl, config_size, f);
}

ncclshim_status ncclshim_nccl_config_set_int(const ncclshim_nccl *nccl, void *config,
                                             size_t config_size, ncclshim_config_field f,
                                             int value) {
  return set_field(&config_layout, nccl, config, config_size, f, FIELD_KIND_INT, &value);
}

ncclshim_status ncclshim_nccl_config_set_str(const ncclshim_nccl *nccl, void *config,
                                             size_t config_size, ncclshim_config_field f,
                                             const char *value) {
  return set_field(&config_layout, nccl, config, config_size, f, FIELD_KIND_PTR, &value);
}

/* ---- ncclCollConfig_t ------------------------------------------------------------------ */

const char *ncclshim_coll_config_field_name(ncclshim_coll_config_field f) {
  return field_name(&coll_layout, f);
}

ncclshim_status ncclshim_coll_config_init(void *config, size_t config_size) {
  ncclshim_coll_config_t full = NCCL_COLLCONFIG_INITIALIZER;
  return init(&coll_layout, config, config_size, &full, sizeof(full));
}

ncclshim_status ncclshim_coll_config_check(const ncclshim_nccl *nccl, size_t config_size,
                                           ncclshim_coll_config_field f) {
  return check(&coll_layout, nccl, config_size, f);
}

ncclshim_status ncclshim_coll_config_set_int(const ncclshim_nccl *nccl, void *config,
                                             size_t config_size, ncclshim_coll_config_field f,
                                             int value) {
  return set_field(&coll_layout, nccl, config, config_size, f, FIELD_KIND_INT, &value);
}

ncclshim_status ncclshim_coll_config_set_str(const ncclshim_nccl *nccl, void *config,
                                             size_t config_size, ncclshim_coll_config_field f,
                                             const char *value) {
  return set_field(&coll_layout, nccl, config, config_size, f, FIELD_KIND_PTR, &value);
}

ncclshim_status ncclshim_coll_config_set_u64(const ncclshim_nccl *nccl, void *config,
                                             size_t config_size, ncclshim_coll_config_field f,
                                             uint64_t value) {
  return set_field(&coll_layout, nccl, config, config_size, f, FIELD_KIND_U64, &value);
}

ncclshim_status ncclshim_coll_config_set_ptr(const ncclshim_nccl *nccl, void *config,
                                             size_t config_size, ncclshim_coll_config_field f,
                                             void *value) {
  return set_field(&coll_layout, nccl, config, config_size, f, FIELD_KIND_HANDLE, &value);
}
