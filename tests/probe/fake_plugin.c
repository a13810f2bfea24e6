/* A fake NCCL plugin for the probe's plugin report: it exports the symbols named by -DSYMBOL_A
 * and -DSYMBOL_B (as NCCL's plugins export their vtables), and its constructor aborts, so a
 * probe that ran its code (dlopen) would die instead of reporting it. */
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT const char SYMBOL_A[] = "fake plugin";
#ifdef SYMBOL_B
EXPORT const char SYMBOL_B[] = "fake plugin";
#endif

#ifndef FAKE_PLUGIN_HARMLESS /* tests/gpu/comm/commcaps.sh builds one NCCL itself may load */
__attribute__((constructor)) static void never_run(void) { abort(); }
#endif
