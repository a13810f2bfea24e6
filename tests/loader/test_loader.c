/* loader/'s search, on its own: the steps' list, both walks over a caller's array of steps
 * (the listing that opens nothing, and the try walk), in temporary directories holding copies
 * of a small library, with a fake accept step. Each case states the steps in its own order. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "loader/dl.h"
#include "loader/ld_cache.h"
#include "loader/objects.h"
#include "loader/search.h"

#define SONAME "libncshl-test.so.1"

static char root[] = "/tmp/ncshl-loader-XXXXXX";
static char *dir_a, *dir_b, *dir_c, *dir_text, *cache; /* dir_* hold SONAME */

static char *path_of(const char *a, const char *b) {
  size_t length = strlen(a) + strlen(b) + 2;
  char *p = malloc(length);
  assert_non_null(p);
  snprintf(p, length, "%s/%s", a, b);
  return p;
}

static void copy(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  assert_non_null(in);
  assert_non_null(out);
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), in)) > 0) assert_int_equal(fwrite(buf, 1, n, out), n);
  fclose(in);
  fclose(out);
}

static char *library_dir(const char *name, int elf) {
  char *dir = path_of(root, name);
  assert_int_equal(mkdir(dir, 0755), 0);
  char *file = path_of(dir, SONAME);
  if (elf) {
    copy(getenv("DUMMY_LIB"), file);
  } else {
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("INPUT(libc.so.6)\n", f);
    fclose(f);
  }
  free(file);
  return dir;
}

/* An ld.so cache in glibc's format (2.32 and later) registering `count` files under SONAME. */
static void write_cache(const char *path, const char *const *files, size_t count) {
  unsigned char data[4096] = {0};
  memcpy(data, "glibc-ld.so.cache1.1", 20);
  uint32_t nlibs = (uint32_t)count, at = (uint32_t)(48 + 24 * count), start = at;
  memcpy(data + 20, &nlibs, 4);
  for (size_t i = 0; i < count; i++) {
    uint32_t key = at;
    memcpy(data + at, SONAME, sizeof(SONAME));
    at += sizeof(SONAME);
    uint32_t value = at;
    memcpy(data + at, files[i], strlen(files[i]) + 1);
    at += (uint32_t)strlen(files[i]) + 1;
    memcpy(data + 48 + 24 * i + 4, &key, 4);
    memcpy(data + 48 + 24 * i + 8, &value, 4);
  }
  uint32_t strings = at - start;
  memcpy(data + 24, &strings, 4);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, at, f), at);
  fclose(f);
}

static void places_b(ncshl_list *dirs) { ncshl_list_add(dirs, dir_b, "the test's environment"); }
static void places_c(ncshl_list *dirs) {
  ncshl_list_add(dirs, dir_c, "a well-known place");
  ncshl_list_add(dirs, dir_c, "named twice"); /* kept once, with the first why */
}
static void places_text_then_b(ncshl_list *dirs) {
  ncshl_list_add(dirs, dir_text, "a broken copy");
  ncshl_list_add(dirs, dir_b, "the test's environment");
}

static int setup(void **state) {
  (void)state;
  if (mkdtemp(root) == NULL) return -1;
  dir_a = library_dir("a", 1);
  dir_b = library_dir("b", 1);
  dir_c = library_dir("c", 1);
  dir_text = library_dir("text", 0);
  cache = path_of(root, "ld.so.cache");
  char *in_c = path_of(dir_c, SONAME);
  const char *files[] = {in_c};
  write_cache(cache, files, 1);
  free(in_c);
  unsetenv("NCSHL_TEST_LIBRARY");
  unsetenv("LD_LIBRARY_PATH");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char command[256];
  snprintf(command, sizeof(command), "rm -rf '%s'", root);
  return system(command) == 0 ? 0 : -1;
}

/* ---- The fake accept step and the record of attempts ---------------------------------- */

typedef struct record {
  char candidate[512];
  ncshl_step step;
  ncshl_outcome outcome;
  int refusal;
  char reason[1024];
} record;

