/* The doctor's and --explain's picture of the machine: candidates of the search and Python
 * environments' wheels merged into one list of files (by real path), each read as bytes. */
#include "inventory.h"

#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ncclshim/cuda.h"
#include "parse_version.h"
#include "loader/trace.h"

int inventory_find(const inventory *inv, const char *path) {
  for (size_t i = 0; i < inv->count; i++)
    if (strcmp(inv->copies[i].path, path) == 0) return (int)i;
  return -1;
}

static int add_copy(inventory *inv, const char *path) {
  int found = inventory_find(inv, path);
  if (found >= 0) return found;
  nccl_copy *grown = realloc(inv->copies, (inv->count + 1) * sizeof(*grown));
  if (grown == NULL) return -1;
  inv->copies = grown;
  nccl_copy *c = &grown[inv->count];
  *c = (nccl_copy){.search_rank = -1, .env = -1, .how = NCCLSHIM_VIA_NONE};
  if ((c->path = strdup(path)) == NULL) return -1;
  return (int)inv->count++;
}

static void read_copy(nccl_copy *c) {
  c->version_source = "unknown";
  if (!elf_facts_read(c->path, &c->facts)) {
    snprintf(c->unusable, sizeof(c->unusable), "%s", c->facts.reason);
    return;
  }
  int newest_function = 0, oldest_lacked = 0;
  const char *missing = NULL, *newest_name = NULL, *lacked = NULL;
  for (int fn = 0; fn < NCCLSHIM_NCCL_FUNCTION_COUNT; fn++) {
    const char *name = ncclshim_nccl_function_name(fn);
    int since = ncclshim_nccl_function_version(fn);
    if (elf_facts_defines(&c->facts, name)) {
      if (since > newest_function) {
        newest_function = since;
        newest_name = name;
      }
      continue;
    }
    if (ncclshim_nccl_function_required(fn) && missing == NULL) missing = name;
    /* NCCL exports its whole API: a release has every function of the list up to it */
    if (c->facts.banner_version && since <= c->facts.banner_version &&
        (lacked == NULL || since < oldest_lacked)) {
      lacked = name;
      oldest_lacked = since;
    }
  }
  if (c->facts.banner_version && (c->facts.banner_version < newest_function || lacked)) {
    /* the file defines a function of a later release than its banner names, or lacks one of
     * the release it names: the functions are what a program gets, so they give the version
     * (a lower bound) */
    c->false_banner = c->facts.banner_version;
    if (c->facts.banner_version < newest_function)
      c->later_function = newest_name;
    else
      c->lacked_function = lacked, c->lacked_since = oldest_lacked;
    c->version = newest_function;
    c->version_source = "functions";
  } else if (c->facts.banner_version) {
    c->version = c->facts.banner_version;
    c->version_source = "banner";
  } else if ((c->version = probe_parse_library_name(c->path))) {
    c->version_source = "file-name";
  } else if ((c->version = newest_function)) {
    c->version_source = "functions";
  }
  if (c->facts.is_dropin) /* it defines NCCL's names, but is ncclshim: the search skips it */
    snprintf(c->unusable, sizeof(c->unusable),
             "this is ncclshim's drop-in library, not NCCL: the search skips it");
  else if (!elf_facts_defines(&c->facts, "ncclGetVersion"))
    snprintf(c->unusable, sizeof(c->unusable), "not NCCL: it defines no ncclGetVersion");
  else if (missing)
    snprintf(c->unusable, sizeof(c->unusable), "lacks the required function %s", missing);
  else if (c->version && c->version / 10000 != 2)
    snprintf(c->unusable, sizeof(c->unusable), "NCCL major version %d, ncclshim speaks 2",
             c->version / 10000);
  else
    c->usable = 1;
}

/* The copy at `path` (its real path), added and read when new; -1 out of memory. */
static int copy_of_file(inventory *inv, const char *path) {
  char *real = realpath(path, NULL);
  size_t before = inv->count;
  int at = add_copy(inv, real ? real : path);
  free(real);
  if (at >= 0 && inv->count > before) read_copy(&inv->copies[at]);
  return at;
}

/* The first copy the cache named by NCCLSHIM_LD_CACHE registers: the loader reads only
 * /etc/ld.so.cache, so with another cache named (a test's) that step stands in for it. */
static int named_cache_copy(const inventory *inv) {
  for (size_t i = 0; i < inv->count; i++)
    if (inv->copies[i].search_rank >= 0 && inv->copies[i].how == NCCLSHIM_VIA_LD_CACHE &&
        inv->copies[i].facts.ok)
      return (int)i;
  return -1;
}

enum { TRACE_LIMIT_MS = 10000 };

/* What a plain process maps for libnccl.so.2, as the dynamic loader itself says. 0, or -1 out
 * of memory. */
