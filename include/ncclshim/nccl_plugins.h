/* NCCL's plugins (network, tuner, profiler, environment, GIN): which files NCCL would load,
 * found as NCCL finds them but without running NCCL or the plugins, the plugin ABI versions
 * each file exports, and whether the loaded NCCL accepts one of them. docs/plugins.md has the
 * facts, with their sources in NVIDIA/nccl.
 *
 * A plugin whose ABI the loaded NCCL does not accept is not an error to NCCL: it says so at
 * INFO level and falls back to its internal transport (or to no tuner, profiler...). On a
 * cluster where some nodes then use the plugin and others not, the job hangs. */
#ifndef NCCLSHIM_NCCL_PLUGINS_H
#define NCCLSHIM_NCCL_PLUGINS_H

#include <stddef.h>

#include "ncclshim/ncclshim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(ID, "name", variable NCCL reads, default library name NCCL tries when it is unset) */
/* clang-format off */
#define NCCLSHIM_PLUGIN_KINDS(X) \
  X(NET,      "net",      "NCCL_NET_PLUGIN",      "libnccl-net.so") \
  X(TUNER,    "tuner",    "NCCL_TUNER_PLUGIN",    "libnccl-tuner.so") \
  X(PROFILER, "profiler", "NCCL_PROFILER_PLUGIN", "libnccl-profiler.so") \
  X(ENV,      "env",      "NCCL_ENV_PLUGIN",      "libnccl-env.so") \
  X(GIN,      "gin",      "NCCL_GIN_PLUGIN",      "libnccl-gin.so")
/* clang-format on */

#define NCCLSHIM_PLUGIN_KIND_ENUM_(id, name, variable, library) NCCLSHIM_PLUGIN_##id,
typedef enum ncclshim_plugin_kind {
  NCCLSHIM_PLUGIN_KINDS(NCCLSHIM_PLUGIN_KIND_ENUM_) NCCLSHIM_PLUGIN_KIND_COUNT
} ncclshim_plugin_kind;

/* The NCCL releases whose plugin lookups were checked (docs/plugins.md has each source):
 * 2.28.9 (the release's library: the symbol names its loaders look up are strings in its
 * .rodata), 2.29.7 (its src/plugin/), 2.30.3 and 2.30.7 (release notes). Ascending. */
#define NCCLSHIM_PLUGIN_CHECKED_RELEASES(X) X(22809) X(22907) X(23003) X(23007)

/* The symbols NCCL looks up in a plugin library: X(KIND, "symbol", primary, first, last).
 * `primary` 1: the symbol that makes the plugin usable (NCCL tries the newest it knows
 * first); 0: an optional companion (CollNet beside net, RMA beside GIN). `first` and `last`:
 * the oldest and the newest CHECKED release that looks it up (`last` 0: the newest checked
 * one still does). Between two checked releases that agree the answer is theirs; where they
 * differ, or before the oldest checked release, it is "unknown", never a guess. A symbol of a
 * known family that no row names (ncclNetPlugin_v4) is looked up by no checked release. */
/* clang-format off */
#define NCCLSHIM_PLUGIN_ABIS(X) \
  X(NET,      "ncclNetPlugin_v6",      1, 22809, 0) \
  X(NET,      "ncclNetPlugin_v7",      1, 22809, 0) \
  X(NET,      "ncclNetPlugin_v8",      1, 22809, 0) \
  X(NET,      "ncclNetPlugin_v9",      1, 22809, 0) \
  X(NET,      "ncclNetPlugin_v10",     1, 22809, 0) \
  X(NET,      "ncclNetPlugin_v11",     1, 22809, 0) \
  X(NET,      "ncclNetPlugin_v12",     1, 23003, 0) \
  X(NET,      "ncclCollNetPlugin_v6",  0, 22809, 0) \
  X(NET,      "ncclCollNetPlugin_v7",  0, 22809, 0) \
  X(NET,      "ncclCollNetPlugin_v8",  0, 22809, 0) \
  X(NET,      "ncclCollNetPlugin_v9",  0, 22809, 0) \
  X(NET,      "ncclCollNetPlugin_v10", 0, 22809, 0) \
  X(NET,      "ncclCollNetPlugin_v11", 0, 22809, 0) \
  X(NET,      "ncclCollNetPlugin_v12", 0, 23003, 0) \
  X(TUNER,    "ncclTunerPlugin_v2",    1, 22809, 0) \
  X(TUNER,    "ncclTunerPlugin_v3",    1, 22809, 0) \
  X(TUNER,    "ncclTunerPlugin_v4",    1, 22809, 0) \
  X(TUNER,    "ncclTunerPlugin_v5",    1, 22809, 0) \
  X(TUNER,    "ncclTunerPlugin_v6",    1, 23003, 0) \
  X(PROFILER, "ncclProfiler_v1",       1, 22809, 0) \
  X(PROFILER, "ncclProfiler_v2",       1, 22809, 0) \
  X(PROFILER, "ncclProfiler_v3",       1, 22809, 0) \
  X(PROFILER, "ncclProfiler_v4",       1, 22809, 0) \
  X(PROFILER, "ncclProfiler_v5",       1, 22809, 0) \
  X(PROFILER, "ncclProfiler_v6",       1, 22907, 0) \
  X(ENV,      "ncclEnvPlugin_v1",      1, 22809, 0) \
  X(ENV,      "ncclEnvPlugin_v2",      1, 23007, 0) \
  X(GIN,      "ncclGinPlugin_v11",     1, 22809, 23003) \
  X(GIN,      "ncclGinPlugin_v12",     1, 22907, 23003) \
  X(GIN,      "ncclGinPlugin_v13",     1, 23003, 0) \
  X(GIN,      "ncclGinPlugin_v14",     1, 23007, 0) \
  X(GIN,      "ncclRmaPlugin_v13",     0, 23007, 0) \
  X(GIN,      "ncclRmaPlugin_v14",     0, 23007, 0)