typedef struct fake {
  const char *accept_in;  /* accept only a file under this directory; NULL: refuse all */
  const char *defined_in; /* handed back on acceptance (copied); NULL: none */
  int check_refusal;      /* before_override's answer */
  int checks;
  record seen[64];
  size_t count;
} fake;

static ncshl_decision fake_accept(void *context, void *library, const char *path, char *reason,
                                  size_t size) {
  fake *f = context;
  assert_non_null(library);
  if (f->accept_in != NULL && strncmp(path, f->accept_in, strlen(f->accept_in)) == 0)
    return (ncshl_decision){0, f->defined_in ? strdup(f->defined_in) : NULL};
  snprintf(reason, size, "refused by the fake");
  return (ncshl_decision){7, NULL};
}

static int fake_check(void *context, const char *path, char *reason, size_t size) {
  fake *f = context;
  (void)path;
  f->checks++;
  if (f->check_refusal) snprintf(reason, size, "checked and refused");
  return f->check_refusal;
}

static int fake_note(void *context, const ncshl_attempt *a) {
  fake *f = context;
  assert_true(f->count < sizeof(f->seen) / sizeof(f->seen[0]));
  record *r = &f->seen[f->count++];
  snprintf(r->candidate, sizeof(r->candidate), "%s", a->candidate);
  r->step = a->step;
  r->outcome = a->outcome;
  r->refusal = a->refusal;
  snprintf(r->reason, sizeof(r->reason), "%s", a->reason);
  return 0;
}

static ncshl_search make_search(const ncshl_step_spec *steps, size_t count, fake *f) {
  return (ncshl_search){.steps = steps,
                        .step_count = count,
                        .soname = SONAME,
                        .env_var = "NCSHL_TEST_LIBRARY",
                        .identity_symbol = "ncshl_dummy_identity",
                        .ld_cache = cache,
                        .before_override = fake_check,
                        .accept = fake_accept,
                        .note = fake_note,
                        .context = f};
}

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static const ncshl_step_spec all_steps[] = {
    {NCSHL_STEP_EXPLICIT, NULL},       {NCSHL_STEP_ENVIRONMENT, NULL},
    {NCSHL_STEP_PRELOADED, NULL},      {NCSHL_STEP_LIBRARY_PATH, NULL},
    {NCSHL_STEP_ACTIVE_ENV, places_b}, {NCSHL_STEP_LD_CACHE, NULL},
    {NCSHL_STEP_SYSTEM, NULL},         {NCSHL_STEP_WELL_KNOWN, places_c},
};

static void expect_file(const ncshl_candidate *c, ncshl_step step, const char *dir,
                        const char *reason) {
  char *file = path_of(dir, SONAME);
  assert_int_equal(c->step, step);
  assert_int_equal(c->reach, NCSHL_REACH_FILE);
  assert_int_equal(c->outcome, NCSHL_OK);
  assert_string_equal(c->path, file);
  assert_non_null(strstr(c->reason, reason));
  free(file);
}

/* A candidate no file stands for (NCSHL_REACH_NONE): a step's why, or a request refused. */
static void expect_no_file(const ncshl_candidate *c, ncshl_step step, ncshl_outcome outcome,
                           const char *reason) {
  assert_int_equal(c->step, step);
  assert_int_equal(c->reach, NCSHL_REACH_NONE);
  assert_int_equal(c->outcome, outcome);
  assert_string_equal(c->reason, reason);
}

/* ---- The steps' list --------------------------------------------------------------------- */

