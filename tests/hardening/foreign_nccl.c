/* A shared object for another architecture (built with a cross compiler when one is found):
 * a valid ELF that exports ncclGetVersion, which no process of this machine can load. */
__attribute__((visibility("default"))) int ncclGetVersion(int *version) {
  *version = 22809;
  return 0;
}
