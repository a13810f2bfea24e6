/* The versions --require takes: "2.28" or "2.28.3". */
#ifndef NCCLSHIM_PROBE_PARSE_VERSION_H
#define NCCLSHIM_PROBE_PARSE_VERSION_H

/* The packed version (MAJOR*10000 + MINOR*100 + PATCH) of "X.Y" or "X.Y.Z" in decimal digits,
 * or 0 for anything else, also for a value whose packed form would overflow an int. */
int probe_parse_version(const char *text);

#endif
