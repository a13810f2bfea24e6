#include "load_blocks.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "blocking.h"
#include "elf_file.h"
#include "ld_cache.h"
#include "list.h"
#include "objects.h"

enum { MOST_LEVELS = 8 };

/* The places under one directory of the search (ncshl_dir_places), found once per walk: a
 * walk tries each of a handful of names in the same few directories. */
typedef struct dir_places {
  char *dir;
  int absent;   /* no directory there: nothing under it can block */
  dev_t device; /* the directory's: another path to it (/lib and /usr/lib) shares its places */
  ino_t inode;
  size_t owner;      /* the entry holding the places: this one, or the first path to it */
  ncshl_list places; /* the owner's */
} dir_places;

typedef struct walk {
  ncshl_ld_cache cache;    /* mapped once per walk, as the loader maps it once per dlopen */
  ncshl_list program_dirs; /* ncshl_search_dirs, listed once */
  char *file;
  size_t size;
  ncshl_list seen;    /* files whose dependencies were looked at: "device:inode" */
  ncshl_list checked; /* paths found not to block */
  dir_places *dirs;
  size_t dir_count;
} walk;

static int file_blocks(walk *w, const char *path, int level);

static int is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* One RPATH or RUNPATH entry into `dir`, $ORIGIN or ${ORIGIN} replaced by `origin`: 0 when
 * the origin is unknown (NULL) and the entry names it, when it holds another $ token (the loader
 * expands $LIB and $PLATFORM, which NCCL's libraries do not use) or does not fit. */
static int expand_entry(const char *entry, size_t length, const char *origin, char *dir,
                        size_t size) {
  const char *token = memchr(entry, '$', length);
  if (token == NULL) return snprintf(dir, size, "%.*s", (int)length, entry) < (int)size;
  size_t before = (size_t)(token - entry), rest = length - before;
  size_t skip = rest >= 7 && strncmp(token, "$ORIGIN", 7) == 0     ? 7
                : rest >= 9 && strncmp(token, "${ORIGIN}", 9) == 0 ? 9
                                                                   : 0;
  if (skip == 0 || origin == NULL || memchr(token + skip, '$', rest - skip) != NULL) return 0;
  return snprintf(dir, size, "%.*s%s%.*s", (int)before, entry, origin, (int)(rest - skip),
                  token + skip) < (int)size;
}

/* The directories of an RPATH or RUNPATH (':'-separated), expanded, appended to `dirs`. */
static void add_path_list(ncshl_list *dirs, const char *value, const char *origin) {
  for (const char *start = value; start != NULL && *start != '\0';) {
    size_t length = strcspn(start, ":");
    char dir[PATH_MAX];
    if (length > 0 && expand_entry(start, length, origin, dir, sizeof(dir)))
      ncshl_list_add(dirs, dir, NULL);
    start += length + (start[length] != '\0');
  }
}

/* The places of `dir`, found the first time it is asked for; NULL when the directory is
 * absent (nothing under it can block) or out of memory (*failed set). */
static const ncshl_list *places_of(walk *w, const char *dir, int *failed) {
  *failed = 0;
  for (size_t i = 0; i < w->dir_count; i++)
    if (strcmp(w->dirs[i].dir, dir) == 0)
      return w->dirs[i].absent ? NULL : &w->dirs[w->dirs[i].owner].places;
  dir_places *grown = realloc(w->dirs, (w->dir_count + 1) * sizeof(*grown));
  char *copy = grown ? strdup(dir) : NULL;
  if (grown != NULL) w->dirs = grown;
  if (copy == NULL) {
    *failed = 1;
    return NULL;
  }
  size_t self = w->dir_count;
  dir_places *d = &w->dirs[self];
  *d = (dir_places){.dir = copy, .owner = self};
  struct stat st;
  d->absent = stat(dir, &st) != 0 || !S_ISDIR(st.st_mode);
  for (size_t i = 0; i < self && !d->absent && d->owner == self; i++)
    if (!w->dirs[i].absent && w->dirs[i].device == st.st_dev && w->dirs[i].inode == st.st_ino)
      d->owner = w->dirs[i].owner;
  d->device = st.st_dev;
  d->inode = st.st_ino;
  if (!d->absent && d->owner == self && ncshl_dir_places(dir, &d->places) != 0) {
    free(d->dir);
    ncshl_list_free(&d->places);
    *failed = 1;
    return NULL;
  }
  w->dir_count++;
  return d->absent ? NULL : &w->dirs[d->owner].places;
}

/* 1 when the file at `path` would block, its path then in w->file. A path found not to is not
 * looked at again in the walk: the same place reached by two paths, the cache naming a file a
 * directory holds, a dependency that two files need. */
static int path_blocks(walk *w, const char *path) {
  for (size_t i = 0; i < w->checked.count; i++)
    if (strcmp(w->checked.items[i].path, path) == 0) return 0;
  if (ncshl_would_block(path)) {
    snprintf(w->file, w->size, "%s", path);
    return 1;
  }
  ncshl_list_add(&w->checked, path, NULL);
  return 0;
}

/* 1 when `name` blocks in `dir` or under it, through the walk's places. */
static int dir_blocks(walk *w, const char *dir, const char *name) {
  int failed;
  const ncshl_list *places = places_of(w, dir, &failed);
  if (failed) return ncshl_dir_blocks(dir, name, w->file, w->size); /* the same, uncached */
  char path[PATH_MAX];
  for (size_t i = 0; places != NULL && i < places->count; i++)
    if (snprintf(path, sizeof(path), "%s/%s", places->items[i].path, name) < (int)sizeof(path) &&
        path_blocks(w, path))
      return 1;
  return 0;
}

typedef struct dynamic {
  ncshl_list needed;
  char *rpath, *runpath;
  int out_of_memory;
} dynamic;

/* The strings are copies: the reader's live only during the call. */
static int keep_dynamic(void *context, long long tag, const char *string) {
  dynamic *d = context;
  char **kept = tag == DT_RPATH ? &d->rpath : tag == DT_RUNPATH ? &d->runpath : NULL;
  if (tag == DT_NEEDED) ncshl_list_add(&d->needed, string, NULL);
  if (kept != NULL) {
    free(*kept);
    *kept = strdup(string);
    d->out_of_memory |= *kept == NULL;
  }
  return 0;
}

/* One dependency `name` of a file whose RPATH/RUNPATH are given (NULL: a dlopen by name). */
static int name_blocks(walk *w, const char *name, const char *rpath, const char *runpath,
                       const char *origin, int level) {
  ncshl_list dirs = {0}, cached = {0};
  if (runpath == NULL) add_path_list(&dirs, rpath, origin);
  for (size_t i = 0; i < w->program_dirs.count; i++)
    ncshl_list_add(&dirs, w->program_dirs.items[i].path, NULL);
  add_path_list(&dirs, runpath, origin);
  ncshl_ld_cache_find(&w->cache, name, &cached);
  int found = 0;
  for (size_t i = 0; i < dirs.count && !found; i++) found = dir_blocks(w, dirs.items[i].path, name);
  for (size_t i = 0; i < cached.count && !found; i++) found = path_blocks(w, cached.items[i].path);
  /* Then the file the loader would map: the first in its order that is one. */
  char path[PATH_MAX];
  for (size_t i = 0; i < dirs.count + cached.count && !found; i++) {
    int from_dirs = i < dirs.count;
    const char *at = from_dirs ? dirs.items[i].path : cached.items[i - dirs.count].path;
    if (from_dirs ? snprintf(path, sizeof(path), "%s/%s", at, name) >= (int)sizeof(path)
                  : snprintf(path, sizeof(path), "%s", at) >= (int)sizeof(path))
      continue;
    if (!is_file(path)) continue;
    found = file_blocks(w, path, level + 1);
    break;
  }
  ncshl_list_free(&dirs);
  ncshl_list_free(&cached);
  return found;
}

/* The directory of the file at `path`, symlinks resolved, for $ORIGIN; 0 when it has none. */
static int origin_of(const char *path, char *origin, size_t size) {
  char *real = realpath(path, NULL);
  int ok = real != NULL && snprintf(origin, size, "%s", real) < (int)size;
  free(real);
  if (ok) *strrchr(origin, '/') = '\0';
  return ok;
}

/* 1 the first time the walk meets the file at `path` (by device and inode, so that a link
 * and its target count once), 0 after that or when it is gone. */
static int first_visit(walk *w, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  char key[64];
  snprintf(key, sizeof(key), "%llu:%llu", (unsigned long long)st.st_dev,
           (unsigned long long)st.st_ino);
  size_t before = w->seen.count;
  ncshl_list_add(&w->seen, key, NULL); /* adds nothing for a key it holds */
  return w->seen.count > before;
}

static int file_blocks(walk *w, const char *path, int level) {
  if (level > MOST_LEVELS || !first_visit(w, path)) return 0;
  char origin[PATH_MAX];
  dynamic d = {0};
  int found = 0;
  ncshl_elf_read_dynamic(path, keep_dynamic, &d);
  /* $ORIGIN only matters to a search path that names it: the realpath only then. */
  int has_token = (d.rpath && strchr(d.rpath, '$')) || (d.runpath && strchr(d.runpath, '$'));
  const char *own = has_token && origin_of(path, origin, sizeof(origin)) ? origin : NULL;
  for (size_t i = 0; i < d.needed.count && !found; i++) {
    const char *name = d.needed.items[i].path;
    if (strchr(name, '/') != NULL) { /* a path: opened as it is */
      found = ncshl_would_block(name);
      if (found) snprintf(w->file, w->size, "%s", name);
      if (!found && is_file(name)) found = file_blocks(w, name, level + 1);
    } else {
      char *mapped = ncshl_mapped_name(name); /* the loader takes a mapped one, opening none */
      if (mapped == NULL) found = name_blocks(w, name, d.rpath, d.runpath, own, level);
      free(mapped);
    }
  }
  ncshl_list_free(&d.needed);
  free(d.rpath);
  free(d.runpath);
  return found;
}

static void walk_start(walk *w, const char *ld_cache, char *file, size_t size) {
  *w = (walk){.file = file, .size = size};
  ncshl_ld_cache_open(ld_cache ? ld_cache : "/etc/ld.so.cache", &w->cache);
  ncshl_search_dirs(&w->program_dirs);
}

static void walk_end(walk *w) {
  for (size_t i = 0; i < w->dir_count; i++) {
    free(w->dirs[i].dir);
    ncshl_list_free(&w->dirs[i].places);
  }
  free(w->dirs);
  ncshl_list_free(&w->seen);
  ncshl_list_free(&w->checked);
  ncshl_list_free(&w->program_dirs);
  ncshl_ld_cache_close(&w->cache);
}

int ncshl_name_load_blocks(const char *name, const char *ld_cache, char *file, size_t size) {
  walk w;
  walk_start(&w, ld_cache, file, size);
  int found = name_blocks(&w, name, NULL, NULL, "", 0);
  walk_end(&w);
  return found;
}

int ncshl_file_load_blocks(const char *path, const char *ld_cache, char *file, size_t size) {
  walk w;
  walk_start(&w, ld_cache, file, size);
  int found = file_blocks(&w, path, 0);
  walk_end(&w);
  return found;
}
