"""An NCCL job bound with ctypes, as vLLM's pynccl binds it (a CDLL of the library's path,
the unique id as a 128-byte structure passed by value): the fake-NCCL counterpart of
tests/gpu/dropin/ctypes_allreduce.py, for audit mode (tests/dropin/test_files.py audit).
    ctypes_job.py LIBRARY RANK N   rank RANK of 2 issues N all-reduces and exits"""
import ctypes
import sys


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


def main(library, rank, n):
    nccl = ctypes.CDLL(library)
    nccl.ncclCommInitRank.restype = ctypes.c_int
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId,
                                      ctypes.c_int]
    nccl.ncclAllReduce.restype = ctypes.c_int
    nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                   ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    uid = UniqueId()
    for i, byte in enumerate(b"ctypes test job"):
        uid.internal[i] = byte
    comm = ctypes.c_void_p()
    result = nccl.ncclCommInitRank(ctypes.byref(comm), 2, uid, rank)
    print("init_result=%d" % result)
    for _ in range(n):
        result = nccl.ncclAllReduce(None, None, 1024, 7, 0, comm, None)  # ncclFloat32, ncclSum
        if result != 0:
            print("allreduce_result=%d" % result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