static void test_step_list(void **state) {
  (void)state;
  static const struct {
    ncshl_step step;
    int value;
    const char *name;
    int override;
  } expected[] = {
      {NCSHL_STEP_EXPLICIT, 1, "explicit", 1},
      {NCSHL_STEP_ENVIRONMENT, 2, "environment", 1},
      {NCSHL_STEP_PRELOADED, 3, "already-loaded", 0},
      {NCSHL_STEP_SYSTEM, 4, "system-search", 0},
      {NCSHL_STEP_WELL_KNOWN, 5, "well-known-place", 0},
      {NCSHL_STEP_LIBRARY_PATH, 6, "library-path", 0},
      {NCSHL_STEP_ACTIVE_ENV, 7, "active-environment", 0},
      {NCSHL_STEP_LD_CACHE, 8, "ld-cache", 0},
  };
  for (size_t i = 0; i < COUNT(expected); i++) {
    assert_int_equal((int)expected[i].step, expected[i].value);
    assert_string_equal(ncshl_step_name(expected[i].step), expected[i].name);
    assert_int_equal(ncshl_step_is_override(expected[i].step), expected[i].override);
    assert_non_null(ncshl_step_place(expected[i].step));
  }
  assert_null(ncshl_step_name(NCSHL_STEP_NONE));
  assert_null(ncshl_step_name((ncshl_step)99));
  assert_null(ncshl_step_place((ncshl_step)99));
  assert_int_equal(ncshl_step_is_override((ncshl_step)99), 0);
}

/* ---- The listing walk -------------------------------------------------------------------- */

static void test_list_every_step_in_order(void **state) {
  (void)state;
  setenv("LD_LIBRARY_PATH", dir_a, 1);
  fake f = {0};
  ncshl_search s = make_search(all_steps, COUNT(all_steps), &f);
  ncshl_candidates c;
  assert_int_equal(ncshl_search_list(&s, &c), 0);
  assert_int_equal(c.count, 6);
  expect_no_file(&c.items[0], NCSHL_STEP_PRELOADED, NCSHL_ABSENT, "not loaded in this process");
  expect_file(&c.items[1], NCSHL_STEP_LIBRARY_PATH, dir_a, "LD_LIBRARY_PATH");
  expect_file(&c.items[2], NCSHL_STEP_ACTIVE_ENV, dir_b, "the test's environment");
  expect_file(&c.items[3], NCSHL_STEP_LD_CACHE, dir_c, cache);
  assert_int_equal(c.items[4].step, NCSHL_STEP_SYSTEM);
  assert_int_equal(c.items[4].reach, NCSHL_REACH_NAME);
  assert_string_equal(c.items[4].path, SONAME);
  expect_file(&c.items[5], NCSHL_STEP_WELL_KNOWN, dir_c, "a well-known place");
  ncshl_candidates_free(&c);
  assert_int_equal(f.count, 0); /* the listing tries nothing */
  assert_int_equal(f.checks, 0);

  /* The order is the caller's array, whatever the steps' numbers. */
  const ncshl_step_spec reversed[] = {{NCSHL_STEP_WELL_KNOWN, places_c},
                                      {NCSHL_STEP_LIBRARY_PATH, NULL}};
  s = make_search(reversed, COUNT(reversed), &f);
  assert_int_equal(ncshl_search_list(&s, &c), 0);
  assert_int_equal(c.count, 2);
  expect_file(&c.items[0], NCSHL_STEP_WELL_KNOWN, dir_c, "a well-known place");
  expect_file(&c.items[1], NCSHL_STEP_LIBRARY_PATH, dir_a, "LD_LIBRARY_PATH");
  ncshl_candidates_free(&c);
  unsetenv("LD_LIBRARY_PATH");
}

static void test_list_overrides_end_it(void **state) {
  (void)state;
  fake f = {0};
  ncshl_search s = make_search(all_steps, COUNT(all_steps), &f);
  ncshl_candidates c;
  s.explicit_path = "libfoo.so";
  assert_int_equal(ncshl_search_list(&s, &c), 0);
  assert_int_equal(c.count, 1);
  assert_int_equal(c.items[0].step, NCSHL_STEP_EXPLICIT);
  assert_string_equal(c.items[0].path, "./libfoo.so"); /* a bare name is a file here */
  ncshl_candidates_free(&c);

  s.explicit_path = NULL;
  setenv("NCSHL_TEST_LIBRARY", "relative/lib.so", 1);
  assert_int_equal(ncshl_search_list(&s, &c), 0);
  assert_int_equal(c.count, 1);
  expect_no_file(&c.items[0], NCSHL_STEP_ENVIRONMENT, NCSHL_BAD_REQUEST,
                 "NCSHL_TEST_LIBRARY must be an absolute path");
  ncshl_candidates_free(&c);

  setenv("NCSHL_TEST_LIBRARY", "", 1); /* empty means unset */
  assert_int_equal(ncshl_search_list(&s, &c), 0);
  assert_int_not_equal(c.items[0].step, NCSHL_STEP_ENVIRONMENT);
  ncshl_candidates_free(&c);
  unsetenv("NCSHL_TEST_LIBRARY");
}

