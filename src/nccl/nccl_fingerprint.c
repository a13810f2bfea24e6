/* A short string that ranks compare before creating a communicator: the NCCL version, what
 * identifies the library's build, the capability bits, and a hash of the NCCL_* variables that
 * change NCCL's behaviour (all of them except the NCCL_DEBUG* family). The build is told by its
 * GNU build-id note, read from the mapped image, and the file's size (a stat): no read of the
 * file, which is meant for every rank of a job at start-up, on a shared file system at that.
 * A library without a build-id gets a hash of a bounded sample of the file (a few MiB,
 * whatever its size: a sparse 50 GB file must not take a minute); a caller asking for a check
 * of the bytes gets a hash of the whole file. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncclshim/diag.h"
#include "loader/objects.h"
#include "nccl_handle.h"

extern char **environ;

#define MIX 0x9e3779b97f4a7c15ull

static uint64_t mix(uint64_t h, uint64_t word) {
  h = (h ^ word) * MIX;
  return h ^ (h >> 31);
}

static uint64_t hash_bytes(uint64_t h, const unsigned char *data, size_t length) {
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    uint64_t word;
    memcpy(&word, data + i, 8);
    h = mix(h, word);
  }
  uint64_t tail = 0;
  memcpy(&tail, data + i, length - i);
  return mix(mix(h, tail), length);
}

/* Hash of the whole file; 0 when it cannot be read. */
static uint64_t hash_file(const char *path) {
  uint64_t h = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
    void *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data != MAP_FAILED) {
      h = hash_bytes(MIX, data, (size_t)st.st_size);
      munmap(data, (size_t)st.st_size);
    }
  }
  if (fd >= 0) close(fd);
  return h;
}

static int by_string(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Hash of the sorted NCCL_*=value entries, NCCL_DEBUG* left out. */
static uint32_t hash_environment(void) {
  size_t count = 0;
  for (char **e = environ; e && *e; e++) count++;
  const char **picked = calloc(count + 1, sizeof(*picked));
  if (picked == NULL) return 0;
  size_t n = 0;
  for (char **e = environ; e && *e; e++)
    if (strncmp(*e, "NCCL_", 5) == 0 && strncmp(*e, "NCCL_DEBUG", 10) != 0) picked[n++] = *e;
  qsort(picked, n, sizeof(*picked), by_string);
  uint64_t h = MIX;
  for (size_t i = 0; i < n; i++)
    h = hash_bytes(h, (const unsigned char *)picked[i], strlen(picked[i]));
  free(picked);
  return (uint32_t)(h ^ (h >> 32));
}

enum { SAMPLES = 64, SAMPLE_BYTES = 64 * 1024 }; /* at most 4 MiB read */

/* Hash of the file's size and of SAMPLES blocks spread evenly over it (the whole file when it
 * is smaller than that); 0 when it cannot be read. */
static uint64_t hash_sampled(const char *path) {
  uint64_t h = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  unsigned char *block = malloc(SAMPLE_BYTES);
  if (fd >= 0 && block != NULL && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    unsigned long long size = (unsigned long long)st.st_size, step = size / SAMPLES;
    h = mix(MIX, size);
    for (unsigned i = 0; i < SAMPLES; i++) {
      ssize_t got = pread(fd, block, SAMPLE_BYTES, (off_t)(i * step));
      if (got < 0) {
        h = 0;
        break;
      }
      h = hash_bytes(h, block, (size_t)got);
      if (step == 0) break; /* a small file: read whole by the first block */
    }
  }
  free(block);
  if (fd >= 0) close(fd);
  return h;
}

/* The content hash, once per handle. */
static uint64_t content_hash(ncclshim_nccl *nccl) {
  pthread_mutex_lock(&nccl->lazy_lock);
  if (!nccl->file_hash_done) {
    nccl->file_hash = hash_file(nccl->core.path);
    nccl->file_hash_done = 1;
  }
  uint64_t file = nccl->file_hash;
  pthread_mutex_unlock(&nccl->lazy_lock);
  return file;
}

enum { BUILD_ID_SHOWN = 8 }; /* bytes of the build-id in the string: 64 bits */

static const char *fingerprint(ncclshim_nccl *nccl, char *buf, size_t size, int content) {
  if (size == 0) return buf;
  uint32_t env = hash_environment();
  if (ncclshim_nccl_status(nccl) != NCCLSHIM_OK) {
    snprintf(buf, size, "none-e%08" PRIx32, env);
    return buf;
  }
  char version[16];
  ncclshim_format_version(nccl->version, version, sizeof(version));
  unsigned char id[BUILD_ID_SHOWN];
  size_t id_length = content ? 0 : ncshl_build_id(nccl->get_version, id, sizeof(id));
  struct stat st;
  if (id_length > 0 && stat(nccl->core.path, &st) == 0) {
    char hex[2 * BUILD_ID_SHOWN + 1] = "";
    size_t shown = id_length < sizeof(id) ? id_length : sizeof(id);
    for (size_t i = 0; i < shown; i++) snprintf(hex + 2 * i, 3, "%02x", id[i]);
    snprintf(buf, size, "nccl%s-b%s-s%llx-c%" PRIx64 "-e%08" PRIx32, version, hex,
             (unsigned long long)st.st_size, nccl->capabilities, env);
  } else if (!content) {
    snprintf(buf, size, "nccl%s-q%016" PRIx64 "-c%" PRIx64 "-e%08" PRIx32, version,
             hash_sampled(nccl->core.path), nccl->capabilities, env);
  } else {
    snprintf(buf, size, "nccl%s-f%016" PRIx64 "-c%" PRIx64 "-e%08" PRIx32, version,
             content_hash(nccl), nccl->capabilities, env);
  }
  return buf;
}

const char *ncclshim_nccl_fingerprint(ncclshim_nccl *nccl, char *buf, size_t size) {
  return fingerprint(nccl, buf, size, 0);
}

const char *ncclshim_nccl_fingerprint_content(ncclshim_nccl *nccl, char *buf, size_t size) {
  return fingerprint(nccl, buf, size, 1);
}
