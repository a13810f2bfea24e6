/* Audit mode's GOT slots (audit_got.c). */
#ifndef NCCLSHIM_DROPIN_AUDIT_GOT_H
#define NCCLSHIM_DROPIN_AUDIT_GOT_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

/* For a slot bound to `name` that holds `value`: the address to store instead, or 0 to leave
 * it as it is. */
typedef uintptr_t (*got_redirect)(const char *name, uintptr_t value);

/* The architectures whose relocation types audit_got.c reads; elsewhere a GOT binding is not
 * seen, and the debug line says so. */
#if defined(__x86_64__) || defined(__aarch64__)
#define NCCLSHIM_AUDIT_SEES_GOT 1
#else
#define NCCLSHIM_AUDIT_SEES_GOT 0
#endif

/* Give every GOT or data slot of `map` that `redirect` asks for its new address; returns how
 * many were changed. */
size_t ncs_audit_patch_got(const struct link_map *map, got_redirect redirect);

#endif