/* ---- The try walk ------------------------------------------------------------------------ */

static void test_run_goes_on_past_refusals(void **state) {
  (void)state;
  setenv("LD_LIBRARY_PATH", dir_a, 1);
  fake f = {.accept_in = dir_c};
  ncshl_search s = make_search(all_steps, COUNT(all_steps), &f);
  ncshl_found found;
  char summary[2048];
  ncshl_verdict v = ncshl_search_run(&s, &found, summary, sizeof(summary));
  assert_int_equal(v.outcome, NCSHL_OK);
  /* not loaded; a refused; b refused; c (the cache's) accepted */
  assert_int_equal(f.count, 4);
  assert_int_equal(f.seen[0].step, NCSHL_STEP_PRELOADED);
  assert_int_equal(f.seen[0].outcome, NCSHL_ABSENT);
  assert_int_equal(f.seen[1].step, NCSHL_STEP_LIBRARY_PATH);
  assert_int_equal(f.seen[1].outcome, NCSHL_REFUSED);
  assert_int_equal(f.seen[1].refusal, 7);
  assert_string_equal(f.seen[1].reason, "refused by the fake");
  assert_int_equal(f.seen[2].step, NCSHL_STEP_ACTIVE_ENV);
  assert_int_equal(f.seen[2].outcome, NCSHL_REFUSED);
  assert_int_equal(f.seen[3].step, NCSHL_STEP_LD_CACHE);
  assert_int_equal(f.seen[3].outcome, NCSHL_OK);
  assert_non_null(strstr(f.seen[3].reason, "mapped "));
  assert_int_equal(found.step, NCSHL_STEP_LD_CACHE);
  assert_int_equal(found.preloaded, 0);
  assert_null(found.opened);
  char *expected = path_of(dir_c, SONAME);
  assert_string_equal(found.path, expected);
  assert_string_equal(summary, expected);
  assert_int_equal(f.checks, 0); /* only overrides are checked first */
  free(expected);
  free(found.path);
  dlclose(found.handle);
  unsetenv("LD_LIBRARY_PATH");
}

static void test_run_all_refused(void **state) {
  (void)state;
  fake f = {0};
  const ncshl_step_spec steps[] = {{NCSHL_STEP_ACTIVE_ENV, places_text_then_b},
                                   {NCSHL_STEP_WELL_KNOWN, places_c}};
  ncshl_search s = make_search(steps, COUNT(steps), &f);
  ncshl_found found;
  char summary[2048];
  ncshl_verdict v = ncshl_search_run(&s, &found, summary, sizeof(summary));
  /* The first real refusal explains the failure: the broken file. */
  assert_int_equal(v.outcome, NCSHL_UNLOADABLE);
  assert_null(found.handle);
  assert_int_equal(f.count, 3);
  assert_int_equal(f.seen[0].outcome, NCSHL_UNLOADABLE);
  assert_string_equal(f.seen[0].reason, "not an ELF file");
  assert_int_equal(f.seen[1].outcome, NCSHL_REFUSED);
  assert_int_equal(f.seen[2].outcome, NCSHL_REFUSED);
  assert_non_null(strstr(summary, "not an ELF file"));
  assert_non_null(strstr(summary, dir_text));
}

