/* A function of ncclAllReduce's C signature that does nothing: bench/gpu/callpath/variants.py
 * times Python call paths into it, so that only Python and ctypes are timed. */
#include <stddef.h>

int noop7(void *send, void *recv, size_t count, int type, int op, void *comm, void *stream);

int noop7(void *send, void *recv, size_t count, int type, int op, void *comm, void *stream) {
  (void)send, (void)recv, (void)count, (void)type, (void)op, (void)comm, (void)stream;
  return 0;
}
