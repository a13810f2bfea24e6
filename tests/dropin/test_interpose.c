/* LD_PRELOAD of the drop-in over a program linked to libnccl.so.2: NCCL's names resolve to
 * the drop-in, which forwards to the NCCL the program's own dependency mapped (never a second
 * copy), says so under NCCLSHIM_DEBUG, and does not recurse or count twice when NCCL calls its
 * own names. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dropin_tests.h"

void run_captured(scenario *s, const char *program, const char *const *args,
                  const char *const *env) {
  /* What the drop-in says when it loads comes before the program's main() sends its stderr
   * to stdout: the child's stderr goes to a file, added to the output at the end. */
  FILE *err = tmpfile();
  assert_non_null(err);
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  dup2(fileno(err), STDERR_FILENO);
  run_program(s, program, args, env);
  dup2(saved, STDERR_FILENO);
  close(saved);
  size_t used = strlen(s->output);
  rewind(err);
  used += fread(s->output + used, 1, sizeof(s->output) - 1 - used, err);
  s->output[used] = '\0';
  fclose(err);
}

void run_interposed(scenario *s, int preload, const char *const *args, const char *const *extra) {
  const char *env[32];
  int n = 0;
  if (preload) env[n++] = env_entry("LD_PRELOAD", getenv("DROPIN_LIBRARY"));
  /* An ASan build's runtime must come first; the drop-in, preloaded, comes before it. */
  env[n++] = "ASAN_OPTIONS=verify_asan_link_order=0";
  for (int i = 0; extra != NULL && extra[i] != NULL && n < 31; i++) env[n++] = extra[i];
  env[n] = NULL;
  run_captured(s, getenv("INTERPOSED"), args, env);
}

static char *find_dumps(const char *dir, int *count) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  char *first = NULL;
  *count = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, "ncclshim-record-", 16) != 0) continue;
    if (++*count == 1) first = strdup(e->d_name);
  }
  closedir(d);
  return first;
}

int dump_count(const char *dir) {
  int count;
  free(find_dumps(dir, &count));
  return count;
}

char *read_dump(const char *dir, char **name) {
  int count;
  char *found = find_dumps(dir, &count);
  if (count != 1) fail_msg("%d dumps in %s, expected one", count, dir);
  char *path = join(dir, found);
  if (name != NULL)
    *name = found;
  else
    free(found);
  FILE *f = fopen(path, "r");
  free(path);
  assert_non_null(f);
  size_t size = 1 << 16, got = 0;
  char *text = malloc(size);
  for (size_t n; (n = fread(text + got, 1, size - 1 - got, f)) > 0;)
    if ((got += n) == size - 1) text = realloc(text, size *= 2);
  text[got] = '\0';
  fclose(f);
  return text;
}

int count_lines(const char *text, const char *const *needles) {
  int count = 0;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    size_t length = end ? (size_t)(end - line) : strlen(line);
    int all = 1;
    /* Within the line only: strstr would scan the rest of a large dump for every line. */
    for (int i = 0; needles[i] != NULL && all; i++)
      all = memmem(line, length, needles[i], strlen(needles[i])) != NULL;
    count += all;
    line += length + (end != NULL);
  }
  return count;
}

/* The interposed program's basic scenario, with NCCLSHIM_DEBUG, the drop-in preloaded or not. */
static void run_basic(scenario *s, int preload) {
  const char *args[] = {"basic", NULL}, *env[] = {"NCCLSHIM_DEBUG=1", NULL};
  run_interposed(s, preload, args, env);
  if (s->exit_code != 0) fail_msg("exit %d:\n%s", s->exit_code, s->output);
}

static void test_interposes(void **state) {
  (void)state;
  scenario s;
  run_basic(&s, 1);
  assert_string_equal(scenario_get(&s, "version"), "22809");
  /* The program's reference lands in the drop-in... */
  assert_non_null(strstr(scenario_get(&s, "ncclAllReduce_in"), "libncclshim-nccl.so"));
  /* ...which reached the program's own NCCL: one NCCL mapped, beside the drop-in. */
  assert_string_equal(scenario_get(&s, "under_allreduce"), "3");
  assert_string_equal(scenario_get(&s, "mapped_count"), "2");
  if (strstr(s.output, "mapped=libnccl.so.2\n") == NULL ||
      strstr(s.output, "mapped=libncclshim-nccl.so") == NULL)
    fail_msg("%s", s.output);
  /* NCCL's ncclBcast calls its own ncclBroadcast, through the drop-in: reached once each. */
  assert_string_equal(scenario_get(&s, "bcast_result"), "0");
  assert_string_equal(scenario_get(&s, "under_bcast"), "1");
  assert_string_equal(scenario_get(&s, "under_broadcast"), "1");
  char expected[4096];
  snprintf(expected, sizeof(expected),
           "ncclshim drop-in: interposing: NCCL 2.28.9 from %s/libnccl.so.2", getenv("UNDER_DIR"));
  if (strstr(s.output, expected) == NULL) fail_msg("no \"%s\" in:\n%s", expected, s.output);
  assert_null(strstr(s.output, "two NCCLs"));
}

/* The same program without the drop-in: the checks above tell the two apart. */
static void test_without_preload(void **state) {
  (void)state;
  scenario s;
  run_basic(&s, 0);
  assert_non_null(strstr(scenario_get(&s, "ncclAllReduce_in"), "libnccl.so.2"));
  assert_string_equal(scenario_get(&s, "mapped_count"), "1");
  assert_string_equal(scenario_get(&s, "under_broadcast"), "1");
  assert_null(strstr(s.output, "interposing"));
}

/* Recording under the interposer: NCCL's inner ncclBroadcast is not a second entry. */
static void test_records_once(void **state) {
  (void)state;
  char *dir = scratch_dir();
  scenario s;
  const char *args[] = {"basic", NULL};
  const char *env[] = {"NCCLSHIM_RECORD=64", env_entry("NCCLSHIM_RECORD_DIR", dir),
                       "NCCLSHIM_RECORD_AT_EXIT=1", NULL};
  run_interposed(&s, 1, args, env);
  assert_int_equal(s.exit_code, 0);
  char *name = NULL, *dump = read_dump(dir, &name);
  assert_non_null(strstr(name, "-rank0-"));
  const char *all_reduce[] = {"\"function\":\"ncclAllReduce\"", "\"rank\":0", NULL};
  const char *bcast[] = {"\"function\":\"ncclBcast\"", "\"seq\":4,", "\"root\":0", NULL};
  const char *inner[] = {"\"function\":\"ncclBroadcast\"", NULL};
  const char *exit_header[] = {"\"kind\":\"header\"", "\"reason\":\"exit\"", "\"rank\":0", NULL};
  assert_int_equal(count_lines(dump, all_reduce), 3);
  assert_int_equal(count_lines(dump, bcast), 1);
  assert_int_equal(count_lines(dump, inner), 0);
  assert_int_equal(count_lines(dump, exit_header), 1);
  free(name);
  free(dump);
}

int run_interpose_tests(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_interposes),
      cmocka_unit_test(test_without_preload),
      cmocka_unit_test(test_records_once),
  };
  return cmocka_run_group_tests_name("interpose", tests, NULL, NULL);
}
