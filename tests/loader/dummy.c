/* A small shared library for the loader's tests: any ELF file the search may open. */
__attribute__((visibility("default"))) int ncshl_dummy_identity(void) { return 42; }
