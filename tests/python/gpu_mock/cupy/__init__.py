"""A mock CuPy, only what tests/gpu/python/python_gpu.py uses, for its dry run: the runtime as
cupy-cuda13x 14.2.0 has it (hostAlloc, hostAllocMapped, freeHost; no hostGetDevicePointer);
RawKernel compiles unless MOCK_CUPY_NVRTC=0 (the script then builds the kernel with nvcc and
loads it through RawModule); a launch makes the fake driver's events hang until the flag is
set, as the spinning kernel holds the stream."""
import ctypes
import os
import threading
import time

_hosts = {}


class _Runtime:
    hostAllocMapped = 2

    @staticmethod
    def hostAlloc(size, flags):
        buf = (ctypes.c_byte * size)()
        _hosts[ctypes.addressof(buf)] = buf
        return ctypes.addressof(buf)

    @staticmethod
    def freeHost(ptr):
        del _hosts[ptr]


class _Launch:
    """The spin kernel: the fake driver's events hang until the flag is set."""

    def __call__(self, grid, block, args):
        assert int(args[0]) in _hosts, "the kernel got a pointer that is not the flag's"
        cuda = ctypes.CDLL(os.environ["NCCLSHIM_CUDA_LIBRARY"])
        cuda.fake_cuda_set_event_query(600)
        _release_when_set(int(args[0]), cuda)


class RawKernel(_Launch):
    def __init__(self, src, name):
        pass

    def compile(self):
        if os.environ.get("MOCK_CUPY_NVRTC") == "0":  # the script then builds it with nvcc
            raise RuntimeError("NVRTC is not available (mock)")


class RawModule:
    def __init__(self, path):
        assert os.path.getsize(path) > 0

    def get_function(self, name):
        return _Launch()


class _Cuda:
    runtime = _Runtime

    class ExternalStream:
        def __init__(self, ptr):
            self.ptr = ptr

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False


cuda = _Cuda
uint64 = int


def _release_when_set(ptr, cuda):
    flag = ctypes.c_int.from_address(ptr)

    def watch():
        while ptr in _hosts and flag.value == 0:
            time.sleep(0.01)
        cuda.fake_cuda_set_event_query(0)  # the kernel ends: events fire again
    threading.Thread(target=watch, daemon=True).start()


class _Dtype:
    def __init__(self, name):
        self.name = name


float32 = _Dtype("float32")


class ndarray:
    def __init__(self, n, values):
        self._buf = (ctypes.c_float * n)()
        self.data = type("M", (), {"ptr": ctypes.addressof(self._buf)})()
        self.size, self.dtype, self._c_contiguous, self.values = n, float32, True, values

    def __add__(self, k):
        return ndarray(self.size, [v + k for v in self.values])

    def __eq__(self, o):
        import torch  # the mock's
        return torch._Bool(self.values == o.values)


ndarray.__module__ = "cupy"


def arange(n, dtype=None):
    return ndarray(n, [float(i) for i in range(n)])


def zeros(n, dtype=None):
    return ndarray(n, [0.0] * n)


class _CuStream(_Cuda.ExternalStream):
    _n = [0x900]

    def __init__(self, non_blocking=False):
        super().__init__(_CuStream._n[0])
        _CuStream._n[0] += 1


_Cuda.Stream = _CuStream


class _Device:
    def synchronize(self):
        pass


_Cuda.Device = _Device
