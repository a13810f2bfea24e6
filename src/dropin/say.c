/* The drop-in's writer, at the bottom of the drop-in: a buffered writer over a descriptor,
 * and the drop-in's lines on stderr. No lock, no malloc, only write(2): async-signal-safe, so
 * that the recorder's dumps (record_dump.c) use it from a signal handler too. */
#include <errno.h>
#include <unistd.h>

#include "dropin.h"
#include "say.h"

__thread int ncs_dropin_message_unread NCCLSHIM_THREAD_MODEL;

void ncs_out_flush(ncs_out *o) {
  for (size_t done = 0; done < o->used && o->error == 0;) {
    ssize_t n = write(o->fd, o->buf + done, o->used - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      o->error = n < 0 ? errno : EIO;
    else
      done += (size_t)n;
  }
  o->used = 0;
}

void ncs_out_put(ncs_out *o, const char *s) {
  for (; *s; s++) {
    if (o->used == sizeof(o->buf)) ncs_out_flush(o);
    o->buf[o->used++] = *s;
  }
}

void ncs_out_u64(ncs_out *o, uint64_t v) {
  char digits[24], *p = digits + sizeof(digits);
  *--p = '\0';
  do *--p = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  ncs_out_put(o, p);
}

void ncs_out_int(ncs_out *o, int64_t v) {
  if (v < 0) ncs_out_put(o, "-");
  ncs_out_u64(o, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

void ncs_out_hex(ncs_out *o, uint64_t v, int width) {
  char digits[20], *p = digits + sizeof(digits);
  *--p = '\0';
  for (int i = 0; i < width || v != 0; i++, v >>= 4) *--p = "0123456789abcdef"[v & 15];
  ncs_out_put(o, p);
}

void ncs_out_end(ncs_out *o) {
  o->buf[o->used < sizeof(o->buf) ? o->used : sizeof(o->buf) - 1] = '\0';
}

/* Control characters (and DEL) as \xNN, as the probe writes them. */
static void put_escaped(ncs_out *o, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c == 0x7f) {
      ncs_out_put(o, "\\x");
      ncs_out_hex(o, c, 2);
    } else {
      char one[2] = {(char)c, '\0'};
      ncs_out_put(o, one);
    }
  }
}

/* strerror's words for the errors a file can meet, without strerror (not async-signal-safe). */
static const char *errno_text(int e) {
  static const struct {
    int code;
    const char *text;
  } texts[] = {
      {ENOSPC, "no space left on device"}, {EDQUOT, "disk quota exceeded"},
      {EFBIG, "file too large"},           {EIO, "input/output error"},
      {EACCES, "permission denied"},       {EPERM, "operation not permitted"},
      {EROFS, "read-only file system"},    {EEXIST, "file exists"},
      {ELOOP, "a symbolic link"},          {ENOENT, "no such file or directory"},
      {ENOTDIR, "not a directory"},        {EISDIR, "is a directory"},
      {EBADF, "bad file descriptor"},      {EMFILE, "too many open files"},
  };
  for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
    if (texts[i].code == e) return texts[i].text;
  return "error";
}

static void say(const char *who, const char *a, const char *b, const char *c, int error) {
  ncs_out o = {.fd = 2};
  ncs_out_put(&o, who);
  ncs_out_put(&o, a);
  put_escaped(&o, b);
  ncs_out_put(&o, c);
  if (error != 0) {
    ncs_out_put(&o, ": ");
    ncs_out_put(&o, errno_text(error));
    ncs_out_put(&o, " (errno ");
    ncs_out_u64(&o, (uint64_t)error);
    ncs_out_put(&o, ")");
  }
  ncs_out_put(&o, "\n");
  ncs_out_flush(&o);
}

void ncs_rec_say(const char *a, const char *b, const char *c, int error) {
  say("ncclshim recorder: ", a, b, c, error);
}

void ncs_dropin_say(const char *a, const char *b) { say("ncclshim: ", a, b, "", 0); }

void ncs_dropin_line(const char *text) { say("ncclshim drop-in: ", "", text, "", 0); }
