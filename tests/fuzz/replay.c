/* main() for builds without libFuzzer (gcc, or clang without the fuzz option): runs the
 * harness once on each file named, and on each file of each directory named, so that every
 * build replays the seeds and every crash input ever found (corpus/<harness>/). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    return -1;
  }
  size_t capacity = 4096, size = 0, n;
  uint8_t *data = malloc(capacity);
  while (data != NULL && (n = fread(data + size, 1, capacity - size, f)) > 0) {
    size += n;
    if (size == capacity) data = realloc(data, capacity *= 2);
  }
  fclose(f);
  if (data == NULL) return -1;
  LLVMFuzzerTestOneInput(data, size);
  free(data);
  return 0;
}

static int compare(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *path, int *count) {
  DIR *dir = opendir(path);
  if (dir == NULL) {
    perror(path);
    return -1;
  }
  char *names[4096];
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL && n < 4096)
    if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
  closedir(dir);
  qsort(names, n, sizeof(names[0]), compare);
  int status = 0;
  for (size_t i = 0; i < n; i++) {
    char file[4096];
    snprintf(file, sizeof(file), "%s/%s", path, names[i]);
    if (run_file(file) != 0) status = -1;
    (*count)++;
    free(names[i]);
  }
  return status;
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  int count = 0, status = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (argv[i][0] == '-') continue; /* libFuzzer flags: ignored here */
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      if (run_dir(argv[i], &count) != 0) status = 1;
    } else {
      if (run_file(argv[i]) != 0) status = 1;
      count++;
    }
  }
  printf("replayed %d inputs\n", count);
  return status;
}