static void test_run_not_found_names_each_place(void **state) {
  (void)state;
  fake f = {0};
  const ncshl_step_spec steps[] = {{NCSHL_STEP_PRELOADED, NULL},
                                   {NCSHL_STEP_LD_CACHE, NULL},
                                   {NCSHL_STEP_SYSTEM, NULL},
                                   {NCSHL_STEP_WELL_KNOWN, places_c}};
  ncshl_search s = make_search(steps, COUNT(steps), &f);
  s.soname = "libncshl-absent.so.9";
  s.ld_cache = "/dev/null";
  ncshl_found found;
  char summary[2048];
  ncshl_verdict v = ncshl_search_run(&s, &found, summary, sizeof(summary));
  assert_int_equal(v.outcome, NCSHL_ABSENT);
  assert_int_equal(f.count, 4);
  assert_string_equal(f.seen[1].reason, "no libncshl-absent.so.9 registered in /dev/null");
  char *missing = path_of(dir_c, "libncshl-absent.so.9");
  char expected[2048];
  snprintf(expected, sizeof(expected),
           "libncshl-absent.so.9 was not found; searched: this process (already loaded), the "
           "ld.so cache, the system loader (LD_LIBRARY_PATH, ld.so cache), %s",
           missing);
  assert_string_equal(summary, expected);
  free(missing);
}

static void test_run_file_tried_once(void **state) {
  (void)state;
  setenv("LD_LIBRARY_PATH", dir_c, 1);
  fake f = {0};
  const ncshl_step_spec steps[] = {{NCSHL_STEP_LIBRARY_PATH, NULL},
                                   {NCSHL_STEP_LD_CACHE, NULL},
                                   {NCSHL_STEP_WELL_KNOWN, places_c}};
  ncshl_search s = make_search(steps, COUNT(steps), &f);
  ncshl_found found;
  char summary[2048];
  assert_int_equal(ncshl_search_run(&s, &found, summary, sizeof(summary)).outcome, NCSHL_REFUSED);
  assert_int_equal(f.count, 1); /* c's file, reached by three steps */
  assert_int_equal(f.seen[0].step, NCSHL_STEP_LIBRARY_PATH);
  unsetenv("LD_LIBRARY_PATH");
}

static void test_run_overrides_alone(void **state) {
  (void)state;
  fake f = {.accept_in = dir_c};
  ncshl_search s = make_search(all_steps, COUNT(all_steps), &f);
  ncshl_found found;
  char summary[2048];

  s.explicit_path = "";
  ncshl_verdict v = ncshl_search_run(&s, &found, summary, sizeof(summary));
  assert_int_equal(v.outcome, NCSHL_BAD_REQUEST);
  assert_int_equal(f.count, 1);
  assert_string_equal(summary, "(empty path): the path given is empty");

  /* An absent override fails: never a fall back to the other steps. */
  f.count = 0;
  s.explicit_path = NULL;
  char *missing = path_of(root, "missing.so");
  setenv("NCSHL_TEST_LIBRARY", missing, 1);
  v = ncshl_search_run(&s, &found, summary, sizeof(summary));
  assert_int_equal(v.outcome, NCSHL_ABSENT);
  assert_int_equal(f.count, 1);
  assert_int_equal(f.seen[0].step, NCSHL_STEP_ENVIRONMENT);
  assert_non_null(strstr(summary, "cannot open"));
  free(missing);

  /* The check before an override can refuse it before it is mapped. */
  f.count = 0;
  f.check_refusal = 5;
  char *in_b = path_of(dir_b, SONAME);
  setenv("NCSHL_TEST_LIBRARY", in_b, 1);
  v = ncshl_search_run(&s, &found, summary, sizeof(summary));
  assert_int_equal(v.outcome, NCSHL_REFUSED);
  assert_int_equal(v.refusal, 5);
  assert_int_equal(f.checks, 1);
  assert_string_equal(f.seen[0].reason, "checked and refused");
  free(in_b);
  unsetenv("NCSHL_TEST_LIBRARY");
}

