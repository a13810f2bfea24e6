"""The leanest reasonable hand-written NCCL call from Python, and ncclshim's all_reduce against
it: what a careful engine author writes with ctypes (a prebound function with argtypes,
data_ptr() ints, a dict keyed by the dtype object, the comm as an int), written for this
benchmark (no engine's code).

    python_lean.py OUTDIR            on the GPU (tests/gpu/python/python.sh, torch venv): torch
                                     tensors and a torch stream, the NCCL torch has mapped
    python_lean.py --fake OUTDIR     on a build machine: NCCL is the fake (collectives do
                                     nothing; NCCLSHIM_NCCL_LIBRARY names it), the tensors
                                     stand-ins whose accessors are C builtins, as torch's are

Writes OUTDIR/lean.csv (bytes,ncclshim_ns,lean_ns,ratio: median host ns per call, 8 B to
64 MiB, the two taking turns call by call in one process, one rank, the garbage collector
off) and prints one line per size. Exit 0 when ncclshim's call takes at most the lean one's
time at every size (ratio <= 1.00)."""
import csv
import ctypes
import os
import statistics
import sys
import types

import ncclshim
from pynccl_style import take_turns

SIZES = [8, 64, 512, 4096, 32768, 262144, 2097152, 16777216, 67108864]
GOAL = 1.00


class ncclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


class Lean:
    """The hand-written call: one prebound ctypes function, ints everywhere."""

    def __init__(self, path, dtypes):
        lib = ctypes.CDLL(path)
        vp = ctypes.c_void_p
        init, get_id = lib.ncclCommInitRank, lib.ncclGetUniqueId
        init.restype = get_id.restype = ctypes.c_int
        init.argtypes = [ctypes.POINTER(vp), ctypes.c_int, ncclUniqueId, ctypes.c_int]
        uid, comm = ncclUniqueId(), vp()
        if get_id(ctypes.byref(uid)) or init(ctypes.byref(comm), 1, uid, 0):
            raise RuntimeError("ncclCommInitRank failed")
        self.comm = comm.value
        self.lib = lib
        fn = lib.ncclAllReduce
        fn.restype = ctypes.c_int
        fn.argtypes = [vp, vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, vp, vp]
        self.fn = fn
        self.dtypes = dtypes  # the framework's dtype object -> ncclDataType_t
        self.ops = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}

    def all_reduce(self, send, recv, op="sum", stream=None):
        r = self.fn(send.data_ptr(), recv.data_ptr(), send.numel(), self.dtypes[send.dtype],
                    self.ops[op], self.comm, stream.cuda_stream)
        if r:
            raise RuntimeError("ncclAllReduce: %d" % r)

    def close(self):
        destroy = self.lib.ncclCommDestroy
        destroy.argtypes = [ctypes.c_void_p]
        destroy(self.comm)


def stand_in_torch():
    """A module named torch whose Tensor's accessors are C builtins (bound int and bool
    methods), for the build machine: no Python frame in either call path's reads."""
    torch = types.ModuleType("torch")

    class dtype:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return "torch." + self.name
    torch.float32 = dtype("float32")

    class Tensor:
        def __init__(self, ptr, n):
            self.is_cuda, self.dtype, self.device = True, torch.float32, "cuda:0"
            self.data_ptr, self.numel = ptr.__int__, n.__int__
            self.is_contiguous = True.__bool__
    Tensor.__module__ = "torch"
    torch.Tensor = Tensor

    class Stream:
        def __init__(self, handle):
            self.cuda_stream = handle

        def synchronize(self):
            pass
    Stream.__module__ = "torch.cuda"
    torch.cuda = types.SimpleNamespace(Stream=Stream,
                                       current_stream=lambda: Stream(0))
    sys.modules["torch"] = torch
    return torch


def main(argv):
    fake = argv[:1] == ["--fake"]
    out = argv[-1]
    os.makedirs(out, exist_ok=True)
    reps = int(os.environ.get("LEAN_REPS", "3000"))
    if fake:
        ctypes.CDLL(os.environ["NCCLSHIM_NCCL_LIBRARY"]).fake_nccl_set_live(1)
        torch = stand_in_torch()
        stream = torch.cuda.Stream(0x5000)

        def tensors(n):
            return torch.Tensor(0x10000, n), torch.Tensor(0x10000 + 4 * n, n)
    else:
        import torch
        torch.zeros(1, device="cuda")
        stream = torch.cuda.Stream()

        def tensors(n):
            return torch.ones(n, device="cuda"), torch.zeros(n, device="cuda")
    with ncclshim.Communicator(1, 0, ncclshim.unique_id(), timeout=20) as ours:
        path = ncclshim._clib.lib().ncclshim_nccl_path(ncclshim._clib.nccl()).decode()
        rows = compare(ours, path, {torch.float32: 7}, tensors, stream, out, reps)
    worst = max(mo / mt for _, mo, mt in rows)
    print("lean: worst ratio %.3f (goal <= %.2f), %s path" % (
        worst, GOAL, "C" if ncclshim._clib.fast_module() else "pure Python"))
    return 0 if worst <= GOAL else 1


def compare(ours, path, dtypes, tensors, stream, out, reps):
    """ours.all_reduce against Lean's on the NCCL at path, per size (tensors(n) makes the
    pair): writes OUTDIR/lean.csv, returns [(bytes, ours' median ns, lean's)]."""
    theirs = Lean(path, dtypes)
    rows = []
    try:
        with open(os.path.join(out, "lean.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["bytes", "ncclshim_ns", "lean_ns", "ratio"])
            for size in SIZES:
                x, y = tensors(max(2, size // 4))
                t_ours, t_theirs = take_turns(ours, theirs, x, y, stream, reps, warmup=200)
                mo, mt = statistics.median(t_ours), statistics.median(t_theirs)
                w.writerow([size, "%.0f" % mo, "%.0f" % mt, "%.4f" % (mo / mt)])
                print("%9d B  ncclshim %7.0f ns  lean %7.0f ns  ratio %.3f"
                      % (size, mo, mt, mo / mt), flush=True)
                rows.append((size, mo, mt))
    finally:
        theirs.close()
    return rows


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
