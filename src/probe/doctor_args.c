/* The probe's hooks for --explain, --doctor and --python. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    a->explain = value;
    return 1;
  }
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
  if (a->explain) return probe_explain(a, json, out);
  if (a->doctor) return probe_doctor(a, json, out);
  return -1;
}
