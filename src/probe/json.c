#include "json.h"

#include "utf8.h"

void json_string(FILE *out, const char *text) {
  if (text == NULL) {
    fputs("null", out);
    return;
  }
  fputc('"', out);
  for (const unsigned char *s = (const unsigned char *)text; *s;) {
    int n = utf8_length(s);
    if (n == 0) {
      fputs("\\ufffd", out);
      s++;
    } else if (*s == '"' || *s == '\\') {
      fprintf(out, "\\%c", *s++);
    } else if (*s == '\n') {
      fputs("\\n", out);
      s++;
    } else if (*s == '\t') {
      fputs("\\t", out);
      s++;
    } else if (*s < 0x20 || *s == 0x7f) {
      fprintf(out, "\\u%04x", *s++);
    } else {
      fwrite(s, 1, (size_t)n, out);
      s += n;
    }
  }
  fputc('"', out);
}

void json_member(FILE *out, const char *before, const char *key, const char *text) {
  fprintf(out, "%s\"%s\": ", before, key);
  json_string(out, text);
}
