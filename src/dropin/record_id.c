/* Who wrote a dump: a random id per process, the boot id, the host name, and the keyed hash
 * that stands for a pointer (or draws a temporary file name) without revealing it. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "record_state.h"

static uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

#define SIPROUND                                              \
  do {                                                        \
    v0 += v1, v1 = rotl(v1, 13), v1 ^= v0, v0 = rotl(v0, 32); \
    v2 += v3, v3 = rotl(v3, 16), v3 ^= v2;                    \
    v0 += v3, v3 = rotl(v3, 21), v3 ^= v0;                    \
    v2 += v1, v1 = rotl(v1, 17), v1 ^= v2, v2 = rotl(v2, 32); \
  } while (0)

/* SipHash-2-4 of one 8-byte message (Aumasson and Bernstein): without the key, the hashes of
 * two pointers say nothing of either, nor of their distance. */
uint64_t ncs_rec_hash(const rec_state *r, uint64_t m) {
  uint64_t k0 = r->key[0], k1 = r->key[1];
  uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
  uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
  uint64_t last = (uint64_t)8 << 56;
  v3 ^= m;
  SIPROUND;
  SIPROUND;
  v0 ^= m;
  v3 ^= last;
  SIPROUND;
  SIPROUND;
  v0 ^= last;
  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

/* Read a small file whole (the boot id, random bytes); its length, or -1. */
static ssize_t read_small(const char *path, void *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, (char *)buf + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  return (ssize_t)got;
}

/* The process's start time in clock ticks since boot (/proc/self/stat, field 22): with the
 * boot id, no two processes of one boot share it and a pid. 0 when unreadable. */
static uint64_t start_time(void) {
  char stat[1024];
  ssize_t n = read_small("/proc/self/stat", stat, sizeof(stat) - 1);
  if (n <= 0) return 0;
  stat[n] = '\0';
  const char *p = strrchr(stat, ')'); /* the command name may hold spaces and parentheses */
  for (int field = 2; p != NULL && field < 22; field++) p = strchr(p + 1, ' ');
  uint64_t ticks = 0;
  for (p = p != NULL ? p + 1 : ""; *p >= '0' && *p <= '9'; p++)
    ticks = ticks * 10 + (uint64_t)(*p - '0');
  return ticks;
}

/* A process id that no other process has, even one with the same pid (a PID namespace, pids
 * wrapping around): fresh random bits, the start time and the pid, under the keyed hash. */
static uint64_t new_process_id(const rec_state *r) {
  uint64_t random = 0;
  if (read_small("/dev/urandom", &random, sizeof(random)) != (ssize_t)sizeof(random)) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    random = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30);
  }
  return ncs_rec_hash(r, random ^ ncs_rec_hash(r, start_time() ^ ((uint64_t)getpid() << 40)));
}

void ncs_rec_identity(rec_state *r) {
  uint64_t random[3];
  if (read_small("/dev/urandom", random, sizeof(random)) != (ssize_t)sizeof(random)) {
    /* No /dev/urandom (a chroot): the clock, the pid and the address space's layout. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    random[0] = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30) ^ (uintptr_t)&now;
    random[1] = ((uint64_t)getpid() << 32) ^ (uintptr_t)r;
    random[2] = (uintptr_t)&ncs_rec_identity;
  }
  r->key[0] = random[0];
  r->key[1] = random[1];
  r->process_id = ncs_rec_hash(r, random[2]) ^ new_process_id(r);
  r->pid = getpid();

  char boot[64] = "";
  ssize_t n = read_small("/proc/sys/kernel/random/boot_id", boot, sizeof(boot) - 1);
  size_t used = 0;
  for (ssize_t i = 0; i < n && used < sizeof(r->boot_id) - 1; i++)
    if ((boot[i] >= '0' && boot[i] <= '9') || (boot[i] >= 'a' && boot[i] <= 'f') || boot[i] == '-')
      r->boot_id[used++] = boot[i];
  r->boot_id[used] = '\0';

  /* The host name as it goes into a file name: [A-Za-z0-9._-] only. */
  struct utsname u;
  const char *host = uname(&u) == 0 && u.nodename[0] ? u.nodename : "unknown";
  size_t i = 0;
  for (; host[i] && i < sizeof(r->host) - 1; i++) {
    char c = host[i];
    int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '-' || c == '_';
    r->host[i] = plain ? c : '_';
  }
  r->host[i] = '\0';
}

uint64_t ncs_rec_child_id(const rec_state *r) {
  return ncs_rec_hash(r,
                      r->process_id ^ ncs_rec_hash(r, start_time() ^ ((uint64_t)getpid() << 40)));
}

void ncs_rec_forked(rec_state *r) {
  r->parent_process_id = r->process_id;
  r->process_id = new_process_id(r);
  r->pid = getpid();
  atomic_store(&r->first, atomic_load(&r->next));
  atomic_store(&r->process_rank, NCCLSHIM_REC_NONE);
  atomic_fetch_add(&r->generation, 1);
  r->hang.stuck = 0; /* the parent's hang is not the child's */
}
