/* Audit mode: LD_AUDIT=libncclshim-nccl.so.0 (docs/dropin.md). glibc loads the library as an
 * auditor, in a link namespace of its own, before the program. Every object mapped is shown
 * to la_objopen: an NCCL (an object that defines ncclGetVersion and is not a drop-in) is
 * counted at once, and a second one reported. Each binding of an NCCL name to the first NCCL,
 * however the program makes it (a linked call's PLT slot, dlsym, ctypes), passes through
 * la_symbind64, which notes the real address and hands back the recorder's wrapper for that
 * function. A binding through a GOT slot (-fno-plt, a taken &ncclAllReduce) passes through
 * no audit hook: once each load is complete, the objects it mapped have those slots given
 * the wrappers too (audit_got.c). The wrappers call the addresses noted: this copy of the
 * library never loads an NCCL of its own. With the recorder off, bindings are left as they
 * are. */
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "loader/objects.h"
#include "src/internal.h"
#include "src/nccl/nccl_names.h"
#include "audit_got.h"
#include "record.h"
#include "record_cuda.h"
#include "say.h"

#define EXPORT __attribute__((visibility("default")))

/* The real functions, filled one by one as the program binds them; the recording table's
 * wrappers call them. */
static ncclshim_nccl_table bound;
static const ncclshim_nccl_table *recording;
static int wrapper_handed_out;

/* A drop-in in the program's namespace (LD_PRELOAD, or linked) records the calls made
 * through it: the auditor's recorder then hands over to it, so that each call is recorded
 * once, in one dump, and one recorder catches the signals. A binding to NCCL that only the
 * auditor sees (dlsym on NCCL's handle, ctypes) is given the drop-in's function of that
 * name, which records it and forwards it. */
static const struct link_map *dropin;

