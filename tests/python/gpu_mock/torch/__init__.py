"""A mock torch, only what tests/gpu/python/python_gpu.py uses, for its dry run without a GPU
(test_comm.py GpuScriptDryRun), and what comm_checks.py's Frameworks cases hand the package:
tensors are host buffers that call themselves "cuda" (the fake NCCL never touches them), or
made-up pointers (comm_checks.py's); values are kept for small tensors only, and since the fake NCCL
writes nothing the correctness cases report "result differs"."""
import contextlib
import ctypes
import os
import time


class dtype:
    def __init__(self, name, size):
        self.name, self.size = name, size

    def __str__(self):
        return "torch." + self.name


float32 = dtype("float32", 4)
bfloat16 = dtype("bfloat16", 2)


class Tensor:
    def __init__(self, n, dt=float32, device="cuda", values=None, mem=None, contiguous=True):
        self.n, self.dtype, self.is_cuda = n, dt, device == "cuda"
        self.device, self.contiguous = device, contiguous
        self._mem = mem if mem is not None else (ctypes.c_byte * (max(1, n) * dt.size))()
        self.values = values if values is not None else ([0.0] * n if n <= 65536 else None)

    def data_ptr(self):
        return ctypes.addressof(self._mem)

    def numel(self):
        return self.n

    def is_contiguous(self):
        return self.contiguous

    def __add__(self, k):
        return Tensor(self.n, self.dtype, self.device, [v + k for v in self.values])

    def __eq__(self, other):
        o = other.values if isinstance(other, Tensor) else [other] * self.n
        return _Bool(self.values is not None and self.values == o)

    def fill_(self, k):
        if self.values is not None:
            self.values = [k] * self.n
        return self

    def copy_(self, other):
        self.values = list(other.values) if other.values is not None else None

    def view(self, dt):
        return Tensor(self.n * self.dtype.size // dt.size, dt, self.device, mem=self._mem)

    def __getitem__(self, s):
        return Tensor(len(self.values[s]), self.dtype, self.device, self.values[s])

    def tolist(self):
        return self.values


Tensor.__module__ = "torch"


class _Bool:
    def __init__(self, v):
        self.v = v

    def all(self):
        return self

    def __bool__(self):
        return self.v


def arange(n, dtype=float32, device="cuda"):
    return Tensor(n, dtype, device, [float(i) for i in range(n)] if n <= 65536 else None)


def zeros(n, dtype=float32, device="cuda"):
    return Tensor(n, dtype, device)


def ones(n, dtype=float32, device="cpu"):
    return Tensor(n, dtype, device, [1.0] * n if n <= 65536 else None)


def zeros_like(t):
    return Tensor(t.n, t.dtype, t.device)


def equal(a, b):
    return a.values == b.values


def as_tensor(buf, device="cuda"):
    cai = buf.__cuda_array_interface__
    n = cai["shape"][0]
    mem = (ctypes.c_byte * n).from_address(cai["data"][0])
    return Tensor(n, dtype("uint8", 1), device, mem=mem)


def _driver():
    """The fake driver (tests/fakes/fake_cuda.h), device 0 current on this thread as torch
    makes it."""
    d = ctypes.CDLL(os.environ["NCCLSHIM_CUDA_LIBRARY"])
    d.fake_cuda_new_stream.restype = ctypes.c_void_p
    d.fake_cuda_use_device(0)
    return d


class _Stream:
    _next = [0x100]

    def __init__(self):  # a stream of the fake driver, where the run has one
        if "NCCLSHIM_CUDA_LIBRARY" in os.environ:
            self.cuda_stream = _driver().fake_cuda_new_stream(0)
            return
        self.cuda_stream = _Stream._next[0]
        _Stream._next[0] += 1

    def synchronize(self):
        pass


class _Event:
    def __init__(self, enable_timing=False):
        self.t = 0

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1000


class _Graph:
    def replay(self):
        pass


_current = [_Stream()]


@contextlib.contextmanager
def _stream_ctx(s):
    old = _current[0]
    _current[0] = s
    try:
        yield
    finally:
        _current[0] = old


@contextlib.contextmanager
def _graph(g):
    with _stream_ctx(_Stream()):
        yield


def _init():  # the fake NCCL answers like a live one (pynccl_style.py calls it directly)
    fake = ctypes.CDLL(os.environ["NCCLSHIM_NCCL_LIBRARY"])
    fake.fake_nccl_set_live(1)


class cuda:
    Stream, Event, CUDAGraph = _Stream, _Event, _Graph
    init = staticmethod(_init)
    synchronize = staticmethod(lambda: None)
    current_stream = staticmethod(lambda: _current[0])
    stream = staticmethod(_stream_ctx)
    graph = staticmethod(_graph)
