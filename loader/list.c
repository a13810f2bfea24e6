#include "list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void ncshl_list_add(ncshl_list *list, const char *path, const char *why) {
  for (size_t i = 0; i < list->count; i++)
    if (strcmp(list->items[i].path, path) == 0) return; /* named twice: kept once, first why */
  ncshl_named *grown = realloc(list->items, (list->count + 1) * sizeof(*grown));
  if (grown == NULL) {
    list->out_of_memory = 1;
    return;
  }
  list->items = grown;
  ncshl_named entry = {strdup(path), strdup(why ? why : "")};
  if (entry.path == NULL || entry.why == NULL) {
    free(entry.path);
    free(entry.why);
    list->out_of_memory = 1;
    return;
  }
  list->items[list->count++] = entry;
}

void ncshl_list_add2(ncshl_list *list, const char *a, const char *b, const char *why) {
  size_t length = strlen(a) + strlen(b) + 1;
  char *path = malloc(length);
  if (path == NULL) {
    list->out_of_memory = 1;
    return;
  }
  snprintf(path, length, "%s%s", a, b);
  ncshl_list_add(list, path, why);
  free(path);
}

void ncshl_list_free(ncshl_list *list) {
  for (size_t i = 0; i < list->count; i++) {
    free(list->items[i].path);
    free(list->items[i].why);
  }
  free(list->items);
  *list = (ncshl_list){0};
}

int ncshl_same_file(const char *a, const char *b) {
  struct stat x, y;
  return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}
