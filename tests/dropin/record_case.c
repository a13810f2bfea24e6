/* The recorder tests' fixture (record_case.h). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "record_case.h"

int lines(const char *text, const char *a, const char *b, const char *c) {
  const char *needles[] = {a, b, c, NULL};
  return count_lines(text, needles);
}

/* The value `env` gives `name` (with its '='), NULL when it gives none. */
static const char *setting(const char *const *env, size_t size, const char *name) {
  for (size_t i = 0; i < size; i++)
    if (env[i] != NULL && strncmp(env[i], name, strlen(name)) == 0) return env[i] + strlen(name);
  return NULL;
}

const char *record_run(scenario *s, const record_case *c) {
  size_t own = sizeof(c->env) / sizeof(c->env[0]);
  const char *given = setting(c->env, own, "NCCLSHIM_RECORD_DIR=");
  const char *dir = given != NULL ? given : scratch_dir();
  const char *env[16];
  int n = 0;
  if (setting(c->env, own, "NCCLSHIM_RECORD=") == NULL) env[n++] = "NCCLSHIM_RECORD=100";
  if (given == NULL) env[n++] = env_entry("NCCLSHIM_RECORD_DIR", dir);
  for (size_t i = 0; i < own; i++)
    if (c->env[i] != NULL) env[n++] = c->env[i];
  if (c->cuda) {
    env[n++] = env_entry("FAKE_CUDA", getenv("FAKE_CUDA"));
    env[n++] = env_entry("NCCLSHIM_CUDA_LIBRARY", getenv("FAKE_CUDA"));
  }
  if (c->audit) env[n++] = env_entry("LD_AUDIT", getenv("DROPIN_LIBRARY"));
  env[n] = NULL;
  run_interposed(s, !c->audit, c->args, env);
  return dir;
}

void expect_lines(const char *text, const line_count *rows, size_t size) {
  for (size_t i = 0; i < size && rows[i].needles[0] != NULL; i++) {
    const char *const *needles = rows[i].needles;
    int got = lines(text, needles[0], needles[1] ? needles[1] : "", needles[2] ? needles[2] : "");
    if (got != rows[i].count)
      fail_msg("%d lines, not %d, hold %s | %s | %s in:\n%.8000s", got, rows[i].count, needles[0],
               needles[1] ? needles[1] : "", needles[2] ? needles[2] : "", text);
  }
}

int dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.' || e->d_name[1] > '.';
  closedir(d);
  return n;
}

char *all_dumps(const char *dir) {
  size_t size = 1 << 16, used = 0;
  char *all = calloc(1, size);
  DIR *d = opendir(dir);
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char *path = join(dir, e->d_name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    used += fread(all + used, 1, size - 1 - used, f);
    fclose(f);
    free(path);
  }
  closedir(d);
  all[used] = '\0';
  return all;
}

void run_record_case(void **state) {
  const record_case *c = *state;
  if (c->audit) SKIP_UNDER_SANITIZER();
  const char *wrapper[8];
  if (c->native && test_wrapper_words(wrapper, 8) > 0) {
    print_message(
        "skipped under the exe wrapper: qemu-user forks for vfork and aborts a "
        "forked child that starts a thread\n");
    skip();
  }
  scenario s;
  const char *dir = record_run(&s, c);
  if (s.exit_code != c->exit_code)
    fail_msg("exit %d, not %d:\n%s", s.exit_code, c->exit_code, s.output);
  for (size_t i = 0; i < sizeof(c->values) / sizeof(c->values[0]) && c->values[i][0] != NULL; i++)
    assert_string_equal(scenario_get(&s, c->values[i][0]), c->values[i][1]);
  EXPECT_LINES(s.output, c->output);
  if (c->dump[0].needles[0] != NULL) {
    char *dump = read_dump(dir, NULL);
    EXPECT_LINES(dump, c->dump);
    free(dump);
  }
  if (c->entries != 0) assert_int_equal(dir_entries(dir), c->entries);
}
