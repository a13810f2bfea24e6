/* The probe's JSON string writer on arbitrary bytes: the output is one JSON string, valid
 * UTF-8, with no raw control character, and it decodes back to the input where the input
 * was valid UTF-8 (invalid bytes become U+FFFD). */
#include <string.h>

#include "src/probe/json.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

/* Length of the valid UTF-8 sequence at s (strict: no overlongs, surrogates or > U+10FFFF),
 * 0 if there is none; written apart from json.c's on purpose. */
static size_t utf8_sequence(const unsigned char *s, size_t left) {
  unsigned c = s[0];
  size_t n;
  unsigned min, cp;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0)
    n = 2, min = 0x80, cp = c & 0x1f;
  else if ((c & 0xf0) == 0xe0)
    n = 3, min = 0x800, cp = c & 0x0f;
  else if ((c & 0xf8) == 0xf0)
    n = 4, min = 0x10000, cp = c & 0x07;
  else
    return 0;
  if (n > left) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

static int hex(int c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* Decode the JSON string out[0..n) (quotes included) into decoded; returns its length. */
static size_t decode(const char *out, size_t n, char *decoded) {
  FUZZ_CHECK(n >= 2 && out[0] == '"' && out[n - 1] == '"', "not quoted");
  size_t used = 0;
  for (size_t i = 1; i < n - 1; i++) {
    unsigned char c = (unsigned char)out[i];
    FUZZ_CHECK(c >= 0x20 && c != 0x7f, "raw control byte 0x%02x at %zu", c, i);
    FUZZ_CHECK(c != '"', "unescaped quote at %zu", i);
    if (c != '\\') {
      decoded[used++] = (char)c;
      continue;
    }
    FUZZ_CHECK(i + 1 < n - 1, "escape at the end");
    char e = out[++i];
    if (e == 'u') {
      FUZZ_CHECK(i + 4 < n - 1, "short \\u");
      int v = 0;
      for (int k = 1; k <= 4; k++) {
        int h = hex(out[i + k]);
        FUZZ_CHECK(h >= 0, "bad hex in \\u");
        v = v * 16 + h;
      }
      i += 4;
      FUZZ_CHECK(v < 0xd800 || v > 0xdfff, "a surrogate escape");
      if (v < 0x80) {
        decoded[used++] = (char)v;
      } else if (v < 0x800) {
        decoded[used++] = (char)(0xc0 | v >> 6);
        decoded[used++] = (char)(0x80 | (v & 0x3f));
      } else {
        decoded[used++] = (char)(0xe0 | v >> 12);
        decoded[used++] = (char)(0x80 | (v >> 6 & 0x3f));
        decoded[used++] = (char)(0x80 | (v & 0x3f));
      }
    } else {
      const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
      const char *at = strchr(from, e);
      FUZZ_CHECK(e != '\0' && at != NULL, "bad escape \\%c", e);
      decoded[used++] = to[at - from];
    }
  }
  return used;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_string(data, size);
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  if (f == NULL) abort();
  json_string(f, text);
  fclose(f);

  /* The whole output is valid UTF-8. */
  for (size_t i = 0; i < n;) {
    size_t k = utf8_sequence((const unsigned char *)out + i, n - i);
    FUZZ_CHECK(k > 0, "invalid UTF-8 at byte %zu of the output", i);
    i += k;
  }
  /* It decodes to the input, each invalid byte replaced by U+FFFD. */
  char *decoded = malloc(n + 1);
  char *expected = malloc(3 * strlen(text) + 1);
  if (decoded == NULL || expected == NULL) abort();
  size_t got = decode(out, n, decoded), want = 0;
  const unsigned char *s = (const unsigned char *)text;
  for (size_t i = 0, left = strlen(text); i < left;) {
    size_t k = utf8_sequence(s + i, left - i);
    if (k == 0) {
      memcpy(expected + want, "\xef\xbf\xbd", 3);
      want += 3;
      i++;
    } else {
      memcpy(expected + want, s + i, k);
      want += k;
      i += k;
    }
  }
  FUZZ_CHECK(got == want && memcmp(decoded, expected, got) == 0, "round trip differs");
  free(expected);
  free(decoded);
  free(out);
  free(text);
  return 0;
}