/* clang-format on */
#define NCCLSHIM_PLUGIN_TABLE_OLDEST 22809
#define NCCLSHIM_PLUGIN_TABLE_NEWEST 23007
/* NCCL loads no profiler plugin before 2.23, which introduced the profiler plugin API. */
#define NCCLSHIM_PLUGIN_PROFILER_SINCE 22300

/* What the loaded NCCL would make of one plugin library. Stable values. */
typedef enum ncclshim_plugin_verdict {
  NCCLSHIM_PLUGIN_ABSENT = 0,     /* the variable is unset and no file has the default name:
                                     NCCL uses its internal one (or none); nothing to check */
  NCCLSHIM_PLUGIN_DISABLED = 1,   /* the variable says "none" */
  NCCLSHIM_PLUGIN_ACCEPTED = 2,   /* it exports a version the loaded NCCL takes (`chosen`) */
  NCCLSHIM_PLUGIN_REFUSED = 3,    /* it exports versions, none of which the loaded NCCL takes:
                                     NCCL falls back without an error */
  NCCLSHIM_PLUGIN_NO_ABI = 4,     /* the file exports no plugin symbol of its kind */
  NCCLSHIM_PLUGIN_NOT_FOUND = 5,  /* the variable names a plugin that no file matches */
  NCCLSHIM_PLUGIN_UNREADABLE = 6, /* a file that is not a readable shared object */
  NCCLSHIM_PLUGIN_UNKNOWN = 7     /* no NCCL loaded, or its release is outside the checked
                                     table and the answer would be a guess */
} ncclshim_plugin_verdict;

/* One library NCCL would try. Owned by the list; fields are only appended. */
typedef struct ncclshim_plugin {
  ncclshim_plugin_kind kind;
  const char *variable;  /* "NCCL_NET_PLUGIN" */
  const char *requested; /* the variable's entry (a list gives one entry each), or the
                            default name when unset */
  const char *path;      /* the file found (absolute), NULL when none */
  const char *exports;   /* every plugin symbol of the table the file exports, of any kind,
                            space-separated ("ncclNetPlugin_v8 ncclTunerPlugin_v3"); "" none */
  const char *chosen;    /* the symbol of its kind the loaded NCCL would take; NULL none */
  ncclshim_plugin_verdict verdict;
  const char *reason; /* one line saying why */
} ncclshim_plugin;

typedef struct ncclshim_plugin_list ncclshim_plugin_list;

/* Find the plugins the loaded NCCL (`nccl`, NULL for the default handle) would load in this
 * process's environment, for each kind: the variable's entries (NCCL_NET_PLUGIN and
 * NCCL_GIN_PLUGIN take comma-separated lists), each tried as NCCL does (the name, then
 * "libnccl-<kind>-<name>.so" for a bare name), or the default name when the variable is unset;
 * a tuner or profiler without a library of its own is looked for in the net plugin's file.
 * Names without '/' are looked for as the dynamic loader does: the absolute directories of
 * LD_LIBRARY_PATH, the ld.so cache, then the system directories. Files are read (their
 * .dynsym), never loaded. OK, INVALID_ARGUMENT (out NULL), OUT_OF_MEMORY. Free with
 * ncclshim_plugin_list_free. Thread-safe (reads the environment). */
NCCLSHIM_API ncclshim_status ncclshim_nccl_plugins(const ncclshim_nccl *nccl,
                                                   ncclshim_plugin_list **out);
/* The list's count, entry and free (as every list's: ncclshim.h). */
NCCLSHIM_API size_t ncclshim_plugin_list_count(const ncclshim_plugin_list *list);
NCCLSHIM_API const ncclshim_plugin *ncclshim_plugin_list_entry(const ncclshim_plugin_list *list,
                                                               size_t index);
NCCLSHIM_API void ncclshim_plugin_list_free(ncclshim_plugin_list *list);

/* 1 when any entry is REFUSED, NO_ABI, NOT_FOUND or UNREADABLE: a plugin asked for (or
 * present under its default name) that the loaded NCCL will silently not use. */
NCCLSHIM_API int ncclshim_plugin_list_has_problem(const ncclshim_plugin_list *list);

/* Whether NCCL release `nccl_version` (packed) looks `symbol` up: 1 yes, 0 no, -1 unknown
 * (a symbol of no family of the table; a release older than NCCLSHIM_PLUGIN_TABLE_OLDEST,
 * except that a profiler symbol is refused before NCCLSHIM_PLUGIN_PROFILER_SINCE; a release
 * between two checked ones that disagree). A release newer than NCCLSHIM_PLUGIN_TABLE_NEWEST
 * is taken to accept what that one does; a version newer than every row is unknown to it. */
NCCLSHIM_API int ncclshim_plugin_abi_accepted(const char *symbol, int nccl_version);

/* "net", "accepted"...; NULL for an unknown value. */
NCCLSHIM_API const char *ncclshim_plugin_kind_name(ncclshim_plugin_kind kind);
NCCLSHIM_API const char *ncclshim_plugin_verdict_name(ncclshim_plugin_verdict verdict);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_NCCL_PLUGINS_H */
