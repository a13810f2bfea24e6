// The CUDA side of the hang-dump jobs (hang_job.c, hang_job.py), as a small shared library
// with a C interface, so that the jobs themselves need no CUDA header:
//   hd_init()              device 0, a stream, two buffers of HD_COUNT floats: 0, or 77 with
//                          no GPU, or the CUDA error
//   hd_stream/send/recv()  the stream and the buffers, for ncclAllReduce
//   hd_hold(limit_ms)      launches, on the stream, a kernel that spins until hd_release()
//                          sets a host-mapped flag, or gives up by itself after limit_ms (a
//                          kernel that waits forever would deadlock against ncclCommAbort)
//   hd_release()           sets the flag; hd_gave_up(): 1 when the kernel hit its limit
//   hd_sync()              waits for the stream: 0 or the CUDA error
//   hd_capture_begin()     begins capturing the stream into a graph (global mode)
//   hd_capture_replay(n)   ends the capture, launches the graph n times, waits: 0 or error
// Build: nvcc -arch=sm_90 -shared -Xcompiler -fPIC hang_gpu.cu -o libhang_gpu.so
#include <cuda_runtime.h>

#include "spin_kernel.cuh"

#define HD_COUNT (1 << 20)

static cudaStream_t stream;
static float *send_buf, *recv_buf;
static volatile int *flag_host;  // [0] release, [1] gave up
static int *flag_device;
static cudaGraph_t graph;

extern "C" int hd_init(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 77;
  cudaError_t e = cudaSetDevice(0);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMalloc(&send_buf, HD_COUNT * sizeof(float));
  if (e == cudaSuccess) e = cudaMalloc(&recv_buf, HD_COUNT * sizeof(float));
  if (e == cudaSuccess) e = cudaMemset(send_buf, 0, HD_COUNT * sizeof(float));
  if (e == cudaSuccess)
    e = cudaHostAlloc((void **)&flag_host, 2 * sizeof(int), cudaHostAllocMapped);
  if (e == cudaSuccess) e = cudaHostGetDevicePointer((void **)&flag_device, (void *)flag_host, 0);
  return e == cudaSuccess ? cudaDeviceSynchronize() : e;
}

extern "C" void *hd_stream(void) { return stream; }
extern "C" void *hd_send(void) { return send_buf; }
extern "C" void *hd_recv(void) { return recv_buf; }
extern "C" unsigned long hd_count(void) { return HD_COUNT; }

extern "C" int hd_hold(int limit_ms) {
  flag_host[0] = flag_host[1] = 0;
  spin<<<1, 1, 0, stream>>>(flag_device, (unsigned long long)limit_ms * 1000000ull);
  return cudaGetLastError();
}

extern "C" void hd_release(void) { flag_host[0] = 1; }
extern "C" int hd_gave_up(void) { return flag_host[1]; }
extern "C" int hd_sync(void) { return cudaStreamSynchronize(stream); }

extern "C" int hd_capture_begin(void) {
  return cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
}

extern "C" int hd_capture_replay(int n) {
  cudaGraphExec_t exec;
  cudaError_t e = cudaStreamEndCapture(stream, &graph);
  if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
  for (int i = 0; e == cudaSuccess && i < n; i++) e = cudaGraphLaunch(exec, stream);
  return e == cudaSuccess ? cudaStreamSynchronize(stream) : e;
}
