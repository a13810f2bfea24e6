"""The baseline of tests/gpu/python/python_gpu.py: a ctypes wrapper straight into libnccl written
the way Python engines write their own ("pynccl"): a hand list of argument types, the enums as
dicts, a communicator class whose methods take torch tensors and a torch stream. Written for
this benchmark (no engine's code): it is what ncclshim's Communicator is compared against."""
import ctypes
import gc
import time

ncclResult_t = ctypes.c_int
ncclComm_t = ctypes.c_void_p
cudaStream_t = ctypes.c_void_p
buffer_type = ctypes.c_void_p


class ncclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


DTYPES = {"torch.int8": 0, "torch.uint8": 1, "torch.int32": 2, "torch.int64": 4,
          "torch.float16": 6, "torch.float32": 7, "torch.float64": 8, "torch.bfloat16": 9}
OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}

FUNCTIONS = [
    ("ncclGetErrorString", ctypes.c_char_p, [ncclResult_t]),
    ("ncclGetUniqueId", ncclResult_t, [ctypes.POINTER(ncclUniqueId)]),
    ("ncclCommInitRank", ncclResult_t, [ctypes.POINTER(ncclComm_t), ctypes.c_int, ncclUniqueId,
                                        ctypes.c_int]),
    ("ncclAllReduce", ncclResult_t, [buffer_type, buffer_type, ctypes.c_size_t, ctypes.c_int,
                                     ctypes.c_int, ncclComm_t, cudaStream_t]),
    ("ncclCommDestroy", ncclResult_t, [ncclComm_t]),
]


class PyNcclStyle:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        for name, restype, argtypes in FUNCTIONS:
            fn = getattr(self.lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        uid = ncclUniqueId()
        self.check(self.lib.ncclGetUniqueId(ctypes.byref(uid)))
        self.comm = ncclComm_t()
        self.check(self.lib.ncclCommInitRank(ctypes.byref(self.comm), 1, uid, 0))

    def check(self, result):
        if result != 0:
            raise RuntimeError("NCCL error: %s" % self.lib.ncclGetErrorString(result).decode())

    def all_reduce(self, in_tensor, out_tensor, op="sum", stream=None):
        self.check(self.lib.ncclAllReduce(buffer_type(in_tensor.data_ptr()),
                                          buffer_type(out_tensor.data_ptr()),
                                          in_tensor.numel(), DTYPES[str(in_tensor.dtype)],
                                          OPS[op], self.comm, cudaStream_t(stream.cuda_stream)))

    def close(self):
        self.check(self.lib.ncclCommDestroy(self.comm))


def take_turns(ours, theirs, x, y, stream, reps, warmup=50):
    """Host ns per call of ours.all_reduce(x, y, stream=stream) and of theirs, the two taking
    turns call by call: the order alternates (neither is always first after a sync), the
    garbage collector is off (neither catches a collection of the other's garbage), and the
    stream is synchronized every 8 calls (its queue never backs up into the timed calls).
    Returns (ours' times, theirs'), reps each, after warmup untimed turns."""
    t_ours, t_theirs = [], []
    clock = time.perf_counter_ns
    gc.collect()
    gc.disable()
    try:
        for i in range(reps + warmup):
            if i % 8 == 0:
                stream.synchronize()
            first, second = (ours, theirs) if i % 2 else (theirs, ours)
            a = clock()
            first.all_reduce(x, y, stream=stream)
            b = clock()
            second.all_reduce(x, y, stream=stream)
            c = clock()
            if i >= warmup:
                t_ours.append(b - a if i % 2 else c - b)
                t_theirs.append(c - b if i % 2 else b - a)
    finally:
        gc.enable()
    stream.synchronize()
    return t_ours, t_theirs
