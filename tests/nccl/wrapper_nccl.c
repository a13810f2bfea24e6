/* A library that only links NCCL (DT_NEEDED libnccl.so.2, found beside it through
 * RUNPATH $ORIGIN): its ncclGetVersion is its dependency's. */
__attribute__((visibility("default"))) int wrapper_nccl_marker(void) { return 1; }
