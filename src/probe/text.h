/* Untrusted text (paths, messages, names) in the probe's human report. */
#ifndef NCCLSHIM_PROBE_TEXT_H
#define NCCLSHIM_PROBE_TEXT_H

#include <stdio.h>

/* Prints text with every byte that could forge a line or drive a terminal escaped: C0 and C1
 * control characters and DEL as \n, \t, \r or \xNN (C1 as \u0080..\u009f), the line separators
 * and bidirectional overrides as \uNNNN, bytes that are not UTF-8 as \xNN, and the backslash
 * itself as \\. Pads with spaces to `width` characters (0:
 * no padding). NULL prints "(none)". */
void text_put(FILE *out, const char *text, int width);

/* `s` quoted for a POSIX shell ('...', a quote inside written '\''), into buf; an empty
 * string when it does not fit. For advice lines a user pastes. */
const char *text_shell_quote(const char *s, char *buf, size_t size);

#endif
