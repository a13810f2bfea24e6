/* ncclshim-probe's usage: its text, and a usage error in text and, under --json, in JSON. */
#ifndef NCCLSHIM_PROBE_USAGE_H
#define NCCLSHIM_PROBE_USAGE_H

/* The usage text --help prints. */
extern const char probe_usage[];

/* Notes whether --json is on the command line (a value of an option that takes one is
 * skipped): then a usage error is a JSON object on stdout as well. Call before any error. */
void probe_usage_find_json(int argc, char **argv);

/* A usage error: the message and the usage text on stderr, and with --json on the command
 * line a JSON object {"error": {"kind": "usage", "message": ...}} on stdout. Returns 2. */
int probe_usage_error(const char *fmt, const char *arg);

#endif