#define FUNCTION_(name, version, policy, role, returns, n, params) \
  {#name, offsetof(ncclshim_nccl_table, name)},
static const struct {
  const char *name;
  size_t offset;
} functions[] = {NCCLSHIM_NCCL_FUNCTIONS(FUNCTION_)};
#define FUNCTION_COUNT (sizeof(functions) / sizeof(functions[0]))

/* The NCCLs mapped now, the first the one bound; an NCCL that is unmapped (dlclose) leaves
 * the list (la_objclose), so that one opened again later is the first again, and a link map
 * is never read after it is freed: its name is kept as a copy. */
enum { MAX_NCCLS = 8 };
static struct {
  uintptr_t map;
  char name[PATH_MAX];
} nccls[MAX_NCCLS];
static size_t nccl_count;

/* The objects mapped since the last load completed (la_activity), whose GOT slots are then
 * read; past PENDING_MAX, every object of the namespace is. */
enum { PENDING_MAX = 1024 };
static const struct link_map *pending[PENDING_MAX];
static size_t pending_count;
static int pending_overflow;

/* ---- Is this object an NCCL? Its dynamic symbol table, read from memory. ---- */

static int is_nccl(const struct link_map *map) {
  return ncshl_dynamic_lookup(map->l_ld, map->l_addr, "ncclGetVersion") != NULL &&
         ncshl_dynamic_lookup(map->l_ld, map->l_addr, NCCLSHIM_DROPIN_MARKER_NAME) == NULL;
}

/* The program's libc's __register_atfork (what its pthread_atfork calls): the auditor's own
 * libc never sees the program's fork, so the recorder's fork handler is registered with the
 * program's, at the first recorded call (the program's libc is initialized by then). */
typedef int (*register_atfork_fn)(void (*)(void), void (*)(void), void (*)(void), void *);
static register_atfork_fn program_register_atfork;

static void register_fork_handler(void) {
  if (program_register_atfork != NULL) program_register_atfork(NULL, NULL, ncs_rec_in_child, NULL);
}

static void note_libc(const struct link_map *map) {
  const ElfW(Sym) *sym = ncshl_dynamic_lookup(map->l_ld, map->l_addr, "__register_atfork");
  if (program_register_atfork != NULL || sym == NULL ||
      ncshl_dynamic_lookup(map->l_ld, map->l_addr, "__libc_start_main") == NULL)
    return;
  program_register_atfork = (register_atfork_fn)(map->l_addr + sym->st_value);
  atomic_store(&ncs_rec_on_first_call, register_fork_handler);
}

/* A copy of ncclshim's loader (libncclshim, or the drop-in linked or preloaded): it checks
 * that what dlsym hands it lies in the NCCL it opened, and forwards to it. Its bindings are
 * left alone: a wrapper handed to it would fail that check (every ncclshim loader in the
 * process refusing NCCL), and under LD_PRELOAD as well its own recorder records each call. */
static int is_ncclshim(const struct link_map *map) {
  return ncshl_dynamic_lookup(map->l_ld, map->l_addr, NCCLSHIM_DROPIN_MARKER_NAME) != NULL ||
         ncshl_dynamic_lookup(map->l_ld, map->l_addr, "ncclshim_nccl_open") != NULL;
}

static const char *name_of(const struct link_map *map) {
  return map->l_name != NULL && map->l_name[0] != '\0' ? map->l_name : "the program";
}

/* ---- The audit interface (man 7 rtld-audit) ---- */

EXPORT unsigned int la_version(unsigned int version) {
  recording = ncs_rec_audit_table(&bound);
  ncs_rec_cuda_audit();
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

/* Bindings from every object are seen; bindings to an NCCL only are. */
/* Bindings to NCCL are changed: to the recorder's wrappers, or to the drop-in's functions. */
static int redirecting(void) { return recording != NULL || dropin != NULL; }

/* A drop-in mapped in the program's namespace before the auditor handed out any wrapper: the
 * auditor's recorder turns off (its signal actions given back) and the drop-in's records. */
static void hand_over(const struct link_map *map, Lmid_t lmid) {
  if (recording == NULL || dropin != NULL || wrapper_handed_out || lmid != LM_ID_BASE ||
      ncshl_dynamic_lookup(map->l_ld, map->l_addr, NCCLSHIM_DROPIN_MARKER_NAME) == NULL)
    return;
  dropin = map;
  recording = NULL;
  ncs_rec_hand_over();
  if (ncs_debug_enabled())
    ncs_rec_say("audit mode: the drop-in in the program's namespace records: ", name_of(map),
                "; NCCL's functions bound by dlsym or ctypes are bound to it", 0);
}

EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
  /* The cookie is the link map, with bit 0 set for an ncclshim loader's (maps are aligned). */
  *cookie = (uintptr_t)map | (uintptr_t)is_ncclshim(map);
  if (*cookie & 1) {
    hand_over(map, lmid);
    return 0;
  }
  if (recording != NULL && ncs_rec_cuda_objopen(map)) return LA_FLG_BINDFROM;
  if (!is_nccl(map)) {
    if (recording != NULL && lmid == LM_ID_BASE) note_libc(map);
    if (redirecting() && lmid == LM_ID_BASE && pending_count < PENDING_MAX)
      pending[pending_count++] = map;
    else if (redirecting() && lmid == LM_ID_BASE)
      pending_overflow = 1;
    return LA_FLG_BINDFROM;
  }
  if (nccl_count == 0) {
    if (ncs_debug_enabled())
      ncs_rec_say("audit mode: NCCL mapped: ", name_of(map),
                  dropin != NULL      ? "; its calls are recorded by the drop-in"
                  : recording == NULL ? "; the recorder is off"
                  : NCCLSHIM_AUDIT_SEES_GOT
                      ? "; its functions are recorded however they are bound (dlsym, "
                        "ctypes, PLT, GOT)"
                      : "; its functions are recorded when bound by dlsym, ctypes or a "
                        "PLT slot, not through a GOT slot (-fno-plt, a taken address) on "
                        "this architecture: run such a program with LD_PRELOAD",
                  0);
  } else {
    char first[PATH_MAX + 64];
    snprintf(first, sizeof(first),
             " is mapped while %s is: two NCCLs in this process; calls "
             "to the second are not recorded",
             nccls[0].name);
    ncs_rec_say("warning: audit mode: a second NCCL, ", name_of(map), first, 0);
  }
  if (nccl_count < MAX_NCCLS) {
    nccls[nccl_count].map = (uintptr_t)map;
    snprintf(nccls[nccl_count++].name, sizeof(nccls[0].name), "%s", name_of(map));
  }
  return LA_FLG_BINDFROM | LA_FLG_BINDTO;
}

EXPORT unsigned int la_objclose(uintptr_t *cookie) {
  if ((*cookie & ~(uintptr_t)1) == (uintptr_t)dropin) dropin = NULL;
  for (size_t i = 0; i < pending_count; i++)
    if ((uintptr_t)pending[i] == *cookie) pending[i] = pending[--pending_count];
  for (size_t i = 0; i < nccl_count; i++) {
    if (nccls[i].map != *cookie) continue;
    memmove(&nccls[i], &nccls[i + 1], (nccl_count - i - 1) * sizeof(nccls[0]));
    nccl_count--;
    break;
  }
  return 0;
}

static int index_of(const char *name) {
  if (name[0] == 'p') name++; /* pnccl profiling aliases */
  for (size_t i = 0; i < FUNCTION_COUNT; i++)
    if (strcmp(functions[i].name, name) == 0) return (int)i;
  return -1;
}

/* What a binding of function i to the first NCCL's `real` gets instead: the recorder's
 * wrapper, or the drop-in's function once the auditor handed over; 0 to leave it. */
static uintptr_t target_of(int i, uintptr_t real) {
  if (dropin != NULL) {
    const ElfW(Sym) *own = ncshl_dynamic_lookup(dropin->l_ld, dropin->l_addr, functions[i].name);
    return own != NULL && ELF64_ST_TYPE(own->st_info) == STT_FUNC ? dropin->l_addr + own->st_value
                                                                  : 0;
  }
  if (recording == NULL) return 0;
  memcpy((char *)&bound + functions[i].offset, &real, sizeof(real));
  uintptr_t wrapper;
  memcpy(&wrapper, (const char *)recording + functions[i].offset, sizeof(wrapper));
  wrapper_handed_out = 1;
  return wrapper;
}

/* glibc shows a binding to an NCCL (LA_FLG_BINDTO) from any object, dlsym's included: one
 * from an ncclshim loader is left as it is. */
static uintptr_t redirect(const ElfW(Sym) * sym, const uintptr_t *refcook, const uintptr_t *defcook,
                          const char *symname) {
  uintptr_t real = sym->st_value, target;
  int i;
  if (nccl_count == 0 || (*refcook & 1) || *defcook != nccls[0].map ||
      (i = index_of(symname)) < 0 || ELF64_ST_TYPE(sym->st_info) != STT_FUNC ||
      (target = target_of(i, real)) == 0)
    return real;
  return target;
}

/* A GOT slot bound to an NCCL name that holds the first NCCL's function: its wrapper. */
static uintptr_t got_target(const char *name, uintptr_t value) {
  int i;
  if (nccl_count == 0 || (i = index_of(name)) < 0) return 0;
  const struct link_map *nccl = (const struct link_map *)nccls[0].map;
  const ElfW(Sym) *sym = ncshl_dynamic_lookup(nccl->l_ld, nccl->l_addr, name);
  if (sym == NULL || ELF64_ST_TYPE(sym->st_info) != STT_FUNC ||
      value != nccl->l_addr + sym->st_value)
    return 0;
  return target_of(i, value);
}

EXPORT void la_activity(uintptr_t *cookie, unsigned int flag) {
  (void)cookie;
  if (flag != LA_ACT_CONSISTENT) return;
  if (redirecting() && nccl_count > 0) {
    if (pending_overflow && pending_count > 0) {
      const struct link_map *m = pending[0];
      while (m->l_prev != NULL) m = m->l_prev;
      for (; m != NULL; m = m->l_next)
        if (m != (const struct link_map *)nccls[0].map) ncs_audit_patch_got(m, got_target);
    } else {
      for (size_t i = 0; i < pending_count; i++) ncs_audit_patch_got(pending[i], got_target);
    }
  }
  pending_count = 0;
  pending_overflow = 0;
}

#if __ELF_NATIVE_CLASS == 64
EXPORT uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook,
                              uintptr_t *defcook, unsigned int *flags, const char *symname) {
  (void)ndx;
  *flags |= LA_SYMB_NOPLTENTER | LA_SYMB_NOPLTEXIT;
  return redirect(sym, refcook, defcook, symname);
}
#else
EXPORT uintptr_t la_symbind32(Elf32_Sym *sym, unsigned int ndx, uintptr_t *refcook,
                              uintptr_t *defcook, unsigned int *flags, const char *symname) {
  (void)ndx;
  *flags |= LA_SYMB_NOPLTENTER | LA_SYMB_NOPLTEXIT;
  return redirect(sym, refcook, defcook, symname);
}
#endif