static void test_run_defined_elsewhere_and_preloaded(void **state) {
  (void)state;
  fake f = {.accept_in = root, .defined_in = "/the/defining/file.so"};
  char *in_b = path_of(dir_b, SONAME);
  void *mine = dlopen(in_b, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(mine);
  const ncshl_step_spec steps[] = {{NCSHL_STEP_PRELOADED, NULL}, {NCSHL_STEP_SYSTEM, NULL}};
  ncshl_search s = make_search(steps, COUNT(steps), &f);

  ncshl_candidates c;
  assert_int_equal(ncshl_search_list(&s, &c), 0);
  assert_true(c.count >= 2); /* by SONAME, then as a definer of the identity symbol */
  assert_int_equal(c.items[0].reach, NCSHL_REACH_MAPPED);
  assert_string_equal(c.items[0].path, SONAME);
  assert_non_null(strstr(c.items[0].reason, in_b));
  assert_int_equal(c.items[1].reach, NCSHL_REACH_MAPPED);
  assert_string_equal(c.items[1].path, in_b);
  assert_non_null(strstr(c.items[1].reason, "ncshl_dummy_identity"));
  ncshl_candidates_free(&c);

  ncshl_found found;
  char summary[2048];
  assert_int_equal(ncshl_search_run(&s, &found, summary, sizeof(summary)).outcome, NCSHL_OK);
  assert_int_equal(found.step, NCSHL_STEP_PRELOADED);
  assert_int_equal(found.preloaded, 1);
  assert_string_equal(found.path, "/the/defining/file.so");
  assert_string_equal(found.opened, in_b);
  assert_non_null(strstr(f.seen[0].reason, "already loaded from"));
  free(found.path);
  free(found.opened);
  dlclose(found.handle);
  dlclose(mine);
  free(in_b);
}

static void test_ld_cache_and_list(void **state) {
  (void)state;
  ncshl_list files = {0};
  assert_int_equal(ncshl_ld_cache_lookup("/nonexistent/ld.so.cache", SONAME, &files), 0);
  assert_int_equal(files.count, 0);
  char *twice = path_of(root, "twice.cache");
  const char *names[] = {"/x/" SONAME, "/y/" SONAME, "/x/" SONAME};
  write_cache(twice, names, 3);
  assert_int_equal(ncshl_ld_cache_lookup(twice, SONAME, &files), 0);
  assert_int_equal(files.count, 2); /* each file once, in the cache's order */
  assert_string_equal(files.items[0].path, "/x/" SONAME);
  assert_string_equal(files.items[1].path, "/y/" SONAME);
  assert_non_null(strstr(files.items[0].why, twice));
  ncshl_list_free(&files);
  assert_int_equal(ncshl_ld_cache_lookup(twice, "libother.so.1", &files), 0);
  assert_int_equal(files.count, 0);
  free(twice);

  char *a = path_of(dir_a, SONAME), *b = path_of(dir_b, SONAME);
  char *link = path_of(root, "link.so");
  assert_int_equal(symlink(a, link), 0);
  assert_int_equal(ncshl_same_file(a, link), 1);
  assert_int_equal(ncshl_same_file(a, b), 0);
  assert_int_equal(ncshl_same_file(a, "/nonexistent"), 0);
  free(a);
  free(b);
  free(link);
}

/* An object found in the link map by SONAME, file name or file (device and inode),
 * without opening anything; and nothing for what is not mapped. */
static void test_mapped_name(void **state) {
  (void)state;
  char *copy_path = path_of(root, "mapped-copy.so");
  copy(getenv("DUMMY_LIB"), copy_path);
  assert_null(ncshl_mapped_name(SONAME));
  assert_null(ncshl_mapped_name(copy_path));
  void *handle = dlopen(copy_path, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(handle);
  char *by_soname = ncshl_mapped_name(SONAME); /* the dummy's DT_SONAME */
  char *by_name = ncshl_mapped_name("mapped-copy.so");
  char *link = path_of(root, "mapped-link.so");
  assert_int_equal(symlink(copy_path, link), 0);
  char *by_file = ncshl_mapped_name(link); /* another path to the same file */
  assert_non_null(by_soname);
  assert_string_equal(by_soname, copy_path);
  assert_non_null(by_name);
  assert_string_equal(by_name, copy_path);
  assert_non_null(by_file);
  assert_string_equal(by_file, copy_path);
  assert_null(ncshl_mapped_name("libnothing-mapped.so.9"));
  void *again = ncshl_open_loaded(SONAME);
  assert_ptr_equal(again, handle);
  dlclose(again);
  dlclose(handle);
  free(by_soname);
  free(by_name);
  free(by_file);
  free(link);
  free(copy_path);
}

/* The dynamic section's entry of `tag`, NULL when it has none. */
static ElfW(Dyn) * dynamic_entry(ElfW(Dyn) * dynamic, ElfW(Sxword) tag) {
  for (; dynamic->d_tag != DT_NULL; dynamic++)
    if (dynamic->d_tag == tag) return dynamic;
  return NULL;
}

/* ncshl_dynamic_lookup, what an auditor calls with a link map's l_ld and l_addr only: it
 * finds what the object defines, and when the object's string table points outside its
 * segments (at a page that cannot be read), it reads nothing there. */
static void test_dynamic_lookup_bounded(void **state) {
  (void)state;
  void *handle = dlopen(getenv("DUMMY_LIB"), RTLD_NOW | RTLD_LOCAL);
  assert_non_null(handle);
  struct link_map *map = NULL;
  assert_int_equal(dlinfo(handle, RTLD_DI_LINKMAP, &map), 0);
  assert_non_null(ncshl_dynamic_lookup(map->l_ld, map->l_addr, "ncshl_dummy_identity"));
  assert_null(ncshl_dynamic_lookup(map->l_ld, map->l_addr, "ncshl_not_defined"));
  size_t entries = 1; /* the DT_NULL too */
  while (map->l_ld[entries - 1].d_tag != DT_NULL) entries++;
  ElfW(Dyn) *copy = calloc(entries, sizeof(*copy)); /* a dynamic section no object owns */
  assert_non_null(copy);
  memcpy(copy, map->l_ld, entries * sizeof(*copy));
  assert_null(ncshl_dynamic_lookup(copy, map->l_addr, "ncshl_dummy_identity"));
  free(copy);

  long page = sysconf(_SC_PAGESIZE);
  void *guard = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(guard != MAP_FAILED);
  ElfW(Dyn) *strtab = dynamic_entry(map->l_ld, DT_STRTAB);
  assert_non_null(strtab);
  uintptr_t start = (uintptr_t)strtab & ~((uintptr_t)page - 1);
  assert_int_equal(mprotect((void *)start, (size_t)page * 2, PROT_READ | PROT_WRITE), 0);
  ElfW(Addr) saved = strtab->d_un.d_ptr;
  /* glibc relocated it in place (an address at or above l_addr): the guard page's address */
  strtab->d_un.d_ptr =
      (uintptr_t)guard >= map->l_addr ? (uintptr_t)guard : (uintptr_t)guard - map->l_addr;
  const ElfW(Sym) *found = ncshl_dynamic_lookup(map->l_ld, map->l_addr, "ncshl_dummy_identity");
  strtab->d_un.d_ptr = saved;
  assert_null(found);
  munmap(guard, (size_t)page);
  dlclose(handle);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_step_list),
      cmocka_unit_test(test_list_every_step_in_order),
      cmocka_unit_test(test_list_overrides_end_it),
      cmocka_unit_test(test_run_goes_on_past_refusals),
      cmocka_unit_test(test_run_all_refused),
      cmocka_unit_test(test_run_not_found_names_each_place),
      cmocka_unit_test(test_run_file_tried_once),
      cmocka_unit_test(test_run_overrides_alone),
      cmocka_unit_test(test_run_defined_elsewhere_and_preloaded),
      cmocka_unit_test(test_ld_cache_and_list),
      cmocka_unit_test(test_mapped_name),
      cmocka_unit_test(test_dynamic_lookup_bounded),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
