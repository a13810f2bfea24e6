/* NCCL's version banner as real builds carry it in their read-only data, for the variants
 * that test build tags. Kept though nothing refers to it: only the file's bytes matter. */
#ifndef FAKE_BANNER
#error "FAKE_BANNER must be set"
#endif

__attribute__((used)) static const char banner[] = FAKE_BANNER;
