/* UTF-8 validation shared by the probe's JSON and text writers. */
#ifndef NCCLSHIM_PROBE_UTF8_H
#define NCCLSHIM_PROBE_UTF8_H

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static inline int utf8_length(const unsigned char *s) {
  if (s[0] < 0x80) return 1;
  int n = s[0] >= 0xf0 && s[0] <= 0xf4  ? 4
          : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
          : s[0] >= 0xc2 && s[0] < 0xe0 ? 2
                                        : 0; /* 0x80..0xc1 and 0xf5..0xff start nothing */
  if (n == 0) return 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  /* No overlong forms, no surrogates, nothing past U+10FFFF. */
  if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) return 0;
  if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))) return 0;
  return n;
}

#endif
