"""The one-rank hang job of hang_job.c, with NCCL bound by ctypes as vLLM's pynccl binds it (a
CDLL of the library's path), for the drop-in's audit mode (LD_AUDIT; tests/gpu/dropin/hangdump.sh).
Its CUDA work is libhang_gpu.so's (hang_gpu.cu), by ctypes too.

    python3 hang_job.py --nccl LIBNCCL --gpu LIBHANG_GPU --dir DIR

Two all-reduces that complete, then a kernel that holds the stream (it gives up by itself
after 4 s) and a third all-reduce behind it; waits at most 4 s for a dump in DIR, releases
the kernel, finishes. Prints detected_ms=MS (-1: no dump) and gave_up=0|1. Exit status 0, 77
without a GPU, 1 when a call failed.
"""
import argparse
import ctypes
import os
import sys
import time


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nccl", required=True)
    parser.add_argument("--gpu", required=True)
    parser.add_argument("--dir", required=True)
    args = parser.parse_args()
    gpu = ctypes.CDLL(args.gpu)
    nccl = ctypes.CDLL(args.nccl)
    p, i, size = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    for name in ("hd_stream", "hd_send", "hd_recv"):
        getattr(gpu, name).restype = p
    gpu.hd_count.restype = ctypes.c_ulong
    nccl.ncclGetUniqueId.argtypes = [ctypes.POINTER(UniqueId)]
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(p), i, UniqueId, i]
    nccl.ncclAllReduce.argtypes = [p, p, size, i, i, p, p]
    nccl.ncclCommDestroy.argtypes = [p]
    status = gpu.hd_init()
    if status == 77:
        return 77
    failures = []

    def check(what, result):
        if result != 0:
            print("failed=%s:%d" % (what, result), flush=True)
            failures.append(what)

    check("hd_init", status)
    uid, comm = UniqueId(), p()
    check("ncclGetUniqueId", nccl.ncclGetUniqueId(ctypes.byref(uid)))
    check("ncclCommInitRank", nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0))
    if failures:
        return 1

    def all_reduce():
        # ncclFloat32 = 7, ncclSum = 0
        check("ncclAllReduce", nccl.ncclAllReduce(gpu.hd_send(), gpu.hd_recv(), gpu.hd_count(),
                                                  7, 0, comm, gpu.hd_stream()))

    all_reduce()
    all_reduce()
    check("sync", gpu.hd_sync())
    check("hd_hold", gpu.hd_hold(4000))
    start = time.monotonic()
    all_reduce()  # seq 3, behind the held kernel
    detected = -1
    while time.monotonic() - start < 4:
        if any(n.startswith("ncclshim-record-") for n in os.listdir(args.dir)):
            detected = (time.monotonic() - start) * 1000
            break
        time.sleep(0.005)
    print("detected_ms=%.0f" % detected, flush=True)
    gpu.hd_release()
    check("sync", gpu.hd_sync())
    print("gave_up=%d" % gpu.hd_gave_up(), flush=True)
    check("ncclCommDestroy", nccl.ncclCommDestroy(comm))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