static int ask_the_loader(inventory *inv) {
  const char *cache = secure_getenv("NCCLSHIM_LD_CACHE"); /* as the library reads it */
  int other_cache = cache != NULL && cache[0] == '/' && strcmp(cache, "/etc/ld.so.cache") != 0;
  ncshl_trace_result trace;
  ncshl_trace("libnccl.so.2", other_cache, TRACE_LIMIT_MS, &trace);
  inv->plain_source = "loader";
  switch (trace.outcome) {
  case NCSHL_TRACE_MAPS:
    return (inv->plain = copy_of_file(inv, trace.path)) < 0 ? -1 : 0;
  case NCSHL_TRACE_PRELOADED:
    for (char *line = trace.preloaded; *line && inv->plain < 0; line += strlen(line) + 1) {
      line[strcspn(line, "\n")] = '\0';
      elf_facts facts;
      int nccl = elf_facts_read(line, &facts) && strcmp(facts.soname, "libnccl.so.2") == 0;
      elf_facts_close(&facts);
      if (nccl && (inv->plain = copy_of_file(inv, line)) < 0) return -1;
    }
    inv->plain_source = "loader (LD_PRELOAD)";
    return 0;
  case NCSHL_TRACE_NOT_FOUND:
    if (other_cache && (inv->plain = named_cache_copy(inv)) >= 0)
      inv->plain_source = "loader, then the cache NCCLSHIM_LD_CACHE names";
    return 0;
  case NCSHL_TRACE_FAILS:
    snprintf(inv->plain_error, sizeof(inv->plain_error), "%s", trace.message);
    snprintf(inv->plain_error_file, sizeof(inv->plain_error_file), "%s", trace.path);
    if (trace.path[0] && copy_of_file(inv, trace.path) < 0) return -1;
    return 0;
  case NCSHL_TRACE_UNAVAILABLE:
    break;
  }
  inv->plain_source = "unknown: the dynamic loader could not be asked";
  snprintf(inv->plain_error, sizeof(inv->plain_error), "%s", trace.message);
  return 0;
}

int inventory_gather(inventory *inv, char **pythons, int python_count) {
  *inv = (inventory){.plain = -1, .ncclshim = -1};
  probe_candidate *cands = NULL;
  size_t ncands = 0;
  int rc = probe_candidates(&cands, &ncands);
  for (size_t i = 0; rc == 0 && i < ncands; i++) {
    int at = add_copy(inv, cands[i].path);
    if (at < 0) {
      rc = -1;
      break;
    }
    nccl_copy *c = &inv->copies[at];
    c->search_rank = (int)i;
    c->how = cands[i].how;
    c->mapped = cands[i].mapped;
    snprintf(c->reason, sizeof(c->reason), "%s", cands[i].reason);
  }
  probe_candidates_free(cands, ncands);
  if (rc == 0 && pyenv_discover(pythons, python_count, &inv->envs, &inv->env_count) != 0) rc = -1;
  for (size_t e = 0; rc == 0 && e < inv->env_count; e++) {
    const py_env *env = &inv->envs[e];
    for (size_t w = 0; w < env->wheel_count + (env->conda_lib != NULL); w++) {
      int at = add_copy(inv, w < env->wheel_count ? env->wheel_files[w] : env->conda_lib);
      if (at < 0) {
        rc = -1;
        break;
      }
      if (inv->copies[at].env < 0) inv->copies[at].env = (int)e;
    }
  }
  for (size_t i = 0; i < inv->count; i++) read_copy(&inv->copies[i]);
  if (rc == 0 && ask_the_loader(inv) != 0) rc = -1;
  int best = -1;
  for (size_t i = 0; i < inv->count; i++) {
    const nccl_copy *c = &inv->copies[i];
    if (c->usable && c->search_rank >= 0 &&
        (best < 0 || c->search_rank < inv->copies[best].search_rank))
      best = (int)i;
  }
  inv->ncclshim = best;
  inv->host_glibc = elf_facts_host_glibc();
  ncclshim_cuda *cuda = ncclshim_cuda_default();
  if (ncclshim_cuda_status(cuda) == NCCLSHIM_OK)
    inv->driver_cuda = ncclshim_cuda_driver_version(cuda, NULL, NULL);
  if (rc != 0) fprintf(stderr, "ncclshim-probe: out of memory\n");
  return rc;
}

void inventory_free(inventory *inv) {
  for (size_t i = 0; i < inv->count; i++) {
    elf_facts_close(&inv->copies[i].facts);
    free(inv->copies[i].path);
  }
  free(inv->copies);
  pyenv_free(inv->envs, inv->env_count);
  *inv = (inventory){.plain = -1, .ncclshim = -1};
}

int inventory_env_winner(const inventory *inv, size_t e) {
  if (e < inv->env_count && inv->envs[e].wheel_count > 0)
    return inventory_find(inv, inv->envs[e].wheel_files[0]);
  if (e < inv->env_count && inv->envs[e].conda_lib != NULL)
    return inventory_find(inv, inv->envs[e].conda_lib);
  return inv->plain;
}

const char *copy_version_text(const nccl_copy *c, char *buf, size_t size) {
  char v[16];
  if (c->version == 0) {
    snprintf(buf, size, "unknown");
  } else {
    ncclshim_format_version(c->version, v, sizeof(v));
    snprintf(buf, size, "%s%s%s", strcmp(c->version_source, "functions") == 0 ? ">= " : "", v,
             c->facts.build);
  }
  return buf;
}

const char *copy_where(const inventory *inv, const nccl_copy *c, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  if (c->search_rank >= 0)
    used = (size_t)snprintf(buf, size, "%s", ncclshim_found_via_name(c->how));
  if (c->env >= 0 && used < size)
    snprintf(buf + used, size - used, "%spython env %s (%s)", used ? "; " : "",
             inv->envs[c->env].prefix, inv->envs[c->env].why);
  if (buf[0] == '\0') snprintf(buf, size, "(not reached)");
  return buf;
}
