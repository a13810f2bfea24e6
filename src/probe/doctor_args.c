/* The probe's hooks for --explain, --doctor and --python. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "explain.h"
#include "usage.h"

int doctor_parse_option(int argc, char **argv, int *i, doctor_args *a) {
  const char *option = argv[*i];
  if (strcmp(option, "--doctor") == 0) {
    a->doctor = 1;
    return 1;
  }
  if (strcmp(option, "--explain") != 0 && strcmp(option, "--python") != 0) return 0;
  if (*i + 1 >= argc) return -1;
  char *value = argv[++*i];
  if (strcmp(option, "--explain") == 0) {
    /* One text is explained: a second one would replace the first unseen. */
    if (a->explain != NULL) return probe_usage_error("%s given twice: give one text", option), -2;
    a->explain = value;
    return 1;
  }
  /* A prefix that names no directory (a typo, an empty value) would be looked in and skipped
   * without a word, and the report would say nothing of the environment asked about. */
  struct stat st;
  if (value[0] == '\0') return probe_usage_error("%s needs a prefix, not an empty one", option), -2;
  if (stat(value, &st) != 0 || !S_ISDIR(st.st_mode))
    return probe_usage_error("--python '%s': no such directory", value), -2;
  if (a->pythons == NULL && (a->pythons = calloc((size_t)argc, sizeof(char *))) == NULL) return -1;
  a->pythons[a->python_count++] = value;
  return 1;
}

int doctor_run(const doctor_args *a, int json, FILE *out) {
  const char *wrong = a->explain && a->doctor ? "give --explain or --doctor, not both"
                      : a->python_count && !a->explain && !a->doctor
                          ? "--python goes with --explain or --doctor"
                          : NULL;
  if (wrong) return probe_usage_error("%s", wrong);
  if (!a->explain && !a->doctor) return -1;
  /* Both modes read the same inventory: every NCCL here, and who loads which. */
  inventory inv;
  int status = 2;
  if (inventory_gather(&inv, a->pythons, a->python_count) == 0)
    status =
        a->explain ? probe_explain(&inv, a->explain, json, out) : probe_doctor(&inv, json, out);
  inventory_free(&inv);
  return status;
}
