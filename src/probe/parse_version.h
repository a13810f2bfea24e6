/* The probe's one place for version texts: the versions --require takes ("2.28", "2.28.3"),
 * a file name's ("libnccl.so.2.28.3"), NCCL's CUDA build tag ("+cuda13.0") and glibc's symbol
 * versions ("GLIBC_2.34"). */
#ifndef NCCLSHIM_PROBE_PARSE_VERSION_H
#define NCCLSHIM_PROBE_PARSE_VERSION_H

/* The packed version (MAJOR*10000 + MINOR*100 + PATCH) of "X.Y" or "X.Y.Z" in decimal digits,
 * or 0 for anything else, also for a value whose packed form would overflow an int. */
int probe_parse_version(const char *text);

/* 22803 for a name ending in "libnccl.so.2.28.3" (a full MAJOR.MINOR.PATCH); 0 otherwise. */
int probe_parse_library_name(const char *path);

/* 13000 for "+cuda13.0", the driver's encoding (1000*major + 10*minor); 0 when the tag
 * names no CUDA. */
int probe_parse_cuda_tag(const char *tag);

/* 2034 for "GLIBC_2.34" (major*1000 + minor, patch levels ignored); 0 when not such a name. */
int probe_parse_glibc(const char *name);

#endif
