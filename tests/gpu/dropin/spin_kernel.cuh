// A kernel that holds its stream: it spins until flag[0] is set (by the host, through mapped
// memory) or limit_ns have passed on the GPU's clock, and then sets flag[1] (it gave up). Shared
// by hang_gpu.cu and tests/gpu/track/tracker_common.cuh.
#ifndef NCCLSHIM_TEST_SPIN_KERNEL_CUH
#define NCCLSHIM_TEST_SPIN_KERNEL_CUH

__global__ void spin(volatile int *flag, unsigned long long limit_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    if (flag[0] != 0) return;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < limit_ns);
  flag[1] = 1;
}

#endif
