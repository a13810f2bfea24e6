/* Just enough JSON writing for the probe: strings are always valid JSON and valid UTF-8. */
#ifndef NCCLSHIM_PROBE_JSON_H
#define NCCLSHIM_PROBE_JSON_H

#include <stdio.h>

/* "text", with quotes, backslashes and control characters escaped and every byte sequence
 * that is not UTF-8 replaced by U+FFFD; NULL prints null. */
void json_string(FILE *out, const char *text);
/* `before` (", " between members, "{" to open an object), then "key": and text as
 * json_string writes it. */
void json_member(FILE *out, const char *before, const char *key, const char *text);

#endif
