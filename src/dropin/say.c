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

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one: no overlong form,
 * no surrogate, nothing past U+10FFFF (the probe's rule, src/probe/utf8.h). */
static int utf8_length(const unsigned char *s) {
  if (s[0] < 0x80) return 1;
  int n = s[0] >= 0xf0 && s[0] <= 0xf4  ? 4
          : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
          : s[0] >= 0xc2 && s[0] < 0xe0 ? 2
                                        : 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) return 0;
  if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))) return 0;
  return n;
}

/* Control characters (C0, DEL, and C1 as U+0080..U+009F, which some terminals obey) and bytes
 * that are not UTF-8 as \xNN (C1 as \u00NN), as the probe writes them: a path can drive no
 * terminal and break no reader that wants UTF-8. */
static void put_escaped(ncs_out *o, const char *text) {
  for (const unsigned char *s = (const unsigned char *)text; *s;) {
    int n = utf8_length(s);
    if (n == 0 || s[0] < 0x20 || s[0] == 0x7f) {
      ncs_out_put(o, "\\x");
      ncs_out_hex(o, s[0], 2);
      s++;
    } else if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0) {
      ncs_out_put(o, "\\u00");
      ncs_out_hex(o, s[1], 2);
      s += 2;
    } else {
      char one[5] = {0};
      for (int i = 0; i < n; i++) one[i] = (char)s[i];
      ncs_out_put(o, one);
      s += n;
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
