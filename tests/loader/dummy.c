/* A small shared library for the loader's tests: any ELF file the search may open. */
__attribute__((visibility("default"))) int ncshl_dummy_identity(void) { return 42; }
/* A banner in .rodata, for test_banner.c; the key "ncshl dummy " only appears here. */
__attribute__((visibility("default"))) const char ncshl_dummy_banner[] =
    "ncshl dummy 1.2.3+test tail";
