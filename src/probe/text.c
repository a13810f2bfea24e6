#include "text.h"

#include <string.h>

#include "utf8.h"

/* Writes one character of s (n bytes, n from utf8_length) escaped; returns the columns used. */
static int put_escaped(FILE *out, const unsigned char *s, int n) {
  if (n == 0) return fprintf(out, "\\x%02x", s[0]);
  if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0) return fprintf(out, "\\u%04x", s[1]); /* C1 */
  /* The line and paragraph separators (U+2028, U+2029) and the bidirectional overrides and
   * isolates (U+202A..U+202E, U+2066..U+2069), which make a terminal show a name other than
   * the bytes it holds: escaped, as the compare command escapes them. */
  if (n == 3 && s[0] == 0xe2 &&
      ((s[1] == 0x80 && s[2] >= 0xa8 && s[2] <= 0xae) ||
       (s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)))
    return fprintf(out, "\\u%04x", 0x2000 | ((s[1] & 0x3f) << 6) | (s[2] & 0x3f));
  if (n > 1) {
    fwrite(s, 1, (size_t)n, out);
    return 1;
  }
  switch (s[0]) {
  case '\\':
    return fprintf(out, "\\\\");
  case '\n':
    return fprintf(out, "\\n");
  case '\t':
    return fprintf(out, "\\t");
  case '\r':
    return fprintf(out, "\\r");
  default:
    break;
  }
  if (s[0] < 0x20 || s[0] == 0x7f) return fprintf(out, "\\x%02x", s[0]);
  fputc(s[0], out);
  return 1;
}

void text_put(FILE *out, const char *text, int width) {
  const unsigned char *s = (const unsigned char *)(text ? text : "(none)");
  int used = 0;
  while (*s) {
    int n = utf8_length(s);
    used += put_escaped(out, s, n);
    s += n ? n : 1;
  }
  for (; used < width; used++) fputc(' ', out);
}

const char *text_shell_quote(const char *s, char *buf, size_t size) {
  size_t used = 0;
  if (size < 3) return size ? (buf[0] = '\0', buf) : buf;
  buf[used++] = '\'';
  for (; *s; s++) {
    /* '"'"' rather than '\'': no backslash, which the text report escapes as \\ */
    const char *piece = *s == '\'' ? "'\"'\"'" : NULL;
    size_t n = piece ? 5 : 1;
    if (used + n + 2 > size) {
      buf[0] = '\0';
      return buf;
    }
    if (piece)
      memcpy(buf + used, piece, n);
    else
      buf[used] = *s;
    used += n;
  }
  buf[used++] = '\'';
  buf[used] = '\0';
  return buf;
}
