/* Not NCCL: exports ncclGetVersion as a variable (calling it as a function would crash).
 * Built twice: a plain variable, and with -DTHREAD_LOCAL a thread-local one. */
#ifdef THREAD_LOCAL
__attribute__((visibility("default"))) _Thread_local int ncclGetVersion = 22809;
#else
__attribute__((visibility("default"))) int ncclGetVersion = 22809;
#endif
