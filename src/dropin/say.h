/* The drop-in's writer (say.c): buffered output over a descriptor and the lines on stderr,
 * all async-signal-safe (no lock, no malloc). */
#ifndef NCCLSHIM_DROPIN_SAY_H
#define NCCLSHIM_DROPIN_SAY_H

#include <stddef.h>
#include <stdint.h>

/* A buffer written to `fd` when full and by ncs_out_flush; fd -1 only builds a string. */
typedef struct ncs_out {
  int fd;
  int error; /* errno of the first failed write; nothing more is written after one */
  size_t used;
  char buf[4096];
} ncs_out;

/* Write what is buffered to the descriptor (retrying on EINTR), and empty the buffer. */
void ncs_out_flush(ncs_out *o);
/* Append a string, flushing whenever the buffer fills. */
void ncs_out_put(ncs_out *o, const char *s);
/* Append a number in decimal. */
void ncs_out_u64(ncs_out *o, uint64_t v);
void ncs_out_int(ncs_out *o, int64_t v);
/* Append a number in lower-case hex, at least `width` digits. */
void ncs_out_hex(ncs_out *o, uint64_t v, int width);
/* End the buffer with a NUL (cutting its last byte when full): buf is then a C string. */
void ncs_out_end(ncs_out *o);

/* "ncclshim recorder: A B C[: error text (errno N)]" on stderr, B with its control
 * characters (C0, DEL, C1) and its bytes that are not UTF-8 escaped. */
void ncs_rec_say(const char *a, const char *b, const char *c, int error);
/* "ncclshim: A B" on stderr, B escaped the same way: the drop-in's own checks. */
void ncs_dropin_say(const char *a, const char *b);
/* "ncclshim drop-in: TEXT" on stderr, TEXT escaped the same way (paths may hold anything). */
void ncs_dropin_line(const char *text);

#endif
