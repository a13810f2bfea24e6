/* The library fuzz_mapped.c loads mutants of: no imports and no relocations (-nostdlib), so
 * that glibc's load of a mutant reads nothing of the tables the harness changes; a function
 * called ncclGetVersion for the census to find, a variable, and a build-id note. */
__attribute__((visibility("default"))) int ncclGetVersion(int *version) {
  *version = 22809;
  return 0;
}
__attribute__((visibility("default"))) int fuzz_mapped_variable = 7;
