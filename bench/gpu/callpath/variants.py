"""The Python cost of an all_reduce call path, in variants, against noop7.c (a C function of
ncclAllReduce's signature that does nothing): no NCCL and no GPU work, only Python, torch's
accessors and ctypes. It is how the communicator's inline path was chosen (docs/python.md,
"What a call costs"). "pair reader frame" calls the package's own checked pair reader (the
pure Python path's, ncclshim.buffers.pair). tests/gpu/python/python.sh runs it in the torch
venv, with the package on PYTHONPATH:

    gcc -O2 -shared -fPIC -o /tmp/libnoop7.so bench/gpu/callpath/noop7.c
    python bench/gpu/callpath/variants.py /tmp/libnoop7.so 60 > call-path-variants.csv

Each case runs 2000 calls per round, the cases taking turns round by round; the CSV gives
the median and the minimum over the rounds, ns per call."""
import ctypes
import operator
import statistics
import sys
import time

import torch

import ncclshim.buffers

vp = ctypes.c_void_p
ARGTYPES = [vp, vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, vp, vp]
CODES = {torch.float32: 7}
OPS = {"sum": 0}


class PyNcclStyle:
    """As tests/gpu/python/pynccl_style.py calls NCCL: no checks, ctypes objects for the
    pointers."""

    def __init__(self, fn):
        self.fn, self.comm = fn, vp(1)

    def check(self, r):
        if r != 0:
            raise RuntimeError(r)

    def all_reduce(self, a, b, op="sum", stream=None):
        self.check(self.fn(vp(a.data_ptr()), vp(b.data_ptr()), a.numel(),
                           {"torch.float32": 7}[str(a.dtype)], OPS[op], self.comm,
                           vp(stream.cuda_stream)))


class Ours:
    def __init__(self, fn, stream_type):
        self.fn, self.comm = fn, 1
        self.streams = {stream_type: operator.attrgetter("cuda_stream"), int: int}
        self.pairs = {torch.Tensor: ncclshim.buffers.pair}  # the package's

    def with_pair_reader(self, send, recv, op="sum", stream=None):
        sp, rp, n, dt, fw = self.pairs.get(type(send))(send, "send", False, recv, "recv", True,
                                                       1)
        s = self.streams[type(stream)](stream)
        o = op if type(op) is int else OPS[op]
        if self.fn(sp, rp, n, dt, o, self.comm, s):
            raise RuntimeError

    def inline(self, send, recv, op="sum", stream=None):
        if type(send) is torch.Tensor and type(recv) is torch.Tensor:
            d, n = send.dtype, send.numel()
            if send.is_cuda and recv.is_cuda and d is recv.dtype and send.is_contiguous() \
                    and recv.is_contiguous() and recv.numel() == n:
                sp, rp, dt = send.data_ptr(), recv.data_ptr(), CODES[d]
            else:
                raise TypeError
        s = self.streams[type(stream)](stream)
        o = op if type(op) is int else OPS[op]
        if self.fn(sp, rp, n, dt, o, self.comm, s):
            raise RuntimeError

    def unchecked(self, send, recv, op="sum", stream=None):
        if self.fn(send.data_ptr(), recv.data_ptr(), send.numel(), CODES[send.dtype], OPS[op],
                   self.comm, stream.cuda_stream):
            raise RuntimeError


def main():
    lib = ctypes.CDLL(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    attr = lib.noop7
    attr.restype, attr.argtypes = ctypes.c_int, ARGTYPES
    proto = ctypes.CFUNCTYPE(ctypes.c_int, *ARGTYPES)(ctypes.cast(lib.noop7, vp).value)
    x = torch.ones(1024, device="cuda")
    y = torch.zeros(1024, device="cuda")
    s = torch.cuda.Stream()
    base, ours = PyNcclStyle(attr), Ours(proto, type(s))
    cases = [
        ("pynccl-style", lambda: base.all_reduce(x, y, stream=s)),
        ("pair reader frame", lambda: ours.with_pair_reader(x, y, stream=s)),
        ("inline checks", lambda: ours.inline(x, y, stream=s)),
        ("no checks", lambda: ours.unchecked(x, y, stream=s)),
        ("ctypes call: CDLL attribute", lambda: attr(1, 2, 3, 7, 0, 1, 0)),
        ("ctypes call: CFUNCTYPE(address)", lambda: proto(1, 2, 3, 7, 0, 1, 0)),
        ("is_cuda", lambda: x.is_cuda), ("is_contiguous()", lambda: x.is_contiguous()),
        ("numel()", lambda: x.numel()), ("data_ptr()", lambda: x.data_ptr()),
        ("dtype", lambda: x.dtype), ("str(dtype)", lambda: str(x.dtype)),
        ("c_void_p(int)", lambda: vp(5)), ("empty lambda", lambda: None)]
    clock, times = time.perf_counter_ns, {name: [] for name, _ in cases}
    for _ in range(rounds):
        for name, fn in cases:
            t = clock()
            for _ in range(2000):
                fn()
            times[name].append((clock() - t) / 2000)
    print("case,median_ns,min_ns")
    for name, _ in cases:
        print("%s,%.0f,%.0f" % (name, statistics.median(times[name]), min(times[name])))


if __name__ == "__main__":
    main()
