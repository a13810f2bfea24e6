/* A list of paths, each once, each with why it is there ("LD_LIBRARY_PATH entry",
 * "VIRTUAL_ENV=/opt/venv"): the directories and files the search's steps name. */
#ifndef NCCLSHIM_LOADER_LIST_H
#define NCCLSHIM_LOADER_LIST_H

#include <stddef.h>

typedef struct ncshl_named {
  char *path;
  char *why;
} ncshl_named;

typedef struct ncshl_list {
  ncshl_named *items;
  size_t count;
  int out_of_memory; /* an add failed: the list is short */
  const char *none;  /* a list of places left empty: why (a static string), or NULL */
} ncshl_list;

/* Append copies of `path` and `why` (NULL: ""), unless the list already has `path`. */
void ncshl_list_add(ncshl_list *list, const char *path, const char *why);
/* The same with `path` made of two parts, a and b ("/opt/venv" + "/lib"). */
void ncshl_list_add2(ncshl_list *list, const char *a, const char *b, const char *why);
void ncshl_list_free(ncshl_list *list);

/* 1 when the two paths name the same file (device and inode, through symlinks), else 0. */
int ncshl_same_file(const char *a, const char *b);

#endif
